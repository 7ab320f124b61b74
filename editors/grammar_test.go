// Package editors holds the editors' support for plans (vscode: a
// TextMate grammar, a language configuration and an extension that
// starts obelisk lsp; nvim: a configuration of the built-in client).
// Its test reads the grammar as an editor does.
package editors

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// rule is a TextMate rule, the parts of one this grammar uses.
type rule struct {
	Name     string                           `json:"name"`
	Match    string                           `json:"match"`
	Begin    string                           `json:"begin"`
	End      string                           `json:"end"`
	Include  string                           `json:"include"`
	Captures map[string]struct{ Name string } `json:"captures"`
	Patterns []*rule                          `json:"patterns"`

	match, begin, end *regexp.Regexp
}

type grammar struct {
	ScopeName  string           `json:"scopeName"`
	Patterns   []*rule          `json:"patterns"`
	Repository map[string]*rule `json:"repository"`
}

// loadGrammar reads the grammar file and compiles its expressions with
// Go's regexp: the grammar uses no construct of Oniguruma that RE2 lacks
// (no look-around, no back-references), so what matches here matches in
// an editor.
func loadGrammar(t *testing.T) *grammar {
	t.Helper()
	b, err := os.ReadFile("vscode/syntaxes/obelisk.tmLanguage.json")
	if err != nil {
		t.Fatal(err)
	}
	var g grammar
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	var compile func(r *rule)
	compile = func(r *rule) {
		var err error
		for _, p := range []struct {
			src string
			re  **regexp.Regexp
		}{{r.Match, &r.match}, {r.Begin, &r.begin}, {r.End, &r.end}} {
			if p.src != "" {
				if *p.re, err = regexp.Compile(p.src); err != nil {
					t.Fatalf("%q: %v", p.src, err)
				}
			}
		}
		for _, s := range r.Patterns {
			compile(s)
		}
	}
	for _, r := range g.Repository {
		compile(r)
	}
	for _, r := range g.Patterns {
		compile(r)
	}
	return &g
}

// token is a piece of a line and its scope ("" for none).
type token struct{ text, scope string }

// resolve replaces includes by the rules they name.
func (g *grammar) resolve(rs []*rule) []*rule {
	var out []*rule
	for _, r := range rs {
		if strings.HasPrefix(r.Include, "#") {
			out = append(out, g.Repository[r.Include[1:]])
		} else {
			out = append(out, r)
		}
	}
	return out
}

// tokenize splits a line as a TextMate engine does for single-line
// rules: at each place, the rule whose match starts first (the earlier
// rule on a tie); a begin rule runs to its end on the line.
func (g *grammar) tokenize(line string, rules []*rule) []token {
	var out []token
	rules = g.resolve(rules)
	pos := 0
	for pos < len(line) {
		best, bestAt := (*rule)(nil), []int(nil)
		for _, r := range rules {
			re := r.match
			if re == nil {
				re = r.begin
			}
			if strings.HasPrefix(re.String(), "^") && pos > 0 {
				continue
			}
			m := re.FindStringSubmatchIndex(line[pos:])
			if m == nil || m[1] == m[0] {
				continue
			}
			if bestAt == nil || m[0] < bestAt[0] {
				best, bestAt = r, m
			}
		}
		if best == nil {
			out = append(out, token{line[pos:], ""})
			break
		}
		if bestAt[0] > 0 {
			out = append(out, token{line[pos : pos+bestAt[0]], ""})
		}
		start, end := pos+bestAt[0], pos+bestAt[1]
		switch {
		case best.begin != nil:
			// The body up to the end, tokenized with the rule's
			// patterns, all under the rule's name.
			body := line[end:]
			stop := len(body)
			inner := body
			for i := 0; i < len(body); i++ {
				if body[i] == '\\' {
					i++
					continue
				}
				if m := best.end.FindStringIndex(body[i:]); m != nil && m[0] == 0 {
					stop, inner = i+m[1], body[:i]
					break
				}
			}
			out = append(out, token{line[start:end], best.Name})
			for _, tk := range g.tokenize(inner, best.Patterns) {
				out = append(out, token{tk.text, strings.TrimSpace(best.Name + " " + tk.scope)})
			}
			if stop > len(inner) {
				out = append(out, token{body[len(inner):stop], best.Name})
			}
			end += stop
		case len(best.Captures) > 0:
			at := start
			for i := 1; 2*i+1 < len(bestAt); i++ {
				a, b := bestAt[2*i], bestAt[2*i+1]
				if a < 0 || a == b {
					continue
				}
				a, b = pos+a, pos+b
				if a > at {
					out = append(out, token{line[at:a], best.Name})
				}
				out = append(out, token{line[a:b], best.Captures[strconv.Itoa(i)].Name})
				at = b
			}
			if at < end {
				out = append(out, token{line[at:end], best.Name})
			}
		default:
			out = append(out, token{line[start:end], best.Name})
		}
		pos = end
	}
	return out
}

// scopes returns each non-blank token of a line with its scope.
func (g *grammar) scopes(line string) map[string]string {
	out := map[string]string{}
	for _, tk := range g.tokenize(line, g.Patterns) {
		if s := strings.TrimSpace(tk.text); s != "" {
			if _, dup := out[s]; !dup {
				out[s] = tk.scope
			}
		}
	}
	return out
}

func TestGrammar(t *testing.T) {
	g := loadGrammar(t)
	if g.ScopeName != "source.obelisk" {
		t.Errorf("scope %q", g.ScopeName)
	}
	for _, c := range []struct {
		line string
		want map[string]string
	}{
		{`# Refunds a customer.`, map[string]string{"# Refunds a customer.": "comment.line.number-sign.obelisk"}},
		{`tool issueRefund(customerId: string, amount: number) -> Refund irreversible latency 1500ms`, map[string]string{
			"tool": "keyword.other.declaration.obelisk", "issueRefund": "entity.name.function.obelisk",
			"customerId": "variable.parameter.obelisk", "string": "support.type.obelisk", "->": "keyword.operator.obelisk",
			"Refund": "support.type.obelisk", "irreversible": "storage.modifier.effect.obelisk", "1500ms": "constant.numeric.obelisk",
		}},
		{`refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund`, map[string]string{
			"refund": "entity.name.label.obelisk", "issueRefund": "entity.name.function.call.obelisk",
			"†": "punctuation.definition.variable.obelisk", "input": "variable.language.obelisk",
			".customerId": "variable.other.member.obelisk", "state": "variable.language.obelisk", ".refund": "variable.other.member.obelisk",
		}},
		{`  approve "Issue this refund to †input.customerId?"`, map[string]string{
			"approve": "keyword.control.obelisk", "Issue this refund to": "string.quoted.double.obelisk",
			"input": "string.quoted.double.obelisk variable.language.obelisk",
		}},
		{`  retry 2 backoff 250ms`, map[string]string{"retry": "keyword.control.obelisk", "2": "constant.numeric.obelisk", "backoff": "keyword.control.obelisk"}},
		{`mode lazy`, map[string]string{"mode": "keyword.other.obelisk", "lazy": "constant.language.obelisk"}},
		{`for each c in $input.cities max 10: lookup(city: $c)`, map[string]string{
			"for": "keyword.other.obelisk", "each": "keyword.other.obelisk", "$": "punctuation.definition.variable.obelisk",
			"lookup": "entity.name.function.call.obelisk", "max": "keyword.other.obelisk",
		}},
	} {
		got := g.scopes(c.line)
		for text, want := range c.want {
			if got[text] != want {
				t.Errorf("%s\n  %q has scope %q, want %q (tokens: %q)", c.line, text, got[text], want, g.tokenize(c.line, g.Patterns))
			}
		}
	}
}

// TestGrammarScreenshot renders examples/refund.plan highlighted by the
// grammar in headless Chromium, for docs/editors.md, when
// OBELISK_GRAMMAR_SCREENSHOT names the PNG to write.
func TestGrammarScreenshot(t *testing.T) {
	out := os.Getenv("OBELISK_GRAMMAR_SCREENSHOT")
	if out == "" {
		t.Skip("set OBELISK_GRAMMAR_SCREENSHOT=FILE.png to render the highlighting (needs chromium: apt-get install chromium)")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed: apt-get install chromium")
	}
	g := loadGrammar(t)
	src, err := os.ReadFile("../examples/refund.plan")
	if err != nil {
		t.Fatal(err)
	}
	colors := []struct{ prefix, css string }{
		{"comment", "color:#6a9955;font-style:italic"}, {"string", "color:#ce9178"}, {"variable.language", "color:#569cd6"},
		{"variable.other.member", "color:#9cdcfe"}, {"punctuation.definition.variable", "color:#569cd6"},
		{"keyword.control", "color:#c586c0"}, {"keyword.operator", "color:#d4d4d4"}, {"keyword", "color:#569cd6"},
		{"entity.name.label", "color:#dcdcaa;font-weight:bold"}, {"entity.name.function", "color:#dcdcaa"},
		{"storage.modifier", "color:#f44747"}, {"support.type", "color:#4ec9b0"}, {"constant", "color:#b5cea8"},
		{"variable.parameter", "color:#9cdcfe"},
	}
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:12px;font:14px/1.4 'DejaVu Sans Mono',monospace;color:#d4d4d4">`)
	for _, line := range strings.Split(strings.TrimRight(string(src), "\n"), "\n") {
		for _, tk := range g.tokenize(line, g.Patterns) {
			style := ""
			scope := tk.scope
			if i := strings.LastIndexByte(scope, ' '); i >= 0 && !strings.HasPrefix(scope, "string") {
				scope = scope[i+1:]
			}
			for _, c := range colors {
				if strings.HasPrefix(scope, c.prefix) {
					style = c.css
					break
				}
			}
			fmt.Fprintf(&b, `<span style="%s">%s</span>`, style, html.EscapeString(tk.text))
		}
		b.WriteString("\n")
	}
	b.WriteString("</pre>")
	page := filepath.Join(t.TempDir(), "refund.html")
	if err := os.WriteFile(page, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(src), "\n")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		fmt.Sprintf("--window-size=1180,%d", 30+lines*20), "--screenshot="+abs, "file://"+page)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
}
