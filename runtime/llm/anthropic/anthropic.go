// Package anthropic is the llm provider for the Anthropic Messages API,
// built on the official SDK (github.com/anthropics/anthropic-sdk-go).
package anthropic

import (
	"context"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/obelisk-plan/obelisk/runtime/llm"
)

// DefaultMaxTokens bounds an answer when the settings do not: the
// Messages API requires a bound.
const DefaultMaxTokens = 8192

// Model is one model of the Messages API.
type Model struct {
	client    sdk.Client
	model     string
	maxTokens int
}

// New returns the model s.Model at s.BaseURL (Anthropic's own API when
// empty). httpClient may be nil for the default client. Only the
// settings configure the client: the SDK's own reading of the
// environment and of profile files is turned off.
func New(s llm.Settings, httpClient *http.Client) *Model {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithAPIKey(s.APIKey)}
	if s.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(s.BaseURL))
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
	n := s.MaxTokens
	if n <= 0 {
		n = DefaultMaxTokens
	}
	return &Model{client: sdk.NewClient(opts...), model: s.Model, maxTokens: n}
}

// Name returns "anthropic/MODEL".
func (m *Model) Name() string { return llm.Anthropic + "/" + m.model }

// Stream sends a Messages request with streaming on.
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	n := req.MaxTokens
	if n <= 0 {
		n = m.maxTokens
	}
	params := sdk.MessageNewParams{Model: sdk.Model(m.model), MaxTokens: int64(n)}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, msg := range req.Messages {
		block := sdk.NewTextBlock(msg.Content)
		if msg.Role == llm.Assistant {
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(block))
		} else {
			params.Messages = append(params.Messages, sdk.NewUserMessage(block))
		}
	}
	s := m.client.Messages.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", m.Name(), err)
	}
	name := m.Name()
	return llm.NewEventStream(s, text, func(err error) error { return fmt.Errorf("%s: %w", name, err) }), nil
}

// text reads an event: the text of a text delta, the token counts of the
// message's start and end, or the error the stream reports.
func text(ev sdk.MessageStreamEventUnion, u *llm.Usage) (string, error) {
	switch ev.Type {
	case "message_start":
		usage := ev.Message.Usage
		u.Input = usage.InputTokens + usage.CacheReadInputTokens + usage.CacheCreationInputTokens
		u.Output = usage.OutputTokens
	case "message_delta":
		// The output count is cumulative.
		u.Output = ev.Usage.OutputTokens
	case "content_block_delta":
		if ev.Delta.Type == "text_delta" {
			return ev.Delta.Text, nil
		}
	case "error":
		return "", fmt.Errorf("the stream reported an error: %s", ev.RawJSON())
	}
	return "", nil
}
