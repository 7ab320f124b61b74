package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main() // the test binary is the server when a test starts it as one
	os.Exit(m.Run())
}

// connect connects to an mcptest server over the in-memory transport.
func connect(t *testing.T, name string) (*Server, *sdk.ServerSession) {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcptest.NewServer(name).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, name, ct, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, ss
}

func TestTools(t *testing.T) {
	s, _ := connect(t, "calc")
	var names []string
	byName := map[string]toolkit.Definition{}
	for _, d := range s.Tools() {
		names = append(names, d.Name)
		byName[d.Name] = d
	}
	if diff := cmp.Diff([]string{"add", "bad name/tool", "charge", "crash", "explode", "greet", "hang", "stats"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	yes, no := true, false
	for name, want := range map[string]toolkit.Annotations{
		"add":     {ReadOnly: true},
		"greet":   {Idempotent: true, Destructive: &no},
		"charge":  {Destructive: &yes},
		"explode": {},
	} {
		if diff := cmp.Diff(want, byName[name].Annotations); diff != "" {
			t.Errorf("annotations of %s (-want +got):\n%s", name, diff)
		}
	}
	var in, out map[string]any
	if err := json.Unmarshal(byName["add"].InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(byName["add"].OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if in["properties"].(map[string]any)["a"] == nil || out["properties"].(map[string]any)["sum"] == nil {
		t.Errorf("schemas of add: input %v, output %v", in, out)
	}
	if byName["greet"].OutputSchema != nil || byName["add"].Description != "Adds two numbers." {
		t.Errorf("greet has an output schema %s, or add's description is %q", byName["greet"].OutputSchema, byName["add"].Description)
	}
}

func TestCall(t *testing.T) {
	s, _ := connect(t, "calc")
	for _, tc := range []struct {
		tool      string
		args      map[string]any
		want      any
		code      string
		message   string
		retryable bool
	}{
		{tool: "add", args: map[string]any{"a": int64(2), "b": 3.5}, want: map[string]any{"sum": 5.5}},
		{tool: "add", args: map[string]any{"a": int64(2), "b": int64(3)}, want: map[string]any{"sum": int64(5)}},
		{tool: "greet", args: map[string]any{"name": "Ada"}, want: "Hello, Ada!"},
		{tool: "stats", args: map[string]any{"values": []any{int64(1), int64(2), int64(3)}}, want: map[string]any{"count": int64(3)}},
		{tool: "charge", args: map[string]any{"amount": int64(50)}, want: map[string]any{"receipt": "R-50"}},
		{tool: "charge", args: map[string]any{"amount": int64(500)}, code: "card_declined", message: "Your card was declined."},
		{tool: "explode", args: map[string]any{}, code: toolkit.CodeToolError, message: "the calculator caught fire", retryable: true},
		{tool: "add", args: map[string]any{"a": "two"}, code: toolkit.CodeToolError, message: "validating", retryable: true},
		{tool: "nope", args: map[string]any{}, code: toolkit.CodeInvalidArguments, message: "calc.nope: unknown tool"},
	} {
		got, err := s.Call(context.Background(), tc.tool, tc.args)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s(%v): %v", tc.tool, tc.args, err)
			} else if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s(%v) (-want +got):\n%s", tc.tool, tc.args, diff)
			}
			continue
		}
		var re *toolkit.Error
		if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(re.Message, tc.message) || re.NotRetryable == tc.retryable {
			t.Errorf("%s(%v): got %v, %#v; want code %s, message with %q, retryable %v", tc.tool, tc.args, got, err, tc.code, tc.message, tc.retryable)
		}
	}
}

// TestCallCanceled: a canceled call returns the context's error, for the
// interpreter to report as its step's timeout or cancellation.
func TestCallCanceled(t *testing.T) {
	s, _ := connect(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Call(ctx, "hang", map[string]any{})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// The session is still usable.
	if got, err := s.Call(context.Background(), "greet", map[string]any{"name": "Bo"}); err != nil || got != "Hello, Bo!" {
		t.Fatalf("after a canceled call: %v, %v", got, err)
	}
}

func TestServerGone(t *testing.T) {
	s, ss := connect(t, "calc")
	ss.Close()
	_, err := s.Call(context.Background(), "greet", map[string]any{"name": "Bo"})
	var re *toolkit.Error
	if !errors.As(err, &re) || re.Code != toolkit.CodeToolError || !re.NotRetryable || !strings.Contains(re.Message, "MCP server calc has stopped") {
		t.Fatalf("got %#v; want a tool-error that is not retried", err)
	}
}

func TestBind(t *testing.T) {
	calc, _ := connect(t, "calc")
	other, _ := connect(t, "other")
	var got []string
	for _, b := range Bind([]*Server{calc, other}, func(name string) bool { return name == "greet" }) {
		got = append(got, b.Definition.Name+" -> "+b.Server.Name()+" "+b.Tool)
	}
	want := []string{
		"bad name/tool -> calc bad name/tool",
		"calc.add -> calc add",
		"calc.bad name/tool -> calc bad name/tool",
		"calc.charge -> calc charge",
		"calc.crash -> calc crash",
		"calc.explode -> calc explode",
		"calc.greet -> calc greet",
		"calc.hang -> calc hang",
		"calc.stats -> calc stats",
		"charge -> calc charge",
		"crash -> calc crash",
		"echo -> other echo",
		"explode -> calc explode",
		"hang -> calc hang",
		"other.add -> other add",
		"other.echo -> other echo",
		"stats -> calc stats",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
	b := Bind([]*Server{other}, nil)[0] // add, as other lists it
	if v, err := b.Call(context.Background(), map[string]any{"a": int64(1), "b": int64(2)}); err != nil || !cmp.Equal(v, map[string]any{"sum": int64(1003)}) {
		t.Errorf("%s: got %v, %v", b.Definition.Name, v, err)
	}
}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		spec, name string
		argv       []string
		err        string
	}{
		{spec: "fs=npx -y @modelcontextprotocol/server-filesystem /tmp", name: "fs", argv: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"}},
		{spec: `db=./db-server --dsn "host=x user=y" 'a b'`, name: "db", argv: []string{"./db-server", "--dsn", "host=x user=y", "a b"}},
		{spec: `x_1=srv ""`, name: "x_1", argv: []string{"srv", ""}},
		{spec: "srv --flag", err: "give a server as NAME=COMMAND"},
		{spec: "my.srv=x", err: "give a server as NAME=COMMAND"},
		{spec: "a=  ", err: "no command after a="},
		{spec: `a=x "y`, err: `unclosed "`},
	} {
		name, argv, err := ParseSpec(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want an error with %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name || !cmp.Equal(argv, tc.argv) {
			t.Errorf("%q: got %q %q %v", tc.spec, name, argv, err)
		}
	}
}

// TestStdio starts the test binary as a server, a real child process on
// stdio, calls it and stops it.
func TestStdio(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	s, err := Start(context.Background(), "calc", []string{os.Args[0], "calc"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tools()) != 8 {
		t.Errorf("listed %d tools, want 8", len(s.Tools()))
	}
	got, err := s.Call(context.Background(), "add", map[string]any{"a": int64(20), "b": int64(22)})
	if err != nil || !cmp.Equal(got, map[string]any{"sum": int64(42)}) {
		t.Errorf("add: %v, %v", got, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestStdioCrash: a server that exits in the middle of a run fails the
// call, and later calls, with what it wrote on standard error; retrying
// cannot help.
func TestStdioCrash(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	s, err := Start(context.Background(), "calc", []string{os.Args[0], "calc"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err = s.Call(context.Background(), "crash", map[string]any{})
		var re *toolkit.Error
		if !errors.As(err, &re) || re.Code != toolkit.CodeToolError || !re.NotRetryable || !strings.Contains(re.Message, "has stopped (it wrote: calc: out of memory)") {
			t.Errorf("got %#v; want a tool-error that is not retried, with the server's last words", err)
		}
	}
	s.Close() // its exit status is reported, or not; the process is gone either way
}

func TestStartFailures(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	for _, tc := range []struct {
		argv []string
		want []string
	}{
		{[]string{"./no-such-server", "--x"}, []string{"MCP server calc (./no-such-server --x): cannot start:", "no such file"}},
		{[]string{os.Args[0], "mute"}, []string{"MCP server calc (" + os.Args[0] + " mute): cannot start: no answer in time"}},
		{[]string{os.Args[0], "broken"}, []string{"MCP server calc (" + os.Args[0] + " broken): cannot start:", "(it wrote: calc: cannot read calc.conf: no such file)"}},
	} {
		s, err := Start(context.Background(), "calc", tc.argv, Options{StartTimeout: 200 * time.Millisecond})
		if err == nil {
			s.Close()
			t.Errorf("%q started", tc.argv)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not say %q", tc.argv, err, w)
			}
		}
	}
}

// BenchmarkCall measures one tools/call round trip: over the in-memory
// transport, and over stdio to a child process.
func BenchmarkCall(b *testing.B) {
	args := map[string]any{"a": int64(2), "b": int64(3)}
	b.Run("in-memory", func(b *testing.B) {
		st, ct := sdk.NewInMemoryTransports()
		if _, err := mcptest.NewServer("calc").Connect(context.Background(), st, nil); err != nil {
			b.Fatal(err)
		}
		s, err := Connect(context.Background(), "calc", ct, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if _, err := s.Call(context.Background(), "add", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdio", func(b *testing.B) {
		b.Setenv(mcptest.EnvServer, "1")
		s, err := Start(context.Background(), "calc", []string{os.Args[0], "calc"}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if _, err := s.Call(context.Background(), "add", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
