package lsp

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// The words completion offers where a statement or an option starts.
var (
	options  = []string{"when", "expect", "retry", "timeout", "fallback", "approve", "result", "hint"}
	keywords = []string{"tool", "type", "input", "state", "plan", "output", "mode", "on failure", "import", "approve", "for each", "task"}
	effects  = []string{"pure", "idempotent", "irreversible", "model", "latency", "tokens"}
)

var (
	slotFieldRE = regexp.MustCompile(`[†$]state\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.[A-Za-z0-9_]*$`)
	slotRE      = regexp.MustCompile(`[†$]state\.[A-Za-z0-9_]*$`)
	inputRE     = regexp.MustCompile(`[†$]input\.[A-Za-z0-9_]*$`)
	rootRE      = regexp.MustCompile(`[†$][A-Za-z0-9_]*$`)
	toolLineRE  = regexp.MustCompile(`^\s*tool\s.*\)`)
)

// complete offers what may be written at the cursor: a slot or its
// fields after †state., an input field after †input., a parameter's
// name inside a call, a tool's attribute in its declaration, else tools
// (their parameters as a snippet), sub-plans, options and keywords.
// It reads the document's current text, and the types of its latest
// version that checked, since the text being typed rarely parses.
func (s *server) complete(d *document, a *analysis, p position) completionList {
	off := a.text.offset(p)
	src := a.text.s
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	line := src[lineStart:off]
	info := a.info()
	if info == nil {
		info = d.goodInfo()
	}
	scope := scopeAt(a, off)
	var pl *compiler.Plan
	if info != nil {
		pl = info.Plans[scope]
		if pl == nil {
			pl = info.Main
		}
	}
	items := []completionItem{}
	switch {
	case slotFieldRE.MatchString(line):
		m := slotFieldRE.FindStringSubmatch(line)
		if pl != nil && pl.Slots[m[1]] != nil {
			t := pl.Slots[m[1]].Type
			for _, f := range strings.Split(strings.TrimPrefix(m[2], "."), ".") {
				if f != "" && t != nil {
					if fd := t.Field(f); fd != nil {
						t = fd.Type
					} else {
						t = nil
					}
				}
			}
			items = append(items, fieldItems(t)...)
		}
	case slotRE.MatchString(line):
		if pl != nil {
			for _, n := range pl.SlotNames {
				items = append(items, completionItem{Label: n, Kind: kindVariable, Detail: pl.Slots[n].Type.String()})
			}
		}
	case inputRE.MatchString(line):
		if pl != nil {
			items = append(items, fieldItems(pl.Input)...)
		}
	case rootRE.MatchString(line):
		items = append(items, completionItem{Label: "state", Kind: kindModule}, completionItem{Label: "input", Kind: kindModule})
	case toolLineRE.MatchString(line):
		for _, e := range effects {
			items = append(items, completionItem{Label: e, Kind: kindKeyword})
		}
	default:
		if callee, given, ok := openCall(src, off); ok {
			var t *compiler.Tool
			if info != nil {
				t = info.Tools[callee]
			}
			if t != nil {
				for _, prm := range t.Params {
					if given[prm.Name] {
						continue
					}
					items = append(items, completionItem{Label: prm.Name, Kind: kindField, Detail: paramText(prm), Documentation: prm.Doc, InsertText: prm.Name + ": "})
				}
				break
			}
		}
		items = append(items, s.toolItems(info)...)
		for i, o := range options {
			items = append(items, completionItem{Label: o, Kind: kindKeyword, Detail: "step option", SortText: fmt.Sprintf("1%02d", i)})
		}
		for _, k := range keywords {
			items = append(items, completionItem{Label: k, Kind: kindKeyword, SortText: "2" + k})
		}
	}
	return completionList{Items: items}
}

func fieldItems(t *compiler.Type) []completionItem {
	var out []completionItem
	for t != nil && t.Kind == compiler.KindList {
		t = t.Elem
	}
	if t == nil {
		return out
	}
	for _, f := range t.Fields {
		out = append(out, completionItem{Label: f.Name, Kind: kindProperty, Detail: f.Type.String(), Documentation: f.Doc})
	}
	return out
}

// toolItems offers every tool and sub-plan, a call with its required
// parameters as a snippet.
func (s *server) toolItems(info *compiler.Info) []completionItem {
	var out []completionItem
	if info == nil {
		for _, d := range s.opts.Config.Tools {
			if d.Name != nil {
				out = append(out, completionItem{Label: d.Name.Name, Kind: kindFunction, SortText: "0" + d.Name.Name})
			}
		}
		return out
	}
	names := make([]string, 0, len(info.Tools))
	for n := range info.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := info.Tools[n]
		var args []string
		for i, p := range t.Required() {
			args = append(args, fmt.Sprintf("%s: ${%d:%s}", p.Name, i+1, p.Name))
		}
		kind := kindFunction
		if t.Plan != nil {
			kind = kindModule
		}
		out = append(out, completionItem{
			Label: n, Kind: kind, Detail: toolSignature(t), Documentation: t.Doc,
			InsertText: n + "(" + strings.Join(args, ", ") + ")", InsertTextFormat: 2, SortText: "0" + n,
		})
	}
	return out
}

// scopeAt returns the name of the sub-plan whose body holds off, or ""
// for the main plan.
func scopeAt(a *analysis, off int) string {
	if a.c.File == nil {
		return ""
	}
	for _, it := range a.c.File.Items {
		if p, ok := it.(*lang.PlanDecl); ok && p.Name != nil && p.Span.Start.Offset <= off && off <= p.Span.End.Offset {
			return p.Name.Name
		}
	}
	return ""
}

// openCall finds the call whose parentheses are open at off: the
// callee's name and the arguments already named. It looks back at most
// a few thousand bytes, over strings and nested brackets.
func openCall(src string, off int) (string, map[string]bool, bool) {
	depth := 0
	limit := max(0, off-4096)
	for i := off - 1; i >= limit; i-- {
		switch src[i] {
		case ')', ']', '}':
			depth++
		case '[', '{':
			if depth == 0 {
				return "", nil, false
			}
			depth--
		case '(':
			if depth > 0 {
				depth--
				continue
			}
			j := i
			for j > 0 && (isWordByte(src[j-1]) || src[j-1] == '.' || src[j-1] == '-') {
				j--
			}
			if j == i {
				return "", nil, false
			}
			given := map[string]bool{}
			for _, m := range argNameRE.FindAllStringSubmatch(src[i+1:off], -1) {
				given[m[1]] = true
			}
			return src[j:i], given, true
		case '\n':
			if depth == 0 && i+1 < len(src) && !strings.ContainsAny(src[i:off], "(,") {
				return "", nil, false
			}
		}
	}
	return "", nil, false
}

var argNameRE = regexp.MustCompile(`(?:^|[(,\s])([A-Za-z_][A-Za-z0-9_]*)\s*:`)
