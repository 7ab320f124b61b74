package durable

import (
	"slices"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

func declNames(decls []*lang.ToolDecl) []string {
	var out []string
	for _, d := range decls {
		out = append(out, d.Name.Name)
	}
	return out
}

// TestGoalContextContext: a goal's context holds the context document's
// tools, then the tools offered, which the checker knows too; the
// built-in tools are offered when asked for or when no other tool is;
// the input given goes over the document's; a document that does not
// parse is diagnosed.
func TestGoalContextContext(t *testing.T) {
	offered, diags := lang.ParseTools("t.json", []byte(`{"tools": [{"name": "weather", "inputSchema": {"type": "object"}}]}`))
	builtins, d2 := lang.ParseTools("b.json", []byte(`{"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}`))
	if diags = append(diags, d2...); diags.HasErrors() {
		t.Fatal(diags)
	}
	doc := &planfile.Source{Name: "ctx.plan", Text: "tool lookup(id: string) -> string pure\n"}

	c, cfg, diags := GoalContext{Input: map[string]any{"id": "c-1"}}.Context(doc, offered, builtins)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := declNames(c.Tools); !slices.Equal(got, []string{"lookup", "weather"}) {
		t.Errorf("offered %v", got)
	}
	if got := declNames(cfg.Tools); !slices.Contains(got, "lookup") || !slices.Contains(got, "weather") || slices.Contains(got, "echo") {
		t.Errorf("checked %v", got)
	}
	if c.Input["id"] != "c-1" {
		t.Errorf("input %v", c.Input)
	}

	c, _, _ = GoalContext{Builtins: true}.Context(doc, offered, builtins)
	if got := declNames(c.Tools); !slices.Equal(got, []string{"lookup", "weather", "echo"}) {
		t.Errorf("with the built-ins %v", got)
	}
	c, _, _ = GoalContext{}.Context(&planfile.Source{Name: "<goal>"}, nil, builtins)
	if got := declNames(c.Tools); !slices.Equal(got, []string{"echo"}) || c.Input != nil {
		t.Errorf("no other tool: %v, input %v", got, c.Input)
	}
	if _, _, diags := (GoalContext{}).Context(&planfile.Source{Name: "bad.plan", Text: "tool (\n"}, nil, builtins); !diags.HasErrors() {
		t.Error("a document that does not parse is not diagnosed")
	}
}
