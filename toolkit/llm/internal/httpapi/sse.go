// Package httpapi is what the model providers share to speak their
// documented HTTP APIs without an SDK: a JSON POST with the providers'
// retry rules (post.go), and a reader of server-sent events with a bound
// on the size of an event (sse.go).
package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEvent bounds the size of one server-sent event, its data lines
// together. A piece of an answer is a few tokens; a server that sends a
// whole answer as one event sends at most the answer's size limit, a
// few hundred kilobytes. A longer line is an error, not a larger buffer.
const MaxEvent = 8 << 20

// ErrEventTooLarge is wrapped by the error of a stream with an event, or a
// line, longer than the reader's bound.
var ErrEventTooLarge = errors.New("a server-sent event is larger than the bound")

// maxFieldName bounds the part of a line before the value it carries.
const maxFieldName = 64

// Event is one server-sent event: its type (the event field, empty when
// the server sent none) and its data lines joined by newlines.
type Event struct {
	Type string
	Data []byte
}

// SSE reads server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html)
// from a body, holding at most max bytes of an event at a time.
type SSE struct {
	r    *bufio.Reader
	max  int
	line []byte
	ev   Event
	data bytes.Buffer
	err  error
}

// NewSSE returns a reader of the events of r, each at most max bytes
// (MaxEvent when max is 0 or less).
func NewSSE(r io.Reader, max int) *SSE {
	if max <= 0 {
		max = MaxEvent
	}
	return &SSE{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next reads the next event with data; it returns false at the end of the
// body or on an error, which Err reports. An event without data lines is
// skipped, as the specification says; comments, id and retry fields are
// ignored. A body that ends in the middle of an event drops that event:
// it was not dispatched.
func (s *SSE) Next() bool {
	if s.err != nil {
		return false
	}
	s.ev.Type = ""
	s.data.Reset()
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			s.err = err
			return false
		}
		if len(line) == 0 {
			if hasData {
				s.ev.Data = s.data.Bytes()
				return true
			}
			s.ev.Type = ""
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			s.ev.Type = string(value)
		case "data":
			if hasData {
				s.data.WriteByte('\n')
			}
			if s.data.Len()+len(value) > s.max {
				s.err = fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, s.max)
				return false
			}
			s.data.Write(value)
			hasData = true
		}
	}
}

// Event returns the event Next read; its Data is valid until the next
// call of Next.
func (s *SSE) Event() Event { return s.ev }

// Err returns the error that stopped Next, or io.EOF at the end of the
// body.
func (s *SSE) Err() error { return s.err }

// readLine returns the next line without its end (LF or CRLF),
// reading at most max bytes of it.
func (s *SSE) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadSlice('\n')
		s.line = append(s.line, b...)
		// A line is a field's name, its value (at most the bound) and
		// its end.
		if len(s.line) > s.max+maxFieldName {
			return nil, fmt.Errorf("%w (a line of more than %d bytes)", ErrEventTooLarge, s.max)
		}
		switch {
		case err == nil:
			return trimEnd(s.line), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			// The last line has no end; it ends the body.
			return trimEnd(s.line), nil
		default:
			return nil, err
		}
	}
}

func trimEnd(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
