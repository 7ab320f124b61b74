package lang

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format prints a file in the canonical layout: two-space indentation, one
// step option per line, comments and blank lines kept (runs of blank lines
// become one). Calls, lists and objects keep the one-line or one-element-
// per-line layout they were written in. Format(Parse(text)) is idempotent,
// and parsing its output gives back the same tree.
func Format(f *File) []byte {
	pr := &printer{}
	pr.items(f.Items, 0)
	for i, c := range f.Trailing {
		if c.BlankBefore && (i > 0 || pr.b.Len() > 0) {
			pr.nl()
		}
		pr.b.WriteString(c.Text)
		pr.nl()
	}
	return pr.b.Bytes()
}

// FormatItem prints one item in the canonical layout, with its comments.
func FormatItem(it Item) string {
	pr := &printer{}
	pr.item(it, 0, true)
	return pr.b.String()
}

// FormatExpr prints an expression in the canonical layout.
func FormatExpr(e Expr) string {
	pr := &printer{}
	pr.expr(e, 0)
	return pr.b.String()
}

// FormatType prints a type in the canonical layout.
func FormatType(t TypeExpr) string {
	pr := &printer{}
	pr.typ(t, 0)
	return pr.b.String()
}

type printer struct {
	b bytes.Buffer
}

func (pr *printer) nl() { pr.b.WriteByte('\n') }

func (pr *printer) indent(n int) {
	for range n {
		pr.b.WriteString("  ")
	}
}

func (pr *printer) items(items []Item, ind int) {
	for i, it := range items {
		pr.item(it, ind, i == 0)
	}
}

// comments prints leading comments; first suppresses a blank line at the
// start of a file or block.
func (pr *printer) leading(c *Comments, ind int, first bool) {
	for i, l := range c.Leading {
		if l.BlankBefore && !(first && i == 0) {
			pr.nl()
		}
		pr.indent(ind)
		pr.b.WriteString(l.Text)
		pr.nl()
	}
	if c.BlankBefore && !(first && len(c.Leading) == 0) {
		pr.nl()
	}
}

func (pr *printer) trailing(c *Comments) {
	if c.Trailing != nil {
		pr.b.WriteString("  ")
		pr.b.WriteString(c.Trailing.Text)
	}
}

func (pr *printer) item(it Item, ind int, first bool) {
	c := it.Meta()
	pr.leading(c, ind, first)
	pr.indent(ind)
	switch n := it.(type) {
	case *ModeDecl:
		pr.b.WriteString("mode ")
		pr.b.WriteString(n.Mode.Name)
	case *PolicyDecl:
		pr.b.WriteString("on failure ")
		pr.b.WriteString(n.Action.Name)
		if n.Max != nil {
			pr.b.WriteString(" max ")
			pr.literal(n.Max)
		}
	case *ApproveDecl:
		pr.b.WriteString("approve")
		if n.Message != nil {
			pr.b.WriteByte(' ')
			pr.literal(n.Message)
		}
	case *ImportDecl:
		pr.b.WriteString("import ")
		pr.literal(n.Path)
	case *TypeDecl:
		pr.b.WriteString("type ")
		pr.b.WriteString(n.Name.Name)
		pr.b.WriteByte(' ')
		pr.typ(n.Type, ind)
	case *ToolDecl:
		pr.toolDecl(n, ind)
	case *InputDecl:
		pr.b.WriteString("input ")
		pr.fieldBlock(n.Fields, ind)
	case *StateDecl:
		pr.b.WriteString("state ")
		pr.fieldBlock(n.Fields, ind)
	case *PlanDecl:
		pr.b.WriteString("plan ")
		pr.b.WriteString(n.Name.Name)
		pr.params(n.Params, n.MultilineParams, ind)
		if n.Result != nil {
			pr.b.WriteString(" -> ")
			pr.typ(n.Result, ind)
		}
		pr.b.WriteString(" {")
		pr.nl()
		pr.items(n.Items, ind+1)
		for i, cm := range n.Closing {
			if cm.BlankBefore && (i > 0 || len(n.Items) > 0) {
				pr.nl()
			}
			pr.indent(ind + 1)
			pr.b.WriteString(cm.Text)
			pr.nl()
		}
		pr.indent(ind)
		pr.b.WriteByte('}')
	case *OutputDecl:
		pr.b.WriteString("output ")
		pr.expr(n.Value, ind)
	case *Step:
		pr.step(n, ind)
		return
	}
	pr.trailing(c)
	pr.nl()
}

func (pr *printer) step(s *Step, ind int) {
	if s.Label != nil {
		pr.b.WriteString(s.Label.Name)
		pr.b.WriteString(": ")
	}
	if s.Each != nil {
		pr.b.WriteString("for each ")
		pr.b.WriteString(s.Each.Var.Name)
		pr.b.WriteString(" in ")
		pr.expr(s.Each.List, ind)
		if s.Each.Max != nil {
			pr.b.WriteString(" max ")
			pr.literal(s.Each.Max)
		}
		pr.b.WriteString(": ")
	}
	if s.Task != nil {
		pr.task(s.Task)
	} else {
		pr.call(s.Call, ind)
	}
	if s.Out != nil {
		pr.b.WriteString(" -> ")
		pr.ref(s.Out.Success)
		if s.Out.Error != nil {
			pr.b.WriteString(" || ")
			pr.ref(s.Out.Error)
		}
	}
	if len(s.Options) == 0 {
		pr.trailing(&s.Comments)
		pr.nl()
		return
	}
	pr.lineComment(s, 0)
	pr.nl()
	for i, o := range s.Options {
		pr.indent(ind + 1)
		pr.option(o, ind+1)
		if i == len(s.Options)-1 {
			pr.trailing(&s.Comments)
		} else {
			pr.lineComment(s, i+1)
		}
		pr.nl()
	}
}

// task prints `task "goal" using [a, b]`.
func (pr *printer) task(t *Task) {
	pr.b.WriteString("task ")
	pr.literal(t.Goal)
	if t.Using == nil {
		return
	}
	pr.b.WriteString(" using [")
	for i, u := range t.Using {
		if i > 0 {
			pr.b.WriteString(", ")
		}
		pr.b.WriteString(u.Name)
	}
	pr.b.WriteByte(']')
}

func (pr *printer) lineComment(s *Step, i int) {
	if i < len(s.LineComments) && s.LineComments[i] != nil {
		pr.b.WriteString("  ")
		pr.b.WriteString(s.LineComments[i].Text)
	}
}

func (pr *printer) option(o Option, ind int) {
	pr.b.WriteString(o.Keyword())
	switch o := o.(type) {
	case *WhenOption:
		pr.b.WriteByte(' ')
		pr.expr(o.Cond, ind)
	case *ExpectOption:
		pr.b.WriteByte(' ')
		pr.expr(o.Cond, ind)
	case *RetryOption:
		pr.b.WriteByte(' ')
		pr.literal(o.Count)
		if o.Backoff != nil {
			pr.b.WriteString(" backoff ")
			pr.literal(o.Backoff)
		}
	case *TimeoutOption:
		pr.b.WriteByte(' ')
		pr.literal(o.Duration)
	case *FallbackOption:
		pr.b.WriteByte(' ')
		pr.call(o.Call, ind)
	case *ApproveOption:
		if o.Message != nil {
			pr.b.WriteByte(' ')
			pr.literal(o.Message)
		}
	case *ResultOption:
		pr.b.WriteByte(' ')
		pr.expr(o.Value, ind)
	case *HintOption:
		pr.b.WriteByte(' ')
		pr.name(o.Name)
	}
}

func (pr *printer) call(c *Call, ind int) {
	pr.b.WriteString(c.Tool.Name)
	pr.b.WriteByte('(')
	if c.Multiline && len(c.Args) > 0 {
		pr.nl()
		for _, a := range c.Args {
			pr.indent(ind + 1)
			pr.name(a.Name)
			pr.b.WriteString(": ")
			pr.expr(a.Value, ind+1)
			pr.b.WriteByte(',')
			pr.nl()
		}
		pr.indent(ind)
	} else {
		for i, a := range c.Args {
			if i > 0 {
				pr.b.WriteString(", ")
			}
			pr.name(a.Name)
			pr.b.WriteString(": ")
			pr.expr(a.Value, ind)
		}
	}
	pr.b.WriteByte(')')
}

func (pr *printer) toolDecl(n *ToolDecl, ind int) {
	pr.b.WriteString("tool ")
	pr.b.WriteString(n.Name.Name)
	if !n.HasSignature {
		return
	}
	pr.params(n.Params, n.MultilineParams, ind)
	if n.Result != nil {
		pr.b.WriteString(" -> ")
		pr.typ(n.Result, ind)
	}
	for _, a := range n.Attrs {
		pr.b.WriteByte(' ')
		pr.b.WriteString(a.Name.Name)
		if a.Value != nil {
			pr.b.WriteByte(' ')
			pr.literal(a.Value)
		}
	}
}

// params prints a parameter list on one line, or one parameter per line
// when it was written so or any parameter has comments.
func (pr *printer) params(fields []*FieldDecl, multiline bool, ind int) {
	if !multiline && !fieldsNeedLines(fields) {
		pr.b.WriteByte('(')
		for i, f := range fields {
			if i > 0 {
				pr.b.WriteString(", ")
			}
			pr.field(f, ind)
		}
		pr.b.WriteByte(')')
		return
	}
	pr.b.WriteByte('(')
	pr.nl()
	pr.fieldLines(fields, ind+1, ",")
	pr.indent(ind)
	pr.b.WriteByte(')')
}

func fieldsNeedLines(fields []*FieldDecl) bool {
	for _, f := range fields {
		if len(f.Leading) > 0 || f.Trailing != nil || f.BlankBefore {
			return true
		}
	}
	return false
}

func (pr *printer) fieldBlock(fields []*FieldDecl, ind int) {
	if len(fields) == 0 {
		pr.b.WriteString("{}")
		return
	}
	pr.b.WriteByte('{')
	pr.nl()
	pr.fieldLines(fields, ind+1, "")
	pr.indent(ind)
	pr.b.WriteByte('}')
}

func (pr *printer) fieldLines(fields []*FieldDecl, ind int, sep string) {
	for i, f := range fields {
		pr.leading(&f.Comments, ind, i == 0)
		pr.indent(ind)
		pr.field(f, ind)
		pr.b.WriteString(sep)
		pr.trailing(&f.Comments)
		pr.nl()
	}
}

func (pr *printer) field(f *FieldDecl, ind int) {
	pr.name(f.Name)
	if f.Optional {
		pr.b.WriteByte('?')
	}
	pr.b.WriteString(": ")
	pr.typ(f.Type, ind)
	if f.Default != nil {
		pr.b.WriteString(" = ")
		pr.expr(f.Default, ind)
	}
}

func (pr *printer) typ(t TypeExpr, ind int) {
	switch t := t.(type) {
	case *NamedType:
		pr.b.WriteString(t.Name)
	case *ListType:
		pr.b.WriteByte('[')
		pr.typ(t.Elem, ind)
		pr.b.WriteByte(']')
	case *OptionalType:
		pr.typ(t.Elem, ind)
		pr.b.WriteByte('?')
	case *EnumType:
		for i, v := range t.Values {
			if i > 0 {
				pr.b.WriteString(" | ")
			}
			pr.literal(v)
		}
	case *ObjectType:
		if t.Multiline || fieldsNeedLines(t.Fields) {
			pr.fieldBlock(t.Fields, ind)
			return
		}
		pr.b.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				pr.b.WriteString(", ")
			}
			pr.field(f, ind)
		}
		pr.b.WriteByte('}')
	}
}

func (pr *printer) expr(e Expr, ind int) {
	switch e := e.(type) {
	case *Literal:
		pr.literal(e)
	case *Ref:
		pr.ref(e)
	case *CELExpr:
		pr.b.WriteString(e.Text)
	case *HoleExpr:
		pr.b.WriteString("? ")
		pr.literal(e.Instruction)
	case *ListExpr:
		if e.Multiline && len(e.Elems) > 0 {
			pr.b.WriteByte('[')
			pr.nl()
			for _, el := range e.Elems {
				pr.indent(ind + 1)
				pr.expr(el, ind+1)
				pr.b.WriteByte(',')
				pr.nl()
			}
			pr.indent(ind)
			pr.b.WriteByte(']')
			return
		}
		pr.b.WriteByte('[')
		for i, el := range e.Elems {
			if i > 0 {
				pr.b.WriteString(", ")
			}
			pr.expr(el, ind)
		}
		pr.b.WriteByte(']')
	case *ObjectExpr:
		multi := e.Multiline
		for _, f := range e.Fields {
			if len(f.Leading) > 0 || f.Trailing != nil {
				multi = true
			}
		}
		if multi && len(e.Fields) > 0 {
			pr.b.WriteByte('{')
			pr.nl()
			for i, f := range e.Fields {
				pr.leading(&f.Comments, ind+1, i == 0)
				pr.indent(ind + 1)
				pr.name(f.Key)
				pr.b.WriteString(": ")
				pr.expr(f.Value, ind+1)
				pr.trailing(&f.Comments)
				pr.nl()
			}
			pr.indent(ind)
			pr.b.WriteByte('}')
			return
		}
		pr.b.WriteByte('{')
		for i, f := range e.Fields {
			if i > 0 {
				pr.b.WriteString(", ")
			}
			pr.name(f.Key)
			pr.b.WriteString(": ")
			pr.expr(f.Value, ind)
		}
		pr.b.WriteByte('}')
	}
}

func (pr *printer) name(id *Ident) {
	if id.Quoted || !isPlainName(id.Name) {
		pr.b.WriteString(Quote(id.Name))
		return
	}
	pr.b.WriteString(id.Name)
}

func (pr *printer) ref(r *Ref) { writeRef(&pr.b, r, r.ASCII) }

// textWriter is what the printer writes to: a bytes.Buffer or a
// strings.Builder.
type textWriter interface {
	WriteString(s string) (int, error)
	WriteByte(c byte) error
	WriteRune(r rune) (int, error)
}

func writeRef(b textWriter, r *Ref, ascii bool) {
	if ascii {
		b.WriteByte('$')
	} else {
		b.WriteRune(daggerRune)
	}
	if r.Root != nil {
		b.WriteString(r.Root.Name)
	}
	for _, el := range r.Path {
		switch {
		case el.IsIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(el.Index))
			b.WriteByte(']')
		case el.Quoted || !isPlainName(el.Field):
			b.WriteByte('[')
			b.WriteString(Quote(el.Field))
			b.WriteByte(']')
		default:
			b.WriteByte('.')
			b.WriteString(el.Field)
		}
	}
}

func (pr *printer) literal(l *Literal) {
	pr.b.WriteString(literalText(l))
}

// literalText returns the canonical text of a literal: numbers as written,
// strings double-quoted with JSON escapes.
func literalText(l *Literal) string {
	switch l.Kind {
	case LitNull:
		return "null"
	case LitBool:
		if l.Value.(bool) {
			return "true"
		}
		return "false"
	case LitString:
		return Quote(l.Value.(string))
	case LitInt:
		if l.Raw != "" {
			return l.Raw
		}
		return strconv.FormatInt(l.Value.(int64), 10)
	case LitFloat:
		if l.Raw != "" {
			return l.Raw
		}
		return formatFloat(l.Value.(float64))
	case LitDuration:
		if l.Raw != "" {
			return l.Raw
		}
		return formatDuration(l)
	}
	return l.Raw
}

func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // keep it a float: 50 -> 50.0
		s += ".0"
	}
	return s
}

func formatDuration(l *Literal) string {
	s := l.Duration().String()
	// time.Duration prints 1m0s; drop zero units for a tidier literal.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Quote returns s as a double-quoted string literal with JSON escapes; it
// is valid in .plan text, in CEL and in JSON.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r > 0x7f && (unicode.IsControl(r) || !unicode.IsPrint(r) && !unicode.IsSpace(r)):
			if r > 0xFFFF { // a surrogate pair, as JSON spells it
				r -= 0x10000
				writeU4(&b, 0xD800+(r>>10))
				writeU4(&b, 0xDC00+(r&0x3FF))
			} else {
				writeU4(&b, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

func writeU4(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	b.WriteString(strconv.FormatInt(int64(r)|1<<16, 16)[1:])
}

// IsPlainName reports whether s can be written without quotes as a field
// or argument name.
func IsPlainName(s string) bool { return isPlainName(s) }

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}
