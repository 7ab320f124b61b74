package lang

import (
	"fmt"
	"strings"
)

// PlaceKind says what an expression is in a plan. It decides where the
// expression ends (section 7.5 of the spec), and so how a mistake in it is
// explained.
type PlaceKind uint8

// The kinds of places.
const (
	PlaceOther     PlaceKind = iota // a place not named below
	PlaceArgument                   // a call's argument
	PlaceElement                    // an element of a list
	PlaceField                      // the value of an object's field
	PlaceStatement                  // the expression of when, expect, result or output
	PlaceEach                       // the list of a for each
)

// Place is where an expression stands in a plan.
type Place struct {
	Kind PlaceKind
	// Call names the call an argument belongs to; Name the argument, the
	// field, or the keyword of a statement (when, expect, result,
	// output).
	Call, Name string
}

// Mistake is a syntax error in a CEL expression of a plan, explained in
// the plan's terms.
type Mistake struct {
	// Offset and End are the bytes of the expression's Text the mistake
	// is at.
	Offset, End int
	Message     string
	// Insert, when set, is text whose insertion at InsertAt (a byte of
	// Text) fixes the mistake: the missing comma.
	Insert   string
	InsertAt int
	// NextArg is set for a comma missing between two arguments of a call:
	// the name of the argument the expression's text goes on with, which
	// the call does pass.
	NextArg string
}

// ExplainCELError explains a syntax error that CEL found in an expression
// of a plan: at byte offset off of e.Text, with CEL's message msg (such as
// "Syntax error: mismatched input 'y' expecting <EOF>"), for an
// expression at place. It knows the mistakes a plan's writer often makes:
// a comma missing between arguments, elements or fields; = for ==; and
// for &&; an expression that goes on after the line break that ends it.
// ok is false for a mistake it does not know.
func ExplainCELError(e *CELExpr, place Place, off int, msg string) (m Mistake, ok bool) {
	src := []byte(e.Text)
	var toks []token
	s := newScanner(src, 0, 1, false)
	for {
		t := s.next()
		if t.Kind == tokEOF {
			break
		}
		if t.Kind != tokComment && t.Kind != tokNewline {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return m, false
	}
	// The token CEL stopped at, and the brackets open before it.
	i := len(toks)
	for k, t := range toks {
		if t.Span.End.Offset > off {
			i = k
			break
		}
	}
	var open []*token
	pending := 0 // the conditionals (?) open at the expression's top level
	for k := 0; k < i; k++ {
		t := &toks[k]
		switch t.Kind {
		case tokLParen, tokLBrack, tokLBrace:
			open = append(open, t)
		case tokRParen, tokRBrack, tokRBrace:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		case tokQuestion:
			if len(open) == 0 && (k == 0 || toks[k-1].Kind != tokDot) {
				pending++
			}
		case tokColon:
			if len(open) == 0 && pending > 0 {
				pending--
			}
		}
	}
	var inner tokenKind
	if len(open) > 0 {
		inner = open[len(open)-1].Kind
	}
	at := func(t *token, format string, args ...any) (Mistake, bool) {
		return Mistake{Offset: t.Span.Start.Offset, End: t.Span.End.Offset, Message: fmt.Sprintf(format, args...)}, true
	}

	// A character CEL does not know: = for ==, a single |, an arrow.
	if i < len(toks) && strings.Contains(msg, "token recognition error") {
		t := &toks[i]
		switch {
		case t.Kind == tokAssign && i+1 < len(toks) && toks[i+1].Kind == tokOperator && strings.HasPrefix(toks[i+1].Text, ">") && adjacent(t, &toks[i+1]):
			return at(t, "CEL has no arrow functions: a macro takes a variable and an expression, as in list.map(x, x.name), not x => x.name")
		case t.Kind == tokAssign && i > 0 && toks[i-1].Kind == tokOperator && (toks[i-1].Text == "==" || toks[i-1].Text == "!=") && adjacent(&toks[i-1], t):
			return at(t, "CEL compares with == and !=, not === or !==")
		case t.Kind == tokAssign:
			return at(t, "'=' is not an operator in an expression: a comparison is written ==, as in a == b")
		case t.Kind == tokPipe:
			return at(t, "the logical or is written ||, not |")
		}
		return m, false
	}

	// The expression ends too soon: after an operator.
	if i == len(toks) || strings.Contains(msg, "'<EOF>'") {
		last := &toks[len(toks)-1]
		if !binaryOperator(last) {
			return m, false
		}
		switch place.Kind {
		case PlaceStatement, PlaceField, PlaceEach:
			what, fix := "an expression of "+place.Name, place.Name+" (… "+last.Text+" …)"
			switch place.Kind {
			case PlaceField:
				what, fix = "the value of field "+place.Name, place.Name+": (… "+last.Text+" …)"
			case PlaceEach:
				what, fix = "the list of a for each", "for each x in (… "+last.Text+" …):"
			}
			return at(last, "the expression ends with '%s', with no operand after it: if the operand is on the next line, put the whole expression in parentheses, %s, since %s ends at the end of its line", last.Text, fix, what)
		}
		return at(last, "the expression ends with '%s': the operand after it is missing", last.Text)
	}

	t, prev := &toks[i], &toks[max(i-1, 0)]
	if i == 0 {
		return m, false
	}
	next := &token{}
	if i+1 < len(toks) {
		next = &toks[i+1]
	}
	missingComma := func(format string, args ...any) (Mistake, bool) {
		m, _ := at(t, format, args...)
		m.Insert, m.InsertAt = ",", prev.Span.End.Offset
		return m, true
	}

	// name: value after a complete value: a comma is missing before it.
	if (t.Kind == tokIdent || t.Kind == tokString) && next.Kind == tokColon && endsOperand(prev) {
		name := t.Text
		if t.Kind == tokString {
			if v, err := unquote(t.Text); err == nil {
				name = v
			}
		}
		switch {
		case len(open) == 0 && pending == 0 && place.Kind == PlaceArgument:
			m, ok := missingComma("a comma is missing before argument %s: separate the arguments of a call with commas, as in %s(%s: …, %s: …)", name, place.Call, place.Name, name)
			m.NextArg = name
			return m, ok
		case len(open) == 0 && pending == 0 && place.Kind == PlaceField:
			return missingComma("a comma is missing before field %s: separate the fields of an object with commas or line breaks, as in {%s: …, %s: …}", name, place.Name, name)
		case inner == tokLBrace:
			return missingComma("a comma is missing before %s: separate the entries of a map with commas, as in {a: 1, b: 2}", t.Text)
		}
	}

	// Words other languages use for CEL's operators.
	if t.Kind == tokIdent && endsOperand(prev) {
		switch t.Text {
		case "and":
			return at(t, "CEL writes and as &&: a && b")
		case "or":
			return at(t, "CEL writes or as ||: a || b")
		case "not":
			return at(t, "CEL writes not as !: !a, and a not in b as !(a in b)")
		case "if", "then", "else":
			return at(t, "CEL writes a conditional as cond ? a : b")
		case "is":
			return at(t, "CEL compares with == and !=: a == null, not a is null")
		}
	}

	// Two values side by side.
	if endsOperand(prev) && startsOperand(t) {
		switch {
		case inner == tokLBrack || len(open) == 0 && place.Kind == PlaceElement:
			return missingComma("a comma is missing between the elements of a list, before %s: [a, b]", describe(t))
		case inner == tokLParen:
			return missingComma("a comma is missing between the arguments of a function, before %s: f(a, b)", describe(t))
		case inner == tokLBrace:
			return missingComma("a comma is missing between the entries of a map, before %s: {a: 1, b: 2}", describe(t))
		case len(open) == 0 && place.Kind == PlaceArgument:
			return at(t, "%s follows a complete value: an operator is missing between them (such as + or &&), or a comma and a name before another argument (, name: value)", describe(t))
		}
		return at(t, "%s follows a complete value: an operator is missing between them, such as + or &&", describe(t))
	}
	return m, false
}

// endsOperand reports whether an expression may end with t.
func endsOperand(t *token) bool {
	switch t.Kind {
	case tokIdent:
		return t.Text != "in"
	case tokInt, tokFloat, tokString, tokDuration, tokRParen, tokRBrack, tokRBrace:
		return true
	}
	return false
}

// startsOperand reports whether t starts an operand (and not an operator
// or a bracket that may follow an operand, such as a call's or an index's).
func startsOperand(t *token) bool {
	switch t.Kind {
	case tokIdent:
		return t.Text != "in"
	case tokInt, tokFloat, tokString, tokDuration, tokDagger:
		return true
	}
	return false
}

// FindRefInText returns the first part of a string's text that reads like
// a reference (†state.x, $input.y, or, in a for each whose element is
// named elem, †elem or $elem.z), or "". A `$` must be followed by a root
// and '.' or '[', so that "$5.00" or "$HOME" are not taken for references.
func FindRefInText(text, elem string) string {
	for i := 0; i < len(text); i++ {
		var n int
		switch {
		case text[i] == '$':
			n = 1
		case strings.HasPrefix(text[i:], "†"):
			n = len("†")
		default:
			continue
		}
		j := i + n
		for j < len(text) && (isIdentStart(text[j]) || j > i+n && isDigit(text[j])) {
			j++
		}
		root := text[i+n : j]
		if root != "input" && root != "state" && (elem == "" || root != elem) {
			continue
		}
		if j < len(text) && (text[j] == '.' || text[j] == '[') {
			k := j + 1
			for k < len(text) && (isIdentStart(text[k]) || isDigit(text[k]) || text[k] == '.' || text[k] == '"' || text[k] == ']' || text[k] == '[') {
				k++
			}
			return strings.TrimRight(text[i:k], ".")
		}
		if n > 1 {
			return text[i:j] // † and a root alone: †item
		}
	}
	return ""
}
