package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

// serverSession starts obelisk mcp-server with args, in a process of its
// own on stdio, and connects a Go SDK client to it.
func serverSession(t *testing.T, dir string, args ...string) *sdk.ClientSession {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"mcp-server"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OBELISK_TEST_MAIN=1", "OBELISK_LOG=error")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res.Content[0].(*sdk.TextContent).Text
}

// TestMCPServerTools: the server's tools are the command line's: an MCP
// server's, a tools file's, the built-in tools, the file tools only with
// --files; a run calls them and answers with the output.
func TestMCPServerTools(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	dir := writeFiles(t, map[string]string{"notes.txt": "remember the milk"})
	server := fmt.Sprintf("calc='%s' calc", os.Args[0])
	cs := serverSession(t, dir, "--state-dir", t.TempDir(), "--mcp", server, "--mcp-parallel", "calc=1")
	found := callText(t, cs, "search_tools", map[string]any{"query": "", "limit": 100})
	for _, want := range []string{"tool calc.add(", "tool calc.charge(amount: number) -> {receipt: string} irreversible", "tool echo(", "tool json.select("} {
		if !strings.Contains(found, want) {
			t.Errorf("search_tools does not list %q:\n%s", want, found)
		}
	}
	for _, not := range []string{"tool file.read", "tool http.get", "tool add("} {
		if strings.Contains(found, not) {
			t.Errorf("search_tools lists %q, which cannot run here or is calc.add again:\n%s", not, found)
		}
	}
	got := callText(t, cs, "run_plan", map[string]any{"plan": "calc.add(a: 2, b: 3) -> $state.s\noutput $state.s.sum\n"})
	if !strings.Contains(got, `"status":"completed","output":5`) {
		t.Errorf("run_plan: %s", got)
	}
	got = callText(t, cs, "check_plan", map[string]any{"plan": `file.read(path: "notes.txt") -> $state.n` + "\noutput $state.n\n"})
	if !strings.Contains(got, "unknown tool file.read") {
		t.Errorf("file.read without --files: %s", got)
	}

	cs = serverSession(t, dir, "--state-dir", t.TempDir(), "--files", dir)
	got = callText(t, cs, "run_plan", map[string]any{"plan": `file.read(path: "notes.txt") -> $state.n` + "\noutput $state.n\n"})
	if !strings.Contains(got, `"output":"remember the milk"`) {
		t.Errorf("file.read with --files: %s", got)
	}
}

// TestMCPServerUsage: mistakes on the command line, and an address other
// machines reach without the flag that allows it, are refused before the
// server starts.
func TestMCPServerUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp-server", "plan.plan"}, "obelisk mcp-server: expected no arguments, got 1: the plans come from the client"},
		{[]string{"mcp-server", "--http", "0.0.0.0:8765"}, `obelisk mcp-server: --http "0.0.0.0:8765" is not a loopback address: other machines could run plans with this server's tools. Listen on 127.0.0.1 or [::1], or give --allow-remote-clients to let them`},
		{[]string{"mcp-server", "--http", ":8765"}, "is not a loopback address"},
		{[]string{"mcp-server", "--http", "example.com:80"}, "is not a loopback address"},
		{[]string{"mcp-server", "--http", "8765"}, `--http "8765": give HOST:PORT, such as 127.0.0.1:8765 (port 0 picks one)`},
		{[]string{"mcp-server", "--approval-default", "maybe"}, `unknown --approval-default "maybe"`},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestMCPServerRunsOfOthers: obelisk mcp-server reads and resumes only the
// runs it made, under its name and grants, by their whole ID. A run of
// obelisk run in the same state directory, and one of a server with other
// grants (--yes, a permission, another --name), is a run that does not
// exist to it, by its ID or a prefix, and stays waiting; obelisk approve
// and resume act on every run.
func TestMCPServerRunsOfOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := writeFiles(t, map[string]string{"gate.plan": "a: echo(value: 1) -> †state.a\n  approve \"go on?\"\n\noutput †state.a\n"})
	state := filepath.Join(dir, "st")
	// Both have the same tools: every built-in tool.
	grants := []string{"--files", dir, "--allow-net=example.com"}
	if r := runObelisk(t, dir, append([]string{"run", "--state-dir", state, "--run-id", "cli-run-1", "gate.plan"}, grants...)...); r.code != exitWaiting {
		t.Fatalf("obelisk run: %+v", r)
	}
	plan := "a: echo(value: 2) -> †state.a\n  approve \"go on?\"\n\noutput †state.a\n"
	var made struct{ Run, Status string }
	if err := json.Unmarshal([]byte(callText(t, serverSession(t, dir, append([]string{"--state-dir", state, "--name", "desk"}, grants...)...), "run_plan", map[string]any{"plan": plan})), &made); err != nil || made.Status != "waiting" {
		t.Fatalf("run_plan: %+v, %v", made, err)
	}
	// The operator's show says who made each run.
	for id, want := range map[string]string{"cli-run-1": "made by:   obelisk, the command line\n", made.Run: "made by:   obelisk mcp-server --name desk (grants "} {
		if r := runObelisk(t, dir, "show", "--state-dir", state, id); r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("obelisk show %s: want %q in\n%+v", id, want, r)
		}
	}
	noSuchRun := func(id string) string {
		return fmt.Sprintf("no such run: %q is not the ID of a run of this server; give the whole ID that run_plan answered", id)
	}
	for _, tc := range []struct {
		args []string
		runs []string
	}{
		{[]string{"--name", "desk", "--yes"}, []string{"cli-run-1", "cli-run", "cli", made.Run}},
		{[]string{"--name", "desk", "--allow-env=HOME"}, []string{"cli-run-1", made.Run}},
		{[]string{"--name", "desk", "--allow-net=example.org"}, []string{"cli-run-1", made.Run}},
		{[]string{"--name", "other"}, []string{"cli-run-1", made.Run}},
		{[]string{"--name", "desk"}, []string{"cli-run-1", "cli-run", made.Run[:8]}},
	} {
		cs := serverSession(t, dir, append(append([]string{"--state-dir", state}, grants...), tc.args...)...)
		for _, id := range tc.runs {
			for _, tool := range []string{"run_status", "resume_run"} {
				if got := callText(t, cs, tool, map[string]any{"run": id}); got != noSuchRun(id) {
					t.Errorf("%s of %s by a server of %q: %s", tool, id, tc.args, got)
				}
			}
		}
	}
	// The server that made its run, started again, reads it.
	if got := callText(t, serverSession(t, dir, append([]string{"--state-dir", state, "--name", "desk"}, grants...)...), "run_status", map[string]any{"run": made.Run}); !strings.Contains(got, `"status":"waiting"`) {
		t.Errorf("run_status of the server's own run: %s", got)
	}
	for _, id := range []string{"cli-run-1", made.Run} {
		if r := runObelisk(t, dir, "approve", "--state-dir", state, id, "a"); r.code != exitOK {
			t.Fatalf("obelisk approve %s: %+v", id, r)
		}
		if r := runObelisk(t, dir, "resume", "--state-dir", state, id); r.code != exitOK {
			t.Errorf("obelisk resume %s: %+v", id, r)
		}
	}
}

// TestMCPServerDeepMessage: a message nested 100,000 deep, which the SDK
// cannot read, gets a JSON-RPC error from obelisk mcp-server on stdio,
// and the process goes on answering.
func TestMCPServerDeepMessage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	cmd := obelisk(t, t.TempDir(), "mcp-server", "--state-dir", t.TempDir())
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":` + deep + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	} {
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// JSON-RPC answers need not come in the order of the requests: the
	// refusal of the deep message is written by the screen in front of the
	// SDK, so it may overtake the answer to initialize.
	var got []string
	var initialized, refused, pinged bool
	sc := bufio.NewScanner(out)
	for len(got) < 3 && sc.Scan() {
		line := sc.Text()
		got = append(got, line)
		switch {
		case strings.HasPrefix(line, `{"jsonrpc":"2.0","id":1,"result":`):
			initialized = true
		case strings.HasPrefix(line, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`):
			refused = true
		case line == `{"jsonrpc":"2.0","id":3,"result":{}}`:
			pinged = true
		}
	}
	if !initialized || !refused || !pinged {
		t.Errorf("the server answered:\n%s", strings.Join(got, "\n"))
	}
}
