package obtemporal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// newServer starts an in-process Temporal server (SQLite, loopback) for
// the test, and returns a client of it.
func newServer(t testing.TB) (*temporaltest.TestServer, client.Client) {
	t.Helper()
	tt, ok := t.(*testing.T)
	var opts []temporaltest.TestServerOption
	if ok {
		opts = append(opts, temporaltest.WithT(tt))
	}
	ts := temporaltest.NewServer(opts...)
	if !ok {
		t.Cleanup(ts.Stop)
	}
	return ts, ts.GetDefaultClient()
}

// builtins returns the built-in tools (no files, no network) and their
// signatures.
func builtins(t testing.TB) (*toolkit.Registry, []*lang.ToolDecl) {
	t.Helper()
	reg := toolkit.NewRegistry()
	if err := stdlib.Register(reg, stdlib.Options{}); err != nil {
		t.Fatal(err)
	}
	decls, diags := lang.ParseTools("<built-in tools>", reg.ToolsJSON())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return reg, decls
}

// startWorker starts a worker of a task queue, stopped when the test
// ends.
func startWorker(t testing.TB, c client.Client, queue string, cfg obtemporal.Config) {
	t.Helper()
	w, err := obtemporal.NewWorker(c, queue, cfg, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// testCtx is a context bounded by the test's deadline, if it has one,
// else by a generous bound, so that a run that hangs fails the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	if tt, ok := t.(*testing.T); ok {
		if d, ok := tt.Deadline(); ok {
			ctx, cancel = context.WithDeadline(context.Background(), d.Add(-5*time.Second))
		}
	}
	t.Cleanup(cancel)
	return ctx
}

// compileLocal compiles a plan against the given signatures, as a local
// run would.
func compileLocal(t testing.TB, name, text string, decls []*lang.ToolDecl) *compiler.Program {
	t.Helper()
	f, diags := lang.Parse(name, []byte(text))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, cd := compiler.Check(f, compiler.Config{Tools: decls})
	if cd.HasErrors() {
		t.Fatal(cd)
	}
	prog, err := compiler.Compile(info, cd, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// readExample reads an example plan and its input, if it has one.
func readExample(t testing.TB, name string) (text string, input json.RawMessage) {
	t.Helper()
	base := filepath.Join("..", "..", "examples", name)
	b, err := os.ReadFile(base + ".plan")
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(base + ".input.json")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b), in
}

// canonical re-encodes JSON, so that two encodings of one value compare
// equal.
func canonical(t testing.TB, b []byte) string {
	t.Helper()
	v, err := toolkit.DecodeJSON(b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// checkConfig is the checker's configuration with the given signatures.
func checkConfig(decls []*lang.ToolDecl) compiler.Config {
	return compiler.Config{Tools: decls}
}
