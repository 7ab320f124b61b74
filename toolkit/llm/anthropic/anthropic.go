// Package anthropic is the llm provider for the Anthropic Messages API
// (https://docs.anthropic.com/en/api/messages), spoken over HTTP with
// streaming (https://docs.anthropic.com/en/api/messages-streaming). It
// sends the few fields Obelisk uses and reads the events of a streamed
// answer; the official SDK is not used, because it is larger than all
// of Obelisk and every build of the obelisk command would compile it.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/internal/httpapi"
)

// DefaultMaxTokens bounds an answer when the settings do not: the
// Messages API requires a bound. It is the largest output every Claude 4
// model accepts (Opus 4 allows 32,000; the others more), many times what
// a plan takes, so that a plan is not cut at the limit; it costs nothing
// until used. An older model with a lower limit needs --max-tokens.
const DefaultMaxTokens = 32000

// BaseURL is the address of Anthropic's own API.
const BaseURL = "https://api.anthropic.com"

// Version is the API version every request names (anthropic-version).
const Version = "2023-06-01"

// Model is one model of the Messages API.
type Model struct {
	client    *httpapi.Client
	url       string
	model     string
	maxTokens int
}

// New returns the model s.Model at s.BaseURL (Anthropic's own API when
// empty), which is the address without /v1. httpClient may be nil for
// the default client. Only the settings configure the client: nothing is
// read from the environment here.
func New(s llm.Settings, httpClient *http.Client) *Model {
	base := s.BaseURL
	if base == "" {
		base = BaseURL
	}
	n := s.MaxTokens
	if n <= 0 {
		n = DefaultMaxTokens
	}
	h := http.Header{}
	h.Set("X-Api-Key", s.APIKey)
	h.Set("Anthropic-Version", Version)
	h.Set("User-Agent", "obelisk")
	return &Model{
		client: &httpapi.Client{HTTP: httpClient, Header: h, Retries: s.MaxRetries, Timeout: s.Timeout},
		url:    strings.TrimSuffix(base, "/") + "/v1/messages",
		model:  s.Model, maxTokens: n,
	}
}

// Name returns "anthropic/MODEL".
func (m *Model) Name() string { return llm.Anthropic + "/" + m.model }

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type message struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type request struct {
	Model      string      `json:"model"`
	MaxTokens  int         `json:"max_tokens"`
	System     []textBlock `json:"system,omitempty"`
	Messages   []message   `json:"messages"`
	Tools      []tool      `json:"tools,omitempty"`
	ToolChoice *toolChoice `json:"tool_choice,omitempty"`
	Stream     bool        `json:"stream"`
}

// Stream sends a Messages request with streaming on. A request with a
// schema gives the model one tool, whose input_schema it is, and makes it
// call it (tool_choice): the tool's input is the answer.
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	n := req.MaxTokens
	if n <= 0 {
		n = m.maxTokens
	}
	body := request{Model: m.model, MaxTokens: n, Stream: true}
	if req.System != "" {
		body.System = []textBlock{{Type: "text", Text: req.System}}
	}
	for _, msg := range req.Messages {
		role := "user"
		if msg.Role == llm.Assistant {
			role = "assistant"
		}
		body.Messages = append(body.Messages, message{Role: role, Content: []textBlock{{Type: "text", Text: msg.Content}}})
	}
	if sc := req.Schema; sc != nil {
		// The answer is the input of a tool the model must call. The
		// schema is not sent as strict: strict tool use compiles it into
		// a grammar with limits (16 parameters with anyOf, no recursion)
		// that a plan of any size exceeds.
		schema := maps.Clone(sc.JSON)
		if schema == nil {
			schema = map[string]any{}
		}
		schema["type"] = "object"
		body.Tools = []tool{{Name: sc.Name, Description: sc.Description, InputSchema: schema}}
		body.ToolChoice = &toolChoice{Type: "tool", Name: sc.Name}
	}
	resp, err := m.client.Post(ctx, m.url, body)
	if err != nil {
		return nil, llm.SchemaRejected(req, httpapi.Status(err), fmt.Errorf("%s: %w", m.Name(), err))
	}
	name := m.Name()
	return llm.NewEventStream(httpapi.NewEvents[event](resp, nil), text, func(err error) error { return fmt.Errorf("%s: %w", name, err) }), nil
}

// event is the part of a streamed event that Obelisk reads.
type event struct {
	Type    string `json:"type"`
	Message struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage           `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// text reads an event: the text of a text delta, the token counts of the
// message's start and end, the stop reason, the message_stop that ends
// the answer, or the error the stream reports. The stop reasons
// "max_tokens" and "model_context_window_exceeded" cut the answer short.
func text(ev event, st *llm.EventState) (string, error) {
	u := &st.Usage
	switch ev.Type {
	case "message_start":
		usage := ev.Message.Usage
		u.Input = usage.InputTokens + usage.CacheReadInputTokens + usage.CacheCreationInputTokens
		u.Output = usage.OutputTokens
	case "message_delta":
		// The output count is cumulative.
		u.Output = ev.Usage.OutputTokens
		switch r := ev.Delta.StopReason; r {
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
		return "", fmt.Errorf("the stream reported an error: %s", ev.Error)
	}
	return "", nil
}
