package llm_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
)

type provider struct {
	name  string
	start func(respond func(*llmtest.Request) llmtest.Reply) *llmtest.Server
	open  func(s llm.Settings) llm.Model
}

var providers = []provider{
	{llm.OpenAI, llmtest.NewOpenAI, func(s llm.Settings) llm.Model { return openai.New(s, nil) }},
	{llm.Anthropic, llmtest.NewAnthropic, func(s llm.Settings) llm.Model { return anthropic.New(s, nil) }},
}

// TestProvidersStream checks that each provider delivers the pieces of an
// answer as they are sent: the server sends the second piece only after
// the test has read the first.
func TestProvidersStream(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			gotFirst := make(chan struct{})
			srv := p.start(llmtest.Script(llmtest.Reply{
				Pieces: []string{"a: f(x: 1)", " -> †state.a\n", "output †state.a\n"},
				Before: map[int]<-chan struct{}{1: gotFirst},
				Usage:  llm.Usage{Input: 120, Output: 17},
			}))
			defer srv.Close()
			m := llm.Metered(p.open(srv.Settings("planner-1", "judge-1")))
			s, err := m.Stream(context.Background(), &llm.Request{System: "be brief", Messages: []llm.Message{
				{Role: llm.User, Content: "plan it"}, {Role: llm.Assistant, Content: "draft"}, {Role: llm.User, Content: "again"}}})
			if err != nil {
				t.Fatal(err)
			}
			var pieces []string
			for {
				piece, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(pieces) == 0 {
					close(gotFirst)
				}
				pieces = append(pieces, piece)
			}
			s.Close()
			if diff := cmp.Diff([]string{"a: f(x: 1)", " -> †state.a\n", "output †state.a\n"}, pieces); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			if got := m.Usage(); got != (llm.Usage{Input: 120, Output: 17, Requests: 1}) {
				t.Errorf("usage = %+v", got)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			want := &llmtest.Request{Model: "planner-1", System: "be brief", Messages: []llm.Message{
				{Role: llm.User, Content: "plan it"}, {Role: llm.Assistant, Content: "draft"}, {Role: llm.User, Content: "again"}}}
			if diff := cmp.Diff(want, reqs[0]); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if m.Name() != p.name+"/planner-1" {
				t.Errorf("name = %q", m.Name())
			}
		})
	}
}

// TestProvidersError checks that an HTTP error is returned by Stream with
// the server's message.
func TestProvidersError(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Reply{Status: 429, Message: "slow down"}))
			defer srv.Close()
			m := llm.Metered(p.open(srv.Settings("planner-1", "judge-1")))
			_, _, err := llm.Collect(context.Background(), m, &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
			if err == nil || !strings.Contains(err.Error(), "slow down") || !strings.Contains(err.Error(), "429") {
				t.Fatalf("err = %v, want the 429 and its message", err)
			}
			if got := m.Usage().Requests; got != 1 {
				t.Errorf("requests = %d, want 1 (a failed request is counted)", got)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name  string
		flags llm.Settings
		env   map[string]string
		want  llm.Settings
		err   string
	}{
		{name: "nothing", err: "no model provider is configured"},
		{name: "openai key", env: map[string]string{"OPENAI_API_KEY": "k"},
			want: llm.Settings{Provider: "openai", APIKey: "k", Model: llm.DefaultOpenAIModel, EvalModel: llm.DefaultOpenAIEvalModel}},
		{name: "anthropic key", env: map[string]string{"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"},
			want: llm.Settings{Provider: "anthropic", APIKey: "a", BaseURL: "http://127.0.0.1:9/", Model: llm.DefaultAnthropicModel, EvalModel: llm.DefaultAnthropicEvalModel}},
		{name: "both keys: openai", env: map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "k"},
			want: llm.Settings{Provider: "openai", APIKey: "k", Model: llm.DefaultOpenAIModel, EvalModel: llm.DefaultOpenAIEvalModel}},
		{name: "both keys, provider named", flags: llm.Settings{Provider: "Anthropic", Model: "m"}, env: map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "k"},
			want: llm.Settings{Provider: "anthropic", APIKey: "a", Model: "m", EvalModel: llm.DefaultAnthropicEvalModel}},
		{name: "local server", flags: llm.Settings{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"},
			want: llm.Settings{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "llama3.2", EvalModel: "llama3.2"}},
		{name: "local server from env", env: map[string]string{"OPENAI_BASE_URL": "http://localhost:8000/v1", "OBELISK_MODEL": "qwen", "OBELISK_EVAL_MODEL": "qwen-small"},
			want: llm.Settings{Provider: "openai", BaseURL: "http://localhost:8000/v1", Model: "qwen", EvalModel: "qwen-small"}},
		{name: "local server without model", flags: llm.Settings{BaseURL: "http://localhost:11434/v1"}, err: "needs the name of its model"},
		{name: "anthropic without key", flags: llm.Settings{Provider: "anthropic"}, err: "needs ANTHROPIC_API_KEY"},
		{name: "openai without key", env: map[string]string{"OBELISK_PROVIDER": "openai"}, err: "needs OPENAI_API_KEY"},
		{name: "unknown provider", flags: llm.Settings{Provider: "mystery"}, err: `unknown provider "mystery"`},
		{name: "bad base URL", flags: llm.Settings{BaseURL: "localhost:11434", Model: "m"}, err: "not an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := llm.Resolve(tt.flags, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProvidersSchema: a request with a schema is sent as each provider
// documents constrained output, which the fake servers check: OpenAI's
// response_format json_schema with strict: true, Anthropic's tool with
// that input_schema and a tool_choice that makes the model call it. The
// answer, text or the tool's input, streams as text.
func TestProvidersSchema(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required": []any{"n"}, "additionalProperties": false}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{`{"n":`, ` 7}`}}))
			defer srv.Close()
			m := p.open(srv.Settings("planner-1", "judge-1"))
			text, _, err := llm.Collect(context.Background(), m, &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "n?"}},
				Schema: &llm.Schema{Name: "answer", Description: "a number", JSON: schema}})
			if err != nil {
				t.Fatal(err)
			}
			if text != `{"n": 7}` {
				t.Errorf("answer %q", text)
			}
			req := srv.Requests()[0]
			if diff := cmp.Diff(schema, req.Schema); diff != "" || req.SchemaName != "answer" {
				t.Errorf("schema %q (-want +got):\n%s", req.SchemaName, diff)
			}
			if req.Strict != (p.name == llm.OpenAI) {
				t.Errorf("strict = %v", req.Strict)
			}
		})
	}
}

// TestProvidersSchemaRejected: a server that refuses a request's schema
// (HTTP 400) gives an error that wraps llm.ErrSchemaRejected, with the
// server's message; an OpenAI server refuses a schema strict mode does
// not accept.
func TestProvidersSchemaRejected(t *testing.T) {
	ok := map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}, "additionalProperties": false}
	loose := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Text("{}", llm.Usage{}), llmtest.Text("{}", llm.Usage{})))
			defer srv.Close()
			srv.RejectSchema = "The compiled grammar is too large"
			m := p.open(srv.Settings("planner-1", "judge-1"))
			ask := func(s map[string]any) error {
				_, _, err := llm.Collect(context.Background(), m, &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}},
					Schema: &llm.Schema{Name: "answer", JSON: s}})
				return err
			}
			err := ask(ok)
			if !errors.Is(err, llm.ErrSchemaRejected) || !strings.Contains(err.Error(), "grammar is too large") {
				t.Errorf("err = %v", err)
			}
			srv.RejectSchema = ""
			err = ask(loose)
			if p.name == llm.OpenAI && (!errors.Is(err, llm.ErrSchemaRejected) || !strings.Contains(err.Error(), `additionalProperties must be false`)) {
				t.Errorf("a loose schema: err = %v", err)
			}
			// Without a schema, an error is not a refusal of one.
			srv.RejectSchema = "no"
			_, _, err = llm.Collect(context.Background(), m, &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
			if errors.Is(err, llm.ErrSchemaRejected) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestCheckStrictSchema(t *testing.T) {
	obj := func(props map[string]any, req ...any) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
	}
	deep := obj(map[string]any{})
	for range llmtest.StrictMaxNesting {
		deep = obj(map[string]any{"x": deep}, "x")
	}
	tests := []struct {
		schema map[string]any
		err    string
	}{
		{obj(map[string]any{"a": map[string]any{"type": []any{"string", "null"}}}, "a"), ""},
		{obj(map[string]any{"a": map[string]any{"type": "string"}}), `property "a" must be in required`},
		{map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}}, "additionalProperties must be false"},
		{map[string]any{"anyOf": []any{}}, "must be an object"},
		{obj(map[string]any{"a": map[string]any{"allOf": []any{}}}, "a"), `keyword "allOf" is not supported`},
		{obj(map[string]any{"a": map[string]any{"$ref": "#/$defs/x"}}, "a"), "no such definition"},
		{deep, "nested more than 10 levels"},
	}
	for _, tt := range tests {
		err := llmtest.CheckStrictSchema(tt.schema)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("CheckStrictSchema(%v) = %v, want %q", tt.schema, err, tt.err)
		}
	}
}

// TestProvidersCut checks that each provider reports an answer cut short,
// at the size limit or by a stream that ends before the answer's last
// events, as ErrTruncated after its text, and a whole answer as io.EOF.
func TestProvidersCut(t *testing.T) {
	for _, p := range providers {
		for _, c := range []struct {
			name string
			cut  llmtest.Cut
		}{{"whole", llmtest.NotCut}, {"at-limit", llmtest.AtLimit}, {"abort", llmtest.Abort}} {
			t.Run(p.name+"/"+c.name, func(t *testing.T) {
				srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{"a = f(x: 1)\n", "  retr"}, Cut: c.cut, Usage: llm.Usage{Input: 10, Output: 5}}))
				defer srv.Close()
				text, _, err := llm.Collect(context.Background(), p.open(srv.Settings("planner-1", "judge-1")), &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "plan it"}}})
				if text != "a = f(x: 1)\n  retr" {
					t.Errorf("text = %q", text)
				}
				if cut := errors.Is(err, llm.ErrTruncated); cut != (c.cut != llmtest.NotCut) {
					t.Errorf("err = %v; want it cut: %v", err, c.cut != llmtest.NotCut)
				}
				if c.cut == llmtest.NotCut && err != nil {
					t.Errorf("err = %v", err)
				}
			})
		}
	}
}

// TestResolveErrorsNameSettings: a missing setting is an error errors.Is
// matches to its sentinel, whose message names the setting and its
// environment variable, never a command line's flag.
func TestResolveErrorsNameSettings(t *testing.T) {
	for _, tt := range []struct {
		flags llm.Settings
		env   map[string]string
		is    error
		names string
	}{
		{flags: llm.Settings{BaseURL: "http://localhost:11434/v1"}, is: llm.ErrNoModel, names: "(llm.Settings.Model, or OBELISK_MODEL)"},
		{env: map[string]string{"OBELISK_PROVIDER": "openai"}, is: llm.ErrNoAPIKey, names: "(or llm.Settings.BaseURL for an OpenAI-compatible server)"},
		{is: llm.ErrNoProvider, names: "OPENAI_BASE_URL=URL OBELISK_MODEL="},
	} {
		_, err := llm.Resolve(tt.flags, func(k string) string { return tt.env[k] })
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.names) || strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v; want %v naming %q and no flag", tt.flags, err, tt.is, tt.names)
		}
	}
}
