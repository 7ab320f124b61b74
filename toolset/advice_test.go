package toolset

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestFlagAdvice: each problem a flag solves names that flag, and says how
// the program is started again with it.
func TestFlagAdvice(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Code: CommandsOff, Tool: "sh", File: "t.json"}, "sh runs a program (its command block in t.json); command tools are off: start the worker with --allow-commands to let them run"},
		{Problem{Code: NetworkOff, Tool: "http.get"}, "http.get reaches the network, which is off: start the worker with --allow-net=HOST,"},
		{Problem{Code: EnvUnset, Tool: "api", File: "t.json", Env: []string{"A", "B"}}, "api needs the environment variable A, B (its http block in t.json): set it, or answer the tool in a mocks file"},
		{Problem{Code: FilesOff, Tool: "file.read"}, "give --files DIR"},
		{Problem{Code: Missing, Tool: "x"}, "no implementation for x"},
	} {
		if got := FlagAdvice(tc.p, "start the worker"); !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.p.Code, got, tc.want)
		}
	}
}

// TestFlagError: Open's errors about --mcp and --mcp-parallel name the
// flag; others are no flag's.
func TestFlagError(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MCP: []string{"no spec"}}, "--mcp "},
		{Config{MCPParallel: []string{"calc"}}, "--mcp-parallel \"calc\": give NAME=N"},
		{Config{MCPParallel: []string{"calc=2"}}, ": name one of --mcp"},
	} {
		_, err := Open(context.Background(), tc.cfg, Options{})
		fe := FlagError(err)
		var e *Error
		if fe == nil || !strings.Contains(fe.Error(), tc.want) || !errors.As(fe, &e) {
			t.Errorf("%+v: %v, want an error of the flag saying %q", tc.cfg, fe, tc.want)
		}
	}
	if fe := FlagError(errors.New("other")); fe != nil {
		t.Errorf("another error is a flag's: %v", fe)
	}
}
