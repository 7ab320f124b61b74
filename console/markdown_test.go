package console

import (
	"context"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/console/consoletest"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestMarkdownHostile: Markdown from a tool or a model is rendered with
// its raw HTML left out, its links only to http and https, its images as
// text; plain text, other values and huge texts are not rendered.
func TestMarkdownHostile(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
		not      []string
	}{
		{"a report", "# Findings\n\n- one **bold** point\n- a [source](https://example.com/a?b=1)\n\n`code`", []string{"<h1>Findings</h1>", "<strong>bold</strong>", `<a href="https://example.com/a?b=1">source</a>`, "<code>code</code>"}, nil},
		{"a script", "# Hi\n\n<script>window.pwned=1</script>\n\ntext <img src=x onerror=alert(1)> and <b onclick=\"x()\">b</b>", []string{"<h1>Hi</h1>", "raw HTML omitted"}, []string{"<script", "<img", "onerror", "onclick", "<b "}},
		{"javascript links", "- [click](javascript:alert(1))\n- [data](data:text/html;base64,PHNjcmlwdD4=)\n- <javascript:alert(2)>\n- [rel](/runs/x/decide)\n- [JS](JaVaScRiPt:alert(3))", []string{"click", "data", "rel"}, []string{"href=\"javascript", "href=\"data", "href=\"/runs", "<a "}},
		{"images", "# Look\n\n![alt text](https://evil.example/track.png)", []string{"alt text"}, []string{"<img", "evil.example"}},
		{"an autolink", "see <https://example.com/x>\n\n- item", []string{`<a href="https://example.com/x">https://example.com/x</a>`}, nil},
		{"escapes", "# a &lt; b\n\n- `<script>`", []string{"<code>&lt;script&gt;</code>"}, []string{"<script>"}},
	} {
		got, ok := markdownHTML(c.in)
		if !ok {
			t.Errorf("%s: not rendered", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(got), w) {
				t.Errorf("%s: no %q in\n%s", c.name, w, got)
			}
		}
		for _, w := range c.not {
			if strings.Contains(strings.ToLower(string(got)), strings.ToLower(w)) {
				t.Errorf("%s: %q in\n%s", c.name, w, got)
			}
		}
	}
	for name, v := range map[string]any{
		"plain text":  "just a sentence, with no markup at all",
		"HTML alone":  hostile,
		"a number":    42.0,
		"an object":   map[string]any{"a": "# b"},
		"huge":        "# big\n\n" + strings.Repeat("- *item* [x](https://e.com)\n", maxMarkdown/20),
		"nested huge": strings.Repeat(">", maxMarkdown+1),
	} {
		if _, ok := markdownHTML(v); ok {
			t.Errorf("%s is rendered as Markdown", name)
		}
	}
	// A deep nesting just under the limit renders.
	if _, ok := markdownHTML(strings.Repeat("> ", 1000) + "deep"); !ok {
		t.Error("a deep quote is not rendered")
	}
}

// TestRunPageMarkdown: a step's result and a run's output that are
// Markdown show rendered on the run's page, with their JSON beside, and
// the script in them is not in the page.
func TestRunPageMarkdown(t *testing.T) {
	st := openStore(t)
	report := "# Report\n\n- **done**\n- [more](javascript:alert(1))\n\n<script>window.pwned=1</script>\n"
	tools := callerFunc(func(ctx context.Context, name string, args map[string]any) (any, error) { return report, nil })
	plan := "tool fetch(n: int) -> string pure\n\na: fetch(n: 1) -> †state.a\n\noutput †state.a\n"
	if res := startRun(t, st, "md", plan, tools); res.Status != vm.RunCompleted {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
	_, base := serve(t, st, Options{}, false)
	_, page := consoletest.New(t, base).Get("/runs/md")
	if n := strings.Count(page, `<div class="markdown"><h1>Report</h1>`); n != 2 {
		t.Errorf("the result and the output are rendered %d times, want 2", n)
	}
	if strings.Contains(page, "<script>window") || strings.Contains(page, `href="javascript`) || !strings.Contains(page, "&lt;script&gt;window.pwned=1&lt;/script&gt;") {
		t.Errorf("the page:\n%s", page)
	}
}
