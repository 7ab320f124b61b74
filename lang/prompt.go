package lang

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text of a hole's instruction (`? "…"`) and of a task's goal
// (`task "…"`) is for a model to read, and the references in it are read
// by the step: `? "the refundable amount from †state.history"` reads
// †state.history, which orders the step after its writer, and the model is
// given its value. A reference in such a text starts with † and a name,
// or with $state or $input and then '.' or '[' (as a reference string of
// the JSON form does: "$5" stays text), and goes on with .field, [index]
// and ["field"]; a '.' that no name follows ends it, so a sentence may end
// right after a reference.

// TextRefs returns the references in the text of an instruction or a
// goal, in order. lit is the string literal that holds the text, in
// source: when its source text is the text between quotes (no escapes),
// each reference gets its own span; otherwise every reference, and every
// diagnostic, gets the literal's span. file names the source in
// diagnostics.
func TextRefs(file string, lit *Literal, exact bool) ([]*Ref, Diagnostics) {
	text := lit.StringValue()
	var refs []*Ref
	var diags Diagnostics
	for i := 0; i < len(text); {
		n := refLength(text[i:])
		if n == 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		r, d := ParseRef(file, []byte(text[i:i+n]))
		base := Pos{Offset: lit.Span.Start.Offset + 1 + i, Line: lit.Span.Start.Line, Column: lit.Span.Start.Column + 1 + utf8.RuneCountInString(text[:i])}
		move := func(s Span) Span {
			if !exact {
				return lit.Span
			}
			return Span{shiftPos(s.Start, base), shiftPos(s.End, base)}
		}
		if r != nil {
			mapSpans(r, move)
			refs = append(refs, r)
		}
		for _, dg := range d {
			dg.Span = move(dg.Span)
			diags = append(diags, dg)
		}
		i += n
	}
	return refs, diags
}

// exactText reports whether a string literal's source text is its value
// between quotes, so that positions in the value map to the source.
func exactText(lit *Literal) bool {
	raw := lit.Raw
	return len(raw) >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw[1:len(raw)-1] == lit.StringValue()
}

// refLength returns the length of the reference that starts text, or 0.
func refLength(text string) int {
	start := 0
	switch {
	case strings.HasPrefix(text, "†"):
		start = len("†")
	case strings.HasPrefix(text, "$state.") || strings.HasPrefix(text, "$state[") || strings.HasPrefix(text, "$input.") || strings.HasPrefix(text, "$input["):
		start = 1
	default:
		return 0
	}
	i := nameLength(text, start)
	if i == start {
		return 0
	}
	for i < len(text) {
		switch text[i] {
		case '.':
			j := nameLength(text, i+1)
			if j == i+1 {
				return i
			}
			i = j
			continue
		case '[':
			j := i + 1
			switch {
			case j < len(text) && isDigit(text[j]):
				for j < len(text) && isDigit(text[j]) {
					j++
				}
			case j < len(text) && text[j] == '"':
				k := strings.IndexByte(text[j+1:], '"')
				if k < 0 {
					return i
				}
				j += k + 2
			default:
				return i
			}
			if j >= len(text) || text[j] != ']' {
				return i
			}
			i = j + 1
			continue
		}
		break
	}
	return i
}

// nameLength returns where the name that starts at text[i] ends: i when
// none does.
func nameLength(text string, i int) int {
	j := i
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if r == '_' || unicode.IsLetter(r) || j > i && unicode.IsDigit(r) {
			j += size
			continue
		}
		break
	}
	return j
}
