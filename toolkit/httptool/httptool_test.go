package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

const forecastSchema = `{"type": "object", "properties": {
  "city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
  "note": {"type": "string"}, "key": {"type": "string"}},
  "required": ["city"]}`

// request is what the test server saw.
type request struct {
	Method, Path, RawPath, Query, Auth, Key, ContentType, Body string
}

// server answers with status and body and records each request.
func server(t *testing.T, status int, contentType, body string) (*httptest.Server, *[]request) {
	t.Helper()
	var seen []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, request{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), string(b)})
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// granted returns options that let a tool read every variable of vars
// and reach loopback.
func granted(t testing.TB, vars map[string]string) Options {
	t.Helper()
	n, err := permission.NewNet(permission.NetOptions{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := permission.NewEnv(permission.EnvOptions{Any: true})
	return Options{Net: n, Env: e, LookupEnv: env(vars)}
}

func newTool(t *testing.T, block string, vars map[string]string) *Tool {
	t.Helper()
	tool, err := New(toolkit.Definition{Name: "weather.forecast", InputSchema: json.RawMessage(forecastSchema)}, []byte(block), granted(t, vars))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestGet(t *testing.T) {
	srv, seen := server(t, 200, "application/json", `{"forecast": [{"day": 1, "high": 21.5}], "source": "test"}`)
	tool := newTool(t, `{
	  "url": "${BASE}/v1/forecast/{city}?days={days}&tag={tags}&note={note}&k=${KEY}",
	  "headers": {"Authorization": "Bearer ${TOKEN}", "Idempotency-Key": "{key}"},
	  "result": "/forecast"}`,
		map[string]string{"BASE": srv.URL, "TOKEN": "s3cret", "KEY": "a&b"})
	got, err := tool.Call(context.Background(), map[string]any{"city": "São Paulo/Centro", "days": int64(3), "tags": []any{"rain", "wind"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{map[string]any{"day": int64(1), "high": 21.5}}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	want := []request{{Method: "GET", Path: "/v1/forecast/São Paulo/Centro", RawPath: "/v1/forecast/S%C3%A3o%20Paulo%2FCentro",
		Query: "days=3&tag=rain&tag=wind&k=a%26b", Auth: "Bearer s3cret"}}
	if diff := cmp.Diff(want, *seen); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestBodies(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		args        map[string]any
		want        request
	}{
		{"rest", `{"method": "post", "url": "${BASE}/notes/{city}"}`,
			map[string]any{"city": "Paris", "note": "umbrella", "days": int64(2)},
			request{Method: "POST", Path: "/notes/Paris", ContentType: "application/json", Body: `{"days":2,"note":"umbrella"}`}},
		{"one", `{"method": "PUT", "url": "${BASE}/notes", "body": "tags"}`,
			map[string]any{"city": "Paris", "tags": []any{"a"}},
			request{Method: "PUT", Path: "/notes", ContentType: "application/json", Body: `["a"]`}},
		{"list", `{"method": "PATCH", "url": "${BASE}/notes", "body": ["city", "note"]}`,
			map[string]any{"city": "Paris", "days": int64(1)},
			request{Method: "PATCH", Path: "/notes", ContentType: "application/json", Body: `{"city":"Paris"}`}},
		{"get has none", `{"url": "${BASE}/notes"}`,
			map[string]any{"city": "Paris"},
			request{Method: "GET", Path: "/notes"}},
		{"delete with a header", `{"method": "DELETE", "url": "${BASE}/notes/{city}", "headers": {"Idempotency-Key": "del-{key}"}}`,
			map[string]any{"city": "Paris", "key": "k1"},
			request{Method: "DELETE", Path: "/notes/Paris", Key: "del-k1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := server(t, 201, "", "")
			got, err := newTool(t, tc.block, map[string]string{"BASE": srv.URL}).Call(context.Background(), tc.args)
			if err != nil || got != nil {
				t.Fatalf("got %v, %v; want nil result (empty body)", got, err)
			}
			if diff := cmp.Diff([]request{tc.want}, *seen); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		result      string
		want        any
		code        string
		retryable   bool
		message     string
	}{
		{name: "text", status: 200, contentType: "text/plain", body: "sunny", want: "sunny"},
		{name: "json without content type", status: 200, body: `[1, 2.5]`, want: []any{int64(1), 2.5}},
		{name: "pointer into a list", status: 200, contentType: "application/json", body: `{"a": [{"b~/c": true}]}`, result: "/a/0/b~0~1c", want: true},
		{name: "pointer misses", status: 200, contentType: "application/json", body: `{"a": []}`, result: "/a/0", code: "invalid-output", retryable: true, message: "the response has no /a/0"},
		{name: "not json", status: 200, contentType: "application/json", body: `{`, code: "invalid-output", retryable: true, message: "says it is JSON but is not"},
		{name: "not found", status: 404, body: "no such city\n\n  sorry", code: "http-404", message: "404 Not Found: no such city sorry"},
		{name: "unavailable", status: 503, body: long, code: "http-503", retryable: true, message: ": " + strings.Repeat("x", 200) + "…"},
		{name: "too many", status: 429, code: "http-429", retryable: true, message: "429 Too Many Requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, tc.status, tc.contentType, tc.body)
			block := `{"url": "${BASE}/x?key=${KEY}", "result": "` + tc.result + `"}`
			got, err := newTool(t, block, map[string]string{"BASE": srv.URL, "KEY": "s3cret"}).Call(context.Background(), map[string]any{"city": "Paris"})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
				return
			}
			var re *toolkit.Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, %v; want an error with code %s", got, err, tc.code)
			}
			if re.Code != tc.code || re.NotRetryable == tc.retryable || !strings.Contains(re.Message, tc.message) {
				t.Errorf("error %+v; want code %s, retryable %v, message with %q", re, tc.code, tc.retryable, tc.message)
			}
			if strings.Contains(re.Message, "s3cret") {
				t.Errorf("the message shows the query's secret: %s", re.Message)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	_, err := newTool(t, `{"url": "${BASE}/slow", "timeout": "20ms"}`, map[string]string{"BASE": srv.URL}).Call(context.Background(), map[string]any{"city": "x"})
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != toolkit.CodeTimeout || re.NotRetryable {
		t.Fatalf("got %v; want a retryable timeout", err)
	}
	// The step's own deadline is the step's: its error is passed on as it
	// is, for the interpreter to report.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = newTool(t, `{"url": "${BASE}/slow"}`, map[string]string{"BASE": srv.URL}).Call(ctx, map[string]any{"city": "x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v; want context.Canceled", err)
	}
}

func TestArgumentsAndEnvironment(t *testing.T) {
	tool := newTool(t, `{"url": "${BASE}/f/{city}", "headers": {"Authorization": "Bearer ${TOKEN}"}}`, map[string]string{"BASE": "http://127.0.0.1:1"})
	if diff := cmp.Diff([]string{"BASE", "TOKEN"}, tool.Env()); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"TOKEN"}, tool.MissingEnv()); diff != "" {
		t.Errorf("MissingEnv (-want +got):\n%s", diff)
	}
	_, err := tool.Call(context.Background(), map[string]any{"city": "x"})
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != "missing-env" || !re.NotRetryable || !strings.Contains(re.Message, "TOKEN") {
		t.Errorf("got %v; want missing-env naming TOKEN", err)
	}
	tool = newTool(t, `{"url": "${BASE}/f/{city}"}`, map[string]string{"BASE": "ftp://host"})
	_, err = tool.Call(context.Background(), map[string]any{"city": "x"})
	if !errors.As(err, &re) || re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, "not an http or https URL") {
		t.Errorf("got %v; want invalid-arguments for a URL that is not http", err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{`{"url": "http://x", "hedaers": {}}`, `unknown key "hedaers" in the http block; known keys: method, url`},
		{`{"method": "FETCH", "url": "http://x"}`, `method "FETCH": use GET, POST`},
		{`{"method": "GET"}`, `no "url"`},
		{`{"url": "http://x/{cty}"}`, `url: {cty} is not a parameter of weather.forecast (its parameters: city, days, key, note, tags)`},
		{`{"url": "http://x/{days}"}`, `{days} is in the path, so it must be a required parameter`},
		{`{"url": "http://x/{city"}`, `{ without }`},
		{`{"url": "http://x/${A-B}"}`, `${A-B} is not an environment variable name`},
		{`{"url": "http://x", "headers": {"X-Y": "{nope}"}}`, `headers: X-Y: {nope} is not a parameter`},
		{`{"url": "http://x", "headers": {"Bad Name": "v"}}`, `"Bad Name" is not a header name`},
		{`{"url": "http://x", "body": "nope"}`, `body: nope is not a parameter`},
		{`{"url": "http://x", "body": 3}`, `neither a parameter name nor a list`},
		{`{"url": "http://x", "result": "data"}`, `not a JSON Pointer`},
		{`{"url": "http://x", "timeout": "soon"}`, `timeout: "soon" is not a duration`},
		{`{"url": "http://x", "redirects": "all"}`, `redirects: "all": use "same-origin" (the default) or "any"`},
		{`{"url": "{city}/f"}`, `url: {city} is before the path starts, where it could change the scheme, user, host or port: put parameters in the path (after a /) or the query`},
		{`{"url": "ftp://x/{city}"}`, `url: the scheme "ftp": use http or https`},
	} {
		_, err := New(toolkit.Definition{Name: "weather.forecast", InputSchema: json.RawMessage(forecastSchema)}, []byte(tc.block), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.block, err, tc.want)
		}
	}
}

// TestThroughRegistry: registered, an HTTP tool's arguments are checked
// against its input schema before any request is sent.
func TestThroughRegistry(t *testing.T) {
	srv, seen := server(t, 200, "application/json", `{"ok": true}`)
	def := toolkit.Definition{Name: "weather.forecast", InputSchema: json.RawMessage(forecastSchema), OutputSchema: json.RawMessage(`{"type": "object"}`)}
	tool, err := New(def, []byte(`{"url": "${BASE}/f/{city}"}`), granted(t, map[string]string{"BASE": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	reg := toolkit.NewRegistry()
	if err := reg.Register(def, tool); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Call(context.Background(), "weather.forecast", map[string]any{"days": int64(1)}); err == nil {
		t.Fatal("a call without the required city was sent")
	}
	got, err := reg.Call(context.Background(), "weather.forecast", map[string]any{"city": "Oslo"})
	if err != nil || !cmp.Equal(got, map[string]any{"ok": true}) || len(*seen) != 1 {
		t.Fatalf("got %v, %v after %d requests", got, err, len(*seen))
	}
}

// BenchmarkCall measures one call of an HTTP tool to a loopback server:
// the URL and headers filled, the request sent, the JSON response decoded
// and the result selected.
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"forecast": [{"day": 1, "high": 21.5}, {"day": 2, "high": 19}]}`)
	}))
	defer srv.Close()
	tool, err := New(toolkit.Definition{Name: "f", InputSchema: json.RawMessage(forecastSchema)},
		[]byte(`{"url": "${BASE}/v1/forecast/{city}?days={days}", "headers": {"Authorization": "Bearer ${TOKEN}"}, "result": "/forecast"}`),
		granted(b, map[string]string{"BASE": srv.URL, "TOKEN": "t"}))
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"city": "Oslo", "days": int64(2)}
	for b.Loop() {
		if _, err := tool.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}
