package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// lspTools is the operator's tools file the workspace file names.
const lspTools = `{"tools": [
  {"name": "forecast", "description": "The forecast for a city.",
   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]},
   "outputSchema": {"type": "object", "properties": {"high": {"type": "number"}, "sky": {"type": "string"}}, "required": ["high", "sky"]},
   "annotations": {"readOnlyHint": true}}
]}`

const lspPlan = `input {
  city: string
}

today: forecast(city: †input.city) -> †state.today
report: text.format(template: "High: {high}", values: †state.today) -> †state.report

output †state.report
`

// pipeRWC joins a process's standard output and input.
type pipeRWC struct {
	io.ReadCloser
	io.WriteCloser
}

func (p pipeRWC) Close() error {
	p.WriteCloser.Close()
	return p.ReadCloser.Close()
}

type lspPos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPos `json:"start"`
	End   lspPos `json:"end"`
}

type lspDiag struct {
	Range    lspRange `json:"range"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Severity int      `json:"severity"`
}

// posOf returns the position of needle's n-th occurrence in text; the
// text before it on its line is ASCII but for †, one UTF-16 unit.
func posOf(t *testing.T, text, needle string, n int) lspPos {
	t.Helper()
	off := -1
	for i := 0; i <= n; i++ {
		j := strings.Index(text[off+1:], needle)
		if j < 0 {
			t.Fatalf("no occurrence %d of %q", n, needle)
		}
		off += 1 + j
	}
	start := strings.LastIndexByte(text[:off], '\n') + 1
	return lspPos{Line: strings.Count(text[:off], "\n"), Character: len([]rune(text[start:off]))}
}

// TestLSPOverStdio drives obelisk lsp as an editor does: the workspace
// file names the operator's tools, and hover, completion and definition
// know them.
func TestLSPOverStdio(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"obelisk.json":  `{"tools": ["tools.json"]}`,
		"tools.json":    lspTools,
		"weather.plan":  lspPlan,
		"untouched.txt": "",
	})
	cmd := obelisk(t, dir, "lsp", "--debounce", "1ms")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	diags := make(chan []lspDiag, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(pipeRWC{stdout, stdin}, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		if r.Method == "textDocument/publishDiagnostics" {
			var p struct{ Diagnostics []lspDiag }
			json.Unmarshal(*r.Params, &p)
			diags <- p.Diagnostics
		}
		return nil, nil
	}))
	call := func(method string, params, result any) {
		t.Helper()
		if err := conn.Call(ctx, method, params, result); err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", method, err, stderr.String())
		}
	}
	waitDiags := func() []lspDiag {
		t.Helper()
		select {
		case d := <-diags:
			return d
		case <-ctx.Done():
			t.Fatalf("no diagnostics\nstderr:\n%s", stderr.String())
		}
		return nil
	}
	var init struct {
		Capabilities map[string]any
		ServerInfo   struct{ Name string }
	}
	call("initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + dir, "capabilities": map[string]any{}}, &init)
	if init.ServerInfo.Name != "obelisk" || init.Capabilities["renameProvider"] != true {
		t.Fatalf("initialize: %+v", init)
	}
	conn.Notify(ctx, "initialized", map[string]any{})
	uri := "file://" + filepath.Join(dir, "weather.plan")
	doc := map[string]any{"uri": uri}
	conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "obelisk", "version": 1, "text": lspPlan}})
	if d := waitDiags(); len(d) != 0 {
		t.Fatalf("the plan checks with the workspace's tools, yet: %+v", d)
	}

	// Hover: the operator's tool, from the tools file the workspace file
	// names; a slot's type and writer.
	var h struct{ Contents struct{ Value string } }
	call("textDocument/hover", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "forecast", 0)}, &h)
	if !strings.Contains(h.Contents.Value, "tool forecast(city: string, days?: int)") || !strings.Contains(h.Contents.Value, "The forecast for a city.") || !strings.Contains(h.Contents.Value, "pure") {
		t.Errorf("hover on forecast: %q", h.Contents.Value)
	}
	call("textDocument/hover", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "today", 2)}, &h)
	if !strings.Contains(h.Contents.Value, "†state.today: {high: number, sky: string}") || !strings.Contains(h.Contents.Value, "written by `today`") {
		t.Errorf("hover on †state.today: %q", h.Contents.Value)
	}

	// Definition: from a reader of the slot to its writer; from the call
	// of the operator's tool to its definition in tools.json.
	var locs []struct {
		URI   string
		Range lspRange
	}
	call("textDocument/definition", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "today", 2)}, &locs)
	if want := posOf(t, lspPlan, "today", 1); len(locs) != 1 || locs[0].URI != uri || locs[0].Range.Start != want {
		t.Errorf("definition of †state.today: %+v, want %v", locs, want)
	}
	call("textDocument/definition", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "forecast", 0)}, &locs)
	if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/tools.json") || locs[0].Range.Start.Line != 1 {
		t.Errorf("definition of forecast: %+v", locs)
	}

	// An edit that breaks the plan: diagnostics come back with the code.
	edited := strings.Replace(lspPlan, "†input.city)", "†input.town, )", 1)
	conn.Notify(ctx, "textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2}, "contentChanges": []any{map[string]any{"text": edited}}})
	d := waitDiags()
	if len(d) == 0 || d[0].Severity != 1 || d[0].Code != "undefined-reference" || d[0].Range.Start != posOf(t, edited, "†input.town", 0) {
		t.Fatalf("diagnostics after the edit: %+v", d)
	}

	// Completion inside the call: the parameters not yet given, from
	// the last version that checked.
	line := posOf(t, edited, "city:", 1)
	var list struct {
		Items []struct{ Label, InsertText string }
	}
	call("textDocument/completion", map[string]any{"textDocument": doc, "position": lspPos{Line: line.Line, Character: line.Character + len([]rune("city: †input.town, "))}}, &list)
	if len(list.Items) != 1 || list.Items[0].Label != "days" {
		t.Errorf("completion after the first argument: %+v", list.Items)
	}
	// Completion after †state.: the slots.
	conn.Notify(ctx, "textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 3}, "contentChanges": []any{map[string]any{"text": lspPlan}}})
	waitDiags()
	call("textDocument/completion", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "today)", 0)}, &list)
	var labels []string
	for _, it := range list.Items {
		labels = append(labels, it.Label)
	}
	if strings.Join(labels, " ") != "report today" {
		t.Errorf("completion after †state.: %v", labels)
	}

	// Rename the slot today: its writer and its reader.
	var edit struct {
		Changes map[string][]struct {
			Range   lspRange
			NewText string
		}
	}
	call("textDocument/rename", map[string]any{"textDocument": doc, "position": posOf(t, lspPlan, "today", 1), "newName": "weather"}, &edit)
	if es := edit.Changes[uri]; len(es) != 2 || es[0].NewText != "weather" || es[0].Range.Start != posOf(t, lspPlan, "today", 1) || es[1].Range.Start != posOf(t, lspPlan, "today", 2) {
		t.Errorf("rename: %+v", edit)
	}

	// Formatting: the canonical layout, as obelisk fmt prints it.
	messy := strings.Replace(lspPlan, "today: forecast(city: †input.city)", "today:   forecast( city:†input.city )", 1)
	conn.Notify(ctx, "textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 4}, "contentChanges": []any{map[string]any{"text": messy}}})
	var edits []struct{ NewText string }
	call("textDocument/formatting", map[string]any{"textDocument": doc, "options": map[string]any{"tabSize": 2, "insertSpaces": true}}, &edits)
	if len(edits) != 1 || edits[0].NewText != lspPlan {
		t.Errorf("formatting: %+v", edits)
	}

	if err := conn.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	conn.Notify(ctx, "exit", nil)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("obelisk lsp after shutdown and exit: %v\nstderr:\n%s", err, stderr.String())
	}
}

// TestLSPWorkspaceMCPNeedsFlag: the MCP servers obelisk.json names are
// programs; the server starts them only when its operator passes
// --workspace-mcp, never because a folder the editor opened says so.
func TestLSPWorkspaceMCPNeedsFlag(t *testing.T) {
	for _, allow := range []bool{false, true} {
		dir := writeFiles(t, map[string]string{"obelisk.json": `{"mcp": ["evil=touch started"]}`})
		args := []string{"lsp"}
		if allow {
			args = append(args, "--workspace-mcp")
		}
		cmd := obelisk(t, dir, args...)
		// An editor that starts the server and leaves at once.
		cmd.Stdin = strings.NewReader(lspMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`) +
			lspMessage(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`) + lspMessage(`{"jsonrpc":"2.0","method":"exit"}`))
		out, _ := cmd.CombinedOutput()
		_, err := os.Stat(filepath.Join(dir, "started"))
		switch {
		case !allow && err == nil:
			t.Errorf("without --workspace-mcp the workspace's MCP server was started\n%s", out)
		case !allow && !strings.Contains(string(out), "--workspace-mcp"):
			t.Errorf("without --workspace-mcp the server did not say why it started no MCP server:\n%s", out)
		case allow && err != nil:
			t.Errorf("with --workspace-mcp the workspace's MCP server was not started: %v\n%s", err, out)
		}
	}
}

func lspMessage(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}
