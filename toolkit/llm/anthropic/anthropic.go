// Package anthropic is the llm provider for the Anthropic Messages API,
// built on the official SDK (github.com/anthropics/anthropic-sdk-go).
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
)

// DefaultMaxTokens bounds an answer when the settings do not: the
// Messages API requires a bound. It is the largest output every Claude 4
// model accepts (Opus 4 allows 32,000; the others more), many times what
// a plan takes, so that a plan is not cut at the limit; it costs nothing
// until used. An older model with a lower limit needs --max-tokens.
const DefaultMaxTokens = 32000

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

// Stream sends a Messages request with streaming on. A request with a
// schema gives the model one tool, whose input_schema it is, and makes it
// call it (tool_choice): the tool's input is the answer.
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
	if sc := req.Schema; sc != nil {
		// The answer is the input of a tool the model must call. The
		// schema is not sent as strict: strict tool use compiles it into
		// a grammar with limits (16 parameters with anyOf, no recursion)
		// that a plan of any size exceeds.
		schema := sdk.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range sc.JSON {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				for _, r := range v.([]any) {
					schema.Required = append(schema.Required, r.(string))
				}
			default:
				schema.ExtraFields[k] = v
			}
		}
		tool := sdk.ToolParam{Name: sc.Name, InputSchema: schema}
		if sc.Description != "" {
			tool.Description = sdk.String(sc.Description)
		}
		params.Tools = []sdk.ToolUnionParam{{OfTool: &tool}}
		params.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: sc.Name}}
	}
	s := m.client.Messages.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		var apiErr *sdk.Error
		status := 0
		if errors.As(err, &apiErr) {
			status = apiErr.StatusCode
		}
		return nil, llm.SchemaRejected(req, status, fmt.Errorf("%s: %w", m.Name(), err))
	}
	name := m.Name()
	return llm.NewEventStream(s, text, func(err error) error { return fmt.Errorf("%s: %w", name, err) }), nil
}

// text reads an event: the text of a text delta, the token counts of the
// message's start and end, the stop reason, the message_stop that ends
// the answer, or the error the stream reports. The stop reasons
// "max_tokens" and "model_context_window_exceeded" cut the answer short.
func text(ev sdk.MessageStreamEventUnion, st *llm.EventState) (string, error) {
	u := &st.Usage
	switch ev.Type {
	case "message_start":
		usage := ev.Message.Usage
		u.Input = usage.InputTokens + usage.CacheReadInputTokens + usage.CacheCreationInputTokens
		u.Output = usage.OutputTokens
	case "message_delta":
		// The output count is cumulative.
		u.Output = ev.Usage.OutputTokens
		switch r := string(ev.Delta.StopReason); r {
		case "max_tokens", "model_context_window_exceeded":
			st.Cut = "stop_reason " + r
		}
	case "message_stop":
		st.Ended = true
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			return ev.Delta.Text, nil
		case "input_json_delta":
			// The input of the tool a schema made the model call.
			return ev.Delta.PartialJSON, nil
		}
	case "error":
		return "", fmt.Errorf("the stream reported an error: %s", ev.RawJSON())
	}
	return "", nil
}
