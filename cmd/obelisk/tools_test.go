package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func wantOutput(t *testing.T, stdout string, want map[string]any) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

const mcpPlan = `mode lazy

input {
  a: number
  b: number
}

add(a: †input.a, b: †input.b) -> †state.sum
greet(name: "Ada") -> †state.hello
calc.stats(values: [1, 2, 3]) -> †state.stats
other.add(a: 1, b: 2) -> †state.otherSum
charge(amount: †state.sum.sum) -> †state.receipt || †state.declined
  approve "Charge the sum?"

output {
  sum: †state.sum.sum
  hello: †state.hello
  count: †state.stats.count
  other: †state.otherSum.sum
  declined: †state.declined.code
  receipt: †state.receipt
}
`

// TestMCPTools checks and runs a plan against two MCP servers, each the
// test binary started as a child process on stdio: calc's tools by their
// own names, except add, which both servers list and so is called as
// calc.add or other.add.
func TestMCPTools(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	dir := writeFiles(t, map[string]string{"p.plan": strings.Replace(mcpPlan, "add(a: †input.a", "calc.add(a: †input.a", 1)})
	plan := filepath.Join(dir, "p.plan")
	servers := []string{"--mcp", fmt.Sprintf("calc='%s' calc", os.Args[0]), "--mcp", fmt.Sprintf("other='%s' other", os.Args[0])}

	code, stdout, stderr := runCLI(t, append([]string{"check"}, append(servers, plan)...)...)
	if code != exitOK || stdout != "" {
		t.Fatalf("check: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, append([]string{"run", "--yes", "--input", `{"a": 200, "b": 22}`}, append(servers, plan)...)...)
	if code != exitOK {
		t.Fatalf("run: exit %d\nstderr:\n%s", code, stderr)
	}
	wantOutput(t, stdout, map[string]any{"sum": 222.0, "hello": "Hello, Ada!", "count": 3.0, "other": 1003.0, "declined": "card_declined", "receipt": nil})

	// A bare add is ambiguous: the checker says so, with the names to use.
	os.WriteFile(plan, []byte(mcpPlan), 0o644)
	code, _, stderr = runCLI(t, append([]string{"check"}, append(servers, plan)...)...)
	if code != exitInput || !strings.Contains(stderr, "unknown tool add: calc.add and other.add share that name, so call one of them by its full name") {
		t.Errorf("check with an ambiguous add: exit %d, want 1 and a hint at calc.add:\n%s", code, stderr)
	}
}

func TestMCPServerFailures(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	dir := writeFiles(t, map[string]string{"p.plan": "echo(value: 1) -> †state.x\n"})
	plan := filepath.Join(dir, "p.plan")
	for _, tc := range []struct {
		cmd, spec string
		want      []string
	}{
		{"check", "calc", []string{"obelisk check: --mcp \"calc\": give a server as NAME=COMMAND"}},
		{"run", "calc=./no-such-server", []string{"obelisk run: MCP server calc (./no-such-server): cannot start"}},
		{"dry-run", fmt.Sprintf("calc=%s broken", os.Args[0]), []string{"obelisk dry-run: MCP server calc", "cannot start", "(it wrote: calc: cannot read calc.conf: no such file)"}},
		{"compile", fmt.Sprintf("calc=%s calc", os.Args[0]), []string{"two servers are named calc"}},
	} {
		args := []string{tc.cmd, "--mcp", tc.spec, plan}
		if tc.cmd == "compile" {
			args = []string{tc.cmd, "--mcp", tc.spec, "--mcp", tc.spec, plan}
		}
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || stdout != "" {
			t.Errorf("%s --mcp %s: exit %d, stdout %q; want 2 and nothing on stdout", tc.cmd, tc.spec, code, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s --mcp %s: stderr does not say %q:\n%s", tc.cmd, tc.spec, w, stderr)
			}
		}
	}
}

// TestMCPParallelFlag: --mcp-parallel takes NAME=N for a server --mcp
// names, N at least 1; a plan runs with it as without.
func TestMCPParallelFlag(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	dir := writeFiles(t, map[string]string{"p.plan": "calc.add(a: 1, b: 2) -> †state.x\ncalc.add(a: 3, b: 4) -> †state.y\noutput †state.x.sum + †state.y.sum\n"})
	plan := filepath.Join(dir, "p.plan")
	server := fmt.Sprintf("calc='%s' calc", os.Args[0])
	for _, tc := range []struct{ value, want string }{
		{"calc", `--mcp-parallel "calc": give NAME=N`},
		{"calc=0", `--mcp-parallel "calc=0": give NAME=N, with N a whole number of calls, 1 or more`},
		{"other=1", "--mcp-parallel other: no server is named other: name one of --mcp"},
	} {
		code, _, stderr := runCLI(t, "check", "--mcp", server, "--mcp-parallel", tc.value, plan)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("--mcp-parallel %s: exit %d, want 2 and %q:\n%s", tc.value, code, tc.want, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "run", "--mcp", server, "--mcp-parallel", "calc=1", plan)
	if code != exitOK || strings.TrimSpace(stdout) != "10" {
		t.Errorf("run with --mcp-parallel calc=1: exit %d, output %q\n%s", code, stdout, stderr)
	}
}

// weatherAPI is a loopback HTTP server for the HTTP tools.
type weatherAPI struct {
	mu       sync.Mutex
	notes    []string
	requests int
}

func (w *weatherAPI) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.requests++
	w.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer s3cret" {
		http.Error(rw, `{"error": "who are you?"}`, http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/forecast/Oslo":
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"city": "Oslo", "days": [{"high": 3.5, "rain": true}], "units": %q}`, r.URL.Query().Get("units"))
	case r.Method == "POST" && r.URL.Path == "/notes":
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.notes = append(w.notes, string(b))
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		io.WriteString(rw, `{"id": "N-1"}`)
	default:
		http.Error(rw, "no forecast for "+r.URL.Path, http.StatusNotFound)
	}
}

const weatherTools = `{"tools": [
  {"name": "forecast", "description": "The forecast for a city.",
   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}, "required": ["city"]},
   "outputSchema": {"type": "array", "items": {"type": "object", "properties": {"high": {"type": "number"}, "rain": {"type": "boolean"}}, "required": ["high", "rain"]}},
   "annotations": {"readOnlyHint": true},
   "http": {"url": "${OBELISK_TEST_URL}/forecast/{city}?units={units}", "headers": {"Authorization": "Bearer ${OBELISK_TEST_TOKEN}"}, "result": "/days"}},
  {"name": "notes.add", "description": "Saves a note.",
   "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}, "text": {"type": "string"}}, "required": ["title", "text"]},
   "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
   "annotations": {"idempotentHint": true},
   "http": {"method": "POST", "url": "${OBELISK_TEST_URL}/notes", "headers": {"Authorization": "Bearer ${OBELISK_TEST_TOKEN}"}}}
]}`

const weatherPlan = `import "tools.json"

forecast(city: "Oslo", units: "metric") -> †state.oslo
forecast(city: "Atlantis") -> †state.atlantis || †state.missing
notes.add(title: "Oslo", text: "umbrella") -> †state.note
  when †state.oslo[0].rain

output {
  high: †state.oslo[0].high
  missing: †state.missing.code
  atlantis: †state.atlantis
  note: †state.note.id
}
`

func TestHTTPTools(t *testing.T) {
	api := &weatherAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	t.Setenv("OBELISK_TEST_URL", srv.URL)
	dir := writeFiles(t, map[string]string{"tools.json": weatherTools, "p.plan": weatherPlan})
	plan, tools := filepath.Join(dir, "p.plan"), filepath.Join(dir, "tools.json")

	code, stdout, stderr := runCLI(t, "check", plan)
	if code != exitOK || stdout != "" {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	// Each run below stops before any call, and says why.
	allowEnv := "--allow-env=OBELISK_TEST_URL,OBELISK_TEST_TOKEN"
	host := srv.Listener.Addr().String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "obelisk run: forecast reads the environment (its http block in " + tools + "): --allow-env does not grant OBELISK_TEST_TOKEN, OBELISK_TEST_URL: run again with --allow-env=OBELISK_TEST_TOKEN,OBELISK_TEST_URL"},
		{[]string{"--allow-env=OBELISK_TEST_URL"}, "obelisk run: notes.add reads the environment (its http block in " + tools + "): --allow-env does not grant OBELISK_TEST_TOKEN: run again with --allow-env=OBELISK_TEST_TOKEN"},
		{[]string{"--allow-env", "--deny-env=OBELISK_TEST_TOKEN"}, "obelisk run: forecast reads the environment (its http block in " + tools + "): --deny-env denies OBELISK_TEST_TOKEN"},
		// The token is not set.
		{[]string{allowEnv}, "obelisk run: forecast needs the environment variable OBELISK_TEST_TOKEN (its http block in " + tools + ")"},
	} {
		code, _, stderr = runCLI(t, append(append([]string{"run", "--tools", tools}, tc.args...), plan)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Fatalf("run %s: exit %d\n%s", tc.args, code, stderr)
		}
	}
	t.Setenv("OBELISK_TEST_TOKEN", "s3cret")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{allowEnv}, "obelisk run: forecast (its http block in " + tools + "): " + host + ": the network is off: run again with --allow-net=" + host + " to reach it"},
		{[]string{allowEnv, "--allow-net=api.example.com"}, "obelisk run: forecast (its http block in " + tools + "): " + host + " is not in --allow-net: run again with --allow-net=" + host},
		{[]string{allowEnv, "--allow-net"}, "obelisk run: forecast (its http block in " + tools + "): " + host + " is a loopback address, reached only when named: run again with --allow-net=" + host},
		{[]string{allowEnv, "--allow-net=127.0.0.1", "--deny-net=" + host}, "is denied by --deny-net (" + host + ")"},
	} {
		code, _, stderr = runCLI(t, append(append([]string{"run", "--tools", tools}, tc.args...), plan)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Fatalf("run %s: exit %d\n%s", tc.args, code, stderr)
		}
	}
	api.mu.Lock()
	sent := api.requests
	api.mu.Unlock()
	if sent != 0 {
		t.Fatalf("the API got %d requests", sent)
	}
	code, stdout, stderr = runCLI(t, "run", "--tools", tools, allowEnv, "--allow-net="+host, plan)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	wantOutput(t, stdout, map[string]any{"high": 3.5, "missing": "http-404", "atlantis": nil, "note": "N-1"})
	if diff := cmp.Diff([]string{`{"text":"umbrella","title":"Oslo"}`}, api.notes); diff != "" {
		t.Errorf("notes posted (-want +got):\n%s", diff)
	}
	if strings.Contains(stderr, "s3cret") {
		t.Errorf("the log shows the token:\n%s", stderr)
	}

	// The same tools given with --tools, to a plan that declares them
	// without signatures and arrives on a stream (eager mode).
	eager := strings.Replace(weatherPlan, `import "tools.json"`, "tool forecast\ntool notes.add", 1)
	os.WriteFile(plan, []byte(eager), 0o644)
	code, stdout, stderr = runCLI(t, "run", "--mode", "eager", "--tools", filepath.Join(dir, "tools.json"), allowEnv, "--allow-net="+host, plan)
	if code != exitOK {
		t.Fatalf("eager run: exit %d\n%s", code, stderr)
	}
	wantOutput(t, stdout, map[string]any{"high": 3.5, "missing": "http-404", "atlantis": nil, "note": "N-1"})
}

// TestBadBindings: a wrong http or command block in a tools file given
// with --tools is a diagnostic at the block.
func TestBadBindings(t *testing.T) {
	tools := `{"tools": [
  {"name": "forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
   "http": {"url": "http://127.0.0.1/f/{cty}"}}
]}`
	dir := writeFiles(t, map[string]string{"tools.json": tools, "p.plan": "forecast(city: \"x\") -> †state.f\n"})
	code, _, stderr := runCLI(t, "check", "--tools", filepath.Join(dir, "tools.json"), filepath.Join(dir, "p.plan"))
	want := "tools.json:3:12: error: the http block of forecast: url: {cty} is not a parameter of forecast (its parameters: city) [import-error]"
	if code != exitInput || !strings.Contains(stderr, want) {
		t.Errorf("check: exit %d; want 1 and %q in:\n%s", code, want, stderr)
	}
}

// TestCommandTools: a command tool runs only with --allow-commands;
// without it the run stops before anything runs, unless the mocks answer
// the tool.
func TestCommandTools(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	t.Setenv(envCommandTool, log)
	argv, _ := json.Marshal([]string{os.Args[0]})
	tools := `[{"name": "score", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "outputSchema": {"type": "object", "properties": {"score": {"type": "integer"}}}, "annotations": {"readOnlyHint": true},
  "command": {"argv": ` + string(argv) + `}}]`
	os.WriteFile(filepath.Join(dir, "tools.json"), []byte(tools), 0o644)
	plan := filepath.Join(dir, "p.plan")
	os.WriteFile(plan, []byte("echo(value: \"first\") -> †state.e\nscore(text: \"hello\") -> †state.s\noutput †state.s.score\n"), 0o644)
	toolsFile := filepath.Join(dir, "tools.json")

	code, _, stderr := runCLI(t, "run", "--tools", toolsFile, plan)
	if code != exitUsage || !strings.Contains(stderr, "obelisk run: score runs a program (its command block in "+toolsFile+"); command tools are off: run again with --allow-commands") {
		t.Fatalf("run without --allow-commands: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(log); err == nil || strings.Contains(stderr, "completed") {
		t.Fatalf("the program ran, or the run started:\n%s", stderr)
	}
	code, stdout, stderr := runCLI(t, "run", "--tools", toolsFile, "--allow-commands", plan)
	if code != exitOK || strings.TrimSpace(stdout) != "5" {
		t.Fatalf("run --allow-commands: exit %d, output %s\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(log); string(b) != `{"text":"hello"}`+"\n" {
		t.Errorf("the program got %q", b)
	}
	os.WriteFile(filepath.Join(dir, "p.mocks.json"), []byte(`{"score": {"result": {"score": 42}}}`), 0o644)
	code, stdout, stderr = runCLI(t, "run", "--tools", toolsFile, plan)
	if code != exitOK || strings.TrimSpace(stdout) != "42" {
		t.Fatalf("run with the tool mocked: exit %d, output %s\n%s", code, stdout, stderr)
	}
}
