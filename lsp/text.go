package lsp

import (
	"sort"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/lang"
)

// text is a document's text with the start of each line, to turn the
// protocol's positions (a line and a count of UTF-16 code units) into
// byte offsets and back. Lines end at '\n', as lang counts them.
type text struct {
	s     string
	lines []int // byte offset of the start of each line
}

func newText(s string) *text {
	lines := make([]int, 1, 1+len(s)/32)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &text{s: s, lines: lines}
}

// lineEnd returns the offset of the end of line i, before its '\n'.
func (t *text) lineEnd(i int) int {
	if i+1 < len(t.lines) {
		return t.lines[i+1] - 1
	}
	return len(t.s)
}

// offset returns the byte offset of p, clamped into the text: a line past
// the last is the end of the text, a character past the end of its line
// is the line's end, and a position inside a character (between the two
// halves of a surrogate pair) is the character's start.
func (t *text) offset(p position) int {
	switch {
	case p.Line < 0:
		return 0
	case p.Line >= len(t.lines):
		return len(t.s)
	}
	off, end := t.lines[p.Line], t.lineEnd(p.Line)
	for units := 0; off < end; {
		r, size := utf8.DecodeRuneInString(t.s[off:end])
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > p.Character {
			break
		}
		units += n
		off += size
	}
	return off
}

// position returns the protocol's position of byte offset off.
func (t *text) position(off int) position {
	off = max(0, min(off, len(t.s)))
	line := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	units := 0
	for i := t.lines[line]; i < off; {
		r, size := utf8.DecodeRuneInString(t.s[i:off])
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	return position{Line: line, Character: units}
}

// span returns the protocol's range of a span of the text.
func (t *text) span(s lang.Span) rng {
	if !s.IsValid() {
		return rng{}
	}
	start := t.position(s.Start.Offset)
	end := start
	if s.End.Offset > s.Start.Offset {
		end = t.position(s.End.Offset)
	}
	return rng{Start: start, End: end}
}

// offsets returns the byte offsets of a range, in order.
func (t *text) offsets(r rng) (int, int) {
	a, b := t.offset(r.Start), t.offset(r.End)
	if b < a {
		a, b = b, a
	}
	return a, b
}

// apply returns the text after a change: the whole text, or the range's
// text replaced.
func (t *text) apply(c contentChange) *text {
	if c.Range == nil {
		return newText(c.Text)
	}
	a, b := t.offsets(*c.Range)
	return newText(t.s[:a] + c.Text + t.s[b:])
}
