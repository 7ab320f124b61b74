package lang

import (
	"fmt"
	"strconv"
	"strings"
)

// exprContext says where an expression stands, which decides the tokens
// that end it.
type exprContext uint8

const (
	ctxArg       exprContext = iota // a call argument: ends at ',' or ')'
	ctxList                         // a list element: ends at ',' or ']'
	ctxObject                       // an object field value: ends at ',', newline or '}'
	ctxField                        // a declared field's default: ends at ',', newline, '}' or ')'
	ctxStatement                    // when, expect, result, output: ends at the end of the line or an option keyword
	ctxEachList                     // the list of a for each: like ctxStatement, and also at ':' or "max"
)

// ends reports whether t ends an expression in context ctx, at bracket
// depth 0. prev is the token before t.
func (ctx exprContext) ends(t, prev *token) bool {
	switch t.Kind {
	case tokEOF, tokSemicolon:
		return true
	case tokComma:
		return ctx != ctxStatement && ctx != ctxEachList
	case tokRParen:
		return ctx == ctxArg || ctx == ctxField
	case tokRBrack:
		return ctx == ctxList
	case tokRBrace:
		return true
	case tokNewline:
		return ctx != ctxArg && ctx != ctxList
	case tokArrow:
		return true
	case tokColon:
		return ctx == ctxEachList
	case tokIdent:
		if prev.Kind == tokDot {
			return false
		}
		if ctx == ctxEachList && t.Text == "max" {
			return true
		}
		return (ctx == ctxStatement || ctx == ctxEachList) && optionKeywords[t.Text]
	}
	return false
}

// parseExpr parses a value (literal, reference, list or object) or, when the
// text is more than a value, a CEL expression, up to the end of the context.
func (p *parser) parseExpr(ctx exprContext) Expr {
	if ctx == ctxArg || ctx == ctxList {
		p.skipNewlines() // the value may start on the next line
	}
	if p.tok().Kind == tokQuestion {
		return p.parseHole(ctx)
	}
	n := p.extent(ctx)
	if n == 0 {
		p.unexpected(p.tok(), "a value or an expression")
	}
	start := p.i
	if v, ok := p.tryValue(); ok && p.i == start+n {
		return v
	}
	p.i = start
	return p.parseCEL(n)
}

// parseHole parses `? "instruction"`, an argument left for a model to
// fill when the step runs; it is the whole value of an argument.
func (p *parser) parseHole(ctx exprContext) Expr {
	q := p.tok()
	if ctx != ctxArg {
		p.errorf(q.Span, "a hole, ? \"instruction\", is the whole value of an argument of a call: it cannot be part of a list, an object, an expression or an option")
	}
	n := p.extent(ctx)
	t := p.at(1)
	if t.Kind != tokString || n < 2 {
		p.errorf(q.Span.Join(t.Span), "a hole is written ? \"instruction\": a string that tells the model what to fill in, found %s after '?'", describe(t))
	}
	if n > 2 {
		p.errorf(p.at(2).Span, "a hole, ? \"instruction\", is the whole value of its argument: nothing may follow it")
	}
	p.advance()
	lit := p.parseStringLit("the instruction of a hole")
	if strings.TrimSpace(lit.StringValue()) == "" {
		p.report(lit.Span, "the instruction of a hole is empty: say what the model must fill in, and from what (\"the refundable amount from †state.history\")")
	}
	refs, diags := TextRefs(p.name, lit, exactText(lit))
	p.diags = append(p.diags, diags...)
	return &HoleExpr{Span: q.Span.Join(lit.Span), Instruction: lit, Refs: refs}
}

// extent returns how many tokens, from the current one, make up the
// expression that ends in context ctx. It checks that brackets balance.
func (p *parser) extent(ctx exprContext) int {
	var stack []*token
	prev := &token{}
	k := 0
	for ; ; k++ {
		t := p.at(k)
		if len(stack) == 0 && ctx.ends(t, prev) {
			break
		}
		switch t.Kind {
		case tokEOF:
			open := stack[len(stack)-1]
			p.errorf(open.Span, "'%s' is not closed: close it with '%s'", open.Text, closerText(open.Kind))
		case tokLParen, tokLBrack, tokLBrace:
			if len(stack) == maxNesting {
				// Refused here, before the rest is scanned: the values and
				// types below refuse this depth too, and CEL a smaller one.
				p.errorf(t.Span, "lists, objects, types and brackets nest more than %d levels deep here", maxNesting)
			}
			stack = append(stack, t)
		case tokRParen, tokRBrack, tokRBrace:
			if len(stack) == 0 {
				p.errorf(t.Span, "unexpected '%s': no bracket to close", t.Text)
			}
			open := stack[len(stack)-1]
			if closerOf(open.Kind) != t.Kind {
				p.errorf(t.Span, "'%s' closes '%s' opened at %s: '%s' is missing before it", t.Text, open.Text, open.Span.Start, closerText(open.Kind))
			}
			stack = stack[:len(stack)-1]
		case tokQuestion:
			if ctx == ctxEachList && len(stack) == 0 {
				p.errorf(t.Span, "a conditional list in a for each is written in parentheses: for each x in (cond ? a : b): call(…)")
			}
		case tokIllegal:
			p.errorf(t.Span, "%s", t.Err)
		case tokString:
			if t.Err != "" {
				p.errorf(t.Span, "%s", t.Err)
			}
		case tokDuration:
			if strings.HasSuffix(t.Text, "u") || strings.HasSuffix(t.Text, "U") {
				break // CEL unsigned integer
			}
			p.errorf(t.Span, "a duration is not a value here; write it as a string (\"%s\") or, in CEL, duration(\"%s\")", t.Text, t.Text)
		}
		prev = t
	}
	// Trailing newlines in contexts that ignore them are not part of it.
	for k > 0 && p.at(k-1).Kind == tokNewline {
		k--
	}
	return k
}

// closerText is the bracket that closes one of kind k.
func closerText(k tokenKind) string { return closerOf(k).String() }

func closerOf(k tokenKind) tokenKind {
	switch k {
	case tokLParen:
		return tokRParen
	case tokLBrack:
		return tokRBrack
	}
	return tokRBrace
}

// tryValue parses a literal, reference, list or object. It returns false,
// without reporting, when the text is not one (it may be CEL); errors that
// are errors either way (a malformed reference) are reported.
func (p *parser) tryValue() (Expr, bool) {
	t := p.tok()
	switch t.Kind {
	case tokString:
		v, err := unquote(t.Text)
		if err != nil {
			return nil, false // may be valid CEL ('\x41', r"…")
		}
		p.advance()
		return &Literal{Span: t.Span, Kind: LitString, Value: v, Raw: t.Text}, true
	case tokInt, tokFloat:
		return p.numberLit(false, t), true
	case tokMinus:
		n := p.at(1)
		if (n.Kind == tokInt || n.Kind == tokFloat) && adjacent(t, n) {
			p.advance()
			l := p.numberLit(true, n)
			l.Span = t.Span.Join(l.Span)
			return l, true
		}
	case tokIdent:
		var l *Literal
		switch t.Text {
		case "true", "false":
			l = &Literal{Span: t.Span, Kind: LitBool, Value: t.Text == "true", Raw: t.Text}
		case "null":
			l = &Literal{Span: t.Span, Kind: LitNull, Raw: t.Text}
		default:
			return nil, false
		}
		p.advance()
		return l, true
	case tokDagger:
		return p.parseRef(), true
	case tokLBrack:
		return p.parseList(), true
	case tokLBrace:
		return p.tryObject()
	}
	return nil, false
}

func (p *parser) numberLit(neg bool, t *token) *Literal {
	p.advance()
	raw := t.Text
	if neg {
		raw = "-" + raw
	}
	if t.Kind == tokInt {
		n, err := parseInt(raw)
		if err != nil {
			p.errorf(t.Span, "%s", intRangeMessage(raw))
		}
		return &Literal{Span: t.Span, Kind: LitInt, Value: n, Raw: raw}
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		p.errorf(t.Span, "number %s is out of range", raw)
	}
	return &Literal{Span: t.Span, Kind: LitFloat, Value: f, Raw: raw}
}

func (p *parser) parseList() Expr {
	open := p.advance()
	p.enter(open)
	defer func() { p.nest-- }()
	l := &ListExpr{}
	for {
		p.skipNewlines()
		t := p.tok()
		if t.Kind == tokRBrack {
			break
		}
		if len(l.Elems) == 0 && t.Span.Start.Line > open.Span.Start.Line {
			l.Multiline = true
		}
		l.Elems = append(l.Elems, p.parseExpr(ctxList))
		p.skipNewlines()
		if p.tok().Kind == tokComma {
			p.advance()
			continue
		}
		if p.tok().Kind != tokRBrack {
			p.unexpected(p.tok(), "',' or ']'")
		}
	}
	end := p.advance()
	l.Span = open.Span.Join(end.Span)
	return l
}

// tryObject parses {key: value, …}; keys are names or strings. A CEL map
// with computed keys is not an object value (false).
func (p *parser) tryObject() (Expr, bool) {
	open := p.advance()
	p.enter(open)
	defer func() { p.nest-- }()
	o := &ObjectExpr{}
	savedPrev, savedFloor := p.prevLine, p.floor
	defer func() { p.prevLine, p.floor = savedPrev, savedFloor }()
	p.prevLine, p.floor = open.Span.Start.Line, open.Span.End.Offset
	for {
		p.skipSeparators()
		t := p.tok()
		if t.Kind == tokRBrace {
			break
		}
		if len(o.Fields) == 0 && t.Span.Start.Line > open.Span.Start.Line {
			o.Multiline = true
		}
		// Only a first field that is not name: value makes this a CEL map
		// (computed keys); after that, a malformed field is an error.
		if t.Kind != tokIdent && t.Kind != tokString {
			if len(o.Fields) == 0 {
				return nil, false
			}
			p.valueContinued("value", o.Fields[len(o.Fields)-1].Key.Name)
			p.unexpected(t, "a field name or '}'")
		}
		if p.at(1).Kind != tokColon {
			if len(o.Fields) == 0 {
				return nil, false
			}
			p.valueContinued("value", o.Fields[len(o.Fields)-1].Key.Name)
			p.unexpected(p.at(1), fmt.Sprintf("':' after field name %s", t.Text))
		}
		if t.Kind == tokString {
			if _, err := unquote(t.Text); err != nil {
				return nil, false
			}
		}
		key := p.parseFieldName("a key")
		p.advance() // ':'
		v := p.parseExpr(ctxObject)
		f := &ObjectField{Span: key.Span.Join(v.Range()), Key: key, Value: v}
		o.Fields = append(o.Fields, f)
		switch p.tok().Kind {
		case tokComma, tokNewline, tokSemicolon, tokRBrace:
			p.attach(&f.Comments, f.Span)
		default:
			p.unexpected(p.tok(), "',' or '}'")
		}
	}
	end := p.advance()
	o.Span = open.Span.Join(end.Span)
	for _, f := range o.Fields {
		if len(f.Leading) > 0 || f.Trailing != nil {
			o.Multiline = true
		}
	}
	return o, true
}

// valueContinued reports a line that does not start a field, after a
// field whose value ended at the line break before it (no comma or ';'
// between): most likely the value goes on, which a line break does not
// allow outside brackets (section 7.4 of the spec).
func (p *parser) valueContinued(what, field string) {
	if p.i == 0 || p.toks[p.i-1].Kind != tokNewline {
		return
	}
	k := p.i - 1
	for k > 0 && p.toks[k].Kind == tokNewline {
		k--
	}
	if k := p.toks[k].Kind; k == tokComma || k == tokSemicolon {
		return
	}
	example := field + ": (… …)"
	if what == "default" {
		example = field + ": T = (… …)"
	}
	p.errorf(p.tok().Span, "the %s of field %s ends at the end of its line, and this line does not start a field: put a %s that goes on to the next line in parentheses, %s", what, field, what, example)
}

// parseRef parses a reference: † (or $) directly followed by a root name
// and a path of .field, ["field"] and [index] elements, written without
// spaces.
// refBlock holds the nodes of a short reference in one allocation.
type refBlock struct {
	ref   Ref
	root  Ident
	first PathElem
	path  [1]*PathElem
}

func (p *parser) parseRef() *Ref {
	d := p.advance()
	// Most references are a root and one field (†state.x): their nodes
	// are allocated together.
	b := &refBlock{}
	r := &b.ref
	r.ASCII, r.Span = d.Text == "$", d.Span
	id := p.tok()
	if id.Kind != tokIdent || !adjacent(d, id) {
		p.errorf(d.Span.Join(id.Span), "expected a name right after '%s', such as %sstate.x or %sinput.x, found %s", d.Text, d.Text, d.Text, describe(id))
	}
	p.advance()
	b.root = Ident{Span: id.Span, Name: id.Text}
	r.Root = &b.root
	r.Span = r.Span.Join(id.Span)
	last := id
	for {
		t := p.tok()
		if !adjacent(last, t) {
			break
		}
		switch t.Kind {
		case tokDot:
			n := p.at(1)
			if n.Kind == tokQuestion && adjacent(t, n) {
				return r // CEL's optional selection, †state.x.?field
			}
			if n.Kind != tokIdent || !adjacent(t, n) {
				p.errorf(t.Span, "expected a field name after '.' in reference %s.", r)
			}
			if p.at(2).Kind == tokLParen {
				return r // a CEL method call such as †state.items.size()
			}
			p.advance()
			p.advance()
			if r.Path == nil {
				b.first = PathElem{Span: t.Span.Join(n.Span), Field: n.Text}
				b.path[0] = &b.first
				r.Path = b.path[:1:1]
			} else {
				r.Path = append(r.Path, &PathElem{Span: t.Span.Join(n.Span), Field: n.Text})
			}
			r.Span = r.Span.Join(n.Span)
			last = n
			continue
		case tokFloat:
			if strings.HasPrefix(t.Text, ".") {
				p.errorf(t.Span, "a list is indexed with brackets: %s[%s], not %s%s", r, t.Text[1:], r, t.Text)
			}
		case tokLBrack:
			n := p.at(1)
			c := p.at(2)
			if c.Kind != tokRBrack || (n.Kind != tokInt && n.Kind != tokString) {
				return r // a CEL index expression; the reference ends here
			}
			el := &PathElem{Span: t.Span.Join(c.Span)}
			if n.Kind == tokInt {
				idx, err := strconv.Atoi(n.Text)
				if err != nil || idx < 0 {
					p.errorf(n.Span, "list index %s is out of range", n.Text)
				}
				el.Index, el.IsIndex = idx, true
			} else {
				s, err := unquote(n.Text)
				if err != nil {
					p.errorf(n.Span, "%s", err)
				}
				el.Field, el.Quoted = s, true
			}
			p.advance()
			p.advance()
			p.advance()
			r.Path = append(r.Path, el)
			r.Span = r.Span.Join(c.Span)
			last = c
			continue
		}
		break
	}
	return r
}

// parseCEL takes the next n tokens as a CEL expression and collects the
// references in it.
func (p *parser) parseCEL(n int) Expr {
	first := p.tok()
	end := p.i + n
	lastTok := p.at(n - 1)
	e := &CELExpr{Span: first.Span.Join(lastTok.Span)}
	for p.i < end {
		t := p.tok()
		if t.Kind == tokDagger {
			r := p.parseRef()
			if p.i > end {
				p.errorf(r.Span, "reference %s runs past the end of the expression", r)
			}
			e.Refs = append(e.Refs, r)
			continue
		}
		p.advance()
	}
	e.Text = string(p.src[e.Span.Start.Offset:e.Span.End.Offset])
	// Comments between the lines of the expression are part of its text,
	// kept verbatim; CELText blanks them for CEL.
	kept := p.comments[:0]
	for _, c := range p.comments {
		if c.Span.Start.Offset < e.Span.Start.Offset || c.Span.Start.Offset >= e.Span.End.Offset {
			kept = append(kept, c)
		}
	}
	p.comments = kept
	return e
}

// ---------------------------------------------------------------- types

func (p *parser) parseType() TypeExpr {
	p.enter(p.tok())
	defer func() { p.nest-- }()
	t := p.parsePrimaryType()
	if q := p.tok(); q.Kind == tokQuestion {
		p.advance()
		t = &OptionalType{Span: t.Range().Join(q.Span), Elem: t}
	}
	if p.tok().Kind == tokPipe {
		p.errorf(p.tok().Span, "only constants can be joined with '|', as in the enum \"a\" | \"b\"")
	}
	return t
}

func (p *parser) parsePrimaryType() TypeExpr {
	t := p.tok()
	switch t.Kind {
	case tokIdent:
		if t.Text == "true" || t.Text == "false" || t.Text == "null" && p.at(1).Kind == tokPipe {
			return p.parseEnum()
		}
		p.advance()
		return &NamedType{Span: t.Span, Name: t.Text}
	case tokLBrack:
		p.advance()
		p.skipNewlines()
		elem := p.parseType()
		p.skipNewlines()
		end := p.expect(tokRBrack, "']' to close the list type")
		return &ListType{Span: t.Span.Join(end.Span), Elem: elem}
	case tokLBrace:
		fields, end := p.parseFieldBlock()
		o := &ObjectType{Span: t.Span.Join(end.Span), Fields: fields}
		if len(fields) > 0 && firstLine(fields[0]) > t.Span.Start.Line || fieldsNeedLines(fields) {
			o.Multiline = true
		}
		return o
	case tokString, tokInt, tokFloat, tokMinus:
		return p.parseEnum()
	}
	p.unexpected(t, "a type (string, int, number, bool, any, [T], {field: T}, \"a\" | \"b\", or a declared type)")
	return nil
}

func (p *parser) parseEnum() TypeExpr {
	e := &EnumType{}
	for {
		v := p.parseEnumValue()
		e.Values = append(e.Values, v)
		e.Span = e.Span.Join(v.Span)
		if p.tok().Kind != tokPipe {
			return e
		}
		p.advance()
	}
}

func (p *parser) parseEnumValue() *Literal {
	t := p.tok()
	switch t.Kind {
	case tokString:
		return p.parseStringLit("")
	case tokInt, tokFloat, tokMinus, tokIdent:
		if v, ok := p.tryValue(); ok {
			if l, ok := v.(*Literal); ok {
				return l
			}
		}
	}
	p.errorf(t.Span, "expected a constant in the enum (\"a\" | \"b\"), found %s", describe(t))
	return nil
}

// ParseExpr parses a single expression (a value or CEL), as found in the
// string of a JSON plan's "_when" or "_expr".
func ParseExpr(name string, src []byte) (Expr, Diagnostics) {
	p := newParser(name, src, false)
	var e Expr
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(bailout); !ok {
					panic(r)
				}
			}
		}()
		p.skipNewlines()
		e = p.parseExpr(ctxStatement)
		p.skipNewlines()
		if t := p.tok(); t.Kind != tokEOF {
			p.errorf(t.Span, "unexpected %s after the expression", describe(t))
		}
	}()
	return e, p.diags
}

// ParseRef parses a single reference such as "†state.x.y", as found in a
// JSON plan's strings.
func ParseRef(name string, src []byte) (*Ref, Diagnostics) {
	p := newParser(name, src, false)
	var r *Ref
	func() {
		defer func() {
			if rec := recover(); rec != nil {
				if _, ok := rec.(bailout); !ok {
					panic(rec)
				}
				r = nil
			}
		}()
		t := p.tok()
		if t.Kind != tokDagger {
			p.errorf(t.Span, "expected a reference starting with †, found %s", describe(t))
		}
		r = p.parseRef()
		if t := p.tok(); t.Kind != tokEOF {
			p.errorf(t.Span, "unexpected %s after reference %s", describe(t), r)
		}
	}()
	return r, p.diags
}

// parseOutputPathText parses "†state.a" or "†state.a || †state.b".
func parseOutputPathText(name string, src []byte) (*Outputs, Diagnostics) {
	p := newParser(name, src, false)
	var o *Outputs
	func() {
		defer func() {
			if rec := recover(); rec != nil {
				if _, ok := rec.(bailout); !ok {
					panic(rec)
				}
				o = nil
			}
		}()
		first := p.tok()
		o = &Outputs{Span: first.Span}
		o.Success = p.parseOutputPath()
		o.Span = o.Span.Join(o.Success.Span)
		if t := p.tok(); t.Kind == tokOrOr {
			p.advance()
			if n := p.tok(); n.Kind != tokDagger {
				p.errorf(t.Span.Join(n.Span), "expected the error slot after '||' (†state.ok || †state.err), found %s", describe(n))
			}
			o.Error = p.parseOutputPath()
			o.Span = o.Span.Join(o.Error.Span)
		}
		if t := p.tok(); t.Kind != tokEOF {
			p.errorf(t.Span, "unexpected %s in output path: write †state.ok or †state.ok || †state.err", describe(t))
		}
	}()
	return o, p.diags
}

// plainRef reads the common reference of a JSON string: † or $, then
// ASCII names joined by dots ("†state.s12", "$input.user.name"), with the
// same tree and spans the parser gives, placed at base (the position of
// the string's first character, on one line). It reports false for
// anything else, which goes through the parser.
func plainRef(s string, base Pos) (*Ref, bool) { return plainRefIn(new(refMem), s, base) }

// refMem holds a reference, its root and a one-field path, so that they
// take one allocation.
type refMem struct {
	ref   Ref
	root  Ident
	field PathElem
	path  [1]*PathElem
}

// plainRefIn is plainRef building the reference in mem, which it may have
// written to even when it reports false.
func plainRefIn(mem *refMem, s string, base Pos) (*Ref, bool) {
	r := &mem.ref
	off := 0
	switch {
	case strings.HasPrefix(s, "†"):
		off = len("†")
	case strings.HasPrefix(s, "$"):
		off, r.ASCII = 1, true
	default:
		return nil, false
	}
	// The marker is one column whatever its bytes; every other character
	// is ASCII, so columns follow bytes after it.
	pos := func(o int) Pos {
		col := base.Column + o
		if o >= off {
			col = base.Column + 1 + o - off
		}
		return Pos{Offset: base.Offset + o, Line: base.Line, Column: col}
	}
	name := func(start int) int {
		i := start
		for i < len(s) {
			c := s[i]
			if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > start && '0' <= c && c <= '9' {
				i++
				continue
			}
			break
		}
		return i
	}
	end := name(off)
	if end == off {
		return nil, false
	}
	r.Span = Span{pos(0), pos(end)}
	mem.root = Ident{Span: Span{pos(off), pos(end)}, Name: s[off:end]}
	r.Root = &mem.root
	for end < len(s) {
		if s[end] != '.' {
			return nil, false
		}
		dot := end
		end = name(dot + 1)
		if end == dot+1 {
			return nil, false
		}
		el := PathElem{Span: Span{pos(dot), pos(end)}, Field: s[dot+1 : end]}
		if r.Path == nil {
			mem.field = el
			r.Path = append(mem.path[:0:1], &mem.field)
			continue
		}
		more := el
		r.Path = append(r.Path, &more)
	}
	r.Span.End = pos(end)
	return r, true
}
