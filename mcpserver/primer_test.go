package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrimerSections: get_primer answers by default with the workflow, a
// complete plan and the shape of a step, and names the other sections; a
// section comes by its name, in any case and with or without backticks,
// and all gives the whole primer; an unknown section is an error that
// lists them. Together the sections are the language primer, every byte.
func TestPrimerSections(t *testing.T) {
	h := start(t, Options{}, nil)
	s := h.server
	call := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := h.client.CallTool(context.Background(), &sdk.CallToolParams{Name: toolPrimer, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	short, _ := call(nil)
	if len(short)*2 > len(s.Primer()) {
		t.Errorf("the default primer is %d bytes, more than half the whole (%d)", len(short), len(s.Primer()))
	}
	for _, want := range []string{`approve "question" on its step`, "in an input block", "## A complete plan", "## Shape", "section set to one of", "for each, output paths, options", ", or all."} {
		if !strings.Contains(short, want) {
			t.Errorf("the default primer does not say %q:\n%s", want, short)
		}
	}
	if strings.Contains(short, "## CEL expressions") || strings.Contains(short, "## Options") {
		t.Errorf("the default primer holds sections it should only name:\n%s", short)
	}
	for tool, err := range h.client.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(tool.InputSchema); tool.Name == toolPrimer && !strings.Contains(string(b), "all, or one of: a complete plan, output, type forms, shape, for each") {
			t.Errorf("get_primer's schema does not name the sections: %s", b)
		}
	}
	var joined strings.Builder
	for i, name := range s.names {
		text, isErr := call(map[string]any{"section": name})
		if isErr || !strings.HasPrefix(text, "## ") {
			t.Errorf("section %q: %s", name, text)
		}
		if i > 0 {
			joined.WriteString("\n")
		}
		joined.WriteString(text)
	}
	if joined.String() != languagePrimer() {
		t.Errorf("the sections are not the language primer")
	}
	if text, _ := call(map[string]any{"section": " `For Each` "}); text != s.sections["for each"] || !strings.Contains(text, "for each x in LIST") {
		t.Errorf("section `For Each` answers %q", text)
	}
	if text, _ := call(map[string]any{"section": "ALL"}); text != s.Primer() {
		t.Errorf("section all is not the whole primer")
	}
	text, isErr := call(map[string]any{"section": "holes"})
	if !isErr || !strings.Contains(text, `no section "holes"`) || !strings.Contains(text, "cel expressions, or all") {
		t.Errorf("an unknown section answers %v %q", isErr, text)
	}
	if text, isErr := call(map[string]any{"section": 3}); !isErr {
		t.Errorf("a section that is not a string answers %q", text)
	}
}
