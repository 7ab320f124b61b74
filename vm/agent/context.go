package agent

import (
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// Context is what the model is told besides the goal: the context
// messages of seed 003 (tools, input, state, plan).
type Context struct {
	// Tools are the tools a plan may call, shown to the model as `tool`
	// signatures. They must also be in the checker's configuration
	// (compiler.Config.Tools), which may hold more (the built-in tools).
	Tools []*lang.ToolDecl
	// Decls are `type` and sub-`plan` declarations the plan may use.
	Decls []lang.Item
	// Input is the plan's input. InputDecl declares its fields; when it
	// is nil, they are inferred from the values.
	Input     map[string]any
	InputDecl *lang.InputDecl
	// State is the state schema: slots and their types, and the values of
	// slots already written.
	State *lang.StateDecl
	// Plan is a plan to go on from (steps and output), or nil.
	Plan []lang.Item
	// Hints are the routing hints the operator declares (the checker's
	// compiler.Config.Hints), shown to the model with what each routes
	// a task to.
	Hints map[string]compiler.Hint
}

// ContextOf splits a parsed context document (seed 003's JSON form) or a
// .plan file into a Context: its tools, types, sub-plans, input (with the
// values a JSON document gives), state schema, and its steps and output as
// the plan so far.
func ContextOf(f *lang.File) Context {
	c := Context{Input: f.InputValues}
	for _, it := range f.Items {
		switch d := it.(type) {
		case *lang.ToolDecl:
			c.Tools = append(c.Tools, d)
		case *lang.TypeDecl, *lang.PlanDecl:
			c.Decls = append(c.Decls, d)
		case *lang.InputDecl:
			c.InputDecl = d
		case *lang.StateDecl:
			c.State = d
		case *lang.Step, *lang.OutputDecl:
			c.Plan = append(c.Plan, d)
		}
	}
	if c.Input == nil && c.InputDecl != nil {
		c.Input = map[string]any{}
		for _, fd := range c.InputDecl.Fields {
			if v, ok := literalValue(fd.Default); ok {
				c.Input[fd.Name.Name] = v
			}
		}
	}
	return c
}

// literalValue returns the JSON value an expression writes, if it is a
// plain value.
func literalValue(e lang.Expr) (any, bool) {
	switch x := e.(type) {
	case *lang.Literal:
		return x.Value, true
	case *lang.ListExpr:
		out := make([]any, 0, len(x.Elems))
		for _, el := range x.Elems {
			v, ok := literalValue(el)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case *lang.ObjectExpr:
		out := map[string]any{}
		for _, f := range x.Fields {
			v, ok := literalValue(f.Value)
			if !ok {
				return nil, false
			}
			out[f.Key.Name] = v
		}
		return out, true
	}
	return nil, false
}

// inputDecl returns the input block: the declared fields, with the given
// values as defaults, or fields inferred from the values.
func (c *Context) inputDecl() *lang.InputDecl {
	var declared []*lang.FieldDecl
	if c.InputDecl != nil {
		declared = c.InputDecl.Fields
	}
	fields := withValues(declared, c.Input, nil)
	if len(fields) == 0 && c.InputDecl == nil {
		return nil
	}
	return &lang.InputDecl{Fields: fields}
}

// stateDecl returns the state block: the schema's slots, and every slot
// written so far with its value, typed as its writer declared (types).
func (c *Context) stateDecl(state map[string]any, types map[string]*compiler.Type) *lang.StateDecl {
	var declared []*lang.FieldDecl
	if c.State != nil {
		declared = c.State.Fields
	}
	fields := withValues(declared, state, types)
	if len(fields) == 0 {
		return nil
	}
	return &lang.StateDecl{Fields: fields}
}

// withValues returns the declared fields, each with its value as its
// default when there is one, then a field for each other value, in name
// order, of the type types gives it: the type its writer declared. A
// value without one (a value of the context, not written by a step) is
// typed by the value. The declarations are not changed.
func withValues(declared []*lang.FieldDecl, values map[string]any, types map[string]*compiler.Type) []*lang.FieldDecl {
	var out []*lang.FieldDecl
	seen := map[string]bool{}
	for _, f := range declared {
		nf := *f
		nf.Comments = lang.Comments{Leading: f.Comments.Leading}
		if v, ok := values[f.Name.Name]; ok {
			nf.Default = lang.ValueExpr(v)
		}
		out = append(out, &nf)
		seen[f.Name.Name] = true
	}
	for _, k := range sortedKeys(values) {
		if seen[k] {
			continue
		}
		t := types[k]
		if t == nil || compiler.CheckValue(values[k], t, k) != "" {
			t = compiler.TypeOfValue(values[k])
		}
		out = append(out, &lang.FieldDecl{Name: &lang.Ident{Name: k, Quoted: !lang.IsPlainName(k)},
			Type: t.Expr(), Default: lang.ValueExpr(values[k])})
	}
	return out
}

// prelude is the text put before the model's answer when it is checked:
// the declarations, the input and the state, and settings.
func (c *Context) prelude(state map[string]any, types map[string]*compiler.Type, settings ...string) string {
	var b strings.Builder
	for _, s := range settings {
		b.WriteString(s + "\n")
	}
	for _, d := range c.Decls {
		b.WriteString(formatItem(d))
	}
	if d := c.inputDecl(); d != nil {
		b.WriteString(formatItem(d))
	}
	if d := c.stateDecl(state, types); d != nil {
		b.WriteString(formatItem(d))
	}
	return b.String()
}

// toolsText renders the tools as `tool` signatures, each with its
// effect: a tool that declares none is irreversible, and says so.
func (c *Context) toolsText() string {
	var b strings.Builder
	for _, t := range c.Tools {
		b.WriteString(formatItem(withEffect(t)))
	}
	return b.String()
}

// The effects of tools, as attributes.
var effects = map[string]bool{"pure": true, "idempotent": true, "irreversible": true}

// withEffect returns a tool's declaration with its effect stated: a copy
// that says irreversible when the declaration gives no effect. A tool
// without a signature (`tool name`) is left as it is.
func withEffect(t *lang.ToolDecl) *lang.ToolDecl {
	if !t.HasSignature {
		return t
	}
	for _, a := range t.Attrs {
		if effects[a.Name.Name] {
			return t
		}
	}
	nt := *t
	nt.Attrs = append([]*lang.ToolAttr{{Name: &lang.Ident{Name: "irreversible"}}}, t.Attrs...)
	return &nt
}

// toolNames is the set of the context's tool names.
func (c *Context) toolNames() map[string]bool {
	out := map[string]bool{}
	for _, t := range c.Tools {
		out[t.Name.Name] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// formatItem prints an item in the canonical layout, ending with one line
// break.
func formatItem(it lang.Item) string {
	return strings.TrimRight(lang.FormatItem(it), "\n") + "\n"
}
