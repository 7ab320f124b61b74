package lsp

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// docName is the name a document's diagnostics give its file.
func (d *document) name() string {
	if d.path != "" {
		return d.path
	}
	return d.uri
}

// diagnostics turns the checker's diagnostics into the protocol's: a
// diagnostic about another file (a tools file, an import) is shown at the
// top of the document, its place in its message.
func (s *server) diagnostics(d *document, a *analysis) []diagnostic {
	out := make([]diagnostic, 0, len(a.c.Diagnostics))
	for _, g := range a.c.Diagnostics {
		out = append(out, s.diagnostic(d, a, g))
	}
	return out
}

func (s *server) diagnostic(d *document, a *analysis, g *lang.Diagnostic) diagnostic {
	out := diagnostic{Severity: int(g.Severity) + 1, Code: string(g.Code), Source: "obelisk", Message: g.Message}
	if g.File == "" || g.File == d.name() {
		out.Range = a.text.span(g.Span)
	} else {
		out.Message = fmt.Sprintf("%s:%s: %s", g.File, g.Span.Start, g.Message)
	}
	for _, r := range g.Related {
		loc := location{URI: d.uri, Range: a.text.span(r.Span)}
		if r.File != "" && r.File != d.name() {
			loc = s.elsewhere(d, r.File, r.Span)
		}
		out.RelatedInformation = append(out.RelatedInformation, diagnosticRelatedInformation{Location: loc, Message: r.Message})
	}
	return out
}

// elsewhere returns the location of a span in a file other than the
// document: an operator's tools file, whose text the server holds, or a
// file beside the document (an import), whose columns are taken as
// they are.
func (s *server) elsewhere(d *document, file string, span lang.Span) location {
	for _, f := range s.opts.ToolFiles {
		if f.Name == file {
			return location{URI: fileURI(file), Range: newText(f.Text).span(span)}
		}
	}
	if !filepath.IsAbs(file) && d.dir != "" {
		file = filepath.Join(d.dir, file)
	}
	p := position{Line: max(0, span.Start.Line-1), Character: max(0, span.Start.Column-1)}
	return location{URI: fileURI(file), Range: rng{Start: p, End: p}}
}

// codeActions offers the fixes of the diagnostics in r as quick fixes.
func (s *server) codeActions(d *document, a *analysis, r rng) []codeAction {
	from, to := a.text.offsets(r)
	out := []codeAction{}
	for _, g := range a.c.Diagnostics {
		if g.Fix == nil || (g.File != "" && g.File != d.name()) {
			continue
		}
		if g.Span.IsValid() && (g.Span.End.Offset < from || g.Span.Start.Offset > to) {
			continue
		}
		var edits []textEdit
		for _, e := range g.Fix.Edits {
			if e.File != "" && e.File != d.name() {
				continue
			}
			edits = append(edits, textEdit{Range: a.text.span(e.Span), NewText: e.NewText})
		}
		if len(edits) == 0 {
			continue
		}
		out = append(out, codeAction{
			Title:       g.Fix.Message,
			Kind:        "quickfix",
			Diagnostics: []diagnostic{s.diagnostic(d, a, g)},
			IsPreferred: true,
			Edit:        &workspaceEdit{Changes: map[string][]textEdit{d.uri: edits}},
		})
	}
	return out
}

// toolSignature spells a tool out as a declaration.
func toolSignature(t *compiler.Tool) string {
	var b strings.Builder
	if t.Plan != nil {
		b.WriteString("plan ")
	} else {
		b.WriteString("tool ")
	}
	b.WriteString(t.Name)
	b.WriteString("(")
	for i, p := range t.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(paramText(p))
	}
	b.WriteString(")")
	if t.Result != nil {
		b.WriteString(" -> " + t.Result.String())
	}
	if t.Plan == nil {
		b.WriteString(" " + t.Effect.String())
		if t.Model {
			b.WriteString(" model")
		}
	}
	return b.String()
}

func paramText(p *compiler.Param) string {
	s := p.Name
	if p.Optional {
		s += "?"
	}
	s += ": " + p.Type.String()
	if p.HasDefault {
		s += fmt.Sprintf(" = %v", lang.FormatExpr(lang.ValueExpr(p.Default)))
	}
	return s
}

func markdown(code string, more ...string) markupContent {
	v := "```obelisk\n" + code + "\n```"
	for _, m := range more {
		if m != "" {
			v += "\n\n" + m
		}
	}
	return markupContent{Kind: "markdown", Value: v}
}

// hover says what the name under the cursor is: a slot's type and its
// writers, a tool's signature, effect and description, an input field's
// type, a parameter's type, a CEL function's signatures.
func (s *server) hover(a *analysis, p position) *hover {
	off := a.text.offset(p)
	o := a.at(off)
	if o == nil {
		return s.hoverCEL(a, off)
	}
	r := a.text.span(lang.Span{Start: lang.Pos{Offset: o.start, Line: 1}, End: lang.Pos{Offset: o.end, Line: 1}})
	c := s.describe(a, o)
	if c == nil {
		return nil
	}
	return &hover{Contents: *c, Range: &r}
}

func (s *server) describe(a *analysis, o *occurrence) *markupContent {
	info := a.info()
	if info == nil {
		return nil
	}
	pl := a.plan(o.plan)
	var c markupContent
	switch o.kind {
	case symSlot:
		if pl == nil || pl.Slots[o.name] == nil {
			return nil
		}
		sl := pl.Slots[o.name]
		var writers []string
		for _, w := range sl.Writers {
			writers = append(writers, fmt.Sprintf("`%s` (line %d)", w.ID, w.Node.Span.Start.Line))
		}
		who := "written by no step"
		switch {
		case len(writers) > 0:
			who = "written by " + strings.Join(writers, ", ")
		case sl.HasInitial:
			who = "given in the state block, written by no step"
		}
		code := fmt.Sprintf("†state.%s: %s", o.name, sl.Type)
		if o.ref != nil && len(o.ref.Path) > 1 {
			if t := pathType(sl.Type, o.ref.Path[1:]); t != nil {
				code += fmt.Sprintf("\n%s: %s", o.ref, t)
			}
		}
		c = markdown(code, who, fmt.Sprintf("read by %d step(s)", len(sl.Readers)))
	case symInput:
		if pl == nil || pl.Input == nil {
			return nil
		}
		f := pl.Input.Field(o.name)
		if f == nil {
			return nil
		}
		opt := ""
		if f.Optional {
			opt = "?"
		}
		c = markdown(fmt.Sprintf("†input.%s%s: %s", o.name, opt, f.Type), f.Doc)
	case symTool, symPlan:
		t := info.Tools[o.name]
		if t == nil {
			return nil
		}
		origin := ""
		switch {
		case t.Plan != nil:
			origin = "a sub-plan of this file"
		case t.File == "" && t.Decl != nil && t.Decl.Span.IsValid() && !declaredIn(a, t):
			origin = "the operator's tool"
		case t.File != "" && t.File != a.c.File.Name:
			origin = "declared in " + t.File
		}
		c = markdown(toolSignature(t), t.Doc, origin)
	case symParam:
		t := info.Tools[o.callee]
		if t == nil || t.Param(o.name) == nil {
			return nil
		}
		p := t.Param(o.name)
		c = markdown(paramText(p), p.Doc, fmt.Sprintf("a parameter of `%s`", t.Name))
	case symLabel:
		for _, st := range pl.Steps {
			if st.Node == o.step {
				c = markdown(fmt.Sprintf("%s: %s", st.ID, st.ToolName()), "a step label")
			}
		}
	case symItem:
		if pl == nil {
			return nil
		}
		for _, st := range pl.Steps {
			if st.Node == o.step && st.Each != nil {
				c = markdown(fmt.Sprintf("†%s: %s", st.Each.Var, st.Each.ElemType), "the element of a for each")
			}
		}
	case symType:
		t := info.Types[o.name]
		if t == nil {
			return nil
		}
		c = markdown(fmt.Sprintf("type %s %s", o.name, t.String()))
	}
	if c.Value == "" {
		return nil
	}
	return &c
}

// declaredIn reports whether the plan itself declares the tool.
func declaredIn(a *analysis, t *compiler.Tool) bool {
	for _, o := range a.occ {
		if o.kind == symTool && o.def && o.name == t.Name {
			return true
		}
	}
	return false
}

// pathType returns the type a path reads from a value of type t, or nil.
func pathType(t *compiler.Type, path []*lang.PathElem) *compiler.Type {
	for _, p := range path {
		if t == nil {
			return nil
		}
		switch {
		case p.IsIndex:
			t = t.Elem
		default:
			f := t.Field(p.Field)
			if f == nil {
				return nil
			}
			t = f.Type
		}
	}
	return t
}

// celAt returns the CEL expression of the plan's text around off.
func celAt(a *analysis, off int) *lang.CELExpr {
	if a.c.File == nil || a.json {
		return nil
	}
	var found *lang.CELExpr
	lang.Inspect(a.c.File, func(n lang.Node) bool {
		if n == nil {
			return false
		}
		sp := n.Range()
		if sp.IsValid() && (off < sp.Start.Offset || off > sp.End.Offset) {
			if _, ok := n.(*lang.File); !ok {
				return false
			}
		}
		if e, ok := n.(*lang.CELExpr); ok {
			found = e
		}
		return true
	})
	return found
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// wordAt returns the identifier of the text around off and its span.
func wordAt(s string, off int) (string, int, int) {
	a, b := off, off
	for a > 0 && isWordByte(s[a-1]) {
		a--
	}
	for b < len(s) && isWordByte(s[b]) {
		b++
	}
	return s[a:b], a, b
}

// hoverCEL gives the signatures of the CEL function under the cursor.
func (s *server) hoverCEL(a *analysis, off int) *hover {
	info := a.info()
	if info == nil || info.Main == nil || info.Main.Env == nil || celAt(a, off) == nil {
		return nil
	}
	w, start, end := wordAt(a.text.s, off)
	if w == "" {
		return nil
	}
	f := info.Main.Env.Functions()[w]
	if f == nil {
		return nil
	}
	var sigs []string
	for _, o := range f.OverloadDecls() {
		args := o.ArgTypes()
		var parts []string
		for _, t := range args {
			parts = append(parts, t.String())
		}
		if o.IsMemberFunction() && len(parts) > 0 {
			sigs = append(sigs, fmt.Sprintf("%s.%s(%s) -> %s", parts[0], w, strings.Join(parts[1:], ", "), o.ResultType()))
		} else {
			sigs = append(sigs, fmt.Sprintf("%s(%s) -> %s", w, strings.Join(parts, ", "), o.ResultType()))
		}
	}
	sort.Strings(sigs)
	r := a.text.span(lang.Span{Start: lang.Pos{Offset: start, Line: 1}, End: lang.Pos{Offset: end, Line: 1}})
	return &hover{Contents: markdown(strings.Join(sigs, "\n"), "a CEL function"+descr(f.Description())), Range: &r}
}

func descr(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// loc returns the location of an occurrence.
func (a *analysis) loc(uri string, o occurrence) location {
	return location{URI: uri, Range: a.text.span(lang.Span{Start: lang.Pos{Offset: o.start, Line: 1}, End: lang.Pos{Offset: o.end, Line: 1}})}
}

// definition goes from a slot's reader to its writers (or its
// declaration), from a call to the tool's declaration (in the plan or
// in the operator's tools file) or the sub-plan's, from an argument's
// name to the parameter.
func (s *server) definition(d *document, a *analysis, p position) []location {
	o := a.at(a.text.offset(p))
	out := []location{}
	if o == nil {
		return out
	}
	if o.kind == symParam {
		return s.paramDefinition(d, a, o)
	}
	for _, q := range a.same(o) {
		if q.def {
			out = append(out, a.loc(d.uri, q))
		}
	}
	if len(out) == 0 && o.kind == symTool {
		if site, ok := s.tools[o.name]; ok {
			out = append(out, location{URI: fileURI(site.file), Range: site.text.span(site.span)})
		} else if t := a.toolOf(o.name); t != nil && t.File != "" && t.Decl != nil {
			out = append(out, s.elsewhere(d, t.File, t.Decl.Span))
		}
	}
	return out
}

func (a *analysis) toolOf(name string) *compiler.Tool {
	if a.info() == nil {
		return nil
	}
	return a.info().Tools[name]
}

func (s *server) paramDefinition(d *document, a *analysis, o *occurrence) []location {
	out := []location{}
	var params []*lang.FieldDecl
	if a.c.File != nil {
		for _, it := range a.c.File.Items {
			switch n := it.(type) {
			case *lang.ToolDecl:
				if n.Name != nil && n.Name.Name == o.callee {
					params = n.Params
				}
			case *lang.PlanDecl:
				if n.Name != nil && n.Name.Name == o.callee {
					params = n.Params
				}
			}
		}
	}
	for _, f := range params {
		if f.Name != nil && f.Name.Name == o.name {
			return append(out, location{URI: d.uri, Range: a.text.span(f.Name.Span)})
		}
	}
	if site, ok := s.tools[o.callee]; ok {
		out = append(out, location{URI: fileURI(site.file), Range: site.text.span(site.span)})
	}
	return out
}

// references lists where the name under the cursor is used: a slot's
// writers and readers, a tool's or sub-plan's calls.
func (s *server) references(d *document, a *analysis, p position, decl bool) []location {
	o := a.at(a.text.offset(p))
	out := []location{}
	if o == nil {
		return out
	}
	for _, q := range a.same(o) {
		if q.def && !decl && q.kind != symSlot {
			continue
		}
		if q.def && !decl && q.kind == symSlot && !isWrite(q) {
			continue
		}
		out = append(out, a.loc(d.uri, q))
	}
	return out
}

// isWrite reports whether a slot's occurrence is a step's output, which
// is a use of the slot, rather than its declaration in the state block.
func isWrite(o occurrence) bool { return o.ref != nil }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// rename renames a state slot (its declaration, writers and readers) or
// a step's label, in the plan whose scope it is in.
func (s *server) rename(d *document, a *analysis, p position, name string) (*workspaceEdit, error) {
	o := a.at(a.text.offset(p))
	if o == nil || (o.kind != symSlot && o.kind != symLabel && o.kind != symItem) {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "only a state slot, a step label or a for each's element can be renamed"}
	}
	if !identRE.MatchString(name) || name == "state" || name == "input" {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: fmt.Sprintf("%q is not a name a plan can use", name)}
	}
	clash := *o
	clash.name = name
	if name != o.name && len(a.same(&clash)) > 0 {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: fmt.Sprintf("%s is already used in this plan", name)}
	}
	var edits []textEdit
	for _, q := range a.same(o) {
		edits = append(edits, textEdit{Range: a.loc(d.uri, q).Range, NewText: name})
	}
	return &workspaceEdit{Changes: map[string][]textEdit{d.uri: edits}}, nil
}

// format lays a .plan document out as `obelisk fmt` does; a JSON plan,
// or text that does not parse, is left as it is.
func (s *server) format(a *analysis) []textEdit {
	if a.json || a.c.File == nil {
		return nil
	}
	f, diags := lang.Parse(a.c.File.Name, []byte(a.text.s))
	if diags.HasErrors() {
		return nil
	}
	out := string(lang.Format(f))
	if out == a.text.s {
		return []textEdit{}
	}
	return []textEdit{{Range: rng{End: a.text.position(len(a.text.s))}, NewText: out}}
}

// symbols lists the plan's declarations and steps, a sub-plan's inside
// it.
func (s *server) symbols(a *analysis) []documentSymbol {
	out := []documentSymbol{}
	if a.c.File == nil {
		return out
	}
	ids := map[*lang.Step]string{}
	if info := a.info(); info != nil {
		for _, p := range info.Plans {
			for _, st := range p.Steps {
				ids[st.Node] = st.ID
			}
		}
	}
	return s.itemSymbols(a, a.c.File.Items, ids)
}

func (s *server) itemSymbols(a *analysis, items []lang.Item, ids map[*lang.Step]string) []documentSymbol {
	out := []documentSymbol{}
	sym := func(name, detail string, kind int, whole lang.Span, sel *lang.Ident) documentSymbol {
		r := a.text.span(whole)
		selr := r
		if sel != nil && sel.Span.IsValid() && sel.Span.Start.Offset >= whole.Start.Offset && sel.Span.End.Offset <= whole.End.Offset {
			selr = a.text.span(sel.Span)
		}
		if name == "" {
			name = "?"
		}
		return documentSymbol{Name: name, Detail: detail, Kind: kind, Range: r, SelectionRange: selr}
	}
	fields := func(fs []*lang.FieldDecl) []documentSymbol {
		var kids []documentSymbol
		for _, f := range fs {
			if f.Name != nil {
				kids = append(kids, sym(f.Name.Name, lang.FormatType(f.Type), symbolField, f.Span, f.Name))
			}
		}
		return kids
	}
	for _, it := range items {
		switch n := it.(type) {
		case *lang.Step:
			name := ids[n]
			if name == "" {
				if n.Label != nil {
					name = n.Label.Name
				} else {
					name = n.Callee()
				}
			}
			var sel *lang.Ident
			if n.Label != nil {
				sel = n.Label
			} else if n.Call != nil {
				sel = n.Call.Tool
			}
			out = append(out, sym(name, n.Callee(), symbolEvent, n.Span, sel))
		case *lang.PlanDecl:
			var name string
			if n.Name != nil {
				name = n.Name.Name
			}
			ds := sym(name, "plan", symbolModule, n.Span, n.Name)
			ds.Children = append(fields(n.Params), s.itemSymbols(a, n.Items, ids)...)
			out = append(out, ds)
		case *lang.InputDecl:
			ds := sym("input", "", symbolStruct, n.Span, nil)
			ds.Children = fields(n.Fields)
			out = append(out, ds)
		case *lang.StateDecl:
			ds := sym("state", "", symbolStruct, n.Span, nil)
			ds.Children = fields(n.Fields)
			out = append(out, ds)
		case *lang.OutputDecl:
			out = append(out, sym("output", "", symbolVariable, n.Span, nil))
		case *lang.ToolDecl:
			var name string
			if n.Name != nil {
				name = n.Name.Name
			}
			out = append(out, sym(name, "tool", symbolInterface, n.Span, n.Name))
		case *lang.TypeDecl:
			var name string
			if n.Name != nil {
				name = n.Name.Name
			}
			out = append(out, sym(name, "type", symbolClass, n.Span, n.Name))
		}
	}
	return out
}
