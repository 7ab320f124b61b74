package lsp

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/sourcegraph/jsonrpc2"
)

// weatherPlan has a † on most lines and a character outside the Basic
// Multilingual Plane (two UTF-16 code units) before a reference.
const weatherPlan = `tool lookup(city: string) -> {temp: number, sky: string} pure
# Sends a message to a person.
tool notify(to: string, text: string) -> {id: string} irreversible

input {
  city: string
}

weather: lookup(city: †input.city) -> †state.w
send: notify(to: "😀 ops", text: †state.w.sky) -> †state.sent
  approve
  when size(†state.w.sky) > 0

output †state.sent.id
`

// client is an editor's end of a connection to the server.
type client struct {
	t     *testing.T
	conn  *jsonrpc2.Conn
	diags chan publishDiagnosticsParams
	done  chan error
}

func newClient(t *testing.T, opts Options) *client {
	t.Helper()
	a, b := net.Pipe()
	c := &client{t: t, diags: make(chan publishDiagnosticsParams, 64), done: make(chan error, 1)}
	go func() { c.done <- Serve(context.Background(), a, opts) }()
	c.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(b, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		if r.Method == "textDocument/publishDiagnostics" && r.Params != nil {
			var p publishDiagnosticsParams
			if err := json.Unmarshal(*r.Params, &p); err == nil {
				c.diags <- p
			}
		}
		return nil, nil
	}))
	t.Cleanup(func() { c.conn.Close() })
	var init initializeResult
	c.call("initialize", map[string]any{"capabilities": map[string]any{}}, &init)
	if init.Capabilities.PositionEncoding != "utf-16" || !init.Capabilities.HoverProvider {
		t.Fatalf("initialize answered %+v", init)
	}
	c.notify("initialized", map[string]any{})
	return c
}

func (c *client) call(method string, params, result any) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.conn.Call(ctx, method, params, result)
}

func (c *client) must(method string, params, result any) {
	c.t.Helper()
	if err := c.call(method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// diagnostics waits for the diagnostics of a version of a document.
func (c *client) diagnostics(uri string, version int) []diagnostic {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-c.diags:
			if p.URI == uri && p.Version != nil && *p.Version == version {
				return p.Diagnostics
			}
		case <-timeout:
			c.t.Fatalf("no diagnostics for version %d of %s", version, uri)
		}
	}
}

func (c *client) open(uri, text string) []diagnostic {
	c.t.Helper()
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "obelisk", "version": 1, "text": text}})
	return c.diagnostics(uri, 1)
}

// at returns the position of the n-th (from 0) occurrence of needle in
// text, plus skip bytes, in UTF-16 code units, computed independently
// of the server's conversion.
func at(t *testing.T, text, needle string, n, skip int) position {
	t.Helper()
	off := -1
	for i := 0; i <= n; i++ {
		j := strings.Index(text[off+1:], needle)
		if j < 0 {
			t.Fatalf("%q has no occurrence %d of %q", text, n, needle)
		}
		off += 1 + j
	}
	off += skip
	line := strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	return position{Line: line, Character: len(utf16.Encode([]rune(text[start:off])))}
}

func docPos(uri string, p position) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": p}
}

const testURI = "file:///tmp/obelisk-lsp-test/weather.plan"

func TestDiagnosticsAfterOpenAndEdit(t *testing.T) {
	c := newClient(t, Options{Debounce: time.Millisecond})
	if ds := c.open(testURI, weatherPlan); len(ds) != 0 {
		t.Fatalf("a plan that checks got diagnostics: %+v", ds)
	}
	// Misspell the tool of the second step: an unknown tool, with the
	// closest name as a fix.
	p := at(t, weatherPlan, "notify(to:", 1, 0)
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": testURI, "version": 2},
		"contentChanges": []any{map[string]any{"range": rng{Start: p, End: position{Line: p.Line, Character: p.Character + len("notify")}}, "text": "notfy"}},
	})
	ds := c.diagnostics(testURI, 2)
	if len(ds) == 0 {
		t.Fatal("no diagnostic for an unknown tool")
	}
	d := ds[0]
	if d.Code != "unknown-tool" || d.Severity != 1 || d.Source != "obelisk" {
		t.Fatalf("diagnostic %+v, want an error unknown-tool", d)
	}
	if d.Range.Start != p || d.Range.End.Character != p.Character+len("notfy") {
		t.Errorf("diagnostic at %+v, want from %+v over notfy", d.Range, p)
	}
	var actions []codeAction
	c.must("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": testURI}, "range": d.Range, "context": map[string]any{"diagnostics": ds}}, &actions)
	if len(actions) == 0 || actions[0].Edit == nil || actions[0].Edit.Changes[testURI][0].NewText != "notify" {
		t.Fatalf("code actions %+v, want a fix that writes notify", actions)
	}
}
