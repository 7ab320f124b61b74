package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Events decodes the data of each server-sent event of a response as
// JSON into an E: the llm.Events of a provider's stream.
type Events[E any] struct {
	resp *Response
	sse  *SSE
	done []byte
	cur  E
	err  error
}

// NewEvents returns the events of resp. done, when not nil, is the data
// of the event that ends the stream (OpenAI's [DONE]); the events after
// it are not read.
func NewEvents[E any](resp *Response, done []byte) *Events[E] {
	return &Events[E]{resp: resp, sse: NewSSE(resp.Body, MaxEvent), done: done}
}

// Next decodes the next event; it returns false at the end of the
// stream, or on an error that Err returns.
func (e *Events[E]) Next() bool {
	if e.err != nil || !e.sse.Next() {
		return false
	}
	data := e.sse.Event().Data
	if e.done != nil && bytes.Equal(bytes.TrimSpace(data), e.done) {
		e.err = io.EOF
		return false
	}
	var v E
	if err := json.Unmarshal(data, &v); err != nil {
		e.err = fmt.Errorf("an event that is not the JSON expected: %w", err)
		return false
	}
	e.cur = v
	return true
}

// Current returns the event Next decoded.
func (e *Events[E]) Current() E { return e.cur }

// Err returns what stopped the events: io.EOF at their end.
func (e *Events[E]) Err() error {
	if e.err != nil {
		return e.err
	}
	return e.sse.Err()
}

// Close closes the response.
func (e *Events[E]) Close() error { return e.resp.Close() }
