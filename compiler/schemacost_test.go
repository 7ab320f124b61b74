package compiler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// schemaPlan returns a JSON plan of n calls of a tool with an input
// schema, and the tools file. Each call passes constants, which the schema
// validates by their shape, and a reference to the previous call's result
// for a parameter the schema constrains beyond its type (a maximum, which
// only the full validator checks, when the value is known).
func schemaPlan(n int) (plan, tools []byte) {
	tools = []byte(`{"tools": [{
  "name": "work",
  "annotations": {"readOnlyHint": true},
  "inputSchema": {"type": "object", "properties": {
    "ms": {"type": "integer"},
    "speed": {"type": "string", "enum": ["slow", "fast"], "default": "fast"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "in0": {"type": "integer", "minimum": 0, "maximum": 1000000000}
  }, "required": ["ms"]},
  "outputSchema": {"type": "integer"}
}]}`)
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		in := "†input.seed"
		if i > 0 {
			in = fmt.Sprintf("†state.s%d", i-1)
		}
		fmt.Fprintf(&b, `{"_tool":"work","ms":%d,"tags":["a","b"],"in0":%q,"_outputPath":"†state.s%d"}`, i%1000, in, i)
	}
	b.WriteString("]\n")
	return []byte(b.String()), tools
}

// TestSchemaChecksPerCall holds the checker to validating a call's
// arguments against its tool's schema without allocating for the schema
// on every call: the schema's parts are looked up, and its defaults
// validated, once per tool. The whole JSON front end (parse, check,
// compile) of a plan twice as long allocates no more per added call with
// the tool's input schema than with the same tool without it.
func TestSchemaChecksPerCall(t *testing.T) {
	input, diags := lang.Parse("input", []byte("input {\n  seed: int\n}\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	allocs := func(n int, schema bool) float64 {
		js, tools := schemaPlan(n)
		decls, diags := lang.ParseTools("tools.json", tools)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if len(decls) != 1 || len(decls[0].InputSchema) == 0 {
			t.Fatalf("the tools file declares %d tools, the first without its schema", len(decls))
		}
		if !schema {
			decls[0].InputSchema = nil // the same types, nothing more to validate
		}
		return testing.AllocsPerRun(3, func() {
			f, diags := lang.ParseJSON("plan.json", js)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			f.Items = append(f.Items, input.Items...)
			info, cd := Check(f, Config{Tools: decls})
			if len(cd) > 0 {
				t.Fatal(cd)
			}
			if _, err := Compile(info, cd, Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	const n = 500
	with := (allocs(2*n, true) - allocs(n, true)) / n
	without := (allocs(2*n, false) - allocs(n, false)) / n
	if with-without > 0.5 {
		t.Errorf("checking a call against its tool's schema allocates %.1f objects (%.1f per call with the schema, %.1f without)", with-without, with, without)
	}
}

// TestSchemaChecksStillReport makes sure that the checks made once per
// tool still report each call whose constant breaks the schema, and a
// default the schema refuses on every call that leaves it out.
func TestSchemaChecksStillReport(t *testing.T) {
	tools := []byte(`{"tools": [{
  "name": "work",
  "annotations": {"readOnlyHint": true},
  "inputSchema": {"type": "object", "properties": {
    "ms": {"type": "integer", "maximum": 10},
    "speed": {"type": "string", "enum": ["slow", "fast"], "default": "fast"},
    "mode": {"type": "string", "pattern": "^[a-z]+$", "default": "Bad1"}
  }, "required": ["ms"]}
}]}`)
	decls, diags := lang.ParseTools("tools.json", tools)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	js := []byte(`[{"_tool":"work","ms":20,"mode":"ok"},{"_tool":"work","ms":5,"mode":"ok"},{"_tool":"work","ms":30,"mode":"ok"},{"_tool":"work","ms":1},{"_tool":"work","ms":2}]`)
	f, diags := lang.ParseJSON("plan.json", js)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, cd := Check(f, Config{Tools: decls})
	var maxima, defaults int
	for _, d := range cd {
		switch {
		case d.Severity != lang.SeverityError:
		case strings.Contains(d.Message, "argument ms of work does not match the tool's schema") && strings.Contains(d.Message, "maximum"):
			maxima++
		case strings.Contains(d.Message, "work is called without mode, so with its default the string \"Bad1\", which does not match the tool's schema: at /mode: 'Bad1' does not match pattern"):
			defaults++
		default:
			t.Errorf("unexpected diagnostic: %s", d.Message)
		}
	}
	if maxima != 2 || defaults != 2 {
		t.Errorf("got %d maximum and %d default diagnostics, want 2 and 2:\n%v", maxima, defaults, cd)
	}
}

// TestClosedSchemaRead makes sure that a schema is still read for the
// objects it closes when the checker skips decoding schemas that close
// none: also when the keyword is written with an escape.
func TestClosedSchemaRead(t *testing.T) {
	input, diags := lang.Parse("input", []byte("input {\n  o: {a: int, b: int}\n}\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, key := range []string{`additionalProperties`, `additional\u0050roperties`, `none`} {
		tools := []byte(`{"tools": [{"name": "work", "annotations": {"readOnlyHint": true},
  "inputSchema": {"type": "object", "properties": {
    "obj": {"type": "object", "properties": {"a": {"type": "integer"}}, "` + key + `": false}
  }}, "outputSchema": {"type": "integer"}}]}`)
		decls, diags := lang.ParseTools("tools.json", tools)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		f, diags := lang.ParseJSON("plan.json", []byte(`[{"_tool":"work","obj":"†input.o","_outputPath":"†state.n"}]`))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		f.Items = append(f.Items, input.Items...)
		_, cd := Check(f, Config{Tools: decls})
		closed := strings.Contains(cd.Error(), "takes only the properties it lists (a; additionalProperties is false), and the value may have b")
		if want := key != "none"; closed != want {
			t.Errorf("with %s: reported the closed object: %v, want %v:\n%v", key, closed, want, cd)
		}
	}
}
