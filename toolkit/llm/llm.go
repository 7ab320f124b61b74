// Package llm is the small interface Obelisk uses to talk to language
// models: a conversation goes in, the answer streams out as text, and the
// tokens it used are counted. The providers live in sub-packages
// (toolkit/llm/openai for OpenAI-compatible chat completions, which also
// serves Ollama, vLLM and llama.cpp through a base URL;
// toolkit/llm/anthropic for the Anthropic Messages API), each a client of
// the provider's documented HTTP API. Settings resolves which provider
// and models to use from flags and the usual environment variables.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Role says who wrote a message.
type Role string

// The roles of a conversation.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content string
}

// Request is what a model is asked: a system prompt and the conversation
// so far, ending with a user message.
type Request struct {
	System   string
	Messages []Message
	// MaxTokens bounds the answer; 0 takes the provider's default.
	MaxTokens int
	// Schema, when set, asks for an answer that is one JSON value the
	// schema accepts: constrained output, where the provider has it.
	Schema *Schema
}

// Schema is a JSON Schema an answer is held to. OpenAI's chat
// completions take it as a strict Structured Outputs response format
// (response_format json_schema, strict: true), so it must keep to the
// subset strict mode accepts; the Anthropic Messages API takes it as the
// input_schema of a tool the request makes the model call (tool_choice),
// whose input is the answer.
type Schema struct {
	// Name names the schema: letters, digits, _ and -, at most 64.
	Name string
	// Description says what the answer is.
	Description string
	// JSON is the schema of an object, ready for encoding/json.
	JSON map[string]any
}

// ErrSchemaRejected is wrapped by the error of a request whose schema the
// provider or server refused (an HTTP 400 or 422 to a request with a
// Schema): too large, a keyword it does not support, or no constrained
// output at all. The same request without a schema may succeed.
var ErrSchemaRejected = errors.New("the server refused the answer's schema")

// SchemaRejected wraps the error of a request with a schema that the
// server refused with status 400 or 422.
func SchemaRejected(req *Request, status int, err error) error {
	if req.Schema != nil && (status == 400 || status == 422) {
		return fmt.Errorf("%w: %w", ErrSchemaRejected, err)
	}
	return err
}

// ErrTruncated is wrapped by the error a Stream's Next returns, after the
// last piece of text, when the answer is not whole: the provider stopped
// it at the answer's size limit (OpenAI's finish_reason "length",
// Anthropic's stop_reason "max_tokens"), or the stream ended without the
// event that ends an answer (a connection cut, a server that died). The
// text that came before is what the model wrote, but its end is missing:
// an unfinished statement, an option line that never arrived. Collect
// returns that text with the error.
var ErrTruncated = errors.New("the answer was cut short")

// Usage counts the tokens of one request or of several.
type Usage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	// Requests is how many requests the counts cover.
	Requests int `json:"requests"`
}

// Add returns the sum of two counts.
func (u Usage) Add(v Usage) Usage {
	return Usage{Input: u.Input + v.Input, Output: u.Output + v.Output, Requests: u.Requests + v.Requests}
}

// Total is the input and output tokens together.
func (u Usage) Total() int64 { return u.Input + u.Output }

// Stream is a model's answer while it is being written.
type Stream interface {
	// Next returns the next piece of the answer's text, and io.EOF after
	// the last one, or an error wrapping ErrTruncated when the answer was
	// cut short.
	Next() (string, error)
	// Usage is the tokens the request used. It is complete once Next has
	// returned io.EOF; a stream closed early may not know its output.
	Usage() Usage
	// Close stops the stream and releases its connection.
	Close() error
}

// Model answers requests, streaming.
type Model interface {
	// Stream sends a request and returns its answer as it is written. The
	// stream ends when ctx is done.
	Stream(ctx context.Context, req *Request) (Stream, error)
	// Name says which provider and model answer, as "provider/model".
	Name() string
}

// Collect sends a request and waits for the whole answer.
func Collect(ctx context.Context, m Model, req *Request) (string, Usage, error) {
	s, err := m.Stream(ctx, req)
	if err != nil {
		return "", Usage{}, err
	}
	defer s.Close()
	var b strings.Builder
	for {
		piece, err := s.Next()
		b.WriteString(piece)
		if errors.Is(err, io.EOF) {
			return b.String(), s.Usage(), nil
		}
		if err != nil {
			return b.String(), s.Usage(), err
		}
	}
}

// Reader returns the text of a stream as an io.Reader, for parsers that
// read as the text arrives.
func Reader(s Stream) io.Reader { return &streamReader{s: s} }

type streamReader struct {
	s   Stream
	buf string
	err error
}

func (r *streamReader) Read(p []byte) (int, error) {
	for r.buf == "" && r.err == nil {
		r.buf, r.err = r.s.Next()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	if n > 0 {
		return n, nil
	}
	return 0, r.err
}

// Meter wraps a model and counts the tokens of every request made through
// it. It is safe for concurrent use.
type Meter struct {
	model Model
	mu    sync.Mutex
	usage Usage
}

// Metered returns a meter around m.
func Metered(m Model) *Meter { return &Meter{model: m} }

// Name returns the wrapped model's name.
func (m *Meter) Name() string { return m.model.Name() }

// Usage returns the tokens counted so far.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// Stream sends a request through the wrapped model; its usage is counted
// when the stream is closed.
func (m *Meter) Stream(ctx context.Context, req *Request) (Stream, error) {
	s, err := m.model.Stream(ctx, req)
	if err != nil {
		m.add(Usage{Requests: 1})
		return nil, err
	}
	return &meteredStream{Stream: s, m: m}, nil
}

func (m *Meter) add(u Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.usage = m.usage.Add(u)
}

type meteredStream struct {
	Stream
	m    *Meter
	once sync.Once
}

func (s *meteredStream) Close() error {
	err := s.Stream.Close()
	s.once.Do(func() {
		u := s.Stream.Usage()
		u.Requests = 1
		s.m.add(u)
	})
	return err
}

// Events is a stream of provider events, such as the decoded
// server-sent events of a provider's streamed answer.
type Events[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// EventState is what a provider's events have said so far, which the
// provider's read function keeps up to date.
type EventState struct {
	Usage Usage
	// Ended is set by the event that ends an answer (OpenAI's chunk with
	// a finish_reason, Anthropic's message_stop).
	Ended bool
	// Cut, when set, says why the provider stopped the answer before its
	// end, in its own words (finish_reason "length", stop_reason
	// "max_tokens").
	Cut string
}

// EventStream is a Stream over a provider's events: each event may add
// text, count tokens, end the answer, or report an error. After the last
// event, an answer whose state is Cut, or not Ended, is truncated.
type EventStream[E any] struct {
	events Events[E]
	read   func(e E, st *EventState) (string, error)
	wrap   func(error) error
	state  EventState
	done   bool
}

// NewEventStream returns the stream of the text that read finds in the
// events; read also records in st the tokens the events count and how
// the answer ended. wrap describes an error of the event stream.
func NewEventStream[E any](events Events[E], read func(e E, st *EventState) (string, error), wrap func(error) error) *EventStream[E] {
	return &EventStream[E]{events: events, read: read, wrap: wrap}
}

// Next returns the next piece of text.
func (s *EventStream[E]) Next() (string, error) {
	for !s.done {
		if !s.events.Next() {
			s.done = true
			break
		}
		text, err := s.read(s.events.Current(), &s.state)
		if err != nil {
			s.done = true
			return "", s.wrap(err)
		}
		if text != "" {
			return text, nil
		}
	}
	if err := s.events.Err(); err != nil && !errors.Is(err, io.EOF) {
		return "", s.wrap(err)
	}
	switch {
	case s.state.Cut != "":
		return "", s.wrap(fmt.Errorf("%w: the provider stopped it at the answer's size limit (%s)", ErrTruncated, s.state.Cut))
	case !s.state.Ended:
		return "", s.wrap(fmt.Errorf("%w: the stream ended before the answer did", ErrTruncated))
	}
	return "", io.EOF
}

// Usage returns the tokens counted so far.
func (s *EventStream[E]) Usage() Usage { return s.state.Usage }

// Close closes the events.
func (s *EventStream[E]) Close() error { return s.events.Close() }
