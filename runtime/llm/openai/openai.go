// Package openai is the llm provider for OpenAI chat completions, built on
// the official SDK (github.com/openai/openai-go/v3). Through a base URL it
// also serves the servers that speak the same API: Ollama, vLLM,
// llama.cpp's server, and others.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/obelisk-plan/obelisk/runtime/llm"
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
// the usage in the last chunk.
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
	s := m.client.Chat.Completions.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		return nil, describe(m.Name(), err)
	}
	return &stream{s: s, name: m.Name()}, nil
}

type stream struct {
	s     *ssestream.Stream[oai.ChatCompletionChunk]
	name  string
	usage llm.Usage
	done  bool
}

func (st *stream) Next() (string, error) {
	for !st.done {
		if !st.s.Next() {
			st.done = true
			break
		}
		c := st.s.Current()
		if c.Usage.PromptTokens > 0 || c.Usage.CompletionTokens > 0 {
			st.usage = llm.Usage{Input: c.Usage.PromptTokens, Output: c.Usage.CompletionTokens}
		}
		var text string
		for _, ch := range c.Choices {
			if ch.Index == 0 {
				text += ch.Delta.Content
			}
		}
		if text != "" {
			return text, nil
		}
	}
	if err := st.s.Err(); err != nil && !errors.Is(err, io.EOF) {
		return "", describe(st.name, err)
	}
	return "", io.EOF
}

func (st *stream) Usage() llm.Usage { return st.usage }

func (st *stream) Close() error { return st.s.Close() }

// describe adds the server's message to an API error, whose text has only
// the status.
func describe(name string, err error) error {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		return fmt.Errorf("%s: %w: %s", name, err, apiErr.Message)
	}
	return fmt.Errorf("%s: %w", name, err)
}
