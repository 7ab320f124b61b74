package toolset

import (
	"slices"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

func toolsText(names ...string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, `{"name": "`+n+`", "inputSchema": {"type": "object"}}`)
	}
	return `{"tools": [` + strings.Join(parts, ", ") + `]}`
}

// TestOffered: a goal offers the tools of the tools files it names and
// the MCP servers' tools, each once, but not the other tools files' nor
// the built-in tools' definitions.
func TestOffered(t *testing.T) {
	files := []planfile.File{
		{Name: "a.json", Text: toolsText("weather")},
		{Name: "b.json", Text: toolsText("unnamed")},
		{Name: "<srv>", Text: toolsText("srv.ping", "ping", "srv.pong")},
		{Name: BuiltinsName, Text: toolsText("echo")},
	}
	if got := names(Offered(files, []string{"a.json"})); !slices.Equal(got, []string{"weather", "ping", "srv.pong"}) {
		t.Errorf("offered %v", got)
	}
	if got := names(Offered(files[1:2], nil)); len(got) != 0 {
		t.Errorf("offered of no named file %v", got)
	}
}

// TestOfferedBuiltins: every built-in tool but the file tools may be
// offered to a model.
func TestOfferedBuiltins(t *testing.T) {
	got := names(open(t, config(t)).OfferedBuiltins())
	if !slices.Contains(got, "echo") || slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "file.") }) {
		t.Errorf("offered built-ins %v", got)
	}
}

// TestCallerOf: the tools of a goal answer every tool offered; a tool
// offered with no implementation is an error that names it.
func TestCallerOf(t *testing.T) {
	s := open(t, config(t))
	offered, diags := lang.ParseTools("t.json", []byte(toolsText("lookup", "echo")))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, err := s.CallerOf(offered); err != nil {
		t.Errorf("all implemented: %v", err)
	}
	more, _ := lang.ParseTools("t.json", []byte(toolsText("lookup", "nope", "gone")))
	_, err := s.CallerOf(more)
	if err == nil || err.Error() != "no implementation for nope, gone: answer them in a mocks file (toolset.Config.Mocks)" {
		t.Errorf("missing: %v", err)
	}
}
