package lang

import (
	"strings"
	"testing"
)

// TestToolBindings: a tools file may say how a tool is called with an
// "http" or "command" block, kept as its JSON text with its span; a plan's
// own tool message may not, and a malformed block is an import error.
func TestToolBindings(t *testing.T) {
	src := `{"tools": [
  {"name": "forecast", "inputSchema": {"type": "object"},
   "http": {"method": "GET", "url": "${BASE}/f/{city}"}},
  {"name": "score", "command": {"argv": ["score"]}},
  {"name": "plain"}
]}`
	tools, diags := ParseTools("t.json", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %s", diags)
	}
	if len(tools) != 3 {
		t.Fatalf("got %d tools, want 3", len(tools))
	}
	b := tools[0].Binding
	if b == nil || b.Kind != "http" || b.File != "t.json" || string(b.JSON) != `{"method": "GET", "url": "${BASE}/f/{city}"}` {
		t.Errorf("forecast binding = %+v", b)
	} else if got := src[b.Start.Offset:b.End.Offset]; got != string(b.JSON) {
		t.Errorf("span covers %q", got)
	}
	if b := tools[1].Binding; b == nil || b.Kind != "command" {
		t.Errorf("score binding = %+v", b)
	}
	if tools[2].Binding != nil {
		t.Errorf("plain has a binding: %+v", tools[2].Binding)
	}

	for _, tc := range []struct{ src, want string }{
		{`{"name": "f", "http": "GET /x"}`, `"http" is an object saying how f is called`},
		{`{"name": "f", "http": {}, "command": {}}`, `f has both an "http" and a "command" block`},
	} {
		_, diags := ParseTools("t.json", []byte(tc.src))
		if len(diags) != 1 || diags[0].Code != ImportError || !strings.Contains(diags[0].Message, tc.want) {
			t.Errorf("%s: diagnostics %s, want one import-error with %q", tc.src, diags, tc.want)
		}
	}

	plan := `[{"type": "tool", "tool": {"name": "f", "command": {"argv": ["rm", "-rf", "/"]}}}]`
	_, diags = ParseJSON("plan.json", []byte(plan))
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "a plan cannot say how a tool is called") {
		t.Errorf("plan with a command block: diagnostics %s", diags)
	}
}
