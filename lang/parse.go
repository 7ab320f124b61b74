package lang

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Parse parses the .plan text src. It always returns a File, partial when the
// text has errors, and reports every malformed item: after an error it skips
// to the next line that can start an item and goes on. name is used in
// diagnostics.
func Parse(name string, src []byte) (*File, Diagnostics) {
	p := newParser(name, src, false)
	f := &File{Name: name}
	for {
		it, done := p.parseTopItem()
		if done {
			break
		}
		if it != nil {
			f.Items = append(f.Items, it)
		}
	}
	f.Trailing = p.takeComments(math.MaxInt)
	end := p.posAt(len(src))
	f.Span = Span{Start: Pos{Offset: 0, Line: 1, Column: 1}, End: end}
	p.diags.Sort()
	return f, p.diags
}

// parser is a recursive-descent parser over tokens that are scanned on
// demand. Comments never reach the grammar: the scanner wrapper queues them
// and they are attached to nodes by position.
type parser struct {
	name string
	src  []byte
	sc   *scanner
	toks []token // scanned tokens; toks[i] is the current one
	i    int

	comments []Comment // queued, in source order, not yet attached
	prevLine int       // last line of the previous item or comment, for blank-line detection
	// floor is the offset of the innermost open block: comments before it
	// belong to the block's owner, not to the nodes inside it.
	floor int
	// nest counts the lists, objects and types being parsed inside each
	// other, which maxNesting bounds.
	nest int

	diags Diagnostics
	// depth counts nested sub-plan bodies.
	depth int
	// prevItem is the item parsed last, if it parsed, and prevEnd its
	// last token: a malformed line after it may be its continuation,
	// which the message then explains.
	prevItem Item
	prevEnd  token
}

// maxNesting bounds how deeply lists, objects and types may nest, so that
// hostile input cannot make parsing slow or exhaust the stack.
const maxNesting = 100

// enter counts one more level of nesting at token t.
func (p *parser) enter(t *token) {
	p.nest++
	if p.nest > maxNesting {
		p.errorf(t.Span, "lists, objects and types nest more than %d levels deep here", maxNesting)
	}
}

// bailout unwinds the parse of one item after its first error.
type bailout struct{}

// needMore unwinds a parse that reached the end of the text read so far.
type needMore struct{}

func newParser(name string, src []byte, partial bool) *parser {
	// Room for the tokens of a few items: compact keeps the window small,
	// so it rarely has to grow.
	p := &parser{name: name, src: src, sc: newScanner(src, 0, 1, partial), toks: make([]token, 0, 256)}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		// A UTF-8 byte order mark: skipped, and it takes no column.
		p.sc.off = 3
		p.sc.adjust = 3
	}
	if !partial {
		// One copy of the whole text; every token's text is a slice of it.
		p.sc.text = string(src)
	}
	return p
}

func (p *parser) posAt(off int) Pos {
	if len(p.toks) > 0 && p.toks[len(p.toks)-1].Span.End.Offset == off {
		return p.toks[len(p.toks)-1].Span.End
	}
	return PosAt(p.src, off)
}

// at returns the token k positions after the current one, skipping comments.
func (p *parser) at(k int) *token {
	if j := p.i + k; j < len(p.toks) {
		t := &p.toks[j]
		if t.Kind == tokEndOfBuffer {
			panic(needMore{})
		}
		return t
	}
	return p.fill(k)
}

// fill scans tokens until the one k positions after the current one.
func (p *parser) fill(k int) *token {
	for len(p.toks) <= p.i+k {
		if n := len(p.toks); n > 0 && (p.toks[n-1].Kind == tokEOF || p.toks[n-1].Kind == tokEndOfBuffer) {
			t := &p.toks[n-1]
			if t.Kind == tokEndOfBuffer {
				panic(needMore{})
			}
			return t
		}
		t := p.sc.next()
		if t.Kind == tokComment {
			p.comments = append(p.comments, Comment{Span: t.Span, Text: strings.TrimRight(t.Text, " \t\r")})
			continue
		}
		p.toks = append(p.toks, t)
	}
	t := &p.toks[p.i+k]
	if t.Kind == tokEndOfBuffer {
		panic(needMore{})
	}
	return t
}

func (p *parser) tok() *token { return p.at(0) }

func (p *parser) advance() *token {
	t := p.tok()
	if t.Kind != tokEOF {
		p.i++
	}
	return t
}

// compact drops consumed tokens, so memory stays bounded by one item.
func (p *parser) compact() {
	if p.i > 128 {
		n := copy(p.toks, p.toks[p.i:])
		p.toks = p.toks[:n]
		p.i = 0
	}
}

func (p *parser) skipNewlines() {
	for p.tok().Kind == tokNewline {
		p.i++
	}
}

// errorf records a parse error at span and unwinds the current item.
func (p *parser) errorf(span Span, format string, args ...any) {
	p.report(span, format, args...)
	panic(bailout{})
}

func (p *parser) report(span Span, format string, args ...any) {
	p.diags = append(p.diags, &Diagnostic{
		Severity: SeverityError,
		Code:     ParseError,
		Message:  fmt.Sprintf(format, args...),
		File:     p.name,
		Span:     span,
	})
}

// describe names a token for "expected X, found Y" messages.
func describe(t *token) string {
	switch t.Kind {
	case tokEOF, tokNewline:
		return t.Kind.String()
	case tokIdent:
		return fmt.Sprintf("identifier %q", t.Text)
	case tokString:
		if len(t.Text) > 24 {
			return "string " + t.Text[:20] + "…"
		}
		return "string " + t.Text
	case tokInt, tokFloat, tokDuration:
		return fmt.Sprintf("%s %s", t.Kind, t.Text)
	case tokIllegal:
		return t.Err
	}
	return fmt.Sprintf("'%s'", t.Text)
}

func (p *parser) expect(kind tokenKind, what string) *token {
	t := p.tok()
	if t.Kind != kind {
		p.unexpected(t, what)
	}
	return p.advance()
}

func (p *parser) unexpected(t *token, want string) {
	if t.Kind == tokIllegal || (t.Kind == tokString && t.Err != "") {
		p.errorf(t.Span, "%s", t.Err)
	}
	p.errorf(t.Span, "expected %s, found %s", want, describe(t))
}

// adjacent reports whether token b starts exactly where a ends.
func adjacent(a, b *token) bool { return a.Span.End.Offset == b.Span.Start.Offset }

func (p *parser) isKeyword(t *token, kw string) bool { return t.Kind == tokIdent && t.Text == kw }

// ---------------------------------------------------------------- items

// parseTopItem parses one top-level item. done is true at the end of the
// file. A malformed item is reported and skipped (nil item).
func (p *parser) parseTopItem() (it Item, done bool) {
	p.compact()
	p.skipTerminators()
	if p.tok().Kind == tokEOF {
		return nil, true
	}
	return p.parseItemRecovering(), false
}

func (p *parser) skipTerminators() {
	for {
		switch p.tok().Kind {
		case tokNewline, tokSemicolon:
			p.i++
		default:
			return
		}
	}
}

// parseItemRecovering parses one item; on a parse error it skips to the next
// line that can start an item and returns nil.
func (p *parser) parseItemRecovering() (it Item) {
	start := p.i
	nest := p.nest
	defer func() { p.nest = nest }()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			p.explainContinuation(start)
			p.prevItem = nil
			p.recoverFrom(start)
			it = nil
		}
	}()
	it = p.parseItem()
	p.endItem(it)
	p.prevItem = it
	if p.i > 0 {
		p.prevEnd = p.toks[p.i-1]
	}
	return it
}

// explainContinuation rewrites the error of an item that failed on its
// first line, when that line looks like the continuation of the
// expression that ends the item before it: that item's last token is an
// operator, which an expression cannot end with. The expression ended at
// its line break (section 2.10 of the spec), and the fix is parentheses.
func (p *parser) explainContinuation(start int) {
	if p.prevItem == nil || !endsExpression(p.prevItem) || !binaryOperator(&p.prevEnd) || len(p.diags) == 0 || start >= len(p.toks) {
		return
	}
	d := p.diags[len(p.diags)-1]
	if d.Span.Start.Line != p.toks[start].Span.Start.Line {
		return
	}
	what, kw := expressionOf(p.prevItem)
	d.Span = p.prevEnd.Span
	d.Message = fmt.Sprintf("the line ends with '%s', but %s ends at the end of its line: put the whole expression in parentheses, %s (… %s …), and a line break inside them does not end it",
		p.prevEnd.Text, what, kw, p.prevEnd.Text)
}

// endsExpression reports whether an item can end with an expression that
// stops at a line break: an output, or a step whose last option or for
// each list is one.
func endsExpression(it Item) bool {
	switch it := it.(type) {
	case *OutputDecl:
		return true
	case *Step:
		if n := len(it.Options); n > 0 {
			switch it.Options[n-1].(type) {
			case *WhenOption, *ExpectOption, *ResultOption:
				return true
			}
		}
	}
	return false
}

// expressionOf names the expression an item ends with, for messages, and
// the keyword before it.
func expressionOf(it Item) (string, string) {
	switch it := it.(type) {
	case *OutputDecl:
		return "the expression of an output", "output"
	case *Step:
		if n := len(it.Options); n > 0 {
			kw := it.Options[n-1].Keyword()
			return "an expression of " + kw, kw
		}
	}
	return "an expression", ""
}

// binaryOperator reports whether t is an operator that needs an operand
// after it, which an expression cannot end with.
func binaryOperator(t *token) bool {
	switch t.Kind {
	case tokOperator:
		return t.Text != "!"
	case tokOrOr, tokMinus, tokQuestion, tokColon, tokDot, tokComma:
		return true
	}
	return false
}

// recoverFrom skips the rest of a malformed item that started at token
// index start: to the end of its line outside brackets, then past any
// continuation lines. A line that starts in column 1 ends the skip even
// inside brackets, since that is where a new item starts in formatted text.
func (p *parser) recoverFrom(start int) {
	depth := 0
	for j := start; j < p.i; j++ {
		depth += bracketDelta(p.toks[j].Kind)
	}
	for {
		if p.i-start > 256 {
			// The tokens skipped are not read again: drop them, so that
			// skipping a long item keeps few tokens. A stream that must
			// read more rewinds to before start, which stays.
			n := copy(p.toks[start:], p.toks[p.i:])
			p.toks = p.toks[:start+n]
			p.i = start
		}
		t := p.tok()
		switch t.Kind {
		case tokEOF:
			return
		case tokRBrace:
			if depth <= 0 && p.depth > 0 {
				return // the end of the enclosing sub-plan
			}
		case tokNewline, tokSemicolon:
			p.i++
			n := p.tok()
			if depth <= 0 || (n.Span.Start.Column == 1 && (n.Kind == tokIdent || n.Kind == tokDagger)) {
				if !p.continues() {
					return
				}
				depth = 0
			}
			continue
		}
		depth += bracketDelta(t.Kind)
		p.i++
	}
}

func bracketDelta(k tokenKind) int {
	switch k {
	case tokLParen, tokLBrack, tokLBrace:
		return 1
	case tokRParen, tokRBrack, tokRBrace:
		return -1
	}
	return 0
}

var optionKeywords = map[string]bool{
	"when": true, "expect": true, "retry": true, "timeout": true,
	"fallback": true, "approve": true, "result": true, "hint": true,
}

// continues reports whether the next line continues the current step: it
// starts with "->" or "||", or it is indented and starts with an option
// keyword (not used as a call or label). An option keyword in the first
// column starts an item: `approve` there approves the whole plan.
func (p *parser) continues() bool {
	k := 0
	for p.at(k).Kind == tokNewline {
		k++
	}
	t := p.at(k)
	switch t.Kind {
	case tokArrow, tokOrOr:
		return true
	case tokIdent:
		return optionKeywords[t.Text] && t.Span.Start.Column > 1 && p.keywordAt(k)
	}
	return false
}

// keywordAt reports whether the identifier k tokens ahead is used as a
// keyword. It is a name instead when a ':' follows (a label) or when '(',
// '.' or '-' follows without a space (a call, a dotted or hyphenated tool
// name). So `when (x)` is an option and `when(x: 1)` a call.
func (p *parser) keywordAt(k int) bool {
	t, n := p.at(k), p.at(k+1)
	switch n.Kind {
	case tokColon:
		return false
	case tokLParen, tokDot, tokMinus:
		return !adjacent(t, n)
	}
	return true
}

// endItem checks that the item ends its line and attaches its comments.
func (p *parser) endItem(it Item) {
	t := p.tok()
	switch t.Kind {
	case tokNewline, tokSemicolon, tokEOF:
	case tokRBrace:
		if p.depth == 0 {
			p.unexpected(t, "end of line")
		}
	case tokRParen, tokRBrack:
		p.errorf(t.Span, "'%s' closes no bracket: there is one too many here", t.Text)
	default:
		p.unexpected(t, "end of line")
	}
	if s, ok := it.(*Step); ok && len(s.Options) > 0 {
		p.attachLineComments(s)
	}
	p.attach(it.Meta(), it.Range())
}

// attachLineComments takes the comments that end the lines of a step
// before its last line: the call's line and each option's line.
func (p *parser) attachLineComments(s *Step) {
	ends := make([]Pos, 0, 1+len(s.Options))
	head := s.Head().End
	if s.Out != nil {
		head = s.Out.Span.End
	}
	ends = append(ends, head)
	for _, o := range s.Options[:len(s.Options)-1] {
		ends = append(ends, o.Range().End)
	}
	for i, end := range ends {
		for j, cm := range p.comments {
			if cm.Span.Start.Line == end.Line && cm.Span.Start.Offset >= end.Offset && cm.Span.Start.Offset < s.Span.End.Offset {
				if s.LineComments == nil {
					s.LineComments = make([]*Comment, len(ends))
				}
				s.LineComments[i] = &cm
				p.comments = append(p.comments[:j], p.comments[j+1:]...)
				break
			}
		}
	}
}

// attach gives a node the comments queued before it as leading comments,
// followed by any written inside it (which the printer moves in front of
// it), and a comment on its last line as trailing comment. It records the
// blank lines before each leading comment and before the node.
func (p *parser) attach(c *Comments, span Span) {
	prev := p.prevLine
	taken := p.takeComments(span.End.Offset)
	var before, inside []Comment
	for _, cm := range taken {
		if cm.Span.Start.Offset < span.Start.Offset {
			before = append(before, cm)
		} else {
			cm.BlankBefore = false
			inside = append(inside, cm)
		}
	}
	last := prev
	for i := range before {
		before[i].BlankBefore = last > 0 && before[i].Span.Start.Line > last+1
		last = before[i].Span.Start.Line
	}
	c.BlankBefore = last > 0 && span.Start.Line > last+1
	c.Leading = append(c.Leading, before...)
	c.Leading = append(c.Leading, inside...)
	p.prevLine = span.End.Line
	for i, cm := range p.comments {
		if cm.Span.Start.Offset >= span.End.Offset {
			if cm.Span.Start.Line == span.End.Line {
				c.Trailing = &cm
				p.comments = append(p.comments[:i], p.comments[i+1:]...)
			}
			break
		}
	}
}

// takeComments removes and returns the queued comments that start before
// off and not before the floor.
func (p *parser) takeComments(off int) []Comment {
	a := 0
	for a < len(p.comments) && p.comments[a].Span.Start.Offset < p.floor {
		a++
	}
	b := a
	for b < len(p.comments) && p.comments[b].Span.Start.Offset < off {
		b++
	}
	n := b - a
	if n == 0 {
		return nil
	}
	out := make([]Comment, n)
	copy(out, p.comments[a:b])
	p.comments = append(p.comments[:a], p.comments[b:]...)
	// Mark blank lines between comments of the group.
	for i := range out {
		prev := p.prevLine
		if i > 0 {
			prev = out[i-1].Span.Start.Line
		}
		if prev > 0 && out[i].Span.Start.Line > prev+1 {
			out[i].BlankBefore = true
		}
	}
	if out[n-1].Span.Start.Line > p.prevLine {
		p.prevLine = out[n-1].Span.Start.Line
	}
	return out
}

// parseItem parses a declaration or a step.
func (p *parser) parseItem() Item {
	t := p.tok()
	p.misplacedContinuation(t)
	if t.Kind == tokIdent && p.keywordPosition() {
		if p.depth > 0 && (t.Text == "mode" || t.Text == "on" || t.Text == "approve") {
			p.errorf(t.Span, "%q is a setting of the whole plan; a sub-plan runs with its caller's settings", t.Text)
		}
		switch t.Text {
		case "mode":
			return p.parseMode()
		case "on":
			return p.parsePolicy()
		case "approve":
			return p.parseApproveDecl()
		case "import":
			return p.parseImport()
		case "type":
			return p.parseTypeDecl()
		case "tool":
			return p.parseToolDecl()
		case "input":
			return p.parseInputDecl()
		case "state":
			return p.parseStateDecl()
		case "plan":
			return p.parsePlanDecl()
		case "output":
			return p.parseOutput()
		case "for":
			return p.parseStep()
		}
		if optionKeywords[t.Text] {
			p.errorf(t.Span, "%q option without a step: write it on the call's line, or indented on the lines below it", t.Text)
		}
	}
	switch t.Kind {
	case tokIdent:
		return p.parseStep()
	case tokDagger:
		p.errorf(t.Span, "expected a declaration or a step, found a reference: a step is a call such as tool(arg: †input.x) -> †state.slot")
	}
	p.unexpected(t, "a declaration or a step")
	return nil
}

// misplacedContinuation reports a line that cannot start an item and goes
// on with the item before it, which ended at its line break: a tool's
// result or attributes on the line after its parameters, or an operator
// that continues an expression.
func (p *parser) misplacedContinuation(t *token) {
	switch prev := p.prevItem.(type) {
	case *ToolDecl:
		// An attribute's name followed by '(' may be a call of a tool of
		// that name, which parses.
		if t.Kind == tokArrow || t.Kind == tokIdent && toolAttrNames[t.Text] && p.at(1).Kind != tokLParen && p.keywordPosition() {
			p.errorf(t.Span, "a tool's result and attributes go on the line of its closing ')': tool %s(…) -> T pure", prev.Name.Name)
		}
	case *Step, *OutputDecl:
		if !endsExpression(prev) {
			return
		}
		if t.Kind == tokOperator && t.Text != "!" || t.Kind == tokQuestion || t.Kind == tokDot || t.Kind == tokColon {
			what, kw := expressionOf(prev)
			p.errorf(t.Span, "a line cannot start with '%s': %s ends at the end of the line before; put the whole expression in parentheses, %s (… %s …), and a line break inside them does not end it",
				t.Text, what, kw, t.Text)
		}
	}
}

// keywordPosition reports whether the identifier at the current token is
// used as a keyword (see keywordAt).
func (p *parser) keywordPosition() bool { return p.keywordAt(0) }

func (p *parser) parseMode() Item {
	kw := p.advance()
	id := p.parseIdent("eager or lazy")
	if id.Name != "eager" && id.Name != "lazy" {
		p.errorf(id.Span, "unknown mode %q: the mode is eager or lazy", id.Name)
	}
	return &ModeDecl{Span: kw.Span.Join(id.Span), Mode: id}
}

var policyActions = map[string]bool{"abort": true, "skip": true, "continue": true, "replan": true}

func (p *parser) parsePolicy() Item {
	kw := p.advance()
	f := p.tok()
	if !p.isKeyword(f, "failure") {
		p.unexpected(f, `"failure" (on failure abort|skip|continue|replan)`)
	}
	p.advance()
	act := p.parseIdent("abort, skip, continue or replan")
	if !policyActions[act.Name] {
		p.errorf(act.Span, "unknown failure policy %q: use abort, skip, continue or replan", act.Name)
	}
	d := &PolicyDecl{Span: kw.Span.Join(act.Span), Action: act}
	if t := p.tok(); p.isKeyword(t, "max") {
		if act.Name != "replan" {
			p.errorf(t.Span, "max bounds the number of replans; it goes only with on failure replan")
		}
		p.advance()
		d.Max = p.parseIntLit("the maximum number of replans")
		d.Span = d.Span.Join(d.Max.Span)
	}
	return d
}

func (p *parser) parseApproveDecl() Item {
	kw := p.advance()
	d := &ApproveDecl{Span: kw.Span}
	if p.tok().Kind == tokString {
		d.Message = p.parseStringLit("a message")
		d.Span = d.Span.Join(d.Message.Span)
	}
	return d
}

func (p *parser) parseImport() Item {
	kw := p.advance()
	if p.depth > 0 {
		p.errorf(kw.Span, "import is only allowed at the top level of a file")
	}
	path := p.parseStringLit("the path of a tools file, as a string")
	return &ImportDecl{Span: kw.Span.Join(path.Span), Path: path}
}

func (p *parser) parseTypeDecl() Item {
	kw := p.advance()
	if p.depth > 0 {
		p.errorf(kw.Span, "types are declared at the top level of a file")
	}
	name := p.parseIdent("a type name")
	if p.tok().Kind == tokAssign {
		p.advance() // `type T = …` is accepted too
	}
	typ := p.parseType()
	return &TypeDecl{Span: kw.Span.Join(typ.Range()), Name: name, Type: typ}
}

var toolAttrNames = map[string]bool{
	"pure": true, "idempotent": true, "irreversible": true, "model": true,
	"latency": true, "tokens": true,
}

func (p *parser) parseToolDecl() Item {
	kw := p.advance()
	if p.depth > 0 {
		p.errorf(kw.Span, "tools are declared at the top level of a file")
	}
	d := &ToolDecl{Name: p.parseToolName()}
	d.Span = kw.Span.Join(d.Name.Span)
	if p.tok().Kind != tokLParen {
		return d
	}
	d.HasSignature = true
	var end *token
	d.Params, d.MultilineParams, end = p.parseParams()
	d.Span = d.Span.Join(end.Span)
	if p.tok().Kind == tokArrow {
		p.advance()
		d.Result = p.parseType()
		d.Span = d.Span.Join(d.Result.Range())
	}
	for p.tok().Kind == tokIdent && toolAttrNames[p.tok().Text] {
		name := p.parseIdent("")
		a := &ToolAttr{Span: name.Span, Name: name}
		switch name.Name {
		case "latency":
			a.Value = p.parseDurationLit("a duration such as 300ms")
		case "tokens":
			a.Value = p.parseIntLit("a token count")
		}
		if a.Value != nil {
			a.Span = a.Span.Join(a.Value.Span)
		}
		d.Attrs = append(d.Attrs, a)
		d.Span = d.Span.Join(a.Span)
	}
	if t := p.tok(); t.Kind == tokIdent {
		p.errorf(t.Span, "unknown tool attribute %q: use pure, idempotent, irreversible, model, latency D or tokens N", t.Text)
	}
	return d
}

// parseParams parses "(name: T, opt?: T = default, …)". Parameters may be
// separated by commas or newlines.
func (p *parser) parseParams() ([]*FieldDecl, bool, *token) {
	open := p.expect(tokLParen, "'('")
	fields, end := p.parseFieldList(open, tokRParen)
	multiline := len(fields) > 0 && firstLine(fields[0]) > open.Span.Start.Line || fieldsNeedLines(fields)
	return fields, multiline, end
}

// firstLine is the line a field starts on, its comments included.
func firstLine(f *FieldDecl) int {
	if len(f.Leading) > 0 {
		return f.Leading[0].Span.Start.Line
	}
	return f.Span.Start.Line
}

func (p *parser) parseInputDecl() Item {
	kw := p.advance()
	if p.depth > 0 {
		p.errorf(kw.Span, "a sub-plan takes its input from its parameters; declare them in plan name(…)")
	}
	fields, end := p.parseFieldBlock()
	return &InputDecl{Span: kw.Span.Join(end.Span), Fields: fields}
}

func (p *parser) parseStateDecl() Item {
	kw := p.advance()
	fields, end := p.parseFieldBlock()
	return &StateDecl{Span: kw.Span.Join(end.Span), Fields: fields}
}

func (p *parser) parseFieldBlock() ([]*FieldDecl, *token) {
	open := p.expect(tokLBrace, "'{'")
	return p.parseFieldList(open, tokRBrace)
}

// parseFieldList parses field declarations up to the closing token, each
// separated by a comma or a newline, attaching comments to each field.
func (p *parser) parseFieldList(open *token, closer tokenKind) ([]*FieldDecl, *token) {
	var fields []*FieldDecl
	savedPrev, savedFloor := p.prevLine, p.floor
	p.prevLine, p.floor = open.Span.Start.Line, open.Span.End.Offset
	defer func() { p.prevLine, p.floor = savedPrev, savedFloor }()
	for {
		p.skipSeparators()
		if t := p.tok(); t.Kind == closer {
			return fields, p.advance()
		}
		if n := len(fields); n > 0 && fields[n-1].Default != nil && !p.startsField() {
			p.valueContinued("default", fields[n-1].Name.Name)
		}
		f := p.parseFieldDecl()
		fields = append(fields, f)
		t := p.tok()
		switch t.Kind {
		case tokComma, tokNewline, tokSemicolon:
			p.attach(&f.Comments, f.Span)
			continue
		case closer:
			p.attach(&f.Comments, f.Span)
			continue
		}
		if t.Kind == tokOperator && t.Text == "==" && f.Default == nil {
			p.errorf(t.Span, "a default is written with one '=': %s: %s = value", f.Name.Name, FormatType(f.Type))
		}
		p.unexpected(t, fmt.Sprintf("',' or '%s'", closer))
	}
}

func (p *parser) skipSeparators() {
	for {
		switch p.tok().Kind {
		case tokComma, tokNewline, tokSemicolon:
			p.i++
		default:
			return
		}
	}
}

// startsField reports whether the current token starts a field
// declaration: a name, then ':' or '?'.
func (p *parser) startsField() bool {
	t, n := p.tok(), p.at(1)
	return (t.Kind == tokIdent || t.Kind == tokString) && (n.Kind == tokColon || n.Kind == tokQuestion)
}

func (p *parser) parseFieldDecl() *FieldDecl {
	name := p.parseFieldName("a field name")
	f := &FieldDecl{Name: name, Span: name.Span}
	if p.tok().Kind == tokQuestion {
		p.advance()
		f.Optional = true
	}
	p.expect(tokColon, "':' and a type")
	f.Type = p.parseType()
	f.Span = f.Span.Join(f.Type.Range())
	if p.tok().Kind == tokAssign {
		p.advance()
		f.Default = p.parseExpr(ctxField)
		f.Span = f.Span.Join(f.Default.Range())
	}
	return f
}

func (p *parser) parsePlanDecl() Item {
	kw := p.advance()
	if p.depth > 0 {
		p.errorf(kw.Span, "sub-plans are declared at the top level of a file")
	}
	d := &PlanDecl{Name: p.parseIdent("a sub-plan name")}
	d.Params, d.MultilineParams, _ = p.parseParams()
	if p.tok().Kind == tokArrow {
		p.advance()
		d.Result = p.parseType()
	}
	open := p.expect(tokLBrace, "'{' to start the sub-plan's body")
	p.depth++
	savedPrev, savedFloor := p.prevLine, p.floor
	p.prevLine, p.floor = open.Span.Start.Line, open.Span.End.Offset
	for {
		p.skipTerminators()
		t := p.tok()
		if t.Kind == tokRBrace {
			break
		}
		if t.Kind == tokEOF {
			p.depth--
			p.prevLine, p.floor = savedPrev, savedFloor
			p.errorf(open.Span, "sub-plan %q is not closed: '}' missing", d.Name.Name)
		}
		if it := p.parseItemRecovering(); it != nil {
			d.Items = append(d.Items, it)
		}
	}
	end := p.advance()
	d.Closing = p.takeComments(end.Span.Start.Offset)
	p.prevLine, p.floor = savedPrev, savedFloor
	p.depth--
	d.Span = kw.Span.Join(end.Span)
	return d
}

func (p *parser) parseOutput() Item {
	kw := p.advance()
	v := p.parseExpr(ctxStatement)
	return &OutputDecl{Span: kw.Span.Join(v.Range()), Value: v}
}

// ---------------------------------------------------------------- steps

func (p *parser) parseStep() Item {
	s := &Step{}
	t := p.tok()
	s.Span = t.Span
	if t.Kind == tokIdent && p.at(1).Kind == tokColon {
		s.Label = p.parseIdent("")
		p.advance() // ':'
	}
	if p.isKeyword(p.tok(), "for") && p.keywordAt(0) {
		s.Each = p.parseEach()
	}
	t = p.tok()
	if t.Kind != tokIdent {
		p.unexpected(t, "a tool call such as tool(arg: value)")
	}
	if p.startsTask() {
		if s.Each != nil {
			p.errorf(t.Span, "a task cannot be the call of a for each: a model chooses one candidate for one task; write the for each with a call of a tool, or a task without for each")
		}
		s.Task = p.parseTask()
		s.Span = s.Span.Join(s.Task.Span)
	} else {
		s.Call = p.parseCall()
		s.Span = s.Span.Join(s.Call.Span)
	}
	if p.tok().Kind == tokArrow || (p.tok().Kind == tokNewline && p.continues() && p.peekPastNewlines().Kind == tokArrow) {
		p.skipNewlines()
		s.Out = p.parseOutputs()
		s.Span = s.Span.Join(s.Out.Span)
	}
	for {
		t := p.tok()
		if t.Kind == tokNewline && p.continues() {
			p.skipNewlines()
			t = p.tok()
			if t.Kind == tokArrow || t.Kind == tokOrOr {
				p.errorf(t.Span, "output paths come right after the call, before its options")
			}
		}
		if t.Kind != tokIdent || !optionKeywords[t.Text] || !p.keywordAt(0) {
			break
		}
		o := p.parseOption()
		s.Options = append(s.Options, o)
		s.Span = s.Span.Join(o.Range())
	}
	return s
}

// startsTask reports whether the step at the current token is a task:
// the word task followed by a string (task(…) is a call of a tool named
// task, and task: a label).
func (p *parser) startsTask() bool {
	return p.isKeyword(p.tok(), "task") && p.at(1).Kind == tokString
}

// parseTask parses `task "goal" [using [name, …]]`.
func (p *parser) parseTask() *Task {
	kw := p.advance()
	goal := p.parseStringLit("the goal of the task, a string")
	if strings.TrimSpace(goal.StringValue()) == "" {
		p.report(goal.Span, "the goal of a task is empty: say what the step must achieve, in words")
	}
	refs, diags := TextRefs(p.name, goal, exactText(goal))
	p.diags = append(p.diags, diags...)
	t := &Task{Span: kw.Span.Join(goal.Span), Goal: goal, Refs: refs}
	if !p.isKeyword(p.tok(), "using") {
		return t
	}
	p.advance()
	open := p.tok()
	if open.Kind != tokLBrack {
		p.errorf(open.Span, "expected '[' after using, found %s: the candidates are a list of tools and sub-plans, using [findHotel, bookHotel]", describe(open))
	}
	p.advance()
	t.Using = []*Ident{}
	for {
		p.skipNewlines()
		if p.tok().Kind == tokRBrack {
			break
		}
		if n := p.tok(); n.Kind != tokIdent {
			p.errorf(n.Span, "expected the name of a tool or sub-plan in the candidates of the task, found %s", describe(n))
		}
		t.Using = append(t.Using, p.parseToolName())
		p.skipNewlines()
		if p.tok().Kind == tokComma {
			p.advance()
			continue
		}
		if n := p.tok(); n.Kind != tokRBrack {
			p.errorf(n.Span, "expected ',' or ']' in the candidates of the task, found %s", describe(n))
		}
	}
	end := p.advance()
	t.Span = t.Span.Join(end.Span)
	return t
}

func (p *parser) peekPastNewlines() *token {
	k := 0
	for p.at(k).Kind == tokNewline {
		k++
	}
	return p.at(k)
}

func (p *parser) parseEach() *Each {
	kw := p.advance()
	if !p.isKeyword(p.tok(), "each") {
		p.unexpected(p.tok(), `"each" (for each x in LIST: call(…))`)
	}
	p.advance()
	e := &Each{Var: p.parseIdent("the element's name")}
	if !p.isKeyword(p.tok(), "in") {
		p.unexpected(p.tok(), `"in"`)
	}
	p.advance()
	e.List = p.parseExpr(ctxEachList)
	if p.isKeyword(p.tok(), "max") {
		p.advance()
		e.Max = p.parseIntLit("the maximum number of elements")
	}
	end := p.expect(tokColon, "':' and the call to make for each element")
	e.Span = kw.Span.Join(end.Span)
	return e
}

// parseToolName parses a tool name: identifiers joined by '.' or by '-'
// written without spaces (math.sum, get-weather).
func (p *parser) parseToolName() *Ident {
	first := p.tok()
	if first.Kind != tokIdent {
		p.unexpected(first, "a tool name")
	}
	p.advance()
	name := first.Text
	span := first.Span
	last := first
	for {
		sep := p.tok()
		if (sep.Kind == tokDot || sep.Kind == tokMinus) && adjacent(last, sep) {
			n := p.at(1)
			if n.Kind == tokIdent && adjacent(sep, n) {
				p.advance()
				p.advance()
				name += sep.Text + n.Text
				span = span.Join(n.Span)
				last = n
				continue
			}
			if sep.Kind == tokDot {
				p.errorf(sep.Span, "expected a name after '.' in tool name %q", name)
			}
		}
		break
	}
	return &Ident{Span: span, Name: name}
}

func (p *parser) parseCall() *Call {
	name := p.parseToolName()
	c := &Call{Tool: name}
	open := p.tok()
	if open.Kind != tokLParen {
		p.errorf(open.Span, "expected '(' after tool name %q, found %s: a call is %s(arg: value, …)", name.Name, describe(open), name.Name)
	}
	p.advance()
	for {
		p.skipNewlines()
		t := p.tok()
		if t.Kind == tokRParen {
			break
		}
		if len(c.Args) == 0 && t.Span.Start.Line > open.Span.Start.Line {
			c.Multiline = true
		}
		argName := p.parseFieldName("an argument name")
		colon := p.tok()
		if colon.Kind != tokColon {
			if colon.Kind == tokAssign {
				p.errorf(colon.Span, "arguments are written name: value, not name = value")
			}
			if colon.Kind == tokOperator && colon.Text == "==" {
				p.errorf(colon.Span, "arguments are written name: value, not name == value")
			}
			p.errorf(colon.Span, "expected ':' after argument name %q, found %s", argName.Name, describe(colon))
		}
		p.advance()
		v := p.parseExpr(ctxArg)
		c.Args = append(c.Args, &Arg{Span: argName.Span.Join(v.Range()), Name: argName, Value: v})
		p.skipNewlines()
		t = p.tok()
		if t.Kind == tokComma {
			p.advance()
			continue
		}
		if t.Kind != tokRParen {
			if t.Kind == tokArrow || t.Kind == tokEOF {
				p.errorf(t.Span, "')' missing: the arguments of %s( are not closed before %s", name.Name, describe(t))
			}
			p.unexpected(t, "',' or ')'")
		}
	}
	end := p.advance()
	c.Span = name.Span.Join(end.Span)
	return c
}

func (p *parser) parseOutputs() *Outputs {
	arrow := p.advance()
	o := &Outputs{Span: arrow.Span}
	o.Success = p.parseOutputPath()
	o.Span = o.Span.Join(o.Success.Span)
	t := p.tok()
	if t.Kind == tokNewline && p.peekPastNewlines().Kind == tokOrOr {
		p.skipNewlines()
		t = p.tok()
	}
	if t.Kind == tokOrOr {
		p.advance()
		if n := p.tok(); n.Kind != tokDagger {
			p.errorf(t.Span.Join(n.Span), "expected the error slot after '||' (-> †state.ok || †state.err), found %s", describe(n))
		}
		o.Error = p.parseOutputPath()
		o.Span = o.Span.Join(o.Error.Span)
	}
	return o
}

// parseOutputPath parses †state.NAME, the only form an output path takes.
func (p *parser) parseOutputPath() *Ref {
	t := p.tok()
	if t.Kind != tokDagger {
		p.errorf(t.Span, "expected an output path such as †state.result, found %s", describe(t))
	}
	r := p.parseRef()
	if !r.IsState() {
		p.errorf(r.Span, "output path %s must be †state.NAME: a step writes a state slot", r)
	}
	if len(r.Path) != 1 || r.Path[0].IsIndex {
		if len(r.Path) == 0 {
			p.errorf(r.Span, "output path %s names no slot: write †state.NAME", r)
		}
		p.errorf(r.Span, "output path %s must name a whole slot (†state.%s), not a part of one", r, r.Path[0].Field)
	}
	return r
}

func (p *parser) parseOption() Option {
	kw := p.advance()
	switch kw.Text {
	case "when":
		c := p.parseExpr(ctxStatement)
		return &WhenOption{Span: kw.Span.Join(c.Range()), Cond: c}
	case "expect":
		c := p.parseExpr(ctxStatement)
		return &ExpectOption{Span: kw.Span.Join(c.Range()), Cond: c}
	case "retry":
		o := &RetryOption{Count: p.parseIntLit("the number of retries")}
		o.Span = kw.Span.Join(o.Count.Span)
		if p.isKeyword(p.tok(), "backoff") {
			p.advance()
			o.Backoff = p.parseDurationLit("a backoff duration such as 200ms")
			o.Span = o.Span.Join(o.Backoff.Span)
		}
		return o
	case "timeout":
		d := p.parseDurationLit("a duration such as 10s")
		return &TimeoutOption{Span: kw.Span.Join(d.Span), Duration: d}
	case "fallback":
		c := p.parseCall()
		return &FallbackOption{Span: kw.Span.Join(c.Span), Call: c}
	case "approve":
		o := &ApproveOption{Span: kw.Span}
		if p.tok().Kind == tokString {
			o.Message = p.parseStringLit("a message")
			o.Span = o.Span.Join(o.Message.Span)
		}
		return o
	case "result":
		v := p.parseExpr(ctxStatement)
		return &ResultOption{Span: kw.Span.Join(v.Range()), Value: v}
	case "hint":
		var id *Ident
		switch t := p.tok(); t.Kind {
		case tokIdent:
			id = p.parseIdent("")
		case tokString:
			lit := p.parseStringLit("a hint")
			id = &Ident{Span: lit.Span, Name: lit.StringValue(), Quoted: !isPlainName(lit.StringValue())}
		default:
			p.errorf(t.Span, "expected who should do the step after hint, such as hint researcher, found %s", describe(t))
		}
		return &HintOption{Span: kw.Span.Join(id.Span), Name: id}
	}
	panic("unreachable")
}

// ---------------------------------------------------------------- names and literals

func (p *parser) parseIdent(what string) *Ident {
	t := p.tok()
	if t.Kind != tokIdent {
		p.unexpected(t, what)
	}
	p.advance()
	return &Ident{Span: t.Span, Name: t.Text}
}

// parseFieldName parses a field, parameter or argument name: an identifier
// (keywords included) or a string for names such as "Content-Type".
func (p *parser) parseFieldName(what string) *Ident {
	t := p.tok()
	switch t.Kind {
	case tokIdent:
		p.advance()
		return &Ident{Span: t.Span, Name: t.Text}
	case tokString:
		lit := p.parseStringLit(what)
		return &Ident{Span: lit.Span, Name: lit.Value.(string), Quoted: true}
	}
	p.unexpected(t, what)
	return nil
}

func (p *parser) parseStringLit(what string) *Literal {
	t := p.tok()
	if t.Kind != tokString || t.Err != "" {
		p.unexpected(t, what)
	}
	v, err := unquote(t.Text)
	if err != nil {
		p.errorf(t.Span, "%s", err)
	}
	p.advance()
	return &Literal{Span: t.Span, Kind: LitString, Value: v, Raw: t.Text}
}

func (p *parser) parseIntLit(what string) *Literal {
	t := p.tok()
	neg := false
	span := t.Span
	if t.Kind == tokMinus && adjacent(t, p.at(1)) && p.at(1).Kind == tokInt {
		neg = true
		p.advance()
		t = p.tok()
		span = span.Join(t.Span)
	}
	if t.Kind != tokInt {
		p.unexpected(t, what)
	}
	n, err := parseInt(t.Text)
	if err != nil {
		p.errorf(t.Span, "integer %s is out of range", t.Text)
	}
	p.advance()
	raw := t.Text
	if neg {
		n, raw = -n, "-"+raw
	}
	return &Literal{Span: span, Kind: LitInt, Value: n, Raw: raw}
}

func (p *parser) parseDurationLit(what string) *Literal {
	t := p.tok()
	if t.Kind != tokDuration {
		if t.Kind == tokInt || t.Kind == tokFloat {
			p.errorf(t.Span, "expected %s, found %s without a unit: write %sms, %ss or %sm", what, describe(t), t.Text, t.Text, t.Text)
		}
		p.unexpected(t, what)
	}
	d, err := parseDuration(t.Text)
	if err != nil {
		p.errorf(t.Span, "%s", err)
	}
	p.advance()
	return &Literal{Span: t.Span, Kind: LitDuration, Value: d, Raw: t.Text}
}

// parseInt reads a decimal integer, or a hexadecimal one after 0x. A
// leading zero does not make it octal: 010 is ten, as in JSON and CEL.
func parseInt(text string) (int64, error) {
	neg := strings.HasPrefix(text, "-")
	digits := strings.TrimPrefix(text, "-")
	base := 10
	if len(digits) > 2 && (digits[:2] == "0x" || digits[:2] == "0X") {
		base, digits = 16, digits[2:]
	}
	if neg {
		digits = "-" + digits // so that -9223372036854775808 is in range
	}
	return strconv.ParseInt(digits, base, 64)
}

// intRangeMessage is the message of an integer literal beyond the range
// of an int64, which is refused rather than taken as a double that is not
// the number written.
func intRangeMessage(text string) string {
	msg := fmt.Sprintf("integer %s is beyond the range of an int (64-bit integers)", abbreviate(text, 40))
	f, err := strconv.ParseFloat(text, 64)
	switch {
	case err != nil || strings.ContainsAny(text, "xX"):
		return msg + ": write it as a number with an exponent (1.5e30) or as a string"
	case len(text) > 40:
		return msg + fmt.Sprintf(": write it as a number, %s, or as a string", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return msg + fmt.Sprintf(": write it as a number, %s, or as a string, %q", strconv.FormatFloat(f, 'g', -1, 64), text)
}

func parseDuration(text string) (time.Duration, error) {
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number and a unit (ms, s, m, h), such as 500ms or 1m30s", text)
	}
	return d, nil
}

// unquote decodes a string literal written with double or single quotes,
// with JSON's escapes plus \' and \UXXXXXXXX.
func unquote(text string) (string, error) {
	if len(text) < 2 || (text[0] != '"' && text[0] != '\'') || text[len(text)-1] != text[0] {
		return "", fmt.Errorf("malformed string %s", text)
	}
	q := text[0]
	body := text[1 : len(text)-1]
	if len(text) >= 6 && text[1] == q && text[2] == q {
		return "", fmt.Errorf("triple-quoted strings are only allowed inside CEL expressions")
	}
	if !utf8.ValidString(body) {
		return "", fmt.Errorf("string holds bytes that are not UTF-8 text; write the character as \\uXXXX")
	}
	if !strings.ContainsRune(body, '\\') {
		return body, nil
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", fmt.Errorf("string ends in a lone backslash")
		}
		switch e := body[i]; e {
		case '"', '\'', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if i+n >= len(body) {
				return "", fmt.Errorf("incomplete \\%c escape in string", e)
			}
			v, err := strconv.ParseUint(body[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("invalid \\%c escape %q in string", e, body[i+1:i+1+n])
			}
			i += n
			r := rune(v)
			if e == 'u' && r >= 0xD800 && r < 0xDC00 && i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				if lo, err := strconv.ParseUint(body[i+3:i+7], 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (rune(lo) - 0xDC00)
					i += 6
				}
			}
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", fmt.Errorf("unknown escape \\%c in string: use \\\" \\\\ \\n \\t \\uXXXX", e)
		}
	}
	return b.String(), nil
}
