package compiler

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/spec"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// diagText renders diagnostics one per line, with related locations and
// fixes indented below, without file names.
func diagText(diags lang.Diagnostics) []byte {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%s: %s: %s [%s]\n", d.Span.Start, d.Severity, d.Message, d.Code)
		for _, r := range d.Related {
			fmt.Fprintf(&b, "    %s: %s\n", r.Span.Start, r.Message)
		}
		if d.Fix != nil {
			fmt.Fprintf(&b, "    fix: %s\n", d.Fix.Message)
		}
	}
	return []byte(b.String())
}

// checkSource parses and checks a plan held in memory.
func checkSource(name string, text []byte, cfg Config) (*Info, lang.Diagnostics) {
	var f *lang.File
	var diags lang.Diagnostics
	if strings.HasSuffix(name, ".json") {
		f, diags = lang.ParseJSON(name, text)
	} else {
		f, diags = lang.Parse(name, text)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	info, cd := Check(f, cfg)
	diags = append(diags, cd...)
	diags.Sort()
	return info, diags
}

// TestConformanceCheck runs the checker over every conformance case and
// compares its diagnostics with the case's "check" section (required for
// the cases under check/).
func TestConformanceCheck(t *testing.T) {
	for _, c := range spec.Cases(t, "../spec/conformance") {
		t.Run(c.Name, func(t *testing.T) {
			name, text, ok := c.Input()
			if !ok {
				t.Skip("no input")
			}
			_, diags := checkSource(name, text, caseConfig(t, c))
			owned := strings.HasPrefix(c.Name, "check/")
			if !owned {
				if _, has := c.Section("check"); !has {
					return
				}
			}
			c.Golden(t, "check", diagText(diags), *update, owned)
		})
	}
}

// caseConfig is the checker's configuration for a conformance case: the
// operator's tools are its section "operator.json", the operator's hints
// its section "hints.json", what the run has its section "run.json", and
// the plan's directory holds its sections named "dir/NAME".
func caseConfig(t *testing.T, c *spec.Case) Config {
	t.Helper()
	dir := fstest.MapFS{}
	for name, data := range c.Files("dir/") {
		dir[name] = &fstest.MapFile{Data: data}
	}
	cfg := Config{Imports: dir}
	if b, ok := c.Section("operator.json"); ok {
		decls, diags := lang.ParseTools("operator.json", b)
		if diags.HasErrors() {
			t.Fatalf("operator.json: %v", diags)
		}
		cfg.Tools = decls
	}
	if b, ok := c.Section("hints.json"); ok {
		hints, err := ParseHints(b, nil)
		if err != nil {
			t.Fatalf("hints.json: %v", err)
		}
		cfg.Hints = hints
	}
	if b, ok := c.Section("run.json"); ok {
		var run struct {
			Filler    *bool `json:"filler"`
			Evaluator bool  `json:"evaluator"`
		}
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatalf("run.json: %v", err)
		}
		cfg.NoFiller = run.Filler != nil && !*run.Filler
		cfg.HasEvaluator = run.Evaluator
	}
	return cfg
}

// TestExamplesCheckClean checks every example plan: no errors, and no
// warnings either, since the examples are meant to be copied. Some
// examples state criteria in words, which only an evaluator judges: they
// are checked as obelisk agent checks them, with an evaluator.
func TestExamplesCheckClean(t *testing.T) {
	files, _ := filepath.Glob("../examples/*")
	n := 0
	for _, path := range files {
		if !strings.HasSuffix(path, ".plan") && !(strings.HasSuffix(path, ".json") && !strings.Contains(filepath.Base(path), ".input.") && !strings.Contains(filepath.Base(path), ".mocks.") && !strings.Contains(filepath.Base(path), ".tools.") && !strings.Contains(filepath.Base(path), ".fills.") && !strings.Contains(filepath.Base(path), ".verdicts.")) {
			continue
		}
		n++
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, diags := checkSource(path, text, Config{Imports: ImportDir("../examples"), HasEvaluator: true})
		if len(diags) > 0 {
			t.Errorf("%s:\n%s", path, diagText(diags))
		}
	}
	if n < 8 {
		t.Errorf("found %d example plans, want at least 8", n)
	}
}

// exampleOperatorTools are the operator's definitions the codes' examples
// are checked with: http.request as the runtime defines it.
const exampleOperatorTools = `[{"name": "http.request",
  "inputSchema": {"type": "object", "properties": {"method": {"type": "string", "default": "GET"}, "url": {"type": "string"}, "headers": {"type": "object", "additionalProperties": {"type": "string"}}, "body": {}}, "required": ["url"]},
  "annotations": {"destructiveHint": true}}]`

// TestCodeExamples checks that the example of every documented code
// produces that code.
func TestCodeExamples(t *testing.T) {
	for _, doc := range lang.CodeDocs() {
		if doc.Example == "" {
			continue
		}
		t.Run(string(doc.Code), func(t *testing.T) {
			tools, pd := lang.ParseTools("operator.json", []byte(exampleOperatorTools))
			if pd.HasErrors() {
				t.Fatal(pd)
			}
			name := "example.plan"
			if strings.HasPrefix(doc.Example, "[") || strings.HasPrefix(doc.Example, "{") {
				name = "example.json" // the JSON form of a plan
			}
			_, diags := checkSource(name, []byte(doc.Example), Config{Tools: tools})
			for _, d := range diags {
				if d.Code == doc.Code {
					if d.Severity != doc.Severity {
						t.Errorf("%s has severity %s, documented as %s", d.Code, d.Severity, doc.Severity)
					}
					return
				}
			}
			t.Errorf("example of %s does not produce it; got:\n%s", doc.Code, diagText(diags))
		})
	}
}

// TestDeterministic checks the same plan twice and expects the same
// diagnostics, in the same order.
func TestDeterministic(t *testing.T) {
	for _, c := range spec.Cases(t, "../spec/conformance") {
		name, text, ok := c.Input()
		if !ok {
			continue
		}
		_, a := checkSource(name, text, Config{})
		for range 3 {
			_, b := checkSource(name, text, Config{})
			if diff := cmp.Diff(string(diagText(a)), string(diagText(b))); diff != "" {
				t.Fatalf("%s: diagnostics differ between runs:\n%s", c.Name, diff)
			}
		}
	}
}

// TestSlotNamesSorted: the slots of a plan are listed in the order of
// their names as strings, whatever their length, prefixes and bytes.
func TestSlotNamesSorted(t *testing.T) {
	names := []string{"b", "a", "ab", "abcdefgh", "abcdefgh1", "abcdefgh0", "abcdefg", "A", "_x", "é", "a\x00", "a\x00b", "a\x00\x00", "zzzzzzzzzz", "zzzzzzzzz", "s10", "s2", "s1"}
	var src strings.Builder
	src.WriteString("tool f() -> int pure\n")
	for _, n := range names {
		fmt.Fprintf(&src, "f() -> †state[%s]\n", lang.Quote(n))
	}
	info, diags := checkSource("slots.plan", []byte(src.String()), Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if diff := cmp.Diff(want, info.Main.SlotNames); diff != "" {
		t.Errorf("slot names (-sorted +got):\n%s", diff)
	}
}

// TestNonFiniteCEL: a number literal beyond the range of a float64 in a
// CEL expression is an error, not an infinity.
func TestNonFiniteCEL(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"p.plan", "tool f(x: number) -> number pure\nf(x: 1) -> †state.r\n  when 2.0 < 1e999\n"},
		{"p.plan", "tool f(x: number) -> number pure\nf(x: 1) -> †state.r\n  when 2.0 < -1e999\n"},
		{"p.json", `[{"type": "tool", "tool": {"name": "f", "annotations": {"readOnlyHint": true}}}, {"type": "plan", "plan": [{"_tool": "f", "_when": "2.0 < 1e999", "_outputPath": "†state.r"}]}]`},
	} {
		_, diags := checkSource(tc.name, []byte(tc.src), Config{})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "invalid double literal") {
			t.Errorf("%s: got %v, want an error at the literal", tc.src, diags)
		}
	}
}

// TestNoFiller: checked for a run with no model to complete them, a hole
// and a task are errors; checked without saying, neither is.
func TestNoFiller(t *testing.T) {
	src := `tool find(city: string) -> {id: string} pure
tool book(id: string) -> {id: string} irreversible
hotel: task "find a hotel in Oslo" using [find] -> †state.hotel
booked: book(id: ? "the id of †state.hotel") -> †state.booking
  approve "Book it?"
output †state.booking.id
`
	_, diags := checkSource("p.plan", []byte(src), Config{})
	if diags.HasErrors() {
		t.Fatalf("checked without saying what fills them:\n%s", diagText(diags))
	}
	_, diags = checkSource("p.plan", []byte(src), Config{NoFiller: true})
	var got []string
	for _, d := range diags {
		if d.Code == lang.NoFiller && d.Severity == lang.SeverityError {
			got = append(got, d.Message)
		}
	}
	want := []string{
		"task hotel is left for a model to complete, and this run has no model to choose its tool",
		"argument id of book is left for a model to fill, and this run has no model to fill it",
	}
	if !cmp.Equal(got, want) {
		t.Errorf("no-filler errors:\n%s", diagText(diags))
	}
}
