package mcpserver

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// catalog holds the signatures of the tools a plan may call, for
// search_tools and the resources.
type catalog struct {
	// tools are sorted by name. An MCP server's tool that a plan may call
	// by its bare name too (read_file for fs.read_file) is listed once,
	// by its long name, which always works.
	tools  []*entry
	byName map[string]*entry
	// groups count the tools by the part of their names before the first
	// dot (an MCP server's name, or a built-in family: http, file).
	groups map[string]int
}

// entry is one tool: its declaration, its signature as plan text (in
// full, and with each description cut to its first sentence), and the
// words it is found by.
type entry struct {
	name      string
	decl      *lang.ToolDecl
	signature string
	brief     string
	nameWords []string
	docWords  map[string]bool
}

// effectful reports whether a tool of the catalog may change something:
// one that is not pure (idempotent is not enough: deleting is idempotent).
func (c *catalog) effectful() bool {
	for _, e := range c.tools {
		pure := false
		for _, a := range e.decl.Attrs {
			if a.Name != nil && a.Name.Name == "pure" {
				pure = true
			}
		}
		if !pure {
			return true
		}
	}
	return false
}

// newCatalog reads the tools files. The first definition of a name is the
// tool's, as for the checker.
func newCatalog(files []planfile.File) (*catalog, error) {
	c := &catalog{byName: map[string]*entry{}, groups: map[string]int{}}
	aliases := map[string]bool{}
	for _, f := range files {
		decls, diags := lang.ParseTools(f.Name, []byte(f.Text))
		if diags.HasErrors() {
			return nil, fmt.Errorf("mcpserver: the tools of %s: %w", f.Name, diags)
		}
		long := map[string]bool{}
		for _, d := range decls {
			if _, rest, ok := strings.Cut(d.Name.Name, "."); ok {
				long[rest] = true // SERVER.TOOL: TOOL may be the same tool
			}
		}
		for _, d := range decls {
			name := d.Name.Name
			if !d.HasSignature || c.byName[name] != nil {
				continue
			}
			if long[name] {
				aliases[name] = true // the same tool, listed by its long name
			}
			e := &entry{name: name, decl: d, signature: signature(d), brief: signature(briefly(d)), nameWords: words(name), docWords: map[string]bool{}}
			for _, w := range words(d.Doc()) {
				e.docWords[w] = true
			}
			c.byName[name] = e
		}
	}
	for name, e := range c.byName {
		if aliases[name] {
			continue
		}
		c.tools = append(c.tools, e)
		group, _, _ := strings.Cut(name, ".")
		c.groups[group]++
	}
	sort.Slice(c.tools, func(i, j int) bool { return c.tools[i].name < c.tools[j].name })
	return c, nil
}

// signature returns a tool's declaration as plan text, its effect always
// written out: a tool that declares none is irreversible, which a model
// should not have to know to see it.
func signature(d *lang.ToolDecl) string {
	for _, a := range d.Attrs {
		switch a.Name.Name {
		case "pure", "idempotent", "irreversible":
			return strings.TrimRight(lang.FormatItem(d), "\n")
		}
	}
	c := *d
	c.Attrs = append([]*lang.ToolAttr{{Name: &lang.Ident{Name: "irreversible"}}}, d.Attrs...)
	return strings.TrimRight(lang.FormatItem(&c), "\n")
}

// briefly returns a copy of a declaration whose descriptions, the tool's
// and its parameters', are cut to their first sentences.
func briefly(d *lang.ToolDecl) *lang.ToolDecl {
	c := *d
	c.Comments = brief(d.Comments)
	c.Params = make([]*lang.FieldDecl, len(d.Params))
	for i, p := range d.Params {
		q := *p
		q.Comments = brief(p.Comments)
		c.Params[i] = &q
	}
	return &c
}

// brief returns comments whose documentation is cut to its first
// sentence, at most maxBrief bytes.
func brief(c lang.Comments) lang.Comments {
	doc := strings.Join(strings.Fields(c.Doc()), " ")
	if doc == "" {
		return lang.Comments{}
	}
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	if len(doc) > maxBrief {
		cut := strings.LastIndex(doc[:maxBrief], " ")
		if cut < maxBrief/2 {
			cut = maxBrief
		}
		doc = strings.TrimRight(doc[:cut], " ,;:") + "…"
	}
	return lang.Comments{Leading: []lang.Comment{{Text: "# " + doc}}}
}

// maxBrief bounds a description cut to its first sentence.
const maxBrief = 160

// words splits text into lowercase words: at anything but letters and
// digits, and between a lowercase letter and an uppercase one (readFile).
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// search returns the tools that match a query best, at most limit of
// them, and how many match in all. A tool matches when the query names it
// (among other names or words), or when its name, or a word of its name or
// description, matches a word of the query (or starts with it); a match
// in the name counts most. An empty query matches every tool.
func (c *catalog) search(query string, limit int) ([]*entry, int) {
	q := words(query)
	named := map[string]bool{}
	for _, f := range strings.FieldsFunc(query, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		named[strings.ToLower(f)] = true
	}
	type scored struct {
		e     *entry
		score int
	}
	var hits []scored
	for _, e := range c.tools {
		score := 0
		if len(q) == 0 {
			score = 1
		}
		if named[strings.ToLower(e.name)] {
			score += 100
		}
		for _, w := range q {
			for _, nw := range e.nameWords {
				switch {
				case nw == w:
					score += 10
				case strings.HasPrefix(nw, w) || strings.HasPrefix(w, nw) && len(nw) >= 4:
					score += 5
				}
			}
			if len(w) < 3 {
				continue // a, of, to: too common to find a tool by
			}
			if e.docWords[w] {
				score += 2
			} else if len(w) >= 4 {
				for dw := range e.docWords {
					if strings.HasPrefix(dw, w) {
						score++
						break
					}
				}
			}
		}
		if score > 0 {
			hits = append(hits, scored{e, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	out := make([]*entry, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.e)
	}
	return out, len(hits)
}

// summary names the groups of tools and how many each has: "fs (14),
// memory (9), file (2)".
func (c *catalog) summary() string {
	names := make([]string, 0, len(c.groups))
	for g := range c.groups {
		names = append(names, g)
	}
	sort.Slice(names, func(i, j int) bool {
		if c.groups[names[i]] != c.groups[names[j]] {
			return c.groups[names[i]] > c.groups[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, g := range names {
		parts[i] = fmt.Sprintf("%s (%d)", g, c.groups[g])
	}
	return strings.Join(parts, ", ")
}

// text returns the signatures of entries, one tool after another.
func text(entries []*entry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.signature)
		b.WriteString("\n")
	}
	return b.String()
}

// briefText returns the signatures of entries with their descriptions
// cut to their first sentences, but for the tools full names.
func briefText(entries []*entry, full map[string]bool) string {
	var b strings.Builder
	for _, e := range entries {
		if full[e.name] {
			b.WriteString(e.signature)
		} else {
			b.WriteString(e.brief)
		}
		b.WriteString("\n")
	}
	return b.String()
}
