package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/obelisk-plan/obelisk/internal/jsonschema"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// callResult calls a tool and returns its whole result.
func (h *harness) callResult(t *testing.T, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := h.client.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// TestResultShapes: every tool declares an output schema and the hints a
// client decides by, and answers with structured content that the schema
// accepts, as the go-sdk client receives it, with a text block too for
// the clients that read only text: the same JSON, or, for the primer and
// the signatures, the text itself. A plan that does not check is an
// error, from check_plan as from the others.
func TestResultShapes(t *testing.T) {
	h := start(t, Options{}, nil)
	list, err := h.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil || tool.OutputSchema == nil {
			t.Fatalf("%s: no output schema (%v)", tool.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(tool.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		if schemas[tool.Name], err = c.Compile(tool.Name + ".json"); err != nil {
			t.Fatalf("%s: the output schema does not compile: %v", tool.Name, err)
		}
		a := tool.Annotations
		if a == nil || a.OpenWorldHint == nil || (a.DestructiveHint == nil) != a.ReadOnlyHint {
			t.Fatalf("%s: hints %+v", tool.Name, a)
		}
		type hints struct{ readOnly, idempotent, destructive, openWorld bool }
		got := hints{a.ReadOnlyHint, a.IdempotentHint, a.DestructiveHint != nil && *a.DestructiveHint, *a.OpenWorldHint}
		want := hints{readOnly: true, idempotent: true}
		switch tool.Name {
		case toolRun:
			want = hints{destructive: true, openWorld: true} // the shop has charge, which is not pure
		case toolResume:
			want = hints{idempotent: true, destructive: true, openWorld: true}
		}
		if got != want {
			t.Errorf("%s: hints %+v, want %+v", tool.Name, got, want)
		}
	}
	const good = "a: lookup(id: \"c-1\") -> †state.c\noutput {\n  orders: †state.c.orders\n}\n"
	const bad = "a: lookup(ID: \"c-1\") -> †state.c\n"
	for _, c := range []struct {
		tool    string
		args    map[string]any
		isError bool
		text    string // the field that holds the text block's text, not its JSON
		has     string
	}{
		{toolPrimer, nil, false, "primer", `"primer":`},
		{toolSearch, map[string]any{"query": "customer orders"}, false, "tools", `"shown":1`},
		{toolCheck, map[string]any{"plan": good}, false, "", `"ok":true`},
		{toolCheck, map[string]any{"plan": bad}, true, "", `"ok":false`},
		{toolCheck, map[string]any{"plan": "input {\n  id: string\n}\na: lookup(id: †input.id) -> †state.c\n", "input": map[string]any{"id": 7}}, true, "", `"ok":false`},
		{toolDryRun, map[string]any{"plan": good}, false, "", `"waves":`},
		{toolDryRun, map[string]any{"plan": bad}, true, "", `"ok":false`},
		{toolRun, map[string]any{"plan": bad}, true, "", `"ok":false`},
		{toolRun, map[string]any{"plan": good, "wait": 30}, false, "", `"output":{"orders":3}`},
		{toolStatus, map[string]any{"run": "nosuch"}, true, "", ""},
	} {
		res := h.callResult(t, c.tool, c.args)
		if res.IsError != c.isError || len(res.Content) != 1 {
			t.Errorf("%s %v: isError %v, %d blocks; want %v", c.tool, c.args, res.IsError, len(res.Content), c.isError)
			continue
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if c.has == "" { // a call that did nothing says why, in text
			if res.StructuredContent != nil {
				t.Errorf("%s %v: structured content %v", c.tool, c.args, res.StructuredContent)
			}
			continue
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil || res.StructuredContent == nil {
			t.Errorf("%s %v: no structured content: %v", c.tool, c.args, err)
			continue
		}
		if !strings.Contains(string(b), c.has) {
			t.Errorf("%s %v: structured content without %s: %s", c.tool, c.args, c.has, b)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[c.tool].Validate(doc); err != nil {
			t.Errorf("%s %v: the structured content does not match the output schema: %v\n%s", c.tool, c.args, err, b)
		}
		switch {
		case c.text != "" && res.StructuredContent.(map[string]any)[c.text] != text:
			t.Errorf("%s: the text block is not the text the structured content holds:\n%s", c.tool, text)
		case c.text == "" && !sameJSON(text, string(b)):
			t.Errorf("%s %v: the text block is not the structured content's JSON:\n text %s\n JSON %s", c.tool, c.args, text, b)
		}
	}
}

// sameJSON reports whether two JSON texts hold the same value (the
// client decodes structured content, so its keys come back sorted).
func sameJSON(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

// TestHintsOfPureTools: over tools that are all pure, a run changes
// nothing the world holds: run_plan and resume_run are not destructive.
func TestHintsOfPureTools(t *testing.T) {
	reg := toolkit.NewRegistry()
	reg.MustRegister(toolkit.Definition{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: toolkit.Annotations{ReadOnly: true}},
		toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) { return 1, nil }))
	for _, c := range []struct {
		tools string
		want  bool
	}{{string(reg.ToolsJSON()), false}, {string(newShop(t).reg.ToolsJSON()), true}} {
		cat, err := newCatalog([]planfile.File{{Name: "<tools>", Text: c.tools}})
		if err != nil {
			t.Fatal(err)
		}
		if cat.effectful() != c.want {
			t.Errorf("effectful() = %v over %s", !c.want, c.tools)
		}
	}
}
