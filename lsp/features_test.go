package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

func TestTextPositionsCountUTF16(t *testing.T) {
	s := "a†b😀c\n†\n"
	x := newText(s)
	for _, c := range []struct {
		off int
		p   position
	}{
		{0, position{0, 0}},
		{1, position{0, 1}},      // before †
		{4, position{0, 2}},      // after † (3 bytes, 1 unit)
		{5, position{0, 3}},      // before 😀
		{9, position{0, 5}},      // after 😀 (4 bytes, 2 units)
		{11, position{1, 0}},     // the second line
		{14, position{1, 1}},     // after its †
		{len(s), position{2, 0}}, // the end
	} {
		if got := x.position(c.off); got != c.p {
			t.Errorf("position(%d) = %v, want %v", c.off, got, c.p)
		}
		if got := x.offset(c.p); got != c.off {
			t.Errorf("offset(%v) = %d, want %d", c.p, got, c.off)
		}
	}
	// Between the two units of 😀: the character's start; past a line's
	// end: the line's end; past the last line: the end.
	if got := x.offset(position{0, 4}); got != 5 {
		t.Errorf("inside a surrogate pair: %d, want 5", got)
	}
	if got := x.offset(position{0, 99}); got != 10 {
		t.Errorf("past the line: %d, want 10", got)
	}
	if got := x.offset(position{9, 0}); got != len(s) {
		t.Errorf("past the text: %d", got)
	}
	if got := x.offset(position{-1, -1}); got != 0 {
		t.Errorf("negative: %d", got)
	}
}

func TestHover(t *testing.T) {
	c := newClient(t, Options{Debounce: time.Millisecond})
	c.open(testURI, weatherPlan)
	hover := func(p position) string {
		t.Helper()
		var h *hover
		c.must("textDocument/hover", docPos(testURI, p), &h)
		if h == nil {
			return ""
		}
		return h.Contents.Value
	}
	// The slot w read after "😀 ops" on its line: its position counts
	// the emoji as two code units.
	got := hover(at(t, weatherPlan, "w.sky", 0, 0))
	if !strings.Contains(got, "†state.w: {temp: number, sky: string}") || !strings.Contains(got, "written by `weather` (line 9)") || !strings.Contains(got, "†state.w.sky: string") {
		t.Errorf("hover on †state.w: %q", got)
	}
	if got := hover(at(t, weatherPlan, "notify(to:", 1, 2)); !strings.Contains(got, "tool notify(to: string, text: string) -> {id: string} irreversible") || !strings.Contains(got, "Sends a message to a person.") {
		t.Errorf("hover on notify: %q", got)
	}
	if got := hover(at(t, weatherPlan, "city)", 0, 0)); !strings.Contains(got, "†input.city: string") {
		t.Errorf("hover on †input.city: %q", got)
	}
	if got := hover(at(t, weatherPlan, "text: †", 0, 0)); !strings.Contains(got, "text: string") || !strings.Contains(got, "a parameter of `notify`") {
		t.Errorf("hover on the argument text: %q", got)
	}
	if got := hover(at(t, weatherPlan, "size(", 0, 1)); !strings.Contains(got, "size(string) -> int") || !strings.Contains(got, "CEL function") {
		t.Errorf("hover on the CEL function size: %q", got)
	}
	if got := hover(position{Line: 4, Character: 0}); got != "" {
		t.Errorf("hover on an empty line: %q", got)
	}
}

func TestCompletion(t *testing.T) {
	c := newClient(t, Options{Debounce: time.Millisecond})
	c.open(testURI, weatherPlan)
	labels := func(p position) string {
		t.Helper()
		var l completionList
		c.must("textDocument/completion", docPos(testURI, p), &l)
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Label)
		}
		return strings.Join(out, " ")
	}
	if got := labels(at(t, weatherPlan, "w.sky)", 0, 2)); got != "temp sky" {
		t.Errorf("after †state.w.: %q", got)
	}
	if got := labels(at(t, weatherPlan, "w.sky)", 0, 0)); got != "sent w" {
		t.Errorf("after †state.: %q", got)
	}
	if got := labels(at(t, weatherPlan, "city)", 0, 0)); got != "city" {
		t.Errorf("after †input.: %q", got)
	}
	got := labels(at(t, weatherPlan, "  approve", 0, 2))
	for _, want := range []string{"lookup", "notify", "when", "retry", "approve", "for each"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("at the start of an option's line, no %s in %q", want, got)
		}
	}
	if got := labels(at(t, weatherPlan, " pure", 0, 1)); !strings.Contains(got, "idempotent") {
		t.Errorf("after a tool's declaration: %q", got)
	}
	var l completionList
	c.must("textDocument/completion", docPos(testURI, at(t, weatherPlan, "  approve", 0, 2)), &l)
	for _, it := range l.Items {
		if it.Label == "notify" && (it.InsertText != "notify(to: ${1:to}, text: ${2:text})" || it.InsertTextFormat != 2) {
			t.Errorf("the snippet of notify: %+v", it)
		}
	}
}

func TestDefinitionReferencesRename(t *testing.T) {
	c := newClient(t, Options{Debounce: time.Millisecond})
	c.open(testURI, weatherPlan)
	writer := at(t, weatherPlan, "w\n", 0, 0)
	var locs []location
	c.must("textDocument/definition", docPos(testURI, at(t, weatherPlan, "w.sky", 1, 0)), &locs)
	if len(locs) != 1 || locs[0].Range.Start != writer {
		t.Errorf("definition of †state.w: %+v, want %v", locs, writer)
	}
	c.must("textDocument/definition", docPos(testURI, at(t, weatherPlan, "lookup(city", 0, 0)), &locs)
	if len(locs) != 1 || locs[0].Range.Start != at(t, weatherPlan, "lookup", 0, 0) {
		t.Errorf("definition of lookup: %+v", locs)
	}
	c.must("textDocument/definition", docPos(testURI, at(t, weatherPlan, "to: \"", 0, 0)), &locs)
	if len(locs) != 1 || locs[0].Range.Start != at(t, weatherPlan, "to: string", 0, 0) {
		t.Errorf("definition of the argument to: %+v", locs)
	}
	var refs []location
	c.must("textDocument/references", map[string]any{"textDocument": map[string]any{"uri": testURI}, "position": writer, "context": map[string]any{"includeDeclaration": true}}, &refs)
	if len(refs) != 3 {
		t.Errorf("references of †state.w: %+v, want the writer and two readers", refs)
	}
	var edit workspaceEdit
	c.must("textDocument/rename", map[string]any{"textDocument": map[string]any{"uri": testURI}, "position": writer, "newName": "forecast"}, &edit)
	got := applyEdits(t, weatherPlan, edit.Changes[testURI])
	if want := strings.ReplaceAll(strings.ReplaceAll(weatherPlan, "†state.w.", "†state.forecast."), "†state.w\n", "†state.forecast\n"); got != want {
		t.Errorf("rename of w:\n%s\nwant:\n%s", got, want)
	}
	if err := c.call("textDocument/rename", map[string]any{"textDocument": map[string]any{"uri": testURI}, "position": writer, "newName": "sent"}, &edit); err == nil {
		t.Error("renaming w to the name of another slot succeeded")
	}
	if err := c.call("textDocument/rename", map[string]any{"textDocument": map[string]any{"uri": testURI}, "position": writer, "newName": "a b"}, &edit); err == nil {
		t.Error("renaming w to a name with a space succeeded")
	}
	c.must("textDocument/rename", map[string]any{"textDocument": map[string]any{"uri": testURI}, "position": at(t, weatherPlan, "send:", 0, 0), "newName": "mail"}, &edit)
	if es := edit.Changes[testURI]; len(es) != 1 || es[0].NewText != "mail" {
		t.Errorf("rename of the label send: %+v", edit)
	}
	var syms []documentSymbol
	c.must("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": testURI}}, &syms)
	var names []string
	for _, s := range syms {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "lookup notify input weather send output" {
		t.Errorf("symbols: %v", names)
	}
}

// applyEdits applies non-overlapping edits to text, as a client does.
func applyEdits(t *testing.T, s string, edits []textEdit) string {
	t.Helper()
	x := newText(s)
	for i := len(edits) - 1; i >= 0; i-- {
		a, b := x.offsets(edits[i].Range)
		s = s[:a] + edits[i].NewText + s[b:]
	}
	return s
}

// TestJSONPlan: a JSON plan gets the same diagnostics, at the place in
// its JSON text, and is not reformatted.
func TestJSONPlan(t *testing.T) {
	plan := `[
  {"_tool": "echo", "value": "†state.w", "_outputPath": "†state.w2"},
  {"_tool": "lookupp", "city": "x", "_outputPath": "†state.w"}
]`
	c := newClient(t, Options{Debounce: time.Millisecond})
	uri := "file:///tmp/obelisk-lsp-test/plan.json"
	ds := c.open(uri, plan)
	if len(ds) == 0 {
		t.Fatal("no diagnostics for a JSON plan with an unknown tool")
	}
	if len(ds) != 2 || ds[1].Code != "unknown-tool" || ds[1].Range.Start != at(t, plan, "lookupp", 0, 0) {
		t.Errorf("diagnostics %+v", ds)
	}
	// Go to the writer of †state.w from its reader, in the JSON text.
	var locs []location
	c.must("textDocument/definition", docPos(uri, at(t, plan, "w\"", 0, 0)), &locs)
	if len(locs) != 1 || locs[0].Range.Start != at(t, plan, "w\"", 1, 0) {
		t.Errorf("definition in a JSON plan: %+v", locs)
	}
	// Other JSON is not a plan, and gets no diagnostics.
	if ds := c.open("file:///tmp/obelisk-lsp-test/obelisk.json", `{"tools": ["tools.json"]}`); len(ds) != 0 {
		t.Errorf("a JSON file that is no plan got diagnostics: %+v", ds)
	}
	var edits []textEdit
	c.must("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": uri}}, &edits)
	if len(edits) != 0 {
		t.Errorf("a JSON plan was reformatted: %+v", edits)
	}
}

func TestReadWorkspace(t *testing.T) {
	dir := t.TempDir()
	if w, err := ReadWorkspace(dir); w != nil || err != nil {
		t.Fatalf("no file: %v %v", w, err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, WorkspaceFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tools": ["tools/a.json"], "hints": "h.json", "mcp": ["x=srv"]}`)
	w, err := ReadWorkspace(dir)
	if err != nil || w.Tools[0] != filepath.Join(dir, "tools", "a.json") || w.Hints != filepath.Join(dir, "h.json") || w.MCP[0] != "x=srv" {
		t.Fatalf("%+v %v", w, err)
	}
	for _, bad := range []string{`{"tools": ["../x.json"]}`, `{"tools": ["/etc/x.json"]}`, `{"hints": "../h"}`, `{"tool": []}`, `[`} {
		write(bad)
		if _, err := ReadWorkspace(dir); err == nil {
			t.Errorf("%s was read", bad)
		}
	}
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// TestSubPlan: a sub-plan's slots are its own; a call of the sub-plan
// goes to its declaration and hovers with its signature.
func TestSubPlan(t *testing.T) {
	plan := `tool double(n: int) -> int pure

plan twice(n: int) -> int {
  a: double(n: †input.n) -> †state.x
  b: double(n: †state.x) -> †state.y
  output †state.y
}

first: twice(n: 2) -> †state.x
second: twice(n: †state.x) -> †state.y
`
	c := newClient(t, Options{Debounce: time.Millisecond})
	uri := "file:///tmp/obelisk-lsp-test/sub.plan"
	if ds := c.open(uri, plan); len(ds) != 0 {
		t.Fatalf("diagnostics: %+v", ds)
	}
	var refs []location
	c.must("textDocument/references", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": at(t, plan, "x\n", 0, 0), "context": map[string]any{"includeDeclaration": true}}, &refs)
	if len(refs) != 2 || refs[0].Range.Start.Line != 3 || refs[1].Range.Start.Line != 4 {
		t.Errorf("references of the sub-plan's †state.x: %+v, want its lines 4 and 5 only", refs)
	}
	var locs []location
	c.must("textDocument/definition", docPos(uri, at(t, plan, "twice(n: 2)", 0, 1)), &locs)
	if len(locs) != 1 || locs[0].Range.Start != at(t, plan, "twice", 0, 0) {
		t.Errorf("definition of the sub-plan: %+v", locs)
	}
	var h *hover
	c.must("textDocument/hover", docPos(uri, at(t, plan, "twice(n: 2)", 0, 1)), &h)
	if h == nil || !strings.Contains(h.Contents.Value, "plan twice(n: int) -> int") {
		t.Errorf("hover on the sub-plan: %+v", h)
	}
	c.must("textDocument/hover", docPos(uri, at(t, plan, "n)", 0, 0)), &h)
	if h == nil || !strings.Contains(h.Contents.Value, "†input.n: int") {
		t.Errorf("hover on the sub-plan's †input.n: %+v", h)
	}
	var syms []documentSymbol
	c.must("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": uri}}, &syms)
	if len(syms) != 4 || syms[1].Name != "twice" || len(syms[1].Children) != 4 {
		t.Errorf("symbols: %+v", syms)
	}
}
