// Package lang is the front end of Obelisk: the scanner, the syntax tree, the
// parser for .plan text, the importer for the JSON form of a plan, the
// canonical printer, and diagnostics.
//
// Every node of the tree carries the Span of source it was read from, and every
// problem found in a source is reported as a Diagnostic with a position, so a
// person or a model can find and fix it. The package imports nothing else of
// Obelisk.
package lang

import (
	"fmt"
	"unicode/utf8"
)

// Pos is a position in a source file. Offset counts bytes from the start of the
// file; Line and Column count from 1, and Column counts characters (Unicode
// code points), so "†" is one column wide.
type Pos struct {
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Column int `json:"column"`
}

// IsValid reports whether p denotes a real position (Line is at least 1).
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats p as "line:column".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Span is the half-open source range [Start, End) of a node or token.
type Span struct {
	Start Pos `json:"start"`
	End   Pos `json:"end"`
}

// Range returns the span itself; it lets every node satisfy Node by embedding
// a Span.
func (s Span) Range() Span { return s }

// IsValid reports whether the span has a valid start position.
func (s Span) IsValid() bool { return s.Start.IsValid() }

// String formats the span as "line:column-line:column".
func (s Span) String() string { return s.Start.String() + "-" + s.End.String() }

// Join returns the smallest span that covers both s and t. An invalid span is
// ignored.
func (s Span) Join(t Span) Span {
	if !s.IsValid() {
		return t
	}
	if !t.IsValid() {
		return s
	}
	out := s
	if t.Start.Offset < out.Start.Offset {
		out.Start = t.Start
	}
	if t.End.Offset > out.End.Offset {
		out.End = t.End
	}
	return out
}

// lineIndex maps byte offsets to positions for sources whose positions are not
// computed while scanning (JSON documents, CEL issue locations).
type lineIndex struct {
	src   []byte
	lines []int // byte offset of the start of each line
}

func newLineIndex(src []byte) *lineIndex {
	lines := make([]int, 1, 1+len(src)/32)
	for i, b := range src {
		if b == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &lineIndex{src: src, lines: lines}
}

// pos returns the position of byte offset off.
func (x *lineIndex) pos(off int) Pos {
	if off < 0 {
		off = 0
	}
	if off > len(x.src) {
		off = len(x.src)
	}
	lo, hi := 0, len(x.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if x.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	start := x.lines[lo]
	return Pos{Offset: off, Line: lo + 1, Column: utf8.RuneCount(x.src[start:off]) + 1}
}

// PosAt returns the position of byte offset off in src. It is meant for
// occasional use (diagnostics); scanning computes positions as it goes.
func PosAt(src []byte, off int) Pos { return newLineIndex(src).pos(off) }
