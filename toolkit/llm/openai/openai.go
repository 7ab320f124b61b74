// Package openai is the llm provider for OpenAI chat completions
// (https://platform.openai.com/docs/api-reference/chat/create), spoken
// over HTTP with streaming
// (https://platform.openai.com/docs/api-reference/chat-streaming).
// Through a base URL it also serves the servers that speak the same API:
// Ollama, vLLM, llama.cpp's server, and others. It sends the few fields
// Obelisk uses and reads the chunks of a streamed answer; the official
// SDK is not used, because it is larger than all of Obelisk and every
// build of the obelisk command would compile it.
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/internal/httpapi"
)

// Model is one chat-completions model.
type Model struct {
	client    *httpapi.Client
	url       string
	model     string
	maxTokens int
}

// New returns the model s.Model at s.BaseURL (OpenAI's own API,
// llm.OpenAIBaseURL, when empty), an address that ends with /v1 for
// most servers. httpClient may be nil for the default client.
func New(s llm.Settings, httpClient *http.Client) *Model {
	base := s.BaseURL
	if base == "" {
		base = llm.OpenAIBaseURL
	}
	h := http.Header{}
	if s.APIKey != "" {
		h.Set("Authorization", "Bearer "+s.APIKey)
	}
	h.Set("User-Agent", "obelisk")
	return &Model{
		client: &httpapi.Client{HTTP: httpClient, Header: h, Retries: s.MaxRetries, Timeout: s.Timeout},
		url:    strings.TrimSuffix(base, "/") + "/chat/completions",
		model:  s.Model, maxTokens: s.MaxTokens,
	}
}

// Name returns "openai/MODEL".
func (m *Model) Name() string { return llm.OpenAI + "/" + m.model }

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type jsonSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Schema      map[string]any `json:"schema"`
	Strict      bool           `json:"strict"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type request struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       streamOptions   `json:"stream_options"`
}

// done is the data of the event that ends a stream.
var done = []byte("[DONE]")

// Stream sends a chat-completions request with streaming on, asking for
// the usage in the last chunk. A request with a schema asks for strict
// Structured Outputs (response_format json_schema).
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	body := request{Model: m.model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}}
	if req.System != "" {
		body.Messages = append(body.Messages, message{Role: "system", Content: req.System})
	}
	for _, msg := range req.Messages {
		role := "user"
		if msg.Role == llm.Assistant {
			role = "assistant"
		}
		body.Messages = append(body.Messages, message{Role: role, Content: msg.Content})
	}
	if n := req.MaxTokens; n > 0 || m.maxTokens > 0 {
		if n <= 0 {
			n = m.maxTokens
		}
		body.MaxCompletionTokens = n
	}
	if sc := req.Schema; sc != nil {
		body.ResponseFormat = &responseFormat{Type: "json_schema",
			JSONSchema: &jsonSchema{Name: sc.Name, Description: sc.Description, Schema: sc.JSON, Strict: true}}
	}
	resp, err := m.client.Post(ctx, m.url, body)
	if err != nil {
		return nil, llm.SchemaRejected(req, httpapi.Status(err), fmt.Errorf("%s: %w", m.Name(), err))
	}
	name := m.Name()
	return llm.NewEventStream(httpapi.NewEvents[chunk](resp, done), text, func(err error) error { return fmt.Errorf("%s: %w", name, err) }), nil
}

// chunk is the part of a streamed chunk that Obelisk reads.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	// Error is set by a server that reports an error in the stream.
	Error json.RawMessage `json:"error"`
}

// text reads a chunk: its text, the usage the last chunk carries, and the
// finish_reason that ends the answer. "length" (the size limit) and
// "content_filter" (the provider's filter) cut it short. The closing
// [DONE] is not needed: the answer has ended once a finish_reason came.
func text(c chunk, st *llm.EventState) (string, error) {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return "", fmt.Errorf("the stream reported an error: %s", c.Error)
	}
	if u := c.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
		st.Usage = llm.Usage{Input: u.PromptTokens, Output: u.CompletionTokens}
	}
	var s string
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		// A refusal comes instead of the answer: it is its text.
		s += ch.Delta.Content + ch.Delta.Refusal
		switch ch.FinishReason {
		case "":
		case "length", "content_filter":
			st.Ended, st.Cut = true, "finish_reason "+ch.FinishReason
		default:
			st.Ended = true
		}
	}
	return s, nil
}
