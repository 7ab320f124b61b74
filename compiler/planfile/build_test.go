package planfile

import (
	"slices"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// TestIsJSON: a name ending in .json or .plan says which parser reads a
// plan; any other leaves it to the text's first character.
func TestIsJSON(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"p.json", "f(x: 1)", true},
		{"P.JSON", "", true},
		{"p.plan", `[{"_tool": "f"}]`, false},
		{"", `[{"_tool": "f"}]`, true},
		{"<stdin>", "\ufeff \n\t{\"calls\": []}", true},
		{"", `{"not": "a plan"}`, true}, // the JSON parser says what it lacks
		{"", "f(x: 1) -> †state.y", false},
		{"p.txt", "", false},
	} {
		if got := IsJSON(c.name, []byte(c.text)); got != c.want {
			t.Errorf("IsJSON(%q, %q) = %v, want %v", c.name, c.text, got, c.want)
		}
	}
}

const buildTools = `{"tools": [{"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, "outputSchema": {"type": "integer"}, "annotations": {"readOnlyHint": true}}]}`

// buildConfig is a checker's configuration as a server makes its own:
// its tools, and imports served from memory.
func buildConfig(t *testing.T, imports map[string]string) compiler.Config {
	t.Helper()
	decls, diags := lang.ParseTools("tools.json", []byte(buildTools))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return compiler.Config{Tools: decls, Imports: memFS(imports)}
}

// TestLoad: Source.Load takes a plan in text or in JSON from its text to
// its program, checked with the caller's configuration and compiled with
// the source's MaxParallel.
func TestLoad(t *testing.T) {
	for _, src := range []*Source{
		{Name: "p.plan", Text: "f(x: 1) -> †state.y\nf(x: †state.y) -> †state.z\n", MaxParallel: 3},
		{Name: "p.json", JSON: true, Text: `[{"_tool": "f", "x": 1, "_outputPath": "†state.y"}, {"_tool": "f", "x": "†state.y", "_outputPath": "†state.z"}]`, MaxParallel: 3},
	} {
		c, err := src.Load(buildConfig(t, nil))
		if err != nil {
			t.Fatalf("%s: %v\n%s", src.Name, err, c.Diagnostics)
		}
		if c.File == nil || c.Info == nil || c.Program == nil || c.Diagnostics.HasErrors() {
			t.Fatalf("%s: %+v", src.Name, c)
		}
		if got := len(c.Program.Steps); got != 2 {
			t.Errorf("%s: %d steps, want 2", src.Name, got)
		}
		if got := toolNames(c.Program); !slices.Equal(got, []string{"f"}) {
			t.Errorf("%s: calls %v", src.Name, got)
		}
	}
}

// TestLoadImport: a plan's imports are read through the caller's
// configuration, and the check records them for the source to keep.
func TestLoadImport(t *testing.T) {
	src := &Source{Name: "p.plan", Text: "import \"more.json\"\nf(x: 1) -> †state.y\ng(x: †state.y) -> †state.z\n"}
	more := strings.ReplaceAll(buildTools, `"name": "f"`, `"name": "g"`)
	c, err := src.Load(buildConfig(t, map[string]string{"more.json": more}))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Diagnostics)
	}
	if got := Imports(c.Info); len(got) != 1 || got[0].Name != "more.json" || got[0].Text != more {
		t.Errorf("imports %+v", got)
	}
	if got := toolNames(c.Program); !slices.Equal(got, []string{"f", "g"}) {
		t.Errorf("calls %v", got)
	}
	// Without the file, the import is the checker's error.
	c, err = src.Load(buildConfig(t, nil))
	if err == nil || c.Program != nil || !c.Diagnostics.HasErrors() || c.Info == nil {
		t.Errorf("a missing import: %v %+v", err, c)
	}
}

// TestLoadErrors: a parse error stops before the checker, whose findings
// would follow from it; a check error stops before the compiler; a limit
// the caller's configuration sets is the checker's.
func TestLoadErrors(t *testing.T) {
	cfg := buildConfig(t, nil)
	c, err := (&Source{Name: "p.plan", Text: "f(x: 1 -> †state.y\n"}).Load(cfg)
	if err == nil || !strings.Contains(err.Error(), "p.plan does not parse") || c.Info != nil || !c.Diagnostics.HasErrors() {
		t.Errorf("a parse error: %v %+v", err, c)
	}
	c, err = (&Source{Name: "p.json", JSON: true, Text: `{"not": "a plan"}`}).Load(cfg)
	if err == nil || c.Info != nil || !strings.Contains(c.Diagnostics.Error(), "not a plan") {
		t.Errorf("JSON that is no plan: %v %+v", err, c)
	}
	c, err = (&Source{Name: "p.plan", Text: "nope(x: 1) -> †state.y\n"}).Load(cfg)
	if err == nil || !strings.Contains(err.Error(), "p.plan does not check") || c.Info == nil || c.Program != nil || !c.Diagnostics.HasErrors() {
		t.Errorf("a check error: %v %+v", err, c)
	}
	// Diagnostics given to Build, a tools file's, stop it as a parse
	// error does.
	f, _ := lang.Parse("p.plan", []byte("f(x: 1) -> †state.y\n"))
	_, td := lang.ParseTools("bad.json", []byte(`{"tools": [`))
	c, err = Build(f, td, cfg, compiler.Options{})
	if err == nil || c.Info != nil || !slices.Equal(c.Diagnostics, td) {
		t.Errorf("a tools file's error: %v %+v", err, c)
	}
	limited := cfg
	limited.Limits.MaxSteps = 1
	c, err = (&Source{Name: "p.plan", Text: "f(x: 1) -> †state.y\nf(x: 2) -> †state.z\n"}).Load(limited)
	if err == nil || c.Program != nil || !strings.Contains(c.Diagnostics.Error(), "more than the limit of 1") {
		t.Errorf("over the caller's limit of steps: %v %+v", err, c)
	}
}

// TestLoadSubPlan: a plan's sub-plans are compiled with it, and walked by
// compiler.(*Program).Programs.
func TestLoadSubPlan(t *testing.T) {
	src := &Source{Name: "p.plan", Text: `plan twice(x: int) -> int {
  a: f(x: †input.x) -> †state.a
  b: f(x: †state.a) -> †state.b
  output †state.b
}

twice(x: 1) -> †state.y
`}
	c, err := src.Load(buildConfig(t, nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Diagnostics)
	}
	var names []string
	steps := 0
	for name, p := range c.Program.Programs() {
		names = append(names, name)
		steps += len(p.Steps)
	}
	if !slices.Equal(names, []string{"", "twice"}) || steps != 3 {
		t.Errorf("programs %v with %d steps, want the plan and twice with 3", names, steps)
	}
	if got := Signatures(c.Program); len(got) != 1 || got[0].Name != "f" {
		t.Errorf("signatures %v: a sub-plan has none", got)
	}
}

func toolNames(prog *compiler.Program) []string {
	var out []string
	for _, t := range prog.CalledTools() {
		out = append(out, t.Name)
	}
	return out
}

// TestWithText: an edited plan is checked with what its source's plan was
// checked with, in plan text whatever the form of the plan it replaces.
func TestWithText(t *testing.T) {
	src := &Source{Name: "p.json", JSON: true, Text: `[{"_tool": "f", "x": 1}]`, Strict: true,
		Tools: []File{{Name: "tools.json", Text: buildTools}}}
	ed := src.WithText("edited.plan", "f(x: 2) -> †state.y\n")
	if ed.JSON || ed.Name != "edited.plan" || !ed.Strict || len(ed.Tools) != 1 || src.Text == ed.Text {
		t.Fatalf("edited source %+v", ed)
	}
	if _, diags, err := ed.Compile(); err != nil {
		t.Errorf("%v\n%s", err, diags)
	}
	if _, diags, err := src.WithText("edited.plan", "g(x: 2) -> †state.y\n").Compile(); err == nil || !diags.HasErrors() {
		t.Error("an edited plan calling a tool its source does not know checked")
	}
}
