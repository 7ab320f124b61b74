package planfile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestToolsFile: definitions become the tools file a source records and
// the declarations the checker reads from it; a tool a declaration binds
// becomes the same definition again.
func TestToolsFile(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)
	out := json.RawMessage(`{"type":"integer"}`)
	defs := []toolkit.Definition{{Name: "f", Description: "Doubles x.", InputSchema: in, OutputSchema: out, Annotations: toolkit.Annotations{ReadOnly: true}}}
	f, decls, diags := ToolsFile("<srv>", defs)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if f.Name != "<srv>" || f.Text != string(toolkit.ToolsJSON(defs)) {
		t.Errorf("file %+v", f)
	}
	if len(decls) != 1 || decls[0].Name.Name != "f" {
		t.Fatalf("decls %v", decls)
	}
	// The file recorded checks a plan as the declarations did.
	src := &Source{Name: "p.plan", Text: "f(x: 1) -> †state.y\n", Tools: []File{f}}
	prog, diags, err := src.Compile()
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	if got := Signatures(prog); len(got) != 1 || got[0].Signature != "(x: int) -> int pure" {
		t.Errorf("signatures %v", got)
	}
	back := Definition(decls[0])
	if back.Name != "f" || back.Description != "Doubles x." || string(back.InputSchema) != string(in) || string(back.OutputSchema) != string(out) {
		t.Errorf("definition %+v", back)
	}
	// A server with no tools a plan can call lists none.
	if f, decls, diags := ToolsFile("<none>", nil); len(diags) > 0 || len(decls) != 0 || f.Text != `{"tools":[]}` {
		t.Errorf("no definitions: %q %v %s", f.Text, decls, diags)
	}
}

// TestToolsFileUnreadable: a schema Obelisk cannot read is a diagnostic
// at the tools file, not a tool.
func TestToolsFileUnreadable(t *testing.T) {
	defs := []toolkit.Definition{{Name: "g", InputSchema: json.RawMessage(`"a string"`)}}
	f, _, diags := ToolsFile("<srv>", defs)
	if !diags.HasErrors() || diags[0].File != "<srv>" || !strings.Contains(diags.Error(), "JSON Schema object") {
		t.Errorf("diagnostics %s", diags)
	}
	if !strings.Contains(f.Text, `"a string"`) {
		t.Errorf("file %q", f.Text)
	}
}
