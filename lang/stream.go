package lang

import (
	"context"
	"errors"
	"io"
)

// StreamParser parses a plan while it is still being written, one item at a
// time: Next returns each declaration or step as soon as the text that
// completes it has arrived, without waiting for the end of the stream. This
// is what eager mode runs on.
//
// A step is complete at a ";" or once the first token of the following line
// shows that the line does not continue it (an option such as "retry" on the
// next line belongs to the step above).
type StreamParser struct {
	r     io.Reader
	buf   []byte
	eof   bool
	p     *parser
	chunk []byte
	done  bool
	// pending is the offset where the item the last try could not finish
	// starts.
	pending int
}

// NewStreamParser returns a parser that reads plan text from r. name is used
// in diagnostics.
func NewStreamParser(name string, r io.Reader) *StreamParser {
	s := &StreamParser{r: r, chunk: make([]byte, 4096)}
	s.p = newParser(name, nil, true)
	return s
}

// Name returns the name diagnostics give the stream's text.
func (s *StreamParser) Name() string { return s.p.name }

// Source returns the text read so far; the spans of returned items and
// diagnostics point into it.
func (s *StreamParser) Source() []byte { return s.buf }

// Next returns the next complete item. A malformed item comes back as a nil
// item with its diagnostics, and parsing goes on after it. At the end of the
// stream Next returns io.EOF; a read error is returned wrapped. Reading is
// checked for cancellation between reads; to interrupt a read that blocks,
// close the reader.
func (s *StreamParser) Next(ctx context.Context) (Item, Diagnostics, error) {
	for {
		if s.done {
			return nil, nil, io.EOF
		}
		if it, diags, ok := s.try(); ok {
			return it, diags, nil
		}
		if s.eof && !s.done {
			// All the text is here, so an item cannot be incomplete: a
			// parser that still asks for more would loop forever.
			s.done = true
			return nil, nil, errors.New("internal error: the stream parser asked for more text after the end of the stream")
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := s.read(); err != nil {
			return nil, nil, err
		}
	}
}

// try parses one item from the text read so far. ok is false when the text
// ends before the item does.
func (s *StreamParser) try() (it Item, diags Diagnostics, ok bool) {
	p := s.p
	p.compact()
	mark := p.i
	var reset Pos
	if mark < len(p.toks) {
		reset = p.toks[mark].Span.Start
	} else {
		reset = p.sc.pos()
	}
	comments := append([]Comment(nil), p.comments...)
	prevLine, floor, depth, ndiags := p.prevLine, p.floor, p.depth, len(p.diags)
	prevItem, prevEnd := p.prevItem, p.prevEnd
	defer func() {
		if r := recover(); r != nil {
			if _, more := r.(needMore); !more {
				panic(r)
			}
			s.pending = reset.Offset
			p.i = mark
			p.toks = p.toks[:mark]
			// Scanning restarts at reset; comments from there on will be
			// read again.
			p.comments = comments[:0]
			for _, c := range comments {
				if c.Span.Start.Offset < reset.Offset {
					p.comments = append(p.comments, c)
				}
			}
			p.prevLine, p.floor, p.depth, p.diags = prevLine, floor, depth, p.diags[:ndiags]
			p.prevItem, p.prevEnd = prevItem, prevEnd
			p.sc = newScanner(s.buf, reset.Offset, reset.Line, !s.eof)
			it, diags, ok = nil, nil, false
		}
	}()
	item, end := p.parseTopItem()
	if end {
		s.done = true
	}
	diags = append(Diagnostics(nil), p.diags[ndiags:]...)
	diags.Sort()
	if end && len(diags) == 0 {
		return nil, nil, false
	}
	return item, diags, true
}

// maxChunk bounds the size of one read.
const maxChunk = 1 << 20

// read appends the next chunk of the stream to the buffer. Each try parses
// the pending item from its start, so the chunk read grows with the item:
// a long item is parsed again a few times, not once for every 4 KiB. A
// read returns what the stream has, so a slow stream is parsed as soon as
// each part arrives.
func (s *StreamParser) read() error {
	if s.eof {
		return nil
	}
	if want := min(len(s.buf)-s.pending, maxChunk); want > len(s.chunk) {
		s.chunk = make([]byte, want)
	}
	n, err := s.r.Read(s.chunk)
	if n > 0 {
		s.buf = append(s.buf, s.chunk[:n]...)
	}
	if errors.Is(err, io.EOF) {
		s.eof = true
	} else if err != nil {
		return &ReadError{Err: err}
	}
	// The scanner works on the buffer, which may have moved; restart it at
	// its position in the new buffer.
	pos := s.p.sc.pos()
	s.p.src = s.buf
	s.p.sc = newScanner(s.buf, pos.Offset, pos.Line, !s.eof)
	return nil
}

// ReadError is returned by StreamParser.Next when the stream fails.
type ReadError struct{ Err error }

// Error describes the failure.
func (e *ReadError) Error() string { return "reading plan: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ReadError) Unwrap() error { return e.Err }
