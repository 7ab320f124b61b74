// Package openai is the llm provider for OpenAI chat completions, built on
// the official SDK (github.com/openai/openai-go/v3). Through a base URL it
// also serves the servers that speak the same API: Ollama, vLLM,
// llama.cpp's server, and others.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
)

// Model is one chat-completions model.
type Model struct {
	client    oai.Client
	model     string
	maxTokens int
}

// New returns the model s.Model at s.BaseURL (OpenAI's own API when
// empty). httpClient may be nil for the default client.
func New(s llm.Settings, httpClient *http.Client) *Model {
	var opts []option.RequestOption
	if s.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(s.BaseURL))
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	if httpClient != nil {
		opts = append(opts, option.WithHTTPClient(httpClient))
	}
	switch {
	case s.MaxRetries < 0:
		opts = append(opts, option.WithMaxRetries(0))
	case s.MaxRetries > 0:
		opts = append(opts, option.WithMaxRetries(s.MaxRetries))
	}
	if s.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(s.Timeout))
	}
	return &Model{client: oai.NewClient(opts...), model: s.Model, maxTokens: s.MaxTokens}
}

// Name returns "openai/MODEL".
func (m *Model) Name() string { return llm.OpenAI + "/" + m.model }

// Stream sends a chat-completions request with streaming on, asking for
// the usage in the last chunk. A request with a schema asks for strict
// Structured Outputs (response_format json_schema).
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	params := oai.ChatCompletionNewParams{
		Model:         m.model,
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if req.System != "" {
		params.Messages = append(params.Messages, oai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.Assistant:
			params.Messages = append(params.Messages, oai.AssistantMessage(msg.Content))
		default:
			params.Messages = append(params.Messages, oai.UserMessage(msg.Content))
		}
	}
	if n := req.MaxTokens; n > 0 || m.maxTokens > 0 {
		if n <= 0 {
			n = m.maxTokens
		}
		params.MaxCompletionTokens = oai.Int(int64(n))
	}
	if sc := req.Schema; sc != nil {
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: sc.Name, Strict: oai.Bool(true), Schema: sc.JSON}
		if sc.Description != "" {
			js.Description = oai.String(sc.Description)
		}
		params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
	}
	s := m.client.Chat.Completions.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		var apiErr *oai.Error
		status := 0
		if errors.As(err, &apiErr) {
			status = apiErr.StatusCode
		}
		return nil, llm.SchemaRejected(req, status, describe(m.Name(), err))
	}
	name := m.Name()
	return llm.NewEventStream(s, text, func(err error) error { return describe(name, err) }), nil
}

// text reads a chunk: its text, the usage the last chunk carries, and the
// finish_reason that ends the answer. "length" (the size limit) and
// "content_filter" (the provider's filter) cut it short. The SDK keeps
// the closing [DONE] to itself: the answer has ended once a finish_reason
// came.
func text(c oai.ChatCompletionChunk, st *llm.EventState) (string, error) {
	if c.Usage.PromptTokens > 0 || c.Usage.CompletionTokens > 0 {
		st.Usage = llm.Usage{Input: c.Usage.PromptTokens, Output: c.Usage.CompletionTokens}
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

// describe adds the server's message to an API error, whose text has only
// the status.
func describe(name string, err error) error {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		return fmt.Errorf("%s: %w: %s", name, err, apiErr.Message)
	}
	return fmt.Errorf("%s: %w", name, err)
}
