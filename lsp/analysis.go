package lsp

import (
	"sort"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// symKind is what a name in a plan stands for.
type symKind uint8

const (
	symSlot  symKind = iota + 1 // a state slot: †state.NAME
	symInput                    // an input field: †input.NAME
	symTool                     // a tool, called or declared
	symPlan                     // a sub-plan, called or declared
	symLabel                    // a step's label
	symParam                    // an argument's name: a parameter of the callee
	symType                     // a declared type
	symItem                     // a for each's element: †x
)

// occurrence is one place a name is written in a document.
type occurrence struct {
	start, end int // byte offsets
	kind       symKind
	name       string
	// plan is the name of the plan whose scope the name is in: "" for
	// the main plan, a sub-plan's name inside it.
	plan string
	// def is set where the name is given its value: a slot's writer or
	// declaration, a tool's or sub-plan's declaration, an input field's,
	// a label.
	def bool
	// callee is the tool or sub-plan a parameter's name is of.
	callee string
	// ref is the reference a slot or input field is read through, for
	// the type of the path it reads.
	ref *lang.Ref
	// step is the step the name is in, if any.
	step *lang.Step
}

// analysis is what the server knows of one version of a document: its
// text, what planfile made of it, and where each name is.
type analysis struct {
	version int
	text    *text
	json    bool
	// c is the plan as far as it went from text towards a program.
	c *planfile.Compiled
	// occ holds the occurrences sorted by start, made on first use
	// (indexOnce): diagnostics do without them.
	occ       []occurrence
	indexOnce sync.Once
	// plans are the names of the file's sub-plans.
	plans map[string]bool
}

// analyze parses and checks a document's text through planfile, the one
// path from text to program, with the server's configuration and the
// document's directory for its imports.
func analyze(name, dir string, version int, t *text, base compiler.Config) *analysis {
	src := &planfile.Source{Name: name, JSON: planfile.IsJSON(name, []byte(t.s)), Text: t.s, Dir: dir}
	cfg := base
	if dir != "" {
		cfg.Imports = compiler.ImportDir(dir)
	} else {
		cfg.Imports = nil
	}
	if src.JSON && strings.TrimSpace(t.s) != "" && !lang.IsJSONPlan([]byte(t.s)) {
		// Other JSON an editor sends (a tools file, obelisk.json): not
		// a plan, and nothing to say about it.
		return &analysis{version: version, text: t, json: true, c: &planfile.Compiled{}}
	}
	c, _ := src.Load(cfg) // the diagnostics say what stopped it
	a := &analysis{version: version, text: t, json: src.JSON, c: c}
	c.Diagnostics.Sort()
	return a
}

// indexed returns the analysis with its occurrences recorded.
func (a *analysis) indexed() *analysis {
	a.indexOnce.Do(func() {
		if a.c.File == nil {
			return
		}
		a.plans = map[string]bool{}
		for _, it := range a.c.File.Items {
			if p, ok := it.(*lang.PlanDecl); ok && p.Name != nil {
				a.plans[p.Name.Name] = true
			}
		}
		a.index(a.c.File.Items, "")
		sort.SliceStable(a.occ, func(i, j int) bool { return a.occ[i].start < a.occ[j].start })
	})
	return a
}

// info returns the checked plan, or nil when the checker did not run.
func (a *analysis) info() *compiler.Info { return a.c.Info }

// plan returns the checked plan of a scope, or nil.
func (a *analysis) plan(name string) *compiler.Plan {
	if a.c.Info == nil {
		return nil
	}
	return a.c.Info.Plans[name]
}

// isPlan reports whether name is a sub-plan of the file.
func (a *analysis) isPlan(name string) bool { return a.plans[name] }

// add records an occurrence of an identifier; ident's span must lie in
// the text.
func (a *analysis) add(id *lang.Ident, o occurrence) {
	if id == nil || !id.Span.IsValid() {
		return
	}
	o.start, o.end = id.Span.Start.Offset, id.Span.End.Offset
	if o.name == "" {
		o.name = id.Name
	}
	if a.valid(o.start, o.end) {
		a.occ = append(a.occ, o)
	}
}

// valid reports whether [start, end) lies in the text.
func (a *analysis) valid(start, end int) bool {
	return start >= 0 && start <= end && end <= len(a.text.s)
}

// index records the names of a plan's items.
func (a *analysis) index(items []lang.Item, scope string) {
	for _, it := range items {
		switch n := it.(type) {
		case *lang.ToolDecl:
			a.add(n.Name, occurrence{kind: symTool, def: true, plan: scope})
			a.types(n)
		case *lang.TypeDecl:
			a.add(n.Name, occurrence{kind: symType, def: true})
			a.types(n.Type)
		case *lang.PlanDecl:
			if n.Name == nil {
				continue
			}
			a.add(n.Name, occurrence{kind: symPlan, def: true})
			for _, p := range n.Params {
				a.add(p.Name, occurrence{kind: symInput, def: true, plan: n.Name.Name})
				a.types(p.Type)
			}
			a.types(n.Result)
			a.index(n.Items, n.Name.Name)
		case *lang.InputDecl:
			for _, f := range n.Fields {
				a.add(f.Name, occurrence{kind: symInput, def: true, plan: scope})
				a.types(f.Type)
			}
		case *lang.StateDecl:
			for _, f := range n.Fields {
				a.add(f.Name, occurrence{kind: symSlot, def: true, plan: scope})
				a.types(f.Type)
			}
		case *lang.OutputDecl:
			a.refs(n, scope, nil)
		case *lang.Step:
			a.step(n, scope)
		}
	}
}

// types records the declared types a type expression names.
func (a *analysis) types(n lang.Node) {
	if n == nil {
		return
	}
	lang.Inspect(n, func(n lang.Node) bool {
		if t, ok := n.(*lang.NamedType); ok && t != nil && t.Span.IsValid() && a.valid(t.Span.Start.Offset, t.Span.End.Offset) {
			a.occ = append(a.occ, occurrence{start: t.Span.Start.Offset, end: t.Span.End.Offset, kind: symType, name: t.Name})
		}
		return true
	})
}

// step records a step's label, callee, arguments' names, outputs and the
// references it reads.
func (a *analysis) step(s *lang.Step, scope string) {
	a.add(s.Label, occurrence{kind: symLabel, def: true, plan: scope, step: s})
	call := func(c *lang.Call) {
		if c == nil || c.Tool == nil {
			return
		}
		kind := symTool
		if a.isPlan(c.Tool.Name) {
			kind = symPlan
		}
		a.add(c.Tool, occurrence{kind: kind, plan: scope, step: s})
		for _, arg := range c.Args {
			a.add(arg.Name, occurrence{kind: symParam, plan: scope, callee: c.Tool.Name, step: s})
		}
	}
	call(s.Call)
	for _, o := range s.Options {
		if f, ok := o.(*lang.FallbackOption); ok {
			call(f.Call)
		}
	}
	if s.Task != nil {
		for _, u := range s.Task.Using {
			kind := symTool
			if a.isPlan(u.Name) {
				kind = symPlan
			}
			a.add(u, occurrence{kind: kind, plan: scope, step: s})
		}
	}
	if s.Each != nil && s.Each.Var != nil {
		a.add(s.Each.Var, occurrence{kind: symItem, def: true, plan: scope, step: s})
	}
	var outs []*lang.Ref
	if s.Out != nil {
		outs = append(outs, s.Out.Success, s.Out.Error)
	}
	a.refs(s, scope, outs)
}

// refs records the references under n: a slot's or an input field's
// name, and a for each's element. outs are the references the node
// writes.
func (a *analysis) refs(n lang.Node, scope string, outs []*lang.Ref) {
	var step *lang.Step
	if s, ok := n.(*lang.Step); ok {
		step = s
	}
	lang.Inspect(n, func(n lang.Node) bool {
		r, ok := n.(*lang.Ref)
		if !ok || r == nil || r.Root == nil {
			return true
		}
		def := false
		for _, o := range outs {
			def = def || o == r
		}
		switch {
		case r.IsState() || r.IsInput():
			if len(r.Path) == 0 || r.Path[0].IsIndex {
				return false
			}
			kind := symSlot
			if r.IsInput() {
				kind = symInput
			}
			p := r.Path[0]
			start, end, ok := a.nameIn(p.Span, p.Field)
			if ok {
				a.occ = append(a.occ, occurrence{start: start, end: end, kind: kind, name: p.Field, plan: scope, def: def, ref: r, step: step})
			}
		default:
			a.add(r.Root, occurrence{kind: symItem, plan: scope, ref: r, step: step})
		}
		return false
	})
}

// nameIn finds the name written in a span of the text (a path element's
// span holds its dot or brackets too).
func (a *analysis) nameIn(s lang.Span, name string) (int, int, bool) {
	if !s.IsValid() || name == "" || !a.valid(s.Start.Offset, s.End.Offset) {
		return 0, 0, false
	}
	i := strings.Index(a.text.s[s.Start.Offset:s.End.Offset], name)
	if i < 0 {
		return 0, 0, false
	}
	start := s.Start.Offset + i
	return start, start + len(name), true
}

// at returns the innermost occurrence at byte offset off (a cursor just
// after a name is on it), or nil.
func (a *analysis) at(off int) *occurrence {
	i := sort.Search(len(a.occ), func(i int) bool { return a.occ[i].start > off })
	var best *occurrence
	for j := i - 1; j >= 0 && j >= i-64; j-- {
		o := &a.occ[j]
		if o.start <= off && off <= o.end && (best == nil || o.end-o.start < best.end-best.start) {
			best = o
		}
	}
	return best
}

// same returns the occurrences of the symbol o names, in order.
func (a *analysis) same(o *occurrence) []occurrence {
	var out []occurrence
	for _, p := range a.occ {
		if p.kind != o.kind || p.name != o.name {
			continue
		}
		switch o.kind {
		case symSlot, symInput, symItem:
			if p.plan != o.plan {
				continue
			}
		case symParam:
			if p.callee != o.callee {
				continue
			}
		case symLabel:
			if p.plan != o.plan {
				continue
			}
		}
		if o.kind == symItem && p.step != o.step {
			continue
		}
		out = append(out, p)
	}
	return out
}
