package lang

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// excerptColumns is about how many columns of a line an excerpt shows:
// a longer line is cut around the range the excerpt marks, so that a
// plan written on one line (a model's minified JSON) is not quoted whole
// by each of its diagnostics.
const excerptColumns = 100

// cutMark stands for the text an excerpt leaves out of its line.
const cutMark = "…"

// maxMessageBytes bounds the text of a message as it is shown: a message
// may quote plan text of any length (a name, a value).
const maxMessageBytes = 1000

// window is the part of a source line an excerpt shows.
type window struct {
	// text is the part shown, a slice of the source without the line's
	// break.
	text []byte
	// cutLeft and cutRight say that the line goes on before and after it.
	cutLeft, cutRight bool
	// start and end are the marked range as byte offsets into text,
	// start <= end <= len(text).
	start, end int
}

// excerptWindow returns the part of the line of src that span starts on
// to show: all of it when it is short, else about excerptColumns columns
// around the start of the span, as much of the span as fits and some text
// before it. It reads only the bytes near the span, whatever the length
// of the line. ok is false when span does not point into src.
func excerptWindow(src []byte, span Span) (w window, ok bool) {
	off := span.Start.Offset
	if src == nil || !span.IsValid() || off < 0 || off > len(src) {
		return window{}, false
	}
	// The line after off, up to the columns shown.
	right, rightW, atEnd := off, 0, true
	for right < len(src) && src[right] != '\n' {
		if rightW >= excerptColumns {
			atEnd = false
			break
		}
		r, n := utf8.DecodeRune(src[right:])
		if r == '\r' && (right+1 == len(src) || src[right+1] == '\n') {
			break // the CR of a CRLF line break
		}
		rightW += runeWidth(r, n)
		right += n
	}
	// The line before off, up to the columns shown.
	left, leftW, atStart := off, 0, true
	for left > 0 && src[left-1] != '\n' {
		if leftW >= excerptColumns {
			atStart = false
			break
		}
		r, n := utf8.DecodeLastRune(src[:left])
		leftW += runeWidth(r, n)
		left -= n
	}
	// The marked range on this line.
	end := off
	switch {
	case span.End.Line == span.Start.Line && span.End.Offset > off:
		end = min(span.End.Offset, right)
	case span.End.Line > span.Start.Line:
		end = right
	}
	if atStart && atEnd && leftW+rightW <= excerptColumns {
		return window{text: src[left:right], start: off - left, end: end - left}, true
	}
	spanW := max(columnsOf(src[off:end]), 1)
	// A short range sits in the middle, a long one starts a fifth in.
	wantLeft := min(leftW, max((excerptColumns-spanW+1)/2, excerptColumns/5))
	if atEnd && rightW < excerptColumns-wantLeft {
		wantLeft = min(leftW, excerptColumns-rightW)
	}
	from := off
	for w := 0; from > left; {
		r, n := utf8.DecodeLastRune(src[:from])
		if w += runeWidth(r, n); w > wantLeft {
			break
		}
		from -= n
	}
	to := off
	for w, budget := 0, excerptColumns-columnsOf(src[from:off]); to < right; {
		r, n := utf8.DecodeRune(src[to:])
		if w += runeWidth(r, n); w > budget && to > off {
			break
		}
		to += n
	}
	end = min(end, to)
	return window{
		text:     src[from:to],
		cutLeft:  from > left || !atStart,
		cutRight: to < right || !atEnd,
		start:    off - from,
		end:      end - from,
	}, true
}

// columnsOf returns the columns text takes as an excerpt shows it.
func columnsOf(text []byte) int {
	w := 0
	for len(text) > 0 {
		r, n := utf8.DecodeRune(text)
		w += runeWidth(r, n)
		text = text[n:]
	}
	return w
}

// runeWidth returns the columns a character of n bytes takes as an
// excerpt shows it: a tab four, a character EscapeControl escapes as
// many as its escape, a wide East Asian character two, a combining mark
// none, any other one.
func runeWidth(r rune, n int) int {
	switch {
	case r == '\t':
		return 4
	case r < utf8.RuneSelf:
		if keepASCII(byte(r)) {
			return 1
		}
		switch r {
		case '\a', '\b', '\f', '\r', '\v':
			return 2 // \a
		}
		return 4 // \xHH
	case r == utf8.RuneError && n == 1:
		return 4 // \xHH
	case escapedRune(r):
		if r > 0xffff {
			return 10 // \UHHHHHHHH
		}
		return 6 // \uHHHH
	case unicode.In(r, unicode.Mn, unicode.Me):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// clipMessage returns s cut to about maxMessageBytes, at a character,
// with cutMark where it was cut.
func clipMessage(s string) string {
	if len(s) <= maxMessageBytes {
		return s
	}
	i := maxMessageBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + cutMark
}
