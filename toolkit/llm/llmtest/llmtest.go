// Package llmtest runs fake model servers on loopback for tests: an
// OpenAI-compatible chat-completions server and an Anthropic Messages
// server. Each answers with scripted replies, streamed as server-sent
// events one piece at a time, so that a test can hold the rest of an
// answer until something has happened, and records every request.
package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
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
	// Cut, when set, cuts the answer short after its pieces: AtLimit
	// ends it as a provider does at the answer's size limit (OpenAI's
	// finish_reason "length", Anthropic's stop_reason "max_tokens"), and
	// Abort ends the stream without the events that end an answer (no
	// finish_reason, usage or [DONE]; no message_delta or message_stop).
	Cut Cut
	// Status, when not 0 or 200, answers with this HTTP status and
	// Message instead of a stream.
	Status  int
	Message string
}

// Cut is how a scripted answer is cut short.
type Cut int

// The ways an answer is cut short.
const (
	NotCut  Cut = iota
	AtLimit     // the provider stops at the answer's size limit
	Abort       // the stream ends before the answer's last events
)

// Text is a reply of one piece.
func Text(s string, usage llm.Usage) Reply { return Reply{Pieces: []string{s}, Usage: usage} }

// Request is a request the server received.
type Request struct {
	Model    string
	System   string
	Messages []llm.Message
	// Schema is the JSON Schema the answer is held to, decoded: OpenAI's
	// response_format json_schema, or the input_schema of the tool the
	// Anthropic request makes the model call. SchemaName is its name, and
	// Strict reports OpenAI's strict: true.
	Schema     map[string]any
	SchemaName string
	Strict     bool
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

	// RejectSchema, when set, refuses every request that carries a
	// schema with HTTP 400 and this message, as a server does that has no
	// constrained output or finds the schema too large.
	RejectSchema string

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
	// request returns the request, and whether it asks for a stream; an
	// error says how the body breaks the provider's documented rules,
	// which the provider answers with HTTP 400.
	request(raw []byte) (*Request, bool, error)
}

type openAIBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	} `json:"response_format"`
}

// The fields of a chat-completions request
// (https://platform.openai.com/docs/api-reference/chat/create).
var openAIFields = fields("model", "messages", "stream", "stream_options", "max_completion_tokens", "max_tokens",
	"response_format", "temperature", "top_p", "n", "stop", "seed", "user", "tools", "tool_choice", "parallel_tool_calls",
	"reasoning_effort", "metadata", "store", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty",
	"logit_bias", "service_tier", "modalities", "audio", "prediction", "web_search_options", "verbosity",
	"prompt_cache_key", "safety_identifier")

func (b *openAIBody) request(raw []byte) (*Request, bool, error) {
	if err := known(raw, openAIFields, "request argument"); err != nil {
		return nil, false, err
	}
	if b.Model == "" || len(b.Messages) == 0 {
		return nil, false, fmt.Errorf("model and messages are required")
	}
	req := &Request{Model: b.Model}
	for _, m := range b.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			req.System += text
		case "assistant":
			req.Messages = append(req.Messages, llm.Message{Role: llm.Assistant, Content: text})
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.User, Content: text})
		default:
			return nil, false, fmt.Errorf("invalid role %q in messages", m.Role)
		}
	}
	if rf := b.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "json_object":
		case "json_schema":
			if err := readOpenAISchema(rf.JSONSchema, req); err != nil {
				return req, false, err
			}
		default:
			return nil, false, fmt.Errorf("invalid response_format type %q", rf.Type)
		}
	}
	return req, b.Stream, nil
}

// readOpenAISchema reads response_format.json_schema: a name, a
// description, a schema and strict, and in strict mode checks the schema
// against the rules of Structured Outputs.
func readOpenAISchema(raw json.RawMessage, req *Request) error {
	if err := known(raw, fields("name", "description", "schema", "strict"), "json_schema field"); err != nil {
		return err
	}
	var js struct {
		Name   string         `json:"name"`
		Schema map[string]any `json:"schema"`
		Strict bool           `json:"strict"`
	}
	if err := json.Unmarshal(raw, &js); err != nil {
		return fmt.Errorf("response_format.json_schema: %v", err)
	}
	if !toolName.MatchString(js.Name) {
		return fmt.Errorf("response_format.json_schema.name %q must be a-z, A-Z, 0-9, _ or -, at most 64", js.Name)
	}
	req.Schema, req.SchemaName, req.Strict = js.Schema, js.Name, js.Strict
	if js.Strict {
		if err := CheckStrictSchema(js.Schema); err != nil {
			return fmt.Errorf("invalid schema for response_format %q: %v", js.Name, err)
		}
	}
	return nil
}

type anthropicBody struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// The fields of a Messages request
// (https://docs.anthropic.com/en/api/messages).
var anthropicFields = fields("model", "max_tokens", "messages", "system", "stream", "tools", "tool_choice", "temperature",
	"top_p", "top_k", "stop_sequences", "metadata", "thinking", "service_tier", "container", "mcp_servers",
	"output_config", "context_management")

func (b *anthropicBody) request(raw []byte) (*Request, bool, error) {
	if err := known(raw, anthropicFields, "field"); err != nil {
		return nil, false, err
	}
	if b.Model == "" || b.MaxTokens <= 0 || len(b.Messages) == 0 {
		return nil, false, fmt.Errorf("model, max_tokens and messages are required")
	}
	req := &Request{Model: b.Model}
	for _, s := range b.System {
		req.System += s.Text
	}
	for _, m := range b.Messages {
		role := llm.User
		switch m.Role {
		case "assistant":
			role = llm.Assistant
		case "user":
		default:
			return nil, false, fmt.Errorf("messages: role %q is not user or assistant", m.Role)
		}
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: contentText(m.Content)})
	}
	schemas := map[string]map[string]any{}
	for i, raw := range b.Tools {
		if err := known(raw, fields("name", "description", "input_schema", "type", "cache_control", "strict",
			"eager_input_streaming", "defer_loading", "allowed_callers", "input_examples"), fmt.Sprintf("tools.%d field", i)); err != nil {
			return nil, false, err
		}
		var t struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, false, fmt.Errorf("tools.%d: %v", i, err)
		}
		if !toolName.MatchString(t.Name) {
			return nil, false, fmt.Errorf("tools.%d.name: %q does not match ^[a-zA-Z0-9_-]{1,64}$", i, t.Name)
		}
		if t.InputSchema == nil || t.InputSchema["type"] != "object" {
			return nil, false, fmt.Errorf("tools.%d.input_schema.type: input_schema must be an object schema", i)
		}
		schemas[t.Name] = t.InputSchema
	}
	if tc := b.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			s, ok := schemas[tc.Name]
			if !ok {
				return nil, false, fmt.Errorf("tool_choice.name: no tool named %q in tools", tc.Name)
			}
			req.Schema, req.SchemaName = s, tc.Name
		default:
			return nil, false, fmt.Errorf("tool_choice.type: %q is not auto, any, tool or none", tc.Type)
		}
	}
	return req, b.Stream, nil
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func fields(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// known checks that a JSON object has only the given keys.
func known(raw []byte, allowed map[string]bool, what string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("the body is not a JSON object: %v", err)
	}
	for k := range m {
		if !allowed[k] {
			return fmt.Errorf("unrecognized %s: %s", what, k)
		}
	}
	return nil
}

// serve reads a request into b, records it, and answers with its reply:
// an HTTP error in the provider's shape (errorFormat, with the message),
// or events. stream writes the events; the function it is given sends the
// pieces of the answer, each after its hold, through send.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, b body, errorFormat string, stream func(sse *sseWriter, req *Request, rep Reply, pieces func(send func(string)))) {
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, b)
	}
	var req *Request
	var streaming bool
	if err == nil {
		req, streaming, err = b.request(raw)
	}
	if err == nil && req.Schema != nil && s.RejectSchema != "" {
		err = errors.New(s.RejectSchema)
	}
	if err != nil {
		if req != nil {
			s.mu.Lock()
			s.requests = append(s.requests, req)
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, errorFormat, err.Error())
		return
	}
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
		if rep.Cut == Abort {
			return
		}
		finish := "stop"
		if rep.Cut == AtLimit {
			finish = "length"
		}
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})
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
		// An answer to a request that makes the model call a tool is
		// that tool's input, streamed as JSON.
		block, stop := map[string]any{"type": "text", "text": ""}, "end_turn"
		delta := func(p string) map[string]any { return map[string]any{"type": "text_delta", "text": p} }
		if req.Schema != nil {
			block = map[string]any{"type": "tool_use", "id": "toolu_test", "name": req.SchemaName, "input": map[string]any{}}
			delta = func(p string) map[string]any { return map[string]any{"type": "input_json_delta", "partial_json": p} }
			stop = "tool_use"
		}
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
		pieces(func(p string) {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta(p)})
		})
		if rep.Cut == Abort {
			return
		}
		if rep.Cut == AtLimit {
			stop = "max_tokens"
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
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
