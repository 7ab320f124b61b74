package lang

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscapeControl(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain text, 100%", "plain text, 100%"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{`a backslash \x1b stays`, `a backslash \x1b stays`},
		{"é ü ñ 日本語 🙂 \u00a0 \ufffd", "é ü ñ 日本語 🙂 \u00a0 \ufffd"},
		{"\x1b[2Kcleared", `\x1b[2Kcleared`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"amount 1\ramount 9999", `amount 1\ramount 9999`},
		{"\x00\x01\b\f\v\x1f\x7f", `\x00\x01\b\f\v\x1f\x7f`},
		{"\u0080\u0085\u009b2K\u009f", `\u0080\u0085\u009b2K\u009f`},
		{"\xc2\x9b", `\u009b`}, // C1 as UTF-8
		{"\x9b2K", `\x9b2K`},   // C1 as a lone byte: not UTF-8
		{"\xff\xfe ok \xe2\x80", `\xff\xfe ok \xe2\x80`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
		{"\u200b\u200c\u200d\u200e\u200f\u061c\u2060\ufeff\u00ad", `\u200b\u200c\u200d\u200e\u200f\u061c\u2060\ufeff\u00ad`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`},
		{"tag\U000e0041", `tag\U000e0041`},
	} {
		if got := EscapeControl(tc.in); got != tc.want {
			t.Errorf("EscapeControl(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// shownRaw reports whether EscapeControl must not leave a character as it
// is.
func shownRaw(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029')
}

// FuzzEscapeControl: the result is UTF-8 without a control or format
// character but line feed and tab; text without them is returned as it
// is; escaping twice is escaping once; and in JSON, the characters are
// escaped without changing the value.
func FuzzEscapeControl(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b[2K\r\u009b\u202e", "\xff\xc2", "日本\u2028\U000e0001", "a\tb\nc", "\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := EscapeControl(s)
		if !utf8.ValidString(out) {
			t.Fatalf("EscapeControl(%q) = %q is not UTF-8", s, out)
		}
		for _, r := range out {
			if shownRaw(r) {
				t.Fatalf("EscapeControl(%q) = %q has %U", s, out, r)
			}
		}
		clean := utf8.ValidString(s)
		for _, r := range s {
			clean = clean && !shownRaw(r)
		}
		if clean && out != s {
			t.Fatalf("EscapeControl(%q) = %q changed clean text", s, out)
		}
		if again := EscapeControl(out); again != out {
			t.Fatalf("EscapeControl(%q) = %q, escaped again %q", s, out, again)
		}
		// A string literal as the formatter writes it shows none either.
		for _, r := range Quote(s) {
			if shownRaw(r) {
				t.Fatalf("Quote(%q) = %q has %U", s, Quote(s), r)
			}
		}

		enc, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			t.Fatal(err)
		}
		esc := EscapeControlJSON(enc)
		for i := 0; i < len(esc); {
			r, n := utf8.DecodeRune(esc[i:])
			if r == utf8.RuneError && n == 1 || shownRaw(r) {
				t.Fatalf("EscapeControlJSON(%s) = %s has %q", enc, esc, esc[i:i+n])
			}
			i += n
		}
		var a, b map[string]string
		if err := json.Unmarshal(enc, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(esc, &b); err != nil {
			t.Fatalf("EscapeControlJSON(%s) = %s: %v", enc, esc, err)
		}
		if !maps.Equal(a, b) {
			t.Fatalf("EscapeControlJSON changed the value: %q, then %q", a, b)
		}
	})
}

func TestEscapeControlJSON(t *testing.T) {
	in, err := json.Marshal(map[string]any{"a\u202e": "x\x1b\x7f\u009b\u200d\U000e0001 ok é"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(EscapeControlJSON(in))
	want := `{"a\u202e":"x\u001b\u007f\u009b\u200d\udb40\udc01 ok é"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	clean := []byte(`{"a": [1, "b\n"],` + "\n" + `  "c": "日本"}`)
	if got := EscapeControlJSON(clean); &got[0] != &clean[0] {
		t.Errorf("clean JSON was copied")
	}
}

// TestDiagnosticTextEscapes: a plan line with an escape sequence, a bare
// carriage return and a bidirectional override is quoted escaped, with the
// caret under the range; so are messages, related notes and fixes.
func TestDiagnosticTextEscapes(t *testing.T) {
	src := []byte("tool f(x: string) -> int\nf(x: \"\x1b[2K\rok\u202e\") -> †state..a\n")
	_, diags := Parse("p.plan", src)
	if len(diags) == 0 {
		t.Fatal("no diagnostic")
	}
	diags = append(diags, &Diagnostic{Severity: SeverityWarning, Code: UnknownTool, File: "p.plan",
		Message: "tool \x1b]0;owned\x07 \u009b2J", Span: Span{Pos{Offset: 0, Line: 1, Column: 1}, Pos{Offset: 4, Line: 1, Column: 5}},
		Related: []Related{{Span: diags[0].Span, Message: "here\r\x1b[1A"}},
		Fix:     &Fix{Message: "call \u202egnp.tsil"}})
	var b strings.Builder
	if err := WriteText(&b, Sources{"p.plan": src}, diags, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, r := range got {
		if shownRaw(r) {
			t.Fatalf("the text has %U raw:\n%s", r, got)
		}
	}
	line := `f(x: "\x1b[2K\rok\u202e") -> †state..a`
	caret := strings.Repeat(" ", utf8.RuneCountInString(`f(x: "\x1b[2K\rok\u202e") -> †state`)) + "^"
	want := `p.plan:2:27: error: expected a field name after '.' in reference †state. [parse-error]
  2 | ` + line + `
    | ` + caret + `
p.plan:1:1: warning: tool \x1b]0;owned\a \u009b2J [unknown-tool]
  1 | tool f(x: string) -> int
    | ^^^^
  p.plan:2:27: here\r\x1b[1A
  2 | ` + line + `
    | ` + strings.ReplaceAll(caret, "^", "-") + `
  fix: call \u202egnp.tsil
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
