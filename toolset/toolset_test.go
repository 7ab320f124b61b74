package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main() // the test binary is the MCP server when a test starts it as one
	os.Exit(m.Run())
}

// tools is a tools file with an HTTP tool, a command tool and a tool with
// no binding.
const tools = `{"tools": [
 {"name": "weather", "description": "The weather.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
  "annotations": {"readOnlyHint": true},
  "http": {"method": "GET", "url": "https://weather.example/{city}"}},
 {"name": "score", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
  "annotations": {"readOnlyHint": true},
  "command": {"argv": ["true"]}},
 {"name": "lookup", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}, "annotations": {"readOnlyHint": true}}
]}`

const mocks = `{"lookup": {"result": {"value": 42}}}`

// config writes a tools file and a mocks file and returns the
// configuration that names them.
func config(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	toolsFile, mocksFile := filepath.Join(dir, "tools.json"), filepath.Join(dir, "mocks.json")
	if err := os.WriteFile(toolsFile, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mocksFile, []byte(mocks), 0o644); err != nil {
		t.Fatal(err)
	}
	return Config{Tools: []planfile.File{{Name: toolsFile}}, MocksFile: mocksFile}
}

func open(t *testing.T, cfg Config) *Set {
	t.Helper()
	s, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func names(decls []*lang.ToolDecl) []string {
	var out []string
	for _, d := range decls {
		out = append(out, d.Name.Name)
	}
	return out
}

// compile checks and compiles a plan against the set's signatures.
func compile(t *testing.T, s *Set, text string) *compiler.Program {
	t.Helper()
	f, diags := lang.Parse("p.plan", []byte(text))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, diags := compiler.Check(f, compiler.Config{Tools: s.Decls()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestOpen(t *testing.T) {
	s := open(t, config(t))
	if got := names(s.fileDecls); !slices.Equal(got, []string{"weather", "score", "lookup"}) {
		t.Errorf("the tools file's signatures: %v", got)
	}
	builtins := names(s.Builtins())
	for _, want := range []string{"echo", "file.read", "file.write", "http.get", "json.select"} {
		if !slices.Contains(builtins, want) {
			t.Errorf("the built-in signatures lack %s: %v", want, builtins)
		}
	}
	decls := names(s.Decls())
	if len(decls) != 3+len(builtins) || decls[0] != "weather" || decls[3] != builtins[0] {
		t.Errorf("the signatures: %v", decls)
	}
	files := s.Files()
	if len(files) != 2 || files[0].Text != tools || files[1].Name != BuiltinsName {
		t.Errorf("the files a source records: %v", files)
	}
	if len(s.Diagnostics()) != 0 || len(s.BindDiagnostics()) != 0 {
		t.Errorf("diagnostics: %v %v", s.Diagnostics(), s.BindDiagnostics())
	}
	// The file tools run only with a files root.
	if s.Has("file.read") || !s.Has("echo") || !s.Has("weather") || !s.Has("score") || !s.Has("lookup") {
		t.Errorf("has: file.read %v, echo %v, weather %v, score %v, lookup %v", s.Has("file.read"), s.Has("echo"), s.Has("weather"), s.Has("score"), s.Has("lookup"))
	}
	caller, err := s.Caller()
	if err != nil {
		t.Fatal(err)
	}
	got, err := caller.Call(context.Background(), "lookup", map[string]any{"key": "k"})
	if b, _ := json.Marshal(got); err != nil || string(b) != `{"value":42}` {
		t.Errorf("the mocked tool: %s, %v", b, err)
	}
	got, err = caller.Call(context.Background(), "echo", map[string]any{"value": "hi"})
	if err != nil || got != "hi" {
		t.Errorf("echo: %v, %v", got, err)
	}
	// A command tool fails, with the message the options give, while
	// command tools are off.
	s2, err := Open(context.Background(), config(t), Options{Explain: func(p Problem) string { return "off: " + string(p.Code) + " " + p.Tool }})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	caller, _ = s2.Caller()
	if _, err := caller.Call(context.Background(), "score", map[string]any{}); err == nil || err.Error() != "off: commands-off score" {
		t.Errorf("a command tool while commands are off: %v", err)
	}
}

func TestPreflight(t *testing.T) {
	s := open(t, config(t))
	prog := compile(t, s, `score(text: "a") -> †state.a
http.get(url: "https://example.com") -> †state.b
weather(city: "Paris") -> †state.c
lookup(key: "k") -> †state.d
file.read(path: "x") -> †state.e
output †state.a
`)
	var got []string
	for _, p := range s.Preflight(prog) {
		got = append(got, string(p.Code)+" "+p.Tool)
		if p.Error() == "" || p.Err == nil && strings.Contains(p.Error(), "--") { // a cause is the grants' own text
			t.Errorf("%s: the library's text names a flag, or nothing: %q", p.Code, p.Error())
		}
	}
	want := []string{"files-off file.read", "commands-off score", "network-off http.get", "host-denied weather"}
	if !slices.Equal(got, want) {
		t.Errorf("preflight:\n got %q\nwant %q", got, want)
	}
	// Commands allowed and a host granted: only the file tool is left.
	cfg := config(t)
	cfg.AllowCommands, cfg.Grants = true, []string{"--allow-net"}
	s = open(t, cfg)
	got = nil
	for _, p := range s.Preflight(compile(t, s, "score(text: \"a\") -> †state.a\nhttp.get(url: \"https://example.com\") -> †state.b\nweather(city: \"Paris\") -> †state.c\noutput †state.a\n")) {
		got = append(got, string(p.Code)+" "+p.Tool)
	}
	if len(got) != 0 {
		t.Errorf("preflight with the grants: %q", got)
	}
}

// TestConfigRoundTrip: a configuration, as JSON and back, opens the same
// tools; its record leaves out the tools files and the grants.
func TestConfigRoundTrip(t *testing.T) {
	cfg := config(t)
	cfg.Grants = []string{"--allow-net=example.com"}
	s := open(t, cfg)
	b, err := json.Marshal(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// The texts travel with the record: the files are read no more.
	os.Remove(cfg.Tools[0].Name)
	os.Remove(cfg.MocksFile)
	again := open(t, back)
	if a, b := names(s.Decls()), names(again.Decls()); !slices.Equal(a, b) {
		t.Errorf("signatures after the round trip:\n%v\n%v", a, b)
	}
	if again.net.Off() || !again.mocks.Has("lookup") {
		t.Errorf("after the round trip: network off %v, mocks %v", again.net.Off(), again.mocks)
	}
	rec, _ := json.Marshal(s.Config().Record())
	if strings.Contains(string(rec), "tools") || strings.Contains(string(rec), "grants") || !strings.Contains(string(rec), `"mocks":`) {
		t.Errorf("the record: %s", rec)
	}
}

// TestOnce: opening registers the built-in tools once, parses their
// definitions once and reads each tools file once.
func TestOnce(t *testing.T) {
	s := open(t, config(t))
	if s.counts.register != 1 || s.counts.parseBuiltins != 1 {
		t.Errorf("registered the built-in tools %d times, parsed their definitions %d times", s.counts.register, s.counts.parseBuiltins)
	}
	for name, n := range s.counts.reads {
		if n != 1 {
			t.Errorf("read %s %d times", name, n)
		}
	}
	if len(s.counts.reads) != 1 {
		t.Errorf("read %d tools files, want 1", len(s.counts.reads))
	}
	// Signatures, the caller, the preflight and the record read nothing.
	s.Decls()
	s.Caller()
	s.Preflight(compile(t, s, "echo(value: 1) -> †state.a\noutput †state.a\n"))
	s.Config()
	s.CallableBuiltins()
	if s.counts.register != 1 || s.counts.parseBuiltins != 1 || len(s.counts.reads) != 1 {
		t.Errorf("counts after use: %+v", s.counts)
	}
}

func TestMCP(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	s, err := Open(context.Background(), Config{MCP: []string{"calc=" + os.Args[0] + " calc"}, MCPParallel: []string{"calc=2"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tools, ok := s.MCPTools("calc"); !ok || !slices.Contains(tools, "add") || !slices.Contains(tools, "calc.add") {
		t.Errorf("calc's tools: %v %v", tools, ok)
	}
	if got := names(OfferedOnce(s.mcpDecls)); !slices.Contains(got, "add") || slices.Contains(got, "calc.add") || !slices.Contains(got, "charge") {
		t.Errorf("offered: %v", got)
	}
	if f := s.MCPFiles(); len(f) != 1 || !strings.HasPrefix(f[0].Name, "<MCP server calc") {
		t.Errorf("the server's file: %v", f)
	}
	caller, err := s.Caller()
	if err != nil {
		t.Fatal(err)
	}
	got, err := caller.Call(context.Background(), "add", map[string]any{"a": int64(20), "b": int64(22)})
	if b, _ := json.Marshal(got); err != nil || string(b) != `{"sum":42}` {
		t.Fatalf("add: %s %v", b, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := caller.Call(context.Background(), "add", map[string]any{"a": int64(1), "b": int64(2)}); err == nil {
		t.Error("a call after Close reached the server")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		code Code
	}{
		{Config{MCP: []string{"no spec"}}, CodeMCPSpec},
		{Config{MCPParallel: []string{"calc"}}, CodeMCPParallel},
		{Config{MCPParallel: []string{"calc=2"}}, CodeMCPUnknown},
		{Config{Tools: []planfile.File{{Name: filepath.Join(t.TempDir(), "none.json")}}}, CodeToolsFile},
		{Config{Grants: []string{"--allow-net=a b"}}, CodeGrants},
	} {
		_, err := Open(context.Background(), tc.cfg, Options{})
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%+v: %v, want code %s", tc.cfg, err, tc.code)
		}
	}
	// Mocks that do not read keep the tools from being called, not their
	// signatures from being known.
	s := open(t, Config{Mocks: "{", MocksFile: "m.json"})
	var e *Error
	if _, err := s.Caller(); !errors.As(err, &e) || e.Code != CodeMocks || !strings.HasPrefix(err.Error(), "m.json: ") {
		t.Errorf("bad mocks: %v", err)
	}
	if len(s.Decls()) == 0 {
		t.Error("no signatures beside bad mocks")
	}
}

// TestFlags: the flags make the configuration they name, the files root
// absolute and the grants as arguments.
func TestFlags(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.Register(fs)
	err := fs.Parse([]string{"--tools", "a.json", "--tools", "b.json", "--mcp", "calc=calc serve", "--mcp-parallel", "calc=2",
		"--files", "data", "--allow-commands", "--allow-net=example.com", "--allow-env=TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	want := Config{Tools: []planfile.File{{Name: "a.json"}, {Name: "b.json"}}, MCP: []string{"calc=calc serve"}, MCPParallel: []string{"calc=2"},
		Files: filepath.Join(wd, "data"), AllowCommands: true, Grants: []string{"--allow-net=example.com", "--allow-env=TOKEN"}}
	a, _ := json.Marshal(cfg)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("config:\n got %s\nwant %s", a, b)
	}
}
