package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/runtime/mcp/mcptest"
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
		code, stdout, stderr := cli(t, tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
