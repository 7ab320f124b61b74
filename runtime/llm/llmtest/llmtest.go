// Package llmtest runs fake model servers on loopback for tests: an
// OpenAI-compatible chat-completions server and an Anthropic Messages
// server. Each answers with scripted replies, streamed as server-sent
// events one piece at a time, so that a test can hold the rest of an
// answer until something has happened, and records every request.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/runtime/llm"
)

// Reply is one scripted answer.
type Reply struct {
	// Pieces are the answer's text, each sent as one event and flushed.
	Pieces []string
	// Before, when it has an entry for piece i, is waited on before
	// piece i is sent (or HoldTimeout passes, which the request records).
	Before map[int]<-chan struct{}
	// Usage is reported at the end of the stream.
	Usage llm.Usage
	// Status, when not 0 or 200, answers with this HTTP status and
	// Message instead of a stream.
	Status  int
	Message string
}

// Text is a reply of one piece.
func Text(s string, usage llm.Usage) Reply { return Reply{Pieces: []string{s}, Usage: usage} }

// Request is a request the server received.
type Request struct {
	Model    string
	System   string
	Messages []llm.Message
	// HeldTooLong lists the pieces whose Before channel was not closed
	// within HoldTimeout.
	HeldTooLong []int
}

// Server is a fake model server.
type Server struct {
	*httptest.Server
	// HoldTimeout bounds the wait for a Before channel (default 10s), so
	// that a test whose event never happens fails instead of hanging.
	HoldTimeout time.Duration

	mu       sync.Mutex
	respond  func(req *Request) Reply
	requests []*Request
	kind     string
}

// Script answers requests in order with the given replies; a request
// past the last one gets an HTTP 500.
func Script(replies ...Reply) func(req *Request) Reply {
	var mu sync.Mutex
	next := 0
	return func(*Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			return Reply{Status: http.StatusInternalServerError, Message: fmt.Sprintf("the script has %d replies; this is request %d", len(replies), next+1)}
		}
		next++
		return replies[next-1]
	}
}

// ByModel answers each model from its own function, so that the planner
// and the evaluator can share one server.
func ByModel(m map[string]func(req *Request) Reply) func(req *Request) Reply {
	return func(req *Request) Reply {
		if f := m[req.Model]; f != nil {
			return f(req)
		}
		return Reply{Status: http.StatusNotFound, Message: fmt.Sprintf("model %q is not served", req.Model)}
	}
}

// NewOpenAI starts an OpenAI-compatible server; its base URL is URL+"/v1".
func NewOpenAI(respond func(req *Request) Reply) *Server {
	s := &Server{respond: respond, kind: llm.OpenAI, HoldTimeout: 10 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.openAI)
	s.Server = httptest.NewServer(mux)
	return s
}

// NewAnthropic starts an Anthropic Messages server; its base URL is URL.
func NewAnthropic(respond func(req *Request) Reply) *Server {
	s := &Server{respond: respond, kind: llm.Anthropic, HoldTimeout: 10 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	s.Server = httptest.NewServer(mux)
	return s
}

// Settings returns settings that point a provider at the server, with
// the given planning and evaluator models.
func (s *Server) Settings(model, evalModel string) llm.Settings {
	base := s.URL
	if s.kind == llm.OpenAI {
		base += "/v1"
	}
	return llm.Settings{Provider: s.kind, BaseURL: base, APIKey: "test-key", Model: model, EvalModel: evalModel, MaxRetries: -1}
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) record(r *Request) Reply {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
	return s.respond(r)
}

// hold waits for piece i's Before channel.
func (s *Server) hold(req *Request, rep Reply, i int) {
	ch, ok := rep.Before[i]
	if !ok {
		return
	}
	t := time.NewTimer(s.HoldTimeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		s.mu.Lock()
		req.HeldTooLong = append(req.HeldTooLong, i)
		s.mu.Unlock()
	}
}

// body is the JSON body of a request, in one provider's shape.
type body interface {
	// request returns the request, and whether it asks for a stream.
	request() (*Request, bool)
}

type openAIBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (b *openAIBody) request() (*Request, bool) {
	req := &Request{Model: b.Model}
	for _, m := range b.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			req.System += text
		case "assistant":
			req.Messages = append(req.Messages, llm.Message{Role: llm.Assistant, Content: text})
		default:
			req.Messages = append(req.Messages, llm.Message{Role: llm.User, Content: text})
		}
	}
	return req, b.Stream
}

type anthropicBody struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (b *anthropicBody) request() (*Request, bool) {
	req := &Request{Model: b.Model}
	for _, s := range b.System {
		req.System += s.Text
	}
	for _, m := range b.Messages {
		role := llm.User
		if m.Role == "assistant" {
			role = llm.Assistant
		}
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: contentText(m.Content)})
	}
	return req, b.Stream
}

// serve reads a request into b, records it, and answers with its reply:
// an HTTP error in the provider's shape (errorFormat, with the message),
// or events. stream writes the events; the function it is given sends the
// pieces of the answer, each after its hold, through send.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, b body, errorFormat string, stream func(sse *sseWriter, req *Request, rep Reply, pieces func(send func(string)))) {
	if err := json.NewDecoder(r.Body).Decode(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, streaming := b.request()
	rep := s.record(req)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, errorFormat, rep.Message)
		return
	}
	if !streaming {
		http.Error(w, "this fake server only streams", http.StatusBadRequest)
		return
	}
	stream(startSSE(w), req, rep, func(send func(string)) {
		for i, p := range rep.Pieces {
			s.hold(req, rep, i)
			send(p)
		}
		s.hold(req, rep, len(rep.Pieces))
	})
}

func (s *Server) openAI(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, &openAIBody{}, `{"error": {"message": %q, "type": "test_error"}}`, func(sse *sseWriter, req *Request, rep Reply, pieces func(func(string))) {
		chunk := func(fields map[string]any) {
			fields["id"], fields["object"], fields["created"], fields["model"] = "chatcmpl-test", "chat.completion.chunk", 0, req.Model
			sse.event("", fields)
		}
		pieces(func(p string) {
			chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": p}, "finish_reason": nil}}})
		})
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		chunk(map[string]any{"choices": []any{},
			"usage": map[string]any{"prompt_tokens": rep.Usage.Input, "completion_tokens": rep.Usage.Output, "total_tokens": rep.Usage.Total()}})
		sse.raw("data: [DONE]\n\n")
	})
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, &anthropicBody{}, `{"type": "error", "error": {"type": "test_error", "message": %q}}`, func(sse *sseWriter, req *Request, rep Reply, pieces func(func(string))) {
		sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": rep.Usage.Input, "output_tokens": 1}}})
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		pieces(func(p string) {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}})
		})
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": rep.Usage.Output}})
		sse.event("message_stop", map[string]any{"type": "message_stop"})
	})
}

// contentText reads a message's content: a string, or an array of text
// parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	sw := &sseWriter{w: w, f: f}
	sw.flush()
	return sw
}

func (s *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

func (s *sseWriter) raw(text string) {
	fmt.Fprint(s.w, text)
	s.flush()
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}
