package lang

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jkind is the kind of a JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jvalue is a JSON value with the span it was read from. Objects keep their
// members in order.
type jvalue struct {
	span Span
	str  string // a string's value, or a number's text
	arr  []*jvalue
	obj  []jmember
	kind jkind
	b    bool
	// escaped is set on strings whose source text has escapes, so offsets
	// inside the value do not map one to one onto the source.
	escaped bool
}

type jmember struct {
	key     string
	keySpan Span
	val     *jvalue
}

func (v *jvalue) get(key string) *jvalue {
	if v == nil || v.kind != jObject {
		return nil
	}
	for _, m := range v.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// jsonError is a syntax error in a JSON document.
type jsonError struct {
	pos Pos
	msg string
}

// jsonDup is a key that an object has twice: the reader keeps the first
// member and drops the second, but JSON readers disagree on which of the
// two counts (most keep the last), so a document that has one is refused.
type jsonDup struct {
	key           string
	first, second Span
}

// jsonParser reads JSON text into jvalues, computing positions as it goes.
type jsonParser struct {
	src []byte
	// text is src as a string: the strings and numbers read without
	// escapes are slices of it, so reading them allocates nothing. They
	// keep the whole text alive, as the tree made from them does anyway.
	text      string
	off       int
	line      int
	lineStart int
	adjust    int
	depth     int
	// vals hands out values, allocated in blocks. memberArena and
	// elemArena hold the members of objects and the elements of arrays,
	// each a run of its own; members and elems are scratch stacks for the
	// objects and arrays being read, moved to the arenas when each is
	// complete.
	vals        []jvalue
	nvals       int
	memberArena []jmember
	elemArena   []*jvalue
	members     []jmember
	elems       []*jvalue
	// stream, when set, is given each element of a root array as soon as
	// it is read (see document).
	stream func(*jvalue) bool
	// dups are the keys found twice in an object, in the order read.
	dups []jsonDup
}

func newJSONParser(src []byte) *jsonParser {
	return &jsonParser{src: src, text: string(src), line: 1}
}

// alloc returns a new, zero value.
func (p *jsonParser) alloc() *jvalue {
	if p.nvals == len(p.vals) {
		p.vals = make([]jvalue, min(max(2*len(p.vals), 64), 1024))
		p.nvals = 0
	}
	v := &p.vals[p.nvals]
	*v = jvalue{}
	p.nvals++
	return v
}

// jsonMark records how much of the parser's memory is handed out, so that
// what is handed out after it can be handed out again.
type jsonMark struct {
	block          *jvalue
	vals           int
	members, elems int
}

func (p *jsonParser) mark() jsonMark {
	m := jsonMark{vals: p.nvals, members: len(p.memberArena), elems: len(p.elemArena)}
	if len(p.vals) > 0 {
		m.block = &p.vals[0]
	}
	return m
}

// release hands out again the memory handed out since m: the values read
// since then must no longer be used.
func (p *jsonParser) release(m jsonMark) {
	if len(p.vals) > 0 && &p.vals[0] == m.block {
		p.nvals = m.vals
	} else {
		p.nvals = 0 // a new block: all of it came after m
	}
	p.memberArena = p.memberArena[:m.members]
	p.elemArena = p.elemArena[:m.elems]
}

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 512

// document reads the JSON document. When p.stream is set and the document
// is an array, each element is given to p.stream as soon as it is read,
// and its memory is reused for the next one, so p.stream must not keep it:
// the root array is left without those elements. When p.stream returns
// false, streaming stops: that element and the ones after it are kept in
// the root array as usual.
func (p *jsonParser) document() (v *jvalue, err *jsonError) {
	defer func() {
		if r := recover(); r != nil {
			je, ok := r.(*jsonError)
			if !ok {
				panic(r)
			}
			v, err = nil, je
		}
	}()
	// A UTF-8 byte order mark is allowed and skipped.
	if len(p.src) >= 3 && p.src[0] == 0xEF && p.src[1] == 0xBB && p.src[2] == 0xBF {
		p.off = 3
		p.lineStart = 3
	}
	p.space()
	if p.off >= len(p.src) || p.src[p.off] != '[' {
		p.stream = nil
	}
	v = p.value()
	p.space()
	if p.off < len(p.src) {
		p.fail("unexpected %s after the JSON value", p.describe())
	}
	return v, nil
}

func (p *jsonParser) pos() Pos {
	return Pos{Offset: p.off, Line: p.line, Column: p.off - p.lineStart - p.adjust + 1}
}

func (p *jsonParser) fail(format string, args ...any) {
	panic(&jsonError{pos: p.pos(), msg: fmt.Sprintf(format, args...)})
}

func (p *jsonParser) describe() string {
	if p.off >= len(p.src) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.src[p.off:])
	return quoteRune(r)
}

func (p *jsonParser) space() {
	for p.off < len(p.src) {
		switch p.src[p.off] {
		case ' ', '\t', '\r':
			p.off++
		case '\n':
			p.off++
			p.line++
			p.lineStart = p.off
			p.adjust = 0
		case '/':
			// Comments are not JSON, but models and people write them.
			switch {
			case p.off+1 < len(p.src) && p.src[p.off+1] == '/':
				for p.off < len(p.src) && p.src[p.off] != '\n' {
					p.skipByte()
				}
			case p.off+1 < len(p.src) && p.src[p.off+1] == '*':
				p.off += 2
				for p.off < len(p.src) && !(p.src[p.off] == '*' && p.off+1 < len(p.src) && p.src[p.off+1] == '/') {
					p.skipByte()
				}
				if p.off >= len(p.src) {
					p.fail("comment not terminated")
				}
				p.off += 2
			default:
				return
			}
		default:
			return
		}
	}
}

// skipByte moves past one character of a comment, keeping positions right.
func (p *jsonParser) skipByte() {
	if p.src[p.off] == '\n' {
		p.off++
		p.line++
		p.lineStart = p.off
		p.adjust = 0
		return
	}
	_, n := utf8.DecodeRune(p.src[p.off:])
	p.off += n
	p.adjust += n - 1
}

func (p *jsonParser) value() *jvalue {
	if p.off >= len(p.src) {
		p.fail("unexpected end of file: expected a JSON value")
	}
	start := p.pos()
	v := p.alloc()
	switch c := p.src[p.off]; {
	case c == '{':
		p.object(v)
	case c == '[':
		stream := p.stream
		p.stream = nil // only the root array streams
		p.array(v, stream)
	case c == '"':
		v.kind = jString
		v.str, v.escaped = p.string()
	case c == '-' || isDigit(c):
		v.kind = jNumber
		v.str = p.number()
	case p.word("true"):
		v.kind, v.b = jBool, true
	case p.word("false"):
		v.kind = jBool
	case p.word("null"):
		v.kind = jNull
	default:
		p.fail("expected a JSON value, found %s", p.describe())
	}
	v.span = Span{start, p.pos()}
	return v
}

func (p *jsonParser) word(w string) bool {
	if strings.HasPrefix(p.text[p.off:], w) {
		p.off += len(w)
		return true
	}
	return false
}

func (p *jsonParser) enter() {
	p.depth++
	if p.depth > maxJSONDepth {
		p.fail("JSON nested more than %d levels deep", maxJSONDepth)
	}
}

func (p *jsonParser) object(v *jvalue) {
	p.enter()
	v.kind = jObject
	base := len(p.members)
	defer func() { v.obj = popInto(&p.members, base, &p.memberArena) }()
	// index finds a key among the members read so far once an object has
	// smallObject of them; until then, they are searched in order, which
	// is faster and allocates nothing.
	var index map[string]int
	p.off++
	p.space()
	if p.off < len(p.src) && p.src[p.off] == '}' {
		p.off++
		p.depth--
		return
	}
	for {
		p.space()
		if p.off < len(p.src) && p.src[p.off] == '}' && len(p.members) > base { // trailing comma
			p.off++
			p.depth--
			return
		}
		if p.off >= len(p.src) || p.src[p.off] != '"' {
			p.fail("expected a quoted key, found %s", p.describe())
		}
		ks := p.pos()
		key, _ := p.string()
		m := jmember{key: key, keySpan: Span{ks, p.pos()}}
		p.space()
		if p.off >= len(p.src) || p.src[p.off] != ':' {
			p.fail("expected ':' after key %q, found %s", key, p.describe())
		}
		p.off++
		p.space()
		m.val = p.value()
		if first := p.findMember(base, key, &index); first >= 0 {
			p.dups = append(p.dups, jsonDup{key: key, first: p.members[first].keySpan, second: m.keySpan})
		} else {
			if index != nil {
				index[key] = len(p.members)
			}
			p.members = append(p.members, m)
		}
		p.space()
		if p.off < len(p.src) && p.src[p.off] == ',' {
			p.off++
			continue
		}
		if p.off < len(p.src) && p.src[p.off] == '}' {
			p.off++
			p.depth--
			return
		}
		p.fail("expected ',' or '}' in object, found %s", p.describe())
	}
}

// smallObject is the number of members from which findMember finds an
// object's keys through an index instead of one by one.
const smallObject = 16

// findMember returns the position in p.members of the member with key
// among those of the object whose members start at base, or -1. It builds
// *index when the object grows past smallObject members, so that reading
// an object takes time in proportion to its size.
func (p *jsonParser) findMember(base int, key string, index *map[string]int) int {
	if *index != nil {
		if i, ok := (*index)[key]; ok {
			return i
		}
		return -1
	}
	members := p.members[base:]
	for i := range members {
		if members[i].key == key {
			return base + i
		}
	}
	if len(members) >= smallObject {
		*index = make(map[string]int, 2*len(members))
		for i := range members {
			(*index)[members[i].key] = base + i
		}
	}
	return -1
}

// array reads an array into v. When stream is set, each element is given
// to it instead of kept (see document).
func (p *jsonParser) array(v *jvalue, stream func(*jvalue) bool) {
	p.enter()
	v.kind = jArray
	base := len(p.elems)
	defer func() { v.arr = popInto(&p.elems, base, &p.elemArena) }()
	p.off++
	p.space()
	if p.off < len(p.src) && p.src[p.off] == ']' {
		p.off++
		p.depth--
		return
	}
	read := 0
	for {
		p.space()
		if p.off < len(p.src) && p.src[p.off] == ']' && read > 0 { // trailing comma
			p.off++
			p.depth--
			return
		}
		if stream == nil {
			p.elems = append(p.elems, p.value())
		} else {
			m := p.mark()
			e := p.value()
			if stream(e) {
				p.release(m)
			} else {
				stream = nil
				p.elems = append(p.elems, e)
			}
		}
		read++
		p.space()
		if p.off < len(p.src) && p.src[p.off] == ',' {
			p.off++
			continue
		}
		if p.off < len(p.src) && p.src[p.off] == ']' {
			p.off++
			p.depth--
			return
		}
		p.fail("expected ',' or ']' in array, found %s", p.describe())
	}
}

// number reads a number. One beyond the range of a float64 (1e999) is an
// error, not an infinity: JSON has none, and readers differ on what they
// make of it.
func (p *jsonParser) number() string {
	start := p.off
	if p.src[p.off] == '-' {
		p.off++
	}
	digits := func() int {
		n := 0
		for p.off < len(p.src) && isDigit(p.src[p.off]) {
			p.off++
			n++
		}
		return n
	}
	if p.off < len(p.src) && p.src[p.off] == '0' {
		p.off++
	} else if digits() == 0 {
		p.fail("malformed number")
	}
	if p.off < len(p.src) && p.src[p.off] == '.' {
		p.off++
		if digits() == 0 {
			p.fail("malformed number: digits expected after '.'")
		}
	}
	exponent := false
	if p.off < len(p.src) && (p.src[p.off] == 'e' || p.src[p.off] == 'E') {
		exponent = true
		p.off++
		if p.off < len(p.src) && (p.src[p.off] == '+' || p.src[p.off] == '-') {
			p.off++
		}
		if digits() == 0 {
			p.fail("malformed number: digits expected in exponent")
		}
	}
	num := p.text[start:p.off]
	// Without an exponent, only a number of more than 300 digits can be
	// out of range: most numbers need no conversion here.
	if exponent || len(num) > 300 {
		if f, _ := strconv.ParseFloat(num, 64); math.IsInf(f, 0) {
			p.off = start
			p.fail("number %s is out of range: the largest is about 1.8e308", abbreviate(num, 32))
		}
	}
	return num
}

// abbreviate returns s, or its first n bytes and an ellipsis when it is
// longer; s is ASCII.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// string reads a quoted string and reports whether it had escapes.
func (p *jsonParser) string() (string, bool) {
	p.off++ // opening quote
	start := p.off
	for p.off < len(p.src) {
		c := p.src[p.off]
		if c == '"' {
			s := p.text[start:p.off]
			p.off++
			return s, false
		}
		if c == '\\' {
			return p.escapedString(start), true
		}
		if c < 0x20 {
			p.fail("control character in string: write it escaped (\\n, \\t, \\u00XX)")
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(p.src[p.off:])
			if r == utf8.RuneError && n == 1 {
				p.fail("invalid UTF-8 in string")
			}
			p.off += n
			p.adjust += n - 1
			continue
		}
		p.off++
	}
	p.fail("string not terminated")
	return "", false
}

func (p *jsonParser) escapedString(start int) string {
	var b strings.Builder
	b.Write(p.src[start:p.off])
	for p.off < len(p.src) {
		c := p.src[p.off]
		switch {
		case c == '"':
			p.off++
			return b.String()
		case c == '\\':
			p.off++
			if p.off >= len(p.src) {
				p.fail("string not terminated")
			}
			e := p.src[p.off]
			p.off++
			switch e {
			case '"', '\\', '/':
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
			case 'u':
				at := p.off - 2
				r := p.hex4()
				if utf16.IsSurrogate(r) {
					// Half of a pair: the other half must follow.
					// Taking whatever escape follows as the other half
					// would lose the character it stands for.
					lo := rune(-1)
					if r < 0xDC00 && p.off+1 < len(p.src) && p.src[p.off] == '\\' && p.src[p.off+1] == 'u' {
						save := p.off
						p.off += 2
						if lo = p.hex4(); lo < 0xDC00 || lo > 0xDFFF {
							lo, p.off = -1, save
						}
					}
					if lo < 0 {
						p.off = at
						p.fail("%s", loneSurrogate(p.text[at:at+6]))
					}
					r = utf16.DecodeRune(r, lo)
				}
				b.WriteRune(r)
			default:
				p.off--
				p.fail("invalid escape \\%c in string", e)
			}
		case c < 0x20:
			p.fail("control character in string: write it escaped (\\n, \\t, \\u00XX)")
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p.src[p.off:])
			if r == utf8.RuneError && n == 1 {
				p.fail("invalid UTF-8 in string")
			}
			b.Write(p.src[p.off : p.off+n])
			p.off += n
			p.adjust += n - 1
		default:
			b.WriteByte(c)
			p.off++
		}
	}
	p.fail("string not terminated")
	return ""
}

func (p *jsonParser) hex4() rune {
	if p.off+4 > len(p.src) {
		p.fail("incomplete \\u escape")
	}
	n, err := strconv.ParseUint(p.text[p.off:p.off+4], 16, 32)
	if err != nil {
		p.fail("invalid \\u escape")
	}
	p.off += 4
	return rune(n)
}

// toGo converts a JSON value to Go values: nil, bool, int64 or float64,
// string, []any and map[string]any.
func (v *jvalue) toGo() any {
	switch v.kind {
	case jBool:
		return v.b
	case jNumber:
		if n, err := strconv.ParseInt(v.str, 10, 64); err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(v.str, 64)
		return f
	case jString:
		return v.str
	case jArray:
		out := make([]any, len(v.arr))
		for i, e := range v.arr {
			out[i] = e.toGo()
		}
		return out
	case jObject:
		out := make(map[string]any, len(v.obj))
		for _, m := range v.obj {
			out[m.key] = m.val.toGo()
		}
		return out
	}
	return nil
}

// popInto moves what a value pushed on stack since base into arena, and
// returns it (nil for none): a value's members or elements are gathered on
// a stack while nested values push theirs, then kept side by side.
func popInto[T any](stack *[]T, base int, arena *[]T) []T {
	var out []T
	if n := len(*stack) - base; n > 0 {
		start := len(*arena)
		*arena = append(*arena, (*stack)[base:]...)
		out = (*arena)[start : start+n : start+n]
	}
	clear((*stack)[base:])
	*stack = (*stack)[:base]
	return out
}
