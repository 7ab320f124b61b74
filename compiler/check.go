package compiler

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/lang"
)

// Config configures Check.
type Config struct {
	// Tools are the operator's tool definitions: the tools files and MCP
	// servers given on the command line, the runtime's built-in tools.
	// Where one defines a tool, that definition is the tool's: calls are
	// checked against it and its effect decides approval. A plan's own
	// declaration of the tool, and an imported file's, must agree with it,
	// or it is a tool-mismatch error. The first definition of a name wins.
	Tools []*lang.ToolDecl
	// Imports is the directory tree `import` reads from: ImportDir of the
	// plan file's directory, usually. ReadImport says which files a plan
	// may import. When Imports is nil, imports are reported as errors.
	Imports fs.FS
	// Strict makes unapproved-effect an error instead of a warning.
	Strict bool
	// HasEvaluator says that an evaluator model will judge the criteria
	// stated in words (`expect "…"`), as vm.Options.Evaluator does. Without
	// one, each such criterion gets an unjudged-criterion warning: the run
	// would record it as unjudged and go on.
	HasEvaluator bool
	// NoFiller says that the run the plan is checked for has no model to
	// fill holes and choose for tasks (vm.Options.Filler is nil): each
	// hole and task is then a no-filler error, since its step could only
	// fail. Left false, a check says nothing of what fills them.
	NoFiller bool
	// Limits bound what an untrusted plan may ask for.
	Limits Limits
	// Hints are the routing hints the operator declares, by name: who a
	// step's `hint` may name, and what each routes a task to. A hint the
	// plan names that is not here is mapped to the closest one, or
	// dropped, with a routing-hint warning; never an error.
	Hints map[string]Hint
}

// Hint is what a routing hint routes a task to: a tool set (the tools of
// an MCP server among them) or a sub-plan. A task with the hint chooses
// among these, narrowed to the candidates it lists when it lists some.
type Hint struct {
	// Tools are the tools a task with the hint may use.
	Tools []string `json:"tools,omitempty"`
	// Plan is a sub-plan that does the work of the hint, by name.
	Plan string `json:"plan,omitempty"`
	// Aliases are other names models give the hint (analyst for
	// researcher), taken as the hint with a warning.
	Aliases []string `json:"aliases,omitempty"`
}

// Limits bound untrusted plans. A zero field takes its default. A plan
// over a limit gets a limit-exceeded diagnostic.
type Limits struct {
	// MaxSteps bounds the steps of a plan and its sub-plans together
	// (default 100000).
	MaxSteps int
	// MaxForEach bounds the `max` of a for each, and is the bound of one
	// that gives none (default 1000).
	MaxForEach int
	// MaxDepth bounds how deeply sub-plans may call each other (default 8).
	MaxDepth int
	// MaxNesting bounds how deeply lists, objects and types nest in the
	// plan's values and declarations (default 100, the parser's own bound).
	MaxNesting int
	// MaxCost bounds the worst-case cost of evaluating one CEL expression,
	// as cel-go estimates it (default 1,000,000, the interpreter's default
	// runtime limit per evaluation).
	MaxCost uint64
	// SizeHint is the size the cost estimate assumes for a list, map or
	// string whose size cannot be known before the run (default 1000).
	SizeHint uint64
}

func (l Limits) withDefaults() Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = 100000
	}
	if l.MaxForEach <= 0 {
		l.MaxForEach = 1000
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 8
	}
	if l.MaxNesting <= 0 {
		l.MaxNesting = 100
	}
	if l.MaxCost == 0 {
		l.MaxCost = 1_000_000
	}
	if l.SizeHint == 0 {
		l.SizeHint = 1000
	}
	return l
}

// Check type-checks a parsed plan. It returns what it resolved, and every
// problem it found, sorted by position. The Info is complete enough to
// compile only when the diagnostics hold no error.
func Check(f *lang.File, cfg Config) (*Info, lang.Diagnostics) {
	c := &checker{
		file:      f,
		cfg:       cfg,
		limits:    cfg.Limits.withDefaults(),
		info:      &Info{File: f, Plans: map[string]*Plan{}, Tools: map[string]*Tool{}, Types: map[string]*Type{}},
		typeDecls: map[string]*lang.TypeDecl{},
		resolving: map[string]*Type{},
		planDecls: map[string]*lang.PlanDecl{},
	}
	c.collect()
	c.checkPlans()
	c.diags.Sort()
	return c.info, c.diags
}

type checker struct {
	file   *lang.File
	cfg    Config
	limits Limits
	info   *Info
	diags  lang.Diagnostics

	typeDecls map[string]*lang.TypeDecl
	resolving map[string]*Type
	planDecls map[string]*lang.PlanDecl
	// planOrder lists sub-plans so that a callee comes before its callers.
	planOrder []string
	steps     int
	// nesting is how deep the value or type being checked is nested.
	nesting int
	// namesakes lists, by a tool's name, the other tools whose names end
	// in "." and that name, sorted: filled when first asked.
	namesakes map[string][]string
}

// namesake returns the tool whose name is another's prefixed with a
// server's name (everything.echo for echo) and that has parameter param,
// or "". When a built-in tool and an MCP server's tool share a name, the
// bare name is the built-in's, and a call meant for the server's tool
// must use the long name.
func (c *checker) namesake(tool, param string) string {
	if c.namesakes == nil {
		c.namesakes = map[string][]string{}
	}
	list, ok := c.namesakes[tool]
	if !ok {
		for name, t := range c.info.Tools {
			if t.Plan == nil && strings.HasSuffix(name, "."+tool) {
				list = append(list, name)
			}
		}
		sort.Strings(list)
		c.namesakes[tool] = list
	}
	for _, name := range list {
		if c.info.Tools[name].Param(param) != nil {
			return name
		}
	}
	return ""
}

// enter counts one more level of nesting of a list, object or type, and
// reports false (after a diagnostic) when it is one too many.
func (c *checker) enter(span lang.Span) bool {
	c.nesting++
	if c.nesting > c.limits.MaxNesting {
		c.errorf(lang.LimitExceeded, span, "lists, objects and types nest more than %d levels deep here", c.limits.MaxNesting)
		return false
	}
	return true
}

func (c *checker) report(sev lang.Severity, code lang.Code, file string, span lang.Span, format string, args ...any) *lang.Diagnostic {
	if file == "" {
		file = c.file.Name
	}
	d := &lang.Diagnostic{Severity: sev, Code: code, Message: fmt.Sprintf(format, args...), File: file, Span: span}
	c.diags = append(c.diags, d)
	return d
}

func (c *checker) errorf(code lang.Code, span lang.Span, format string, args ...any) *lang.Diagnostic {
	return c.report(lang.SeverityError, code, "", span, format, args...)
}

func (c *checker) warnf(code lang.Code, span lang.Span, format string, args ...any) *lang.Diagnostic {
	return c.report(lang.SeverityWarning, code, "", span, format, args...)
}

// related adds a secondary location to a diagnostic.
func related(d *lang.Diagnostic, file string, span lang.Span, format string, args ...any) {
	d.Related = append(d.Related, lang.Related{File: file, Span: span, Message: fmt.Sprintf(format, args...)})
}

// didYouMean returns ` (did you mean "x"?)` for the closest candidate.
func didYouMean(name string, candidates []string) string {
	if s := lang.Closest(name, candidates); s != "" && s != name {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// replaceFix suggests replacing the text of span with text.
func replaceFix(d *lang.Diagnostic, span lang.Span, text, message string) {
	d.Fix = &lang.Fix{Message: message, Edits: []lang.Edit{{File: d.File, Span: span, NewText: text}}}
}

// ---------------------------------------------------------------- declarations

// collect gathers the file's declarations: types, tools (declared,
// imported and configured) and sub-plans.
func (c *checker) collect() {
	seenType := map[string]lang.Span{}
	for _, it := range c.file.Items {
		switch d := it.(type) {
		case *lang.TypeDecl:
			name := d.Name.Name
			if prev, ok := seenType[name]; ok {
				dd := c.errorf(lang.DuplicateDecl, d.Name.Span, "type %s is declared twice", name)
				related(dd, c.file.Name, prev, "first declared here")
				continue
			}
			if _, builtin := builtinTypes[name]; builtin {
				c.errorf(lang.DuplicateDecl, d.Name.Span, "type %s is built in and cannot be declared again", name)
				continue
			}
			seenType[name] = d.Name.Span
			c.typeDecls[name] = d
		case *lang.PlanDecl:
			name := d.Name.Name
			if prev, ok := c.planDecls[name]; ok {
				dd := c.errorf(lang.DuplicateDecl, d.Name.Span, "sub-plan %s is declared twice", name)
				related(dd, c.file.Name, prev.Name.Span, "first declared here")
				continue
			}
			c.planDecls[name] = d
		}
	}
	for name := range c.typeDecls {
		c.info.Types[name] = c.namedType(name, c.typeDecls[name].Name.Span)
	}
	c.collectTools()
}

// namedType resolves a declared or built-in type name.
func (c *checker) namedType(name string, span lang.Span) *Type {
	if t, ok := builtinTypes[name]; ok {
		return t
	}
	if t, ok := c.info.Types[name]; ok {
		return t
	}
	if t, ok := c.resolving[name]; ok {
		return t // a recursive type: the placeholder is filled in below
	}
	d, ok := c.typeDecls[name]
	if !ok {
		names := make([]string, 0, len(c.typeDecls)+len(builtinTypes))
		for n := range c.typeDecls {
			names = append(names, n)
		}
		for n := range builtinTypes {
			names = append(names, n)
		}
		c.errorf(lang.UnknownType, span, "unknown type %s%s", name, didYouMean(name, names))
		return AnyType
	}
	placeholder := &Type{Name: name}
	c.resolving[name] = placeholder
	t := c.typeOf(d.Type)
	if t == placeholder {
		c.errorf(lang.Cycle, d.Name.Span, "type %s is defined as itself", name)
		t = AnyType
	}
	*placeholder = *t
	placeholder.Name = name
	delete(c.resolving, name)
	c.info.Types[name] = placeholder
	return placeholder
}

// typeOf converts a type expression to a type.
func (c *checker) typeOf(te lang.TypeExpr) *Type {
	switch te := te.(type) {
	case nil:
		return AnyType
	case *lang.NamedType:
		return c.namedType(te.Name, te.Span)
	case *lang.ListType:
		defer func() { c.nesting-- }()
		if !c.enter(te.Span) {
			return AnyType
		}
		return ListOf(c.typeOf(te.Elem))
	case *lang.OptionalType:
		return c.typeOf(te.Elem).orNull()
	case *lang.EnumType:
		t := &Type{Kind: KindEnum}
		for _, v := range te.Values {
			if v.Kind == lang.LitNull {
				t.Nullable = true
				continue
			}
			if !containsValue(t.Values, v.Value) {
				t.Values = append(t.Values, v.Value)
			}
		}
		if len(t.Values) == 0 {
			return NullType
		}
		return t
	case *lang.ObjectType:
		defer func() { c.nesting-- }()
		if !c.enter(te.Span) {
			return AnyType
		}
		t := &Type{Kind: KindObject}
		seen := map[string]bool{}
		for _, f := range te.Fields {
			if seen[f.Name.Name] {
				c.errorf(lang.DuplicateDecl, f.Name.Span, "field %s is declared twice", f.Name.Name)
				continue
			}
			seen[f.Name.Name] = true
			t.Fields = append(t.Fields, &Field{Name: f.Name.Name, Type: c.typeOf(f.Type), Optional: f.Optional, Doc: f.Doc()})
		}
		return t.indexed()
	}
	return AnyType
}

// toolSource is a tool declaration and the file it comes from.
type toolSource struct {
	decl *lang.ToolDecl
	file string
	imp  *lang.ImportDecl // the import that read it
}

// collectTools resolves the tools a plan can call. The operator's
// definitions (Config.Tools) come first: a plan's own declaration of one
// of them, or an imported file's, must agree with it, and the operator's
// is the tool. Then come the plan's own declarations, then imported
// files'. `tool name` without a signature takes its signature from the
// operator's definition or an import.
func (c *checker) collectTools() {
	own := map[string]*lang.ToolDecl{}
	var ownOrder []*lang.ToolDecl
	for _, it := range c.file.Items {
		d, ok := it.(*lang.ToolDecl)
		if !ok {
			continue
		}
		if prev, ok := own[d.Name.Name]; ok {
			dd := c.errorf(lang.DuplicateDecl, d.Name.Span, "tool %s is declared twice", d.Name.Name)
			related(dd, c.file.Name, prev.Name.Span, "first declared here")
			continue
		}
		if _, ok := c.planDecls[d.Name.Name]; ok {
			c.errorf(lang.DuplicateDecl, d.Name.Span, "%s is declared both as a tool and as a sub-plan", d.Name.Name)
			continue
		}
		own[d.Name.Name] = d
		ownOrder = append(ownOrder, d)
	}
	operator := map[string]*lang.ToolDecl{}
	for _, d := range c.cfg.Tools {
		if _, ok := operator[d.Name.Name]; !ok && d.HasSignature {
			operator[d.Name.Name] = d
		}
	}
	for name, p := range c.planDecls {
		if operator[name] != nil {
			// A call by that name would run the plan's steps, not the
			// operator's tool.
			c.errorf(lang.DuplicateDecl, p.Name.Span, "sub-plan %s has the name of a tool the operator defines: rename the sub-plan", name)
		}
	}
	operatorTools := map[string]*Tool{}
	operatorTool := func(name string) *Tool {
		t, ok := operatorTools[name]
		if !ok {
			t = c.tool(operator[name], "")
			operatorTools[name] = t
		}
		return t
	}
	imported := map[string]toolSource{}
	for _, it := range c.file.Items {
		imp, ok := it.(*lang.ImportDecl)
		if !ok {
			continue
		}
		file, decls := c.importTools(imp)
		for _, d := range decls {
			if !d.HasSignature {
				continue
			}
			src := toolSource{d, file, imp}
			if _, ok := operator[d.Name.Name]; ok {
				c.agreeImported(src, operatorTool(d.Name.Name))
			}
			if _, ok := imported[d.Name.Name]; !ok {
				imported[d.Name.Name] = src
			}
		}
	}
	names := make([]string, 0, len(operator)+len(imported))
	for n := range operator {
		names = append(names, n)
	}
	for n := range imported {
		if operator[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, d := range ownOrder {
		name := d.Name.Name
		switch src, fromImport := imported[name]; {
		case operator[name] != nil:
			op := operatorTool(name)
			if d.HasSignature {
				c.agree(d, op)
			}
			c.info.Tools[name] = op
		case d.HasSignature:
			c.info.Tools[name] = c.tool(d, c.file.Name)
		case fromImport:
			c.info.Tools[name] = c.importedTool(src)
		default:
			c.errorf(lang.UnknownTool, d.Name.Span, "tool %s is declared without a signature, and no tools file provides it%s: give its signature, or give the checker a tools file that provides it (compiler.Config.Tools)",
				name, didYouMean(name, names))
		}
	}
	for _, n := range names {
		if _, ok := own[n]; ok {
			continue
		}
		if _, ok := c.planDecls[n]; ok {
			continue
		}
		if operator[n] != nil {
			c.info.Tools[n] = operatorTool(n)
		} else {
			c.info.Tools[n] = c.importedTool(imported[n])
		}
	}
}

// importTools reads the tools file an import names. It returns the name
// the file was read under and its declarations. What it reports of the
// file says where a problem is, never what the file holds: a plan may
// name a file whose content it has no right to see.
func (c *checker) importTools(imp *lang.ImportDecl) (string, []*lang.ToolDecl) {
	path := imp.Path.StringValue()
	name, data, err := ReadImport(c.cfg.Imports, path)
	if err != nil {
		c.errorf(lang.ImportError, imp.Path.Span, "cannot import %s: %v", lang.Quote(path), err)
		return path, nil
	}
	if !slices.ContainsFunc(c.info.Imports, func(f Import) bool { return f.Name == name }) {
		c.info.Imports = append(c.info.Imports, Import{Name: name, Text: data})
	}
	decls, diags := lang.ParseTools(name, data)
	if len(diags) > 0 {
		diags.Sort()
		d := c.errorf(lang.ImportError, imp.Path.Span, "cannot import %s: it is not a tools file this checker can read (%s); an imported file's text is never shown: give the checker the file as the operator's tools (compiler.Config.Tools) to see what is wrong",
			lang.Quote(path), where(diags[0].Span))
		related(d, name, diags[0].Span, "the first problem is here")
	}
	for _, d := range decls {
		d.Binding = withoutText(d.Binding)
	}
	return name, decls
}

// withoutText keeps what a binding is (its kind and file) and drops its
// text: an imported file's http or command block is never bound.
func withoutText(b *lang.ToolBinding) *lang.ToolBinding {
	if b == nil {
		return nil
	}
	return &lang.ToolBinding{Span: b.Span, Kind: b.Kind, File: b.File}
}

// where says where a span starts, in words.
func where(span lang.Span) string {
	if !span.IsValid() {
		return "the file is not valid"
	}
	return fmt.Sprintf("the first problem is at line %d, column %d", span.Start.Line, span.Start.Column)
}

// importedTool converts an imported declaration. Its problems are
// reported at the import, with where they are and not what they are (see
// importTools).
func (c *checker) importedTool(src toolSource) *Tool {
	n := len(c.diags)
	t := c.tool(src.decl, src.file)
	if len(c.diags) > n {
		first := c.diags[n]
		c.diags = c.diags[:n]
		d := c.errorf(lang.ImportError, src.imp.Path.Span, "cannot import %s: a tool in it is declared wrongly (%s); an imported file's text is never shown: give the checker the file as the operator's tools (compiler.Config.Tools) to see what is wrong",
			lang.Quote(src.imp.Path.StringValue()), where(first.Span))
		related(d, src.file, first.Span, "the first problem is here")
	}
	return t
}

// agree reports where a plan's own declaration of a tool disagrees with
// the operator's definition op: a parameter op lacks or types otherwise, a
// parameter op requires that the declaration omits or makes optional, a
// declared result op's does not fit, an effect weaker than op's.
func (c *checker) agree(d *lang.ToolDecl, op *Tool) {
	t := c.tool(d, c.file.Name)
	for _, m := range disagreements(d, t, op) {
		dd := c.errorf(lang.ToolMismatch, m.span, "%s", m.message(op, c.file.JSON))
		if m.weakEffect && !c.file.JSON {
			replaceFix(dd, m.span, op.Effect.String(), "declare it "+op.Effect.String()+", as the operator's definition is")
		}
	}
}

// agreeImported reports an imported declaration that disagrees with the
// operator's definition op, at the import, saying which part disagrees and
// not what the file says.
func (c *checker) agreeImported(src toolSource, op *Tool) {
	t := c.importedTool(src)
	ms := disagreements(src.decl, t, op)
	if len(ms) == 0 {
		return
	}
	what := "parameters or a result the operator's definition does not accept"
	if slices.ContainsFunc(ms, func(m mismatch) bool { return m.weakEffect }) {
		what = "a weaker effect than the operator's definition, which is " + op.Effect.String()
	}
	d := c.errorf(lang.ToolMismatch, src.imp.Path.Span, "the imported file %s declares tool %s with %s: remove the tool from the file, or drop the import (the operator's tools need none)",
		lang.Quote(src.imp.Path.StringValue()), op.Name, what)
	related(d, src.file, src.decl.Name.Span, "tool %s is declared here", op.Name)
}

// mismatch is one way a declaration disagrees with the operator's
// definition of a tool: text says how, or weakEffect is set and declared
// is the effect declared.
type mismatch struct {
	span       lang.Span
	text       string
	weakEffect bool
	declared   Effect
}

// message is the mismatch's message, in the JSON form's terms when json
// is set; op is the operator's definition.
func (m mismatch) message(op *Tool, json bool) string {
	if !m.weakEffect {
		return m.text
	}
	if json {
		return fmt.Sprintf("tool %s is declared %s (%s), but the operator's definition is %s: drop the tool message, or declare it %s (%s)",
			op.Name, m.declared, effectHint[m.declared], op.Effect, op.Effect, effectHint[op.Effect])
	}
	return fmt.Sprintf("tool %s is declared %s, but the operator's definition is %s: drop the declaration, or declare it %s",
		op.Name, m.declared, op.Effect, op.Effect)
}

// effectHint is the MCP annotation that declares an effect.
var effectHint = [...]string{Irreversible: `"destructiveHint": true`, Idempotent: `"idempotentHint": true`, Pure: `"readOnlyHint": true`}

// disagreements compares a declaration d (converted to t) with the
// operator's definition op of the same tool.
func disagreements(d *lang.ToolDecl, t, op *Tool) []mismatch {
	var out []mismatch
	add := func(span lang.Span, format string, args ...any) {
		out = append(out, mismatch{span: span, text: fmt.Sprintf(format, args...)})
	}
	declared := make(map[string]*Param, len(t.Params))
	for _, p := range t.Params {
		declared[p.Name] = p
	}
	spans := make(map[string]lang.Span, len(d.Params))
	for _, p := range d.Params {
		if _, ok := spans[p.Name.Name]; !ok {
			spans[p.Name.Name] = p.Name.Span
		}
	}
	opNames := make([]string, len(op.Params))
	for i, p := range op.Params {
		opNames[i] = p.Name
	}
	for _, p := range t.Params {
		q := op.Param(p.Name)
		if q == nil {
			add(spans[p.Name], "tool %s declares parameter %s, which the operator's definition does not have%s: drop it (its parameters: %s)",
				op.Name, p.Name, didYouMean(p.Name, opNames), strings.Join(opNames, ", "))
			continue
		}
		if ok, why := Assignable(p.Type, q.Type); !ok {
			add(spans[p.Name], "parameter %s of tool %s is declared %s, but the operator's definition takes %s (%s): declare it %s", p.Name, op.Name, p.Type, q.Type, why, q.Type)
		}
	}
	for _, q := range op.Params {
		if q.Optional || q.HasDefault {
			continue
		}
		switch p := declared[q.Name]; {
		case p == nil:
			add(d.Name.Span, "tool %s does not declare parameter %s, which the operator's definition requires: declare %s: %s", op.Name, q.Name, q.Name, q.Type)
		case p.Optional || p.HasDefault:
			add(spans[q.Name], "parameter %s of tool %s is declared optional, but the operator's definition requires it: declare it without ? or a default", q.Name, op.Name)
		}
	}
	if d.Result != nil {
		if ok, why := Assignable(op.Result, t.Result); !ok {
			add(d.Result.Range(), "tool %s is declared to return %s, but the operator's definition returns %s (%s): declare -> %s, or drop the result type", op.Name, t.Result, op.Result, why, op.Result)
		}
	}
	if t.Effect > op.Effect { // the effects go from the most dangerous up
		span := d.Name.Span
		for _, a := range d.Attrs {
			if a.Name.Name == t.Effect.String() {
				span = a.Name.Span
			}
		}
		out = append(out, mismatch{span: span, weakEffect: true, declared: t.Effect})
	}
	return out
}

// tool converts a tool declaration.
func (c *checker) tool(d *lang.ToolDecl, file string) *Tool {
	t := &Tool{Name: d.Name.Name, Doc: d.Doc(), Result: c.typeOf(d.Result), Decl: d, File: file, InputSchema: d.InputSchema}
	seen := make(map[string]bool, len(d.Params))
	mem := make([]Param, len(d.Params)) // one allocation for all the parameters
	if len(d.Params) > 0 {
		t.Params = make([]*Param, 0, len(d.Params))
	}
	for i, p := range d.Params {
		if seen[p.Name.Name] {
			c.report(lang.SeverityError, lang.DuplicateDecl, file, p.Name.Span, "parameter %s of %s is declared twice", p.Name.Name, d.Name.Name)
			continue
		}
		seen[p.Name.Name] = true
		param := &mem[i]
		*param = Param{Name: p.Name.Name, Type: c.typeOf(p.Type), Optional: p.Optional, Doc: p.Doc()}
		if p.Default != nil {
			v, ok := constValue(p.Default)
			if !ok {
				c.report(lang.SeverityError, lang.TypeMismatch, file, p.Default.Range(), "the default of parameter %s must be a constant", p.Name.Name)
			} else if cv, msg := Conform(v, param.Type, ""); msg != "" {
				c.report(lang.SeverityError, lang.TypeMismatch, file, p.Default.Range(), "default of parameter %s: %s", p.Name.Name, msg)
			} else {
				param.Default, param.HasDefault = cv, true
			}
		}
		t.Params = append(t.Params, param)
	}
	effects := 0
	for _, a := range d.Attrs {
		switch a.Name.Name {
		case "pure":
			t.Effect = Pure
			effects++
		case "idempotent":
			t.Effect = Idempotent
			effects++
		case "irreversible":
			t.Effect = Irreversible
			effects++
		case "model":
			t.Model = true
		case "latency":
			t.Latency = a.Value.Duration()
		case "tokens":
			t.Tokens = int(a.Value.IntValue())
		}
	}
	if effects > 1 {
		c.report(lang.SeverityError, lang.InvalidOption, file, d.Name.Span, "tool %s declares more than one effect: pick one of pure, idempotent, irreversible", d.Name.Name)
	}
	return t
}

// constValue returns the value of a constant expression (literals, and
// lists and objects of them).
func constValue(e lang.Expr) (any, bool) {
	switch e := e.(type) {
	case *lang.Literal:
		if e.Kind == lang.LitDuration {
			return nil, false
		}
		return e.Value, true
	case *lang.ListExpr:
		out := make([]any, 0, len(e.Elems))
		for _, el := range e.Elems {
			v, ok := constValue(el)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case *lang.ObjectExpr:
		out := make(map[string]any, len(e.Fields))
		for _, f := range e.Fields {
			v, ok := constValue(f.Value)
			if !ok {
				return nil, false
			}
			out[f.Key.Name] = v
		}
		return out, true
	}
	return nil, false
}

// ---------------------------------------------------------------- plans

// checkPlans checks the sub-plans, callees before callers, then the main
// plan.
func (c *checker) checkPlans() {
	c.orderSubPlans()
	for _, name := range c.planOrder {
		d := c.planDecls[name]
		p := &Plan{Name: name, Span: d.Span, Policy: Policy{Action: "abort"}}
		c.info.Plans[name] = p
		c.checkPlan(p, d.Items, d.Params, d.Result)
		c.info.Tools[name] = c.subPlanTool(p, d)
	}
	main := &Plan{Span: c.file.Span, Policy: Policy{Action: "abort"}}
	c.info.Main = main
	c.info.Plans[""] = main
	c.checkPlan(main, c.file.Items, nil, nil)
	if len(main.Steps) == 0 && main.Output == nil {
		c.emptyPlan()
	}
	if c.steps > c.limits.MaxSteps {
		d := c.errorf(lang.LimitExceeded, c.file.Span, "the plan has %d steps, more than the limit of %d (compiler.Limits.MaxSteps)", c.steps, c.limits.MaxSteps)
		d.Fix = &lang.Fix{Message: fewerSteps(c.file.JSON)}
	}
}

// fewerSteps says how to write a plan in fewer steps without dropping
// work: a for each is one step however many calls it makes.
func fewerSteps(json bool) string {
	if json {
		return `a call with "_forEach" is one step, however many elements it calls the tool for: write the calls of one tool that differ only in their arguments as one call over a list of those arguments ({"_tool": "lookup", "id": "†id", "_forEach": "[\"a\", \"b\"]", "_as": "id", "_outputPath": "†state.found"}), and leave out the calls the goal does not need`
	}
	return "a for each is one step, however many elements it calls its tool for: write the calls of one tool that differ only in their arguments as one for each over a list of those arguments (found: for each id in [\"a\", \"b\"]: lookup(id: †id) -> †state.found), and leave out the steps the goal does not need"
}

// emptyPlan reports a plan that has no steps and no output: it would run,
// do nothing and print an empty state, which is almost always a mistake
// (an empty file, or a model's answer that lost its plan).
func (c *checker) emptyPlan() {
	start := c.file.Span.Start
	if !start.IsValid() {
		start = lang.Pos{Line: 1, Column: 1}
	}
	span := lang.Span{Start: start, End: start}
	if c.file.JSON {
		c.errorf(lang.EmptyPlan, span, "the plan has no calls and no output, so it does nothing: give the calls in the plan message's \"plan\" array, or as a bare array of calls")
		return
	}
	c.errorf(lang.EmptyPlan, span, "the plan has no steps and no output, so it does nothing: write its steps, such as tool(arg: †input.x) -> †state.slot, and an output")
}

// orderSubPlans sorts the sub-plans so that each comes after the ones it
// calls, and reports calls that loop.
func (c *checker) orderSubPlans() {
	names := make([]string, 0, len(c.planDecls))
	for n := range c.planDecls {
		names = append(names, n)
	}
	sort.Strings(names)
	calls := map[string][]string{}
	for _, n := range names {
		for _, s := range lang.Steps(c.planDecls[n].Items) {
			for _, callee := range c.callees(s) {
				if _, ok := c.planDecls[callee]; ok {
					calls[n] = append(calls[n], callee)
				}
			}
		}
	}
	state := map[string]int{} // 0 new, 1 on the stack, 2 done
	var stack []string
	var visit func(n string, depth int)
	visit = func(n string, depth int) {
		switch state[n] {
		case 2:
			return
		case 1:
			i := slices.Index(stack, n)
			path := append(slices.Clone(stack[i:]), n)
			d := c.errorf(lang.Cycle, c.planDecls[n].Name.Span, "cycle: sub-plans call each other: %s", strings.Join(path, " -> "))
			for _, from := range path[:len(path)-1] {
				related(d, c.file.Name, c.planDecls[from].Name.Span, "sub-plan %s", from)
			}
			return
		}
		if depth > c.limits.MaxDepth {
			c.errorf(lang.LimitExceeded, c.planDecls[n].Name.Span, "sub-plans nest more than %d deep", c.limits.MaxDepth)
			return
		}
		state[n] = 1
		stack = append(stack, n)
		for _, callee := range calls[n] {
			visit(callee, depth+1)
		}
		stack = stack[:len(stack)-1]
		state[n] = 2
		c.planOrder = append(c.planOrder, n)
	}
	for _, n := range names {
		visit(n, 1)
	}
}

// subPlanTool is the signature under which a sub-plan is called.
func (c *checker) subPlanTool(p *Plan, d *lang.PlanDecl) *Tool {
	t := &Tool{Name: p.Name, Doc: d.Doc(), Plan: p, File: c.file.Name, Effect: Pure}
	for _, f := range p.Input.Fields {
		param := &Param{Name: f.Name, Type: f.Type, Optional: f.Optional, Doc: f.Doc}
		if v, ok := p.InputDefaults[f.Name]; ok {
			param.Default, param.HasDefault = v, true
		}
		t.Params = append(t.Params, param)
	}
	t.Result = p.OutputType
	if d.Result != nil {
		declared := c.typeOf(d.Result)
		if p.Output != nil {
			if ok, why := fits(p.Output, declared); !ok {
				c.errorf(lang.TypeMismatch, p.Output.Span, "the output of sub-plan %s does not match its declared result %s: %s", p.Name, declared, why)
			}
		}
		t.Result = declared
	}
	// A sub-plan is as dangerous as the worst step it runs without a gate
	// of its own; its caller's gate covers those.
	for _, s := range p.Steps {
		if (s.Tool != nil || s.Task != nil) && !s.Approve && !p.Approve {
			t.Effect = min(t.Effect, stepEffect(s))
		}
		if s.Tool != nil && s.Tool.Model || s.Task != nil || len(s.Holes()) > 0 {
			t.Model = true
		}
	}
	return t
}

// stepEffect is the most dangerous effect a step may have: its tool's or
// its fallback's.
func stepEffect(s *Step) Effect {
	e := Pure
	if s.Result != nil {
		return Pure // the tool is not called
	}
	if s.Tool != nil {
		e = s.Tool.Effect
	}
	if s.Task != nil {
		for _, c := range s.Task.Candidates {
			e = min(e, c.Effect)
		}
	}
	if s.Fallback != nil && s.Fallback.Tool != nil {
		e = min(e, s.Fallback.Tool.Effect)
	}
	return e
}

// durationOf returns a duration literal's value.
func durationOf(l *lang.Literal) time.Duration { return l.Duration() }
