package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/internal/httpapi"
)

// rawServer answers each request of a provider with handle, and returns
// settings that point the provider at it.
func rawServer(t *testing.T, p provider, handle http.HandlerFunc) llm.Settings {
	t.Helper()
	srv := httptest.NewServer(handle)
	t.Cleanup(srv.Close)
	s := llm.Settings{Provider: p.name, BaseURL: srv.URL, APIKey: "k", Model: "m", MaxRetries: -1}
	if p.name == llm.OpenAI {
		s.BaseURL += "/v1"
	}
	return s
}

// sse answers with a body of server-sent events, as it is written.
func sse(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

// The events of a whole answer "hi", in each provider's protocol.
var whole = map[string]string{
	llm.OpenAI: `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}` + "\n\n" +
		"data: [DONE]\n\n",
	llm.Anthropic: "event: message_start\n" + `data: {"type":"message_start","message":{"usage":{"input_tokens":2,"cache_read_input_tokens":1,"output_tokens":1}}}` + "\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}` + "\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

func ask(s llm.Settings, p provider) (string, llm.Usage, error) {
	return llm.Collect(context.Background(), p.open(s), &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
}

// TestProvidersHostileStreams: a stream that breaks the protocol is an
// error after the text that came before it, never a whole answer: JSON
// that is not, an event longer than the bound, an error event, a body
// that ends early or is empty.
func TestProvidersHostileStreams(t *testing.T) {
	first := map[string]string{
		llm.OpenAI:    `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n",
		llm.Anthropic: `data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}` + "\n\n",
	}
	errorEvent := map[string]string{
		llm.OpenAI:    `data: {"error":{"message":"the model crashed"}}` + "\n\n",
		llm.Anthropic: "event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"the model crashed"}}` + "\n\n",
	}
	for _, p := range providers {
		for _, tt := range []struct {
			name string
			body string
			is   error
			says string
		}{
			{"wrong JSON", first[p.name] + "data: {\"choices\": [\n\n", nil, "not the JSON expected"},
			{"JSON of the wrong shape", first[p.name] + `data: {"choices": "many", "delta": 7}` + "\n\n", nil, "not the JSON expected"},
			{"a huge line", first[p.name] + "data: " + strings.Repeat("x", httpapi.MaxEvent+1) + "\n\n", httpapi.ErrEventTooLarge, ""},
			{"an error event", first[p.name] + errorEvent[p.name], nil, "the model crashed"},
			{"no final events", first[p.name], llm.ErrTruncated, ""},
			{"a cut event", first[p.name] + whole[p.name][:40], llm.ErrTruncated, ""},
		} {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				text, _, err := ask(rawServer(t, p, sse(tt.body)), p)
				if text != "a" {
					t.Errorf("text = %q", text)
				}
				if err == nil || tt.is != nil && !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), p.name+"/m") {
					t.Errorf("err = %.300v; want %v %q", err, tt.is, tt.says)
				}
			})
		}
		t.Run(p.name+"/empty body", func(t *testing.T) {
			text, _, err := ask(rawServer(t, p, sse("")), p)
			if text != "" || !errors.Is(err, llm.ErrTruncated) {
				t.Errorf("text %q, err %v", text, err)
			}
		})
	}
}

// TestProvidersWhole: a whole answer in each protocol, with the events a
// real server adds (ping, usage in its own chunk, the cache's tokens),
// and what follows OpenAI's [DONE] is not read.
func TestProvidersWhole(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			text, u, err := ask(rawServer(t, p, sse(whole[p.name]+"data: {not json\n\n")), p)
			if p.name == llm.Anthropic {
				// Anthropic has no [DONE]: the line after message_stop is
				// read, and is an error.
				if err == nil {
					t.Errorf("err = nil")
				}
				return
			}
			if text != "hi" || err != nil || u != (llm.Usage{Input: 3, Output: 1}) {
				t.Errorf("text %q, usage %+v, err %v", text, u, err)
			}
		})
		t.Run(p.name+"/usage", func(t *testing.T) {
			text, u, err := ask(rawServer(t, p, sse(whole[p.name])), p)
			if text != "hi" || err != nil || u != (llm.Usage{Input: 3, Output: 1}) {
				t.Errorf("text %q, usage %+v, err %v", text, u, err)
			}
		})
	}
}

// TestProvidersRetry: a provider retries a request the server refused for
// a transient reason (429, 5xx, Anthropic's 529 overloaded), and counts
// it as one request; the answer is the retried request's.
func TestProvidersRetry(t *testing.T) {
	for _, p := range providers {
		for _, code := range []int{429, 500, 529} {
			t.Run(fmt.Sprintf("%s/%d", p.name, code), func(t *testing.T) {
				var n atomic.Int32
				s := rawServer(t, p, func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						w.Header().Set("retry-after-ms", "1")
						w.WriteHeader(code)
						io.WriteString(w, `{"error":{"message":"later"}}`)
						return
					}
					sse(whole[p.name])(w, r)
				})
				s.MaxRetries = 0 // the default: two retries
				m := llm.Metered(p.open(s))
				text, _, err := llm.Collect(context.Background(), m, &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
				if text != "hi" || err != nil || n.Load() != 2 || m.Usage().Requests != 1 {
					t.Errorf("text %q, err %v, %d requests to the server, %d counted", text, err, n.Load(), m.Usage().Requests)
				}
			})
		}
	}
}

// TestProvidersHeaders: each provider authenticates as its API documents
// (OpenAI's bearer token, Anthropic's x-api-key and anthropic-version),
// and an OpenAI-compatible server without a key gets no Authorization.
func TestProvidersHeaders(t *testing.T) {
	for _, p := range providers {
		for _, key := range []string{"sk-1", ""} {
			t.Run(p.name+"/"+key, func(t *testing.T) {
				var h http.Header
				var path string
				s := rawServer(t, p, func(w http.ResponseWriter, r *http.Request) {
					h, path = r.Header, r.URL.Path
					sse(whole[p.name])(w, r)
				})
				s.APIKey = key
				s.BaseURL += "/" // a trailing slash is the same address
				if _, _, err := ask(s, p); err != nil {
					t.Fatal(err)
				}
				switch p.name {
				case llm.OpenAI:
					want := ""
					if key != "" {
						want = "Bearer " + key
					}
					if h.Get("Authorization") != want || path != "/v1/chat/completions" {
						t.Errorf("Authorization %q, path %s", h.Get("Authorization"), path)
					}
				case llm.Anthropic:
					if h.Get("X-Api-Key") != key || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" || path != "/v1/messages" {
						t.Errorf("headers %v, path %s", h, path)
					}
				}
			})
		}
	}
}
