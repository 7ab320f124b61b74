package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// wire is a client that speaks the stdio transport's lines itself, and so
// may send what no SDK client would.
type wire struct {
	// lines are written to the server in order, by a goroutine of their
	// own, as an operating system's pipe buffers them: the client sends
	// while the server answers.
	lines chan string
	out   *bufio.Reader
	// done is closed when the server's session has ended.
	done chan struct{}
}

// serveStdio serves one client over pipes with srv.RunStdio.
func serveStdio(t testing.TB, srv *Server) *wire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{lines: make(chan string, 64), out: bufio.NewReader(outR), done: make(chan struct{})}
	go func() {
		for line := range w.lines {
			if _, err := io.WriteString(inW, line); err != nil {
				break // the session has ended: await says so
			}
		}
		inW.Close()
	}()
	go func() {
		defer close(w.done)
		if err := srv.RunStdio(context.Background(), inR, outW); err != nil {
			t.Logf("RunStdio: %v", err)
		}
		outW.Close()
	}()
	return w
}

// send sends a line.
func (w *wire) send(line string) { w.lines <- line + "\n" }

// close ends what the client sends.
func (w *wire) close() { close(w.lines) }

// message is a message the server sends.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// await reads the server's messages until the answer to request id (a
// JSON value), and returns it with the error answers of no request read
// on the way; it fails the test if the session ends first.
func (w *wire) await(t testing.TB, id string) (message, []message) {
	t.Helper()
	var refused []message
	for {
		line, err := w.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the session ended before the answer to request %s: %v", id, err)
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %v\n%s", err, line)
		}
		switch {
		case string(m.ID) == id && m.Method == "":
			return m, refused
		case string(m.ID) == "null":
			refused = append(refused, m)
		}
	}
}

// initialize opens the session.
func (w *wire) initialize(t testing.TB) {
	t.Helper()
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}`)
	if m, _ := w.await(t, `"init"`); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// nested returns a ping whose params nest depth arrays deep.
func nested(id string, depth int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping","params":{"a":%s%s}}`, id, strings.Repeat("[", depth), strings.Repeat("]", depth))
}

// TestStdioRefusals: over stdio, a message the SDK would refuse (nested
// 100,000 deep, deeper than it reads, not JSON, not JSON-RPC, a batch, a
// line over its bound) is answered with a JSON-RPC error; the server goes
// on answering, and a run in flight goes on to its end.
func TestStdioRefusals(t *testing.T) {
	h := start(t, Options{}, nil)
	w := serveStdio(t, h.server)
	defer w.close()
	w.initialize(t)
	plan := "a: slow(n: 1) -> †state.a\noutput †state.a\n"
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_plan","arguments":{"plan":%q,"wait":0}}}`, plan))
	m, _ := w.await(t, "1")
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("run_plan: %s %+v", m.Result, m.Error)
	}
	run := answerOf(t, res.Content[0].Text)
	if run.Status != "running" {
		t.Fatalf("run_plan with wait 0: %s", res.Content[0].Text)
	}
	<-h.shop.entered

	for i, tc := range []struct {
		name, line string
		id         string
		code       int64
	}{
		{"nested 100,000 deep", nested("10", 100_000), "null", -32700},
		{"nested deeper than the SDK reads", nested("11", 1001), "11", -32600},
		{"not JSON", `{"jsonrpc":"2.0","id":12,"method":"ping"`, "null", -32700},
		{"two values on a line", `{"jsonrpc":"2.0","id":13,"method":"ping"} {}`, "null", -32700},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":14,"method":"ping"}`, "14", -32600},
		{"an ID of the wrong type", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, "null", -32600},
		{"a batch", `[{"jsonrpc":"2.0","id":15,"method":"ping"}]`, "null", -32600},
		{"an empty batch", `[]`, "null", -32600},
		{"a line over the bound", `{"jsonrpc":"2.0","id":16,"method":"ping","params":{"a":"` + strings.Repeat("x", maxLine) + `"}}`, "null", -32600},
	} {
		w.send(tc.line)
		ping := fmt.Sprintf(`"after-%d"`, i)
		w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, ping))
		// The answer to the message comes before the ping's.
		var refusal *message
		for refusal == nil {
			line, err := w.out.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: the session ended: %v", tc.name, err)
			}
			var m message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: the server wrote a line that is not JSON: %v", tc.name, err)
			}
			if string(m.ID) == ping {
				t.Fatalf("%s: the ping was answered, the message was not", tc.name)
			}
			if m.Error != nil {
				refusal = &m
			}
		}
		if string(refusal.ID) != tc.id || refusal.Error.Code != tc.code {
			t.Errorf("%s: answered with ID %s and %+v, want ID %s and code %d", tc.name, refusal.ID, refusal.Error, tc.id, tc.code)
		}
		if m, _ := w.await(t, ping); m.Error != nil {
			t.Errorf("%s: the next ping: %+v", tc.name, m.Error)
		}
	}

	close(h.shop.release)
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_status","arguments":{"run":%q,"wait":600}}}`, run.Run))
	m, _ = w.await(t, "2")
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("run_status: %s %+v", m.Result, m.Error)
	}
	if a := answerOf(t, res.Content[0].Text); a.Status != "completed" || fmt.Sprint(a.Output) != "1" {
		t.Errorf("the run in flight: %s", res.Content[0].Text)
	}
}

// TestHTTPRefusals: over HTTP, a message the SDK would refuse is answered
// with a JSON-RPC error, and the session goes on.
func TestHTTPRefusals(t *testing.T) {
	h := start(t, Options{}, nil)
	srv := httptest.NewServer(h.server.Handler(HTTPOptions{Token: "s3cret"}))
	defer srv.Close()
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer s3cret")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"nested 100,000 deep", nested("2", 100_000), http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`},
		{"nested deeper than the SDK reads", nested("3", 1001), http.StatusBadRequest, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,`},
		{"not JSON", `{"jsonrpc":`, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`},
		{"a body over the bound", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":"` + strings.Repeat("x", maxBody) + `"}}`, http.StatusRequestEntityTooLarge, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
	} {
		resp, body := post(session, tc.body)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(body, tc.want) {
			t.Errorf("%s: %d %s %s, want %d and %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.want)
		}
		resp, body = post(session, `{"jsonrpc":"2.0","id":"next","method":"ping"}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"next","result":{}`) {
			t.Errorf("%s: the next ping: %d %s", tc.name, resp.StatusCode, body)
		}
	}
}

// FuzzStdio sends one line, or several, to a server over stdio between
// two requests: whatever they are, the session goes on and the request
// after them is answered.
func FuzzStdio(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_plan","arguments":{"plan":"output 1\n"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		nested("4", 1001),
		nested("5", 20_000),
		`[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
		`[]`,
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":8,\r\n\"method\":\"ping\"}",
		"\"\xff\"",
		`{"jsonrpc":"2.0","id":9,"id":10,"method":"ping"}`,
		`null`,
		`  `,
	} {
		f.Add([]byte(seed))
	}
	st, err := durable.Open(f.TempDir(), durable.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	reg := toolkit.NewRegistry()
	reg.MustRegister(toolkit.Definition{Name: "lookup", Description: "Looks up a customer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		Annotations: toolkit.Annotations{ReadOnly: true}},
		toolkit.ToolFunc(func(_ context.Context, args map[string]any) (any, error) { return args["id"], nil }))
	srv, err := New(Options{Tools: []planfile.File{{Name: "<tools>", Text: string(reg.ToolsJSON())}}, Caller: reg, Store: st})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	f.Fuzz(func(t *testing.T, lines []byte) {
		w := serveStdio(t, srv)
		w.initialize(t)
		w.send(string(lines))
		w.send(`{"jsonrpc":"2.0","id":"probe","method":"ping"}`)
		w.await(t, `"probe"`)
		go io.Copy(io.Discard, w.out) // what the server still has to say
		w.close()
		<-w.done
	})
}
