package lang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/width"
)

// oneLinePlan returns a plan of n calls on one line, and a warning on
// each call, as the checker gives an irreversible tool without approval.
func oneLinePlan(n int) ([]byte, Diagnostics) {
	var b bytes.Buffer
	var diags Diagnostics
	column := 1
	for i := range n {
		if i > 0 {
			b.WriteString("; ")
			column += 2
		}
		off := b.Len()
		call := fmt.Sprintf("f(x: %d) -> †state.r%d", i, i)
		b.WriteString(call)
		diags = append(diags, &Diagnostic{Severity: SeverityWarning, Code: UnapprovedEffect, File: "p.plan",
			Message: "f is irreversible, and no approval comes before it",
			Span:    Span{Pos{Offset: off, Line: 1, Column: column}, Pos{Offset: off + 1, Line: 1, Column: column + 1}},
			Fix:     &Fix{Message: "add `approve` to the step (or `approve` to the plan)"}})
		column += utf8.RuneCountInString(call)
	}
	b.WriteByte('\n')
	return b.Bytes(), diags
}

// cells returns how many terminal cells text takes: two for a wide East
// Asian character, none for a combining mark, one for any other.
func cells(text string) int {
	n := 0
	for _, r := range text {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me):
		case width.LookupRune(r).Kind() == width.EastAsianWide || width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// excerptLines returns the source and caret lines of the first excerpt of
// WriteText's output, without their gutters.
func excerptLines(t *testing.T, out string) (string, string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) < 3 {
		t.Fatalf("no excerpt in:\n%s", out)
	}
	_, text, ok1 := strings.Cut(lines[1], " | ")
	_, caret, ok2 := strings.Cut(lines[2], " | ")
	if !ok1 || !ok2 {
		t.Fatalf("no excerpt in:\n%s", out)
	}
	return text, caret
}

// TestExcerptWindow: a line longer than about a hundred columns is cut
// around the range, with … where it was cut, and the caret stays under the
// character the range starts at, whatever the line holds before it:
// characters of several bytes, wide characters, combining marks, tabs and
// characters shown escaped.
func TestExcerptWindow(t *testing.T) {
	pieces := []string{"a", "b", " ", "†", "日本", "e\u0301", "\t", "\x1b", "\u202e", "🙂", "\xff", "，"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var line strings.Builder
		for line.Len() < 50+rng.IntN(2000) {
			line.WriteString(pieces[rng.IntN(len(pieces))])
		}
		before := line.String()
		line.Reset()
		for line.Len() < rng.IntN(2000) {
			line.WriteString(pieces[rng.IntN(len(pieces))])
		}
		after := line.String()
		src := []byte("tool f() -> int\n" + before + "@" + strings.Repeat("#", rng.IntN(300)) + after + "\nnext line\n")
		off := len("tool f() -> int\n") + len(before)
		end := off + 1 + strings.Count(string(src[off+1:]), "#")
		for src[end-1] != '#' && src[end-1] != '@' {
			end--
		}
		if rng.IntN(3) == 0 {
			end = off + 1 // a caret
		}
		span := Span{Pos{Offset: off, Line: 2, Column: utf8.RuneCountInString(before) + 1}, Pos{Offset: end, Line: 2, Column: utf8.RuneCount(src[len("tool f() -> int\n"):end]) + 1}}
		d := &Diagnostic{Severity: SeverityError, Code: ParseError, File: "p.plan", Message: "m", Span: span}
		var b strings.Builder
		if err := WriteText(&b, Sources{"p.plan": src}, Diagnostics{d}, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		text, caret := excerptLines(t, b.String())
		at := strings.IndexByte(text, '@')
		if at < 0 {
			t.Fatalf("case %d: the excerpt %q leaves out the range's start", i, text)
		}
		pad := len(caret) - len(strings.TrimLeft(caret, " "))
		if want := cells(text[:at]); pad != want {
			t.Fatalf("case %d: caret at column %d, want %d (under @):\n%s\n%s", i, pad, want, text, caret)
		}
		marks := strings.Count(caret, "^")
		if want := cells(text[at:]) - cells(strings.TrimLeft(text[at:], "@#")); end > off+1 && marks != want && !strings.HasSuffix(text, cutMark) {
			t.Fatalf("case %d: %d marks, want %d under the range:\n%s\n%s", i, marks, want, text, caret)
		}
		if n := cells(text); n > excerptColumns+2*utf8.RuneCountInString(cutMark)+10 {
			t.Fatalf("case %d: the excerpt is %d columns wide:\n%s", i, n, text)
		}
		if cells(text[:at]) < 10 && strings.HasPrefix(text, cutMark) {
			t.Fatalf("case %d: too little is shown before the range:\n%s", i, text)
		}
		for _, r := range text {
			if shownRaw(r) {
				t.Fatalf("case %d: the excerpt has %U raw: %q", i, r, text)
			}
		}
		if !strings.HasPrefix(text, cutMark) && !strings.HasPrefix(text, strings.ReplaceAll(EscapeControl(before), "\t", "    ")[:min(3, len(EscapeControl(before)))]) {
			t.Fatalf("case %d: the excerpt is not cut but does not start the line: %q", i, text)
		}
	}
}

func TestExcerptCut(t *testing.T) {
	long := strings.Repeat("abcdefghij", 30) // 300 columns
	for _, tc := range []struct {
		name      string
		line      string
		off, end  int
		text      string
		caretPad  int
		caretMark int
	}{
		{"short line", "f(x: 1) -> †state.r", 0, 1, "f(x: 1) -> †state.r", 0, 1},
		{"start of a long line", long, 0, 1, long[:100] + "…", 0, 1},
		{"middle of a long line", long, 150, 151, "…" + long[100:200] + "…", 51, 1},
		{"end of a long line", long, 299, 300, "…" + long[200:], 100, 1},
		{"after the end", long, 300, 300, "…" + long[200:], 101, 1},
		{"a long range", long, 150, 290, "…" + long[130:230] + "…", 21, 80},
		{"a range to the end of the line", long[:120], 10, 120, long[:100] + "…", 10, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.line + "\n")
			span := Span{Pos{Offset: tc.off, Line: 1, Column: tc.off + 1}, Pos{Offset: tc.end, Line: 1, Column: tc.end + 1}}
			var b strings.Builder
			WriteText(&b, Sources{"p": src}, Diagnostics{{Severity: SeverityError, File: "p", Message: "m", Span: span}}, TextOptions{})
			text, caret := excerptLines(t, b.String())
			if text != tc.text {
				t.Errorf("excerpt %q, want %q", text, tc.text)
			}
			want := strings.Repeat(" ", tc.caretPad) + strings.Repeat("^", tc.caretMark)
			if caret != want {
				t.Errorf("caret line\n%q, want\n%q", caret, want)
			}
		})
	}
}

// TestExcerptReadsNearTheRange: an excerpt of a line of megabytes reads
// only the bytes around its range: excerpts of every call of a plan of
// 100,000 calls on one line take about as long as those of a short plan.
func TestExcerptReadsNearTheRange(t *testing.T) {
	src, diags := oneLinePlan(100000)
	allocs := testing.AllocsPerRun(3, func() {
		for _, d := range diags[len(diags)/2 : len(diags)/2+100] {
			if _, ok := excerptWindow(src, d.Span); !ok {
				t.Fatal("no excerpt")
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
	n := 0
	for _, d := range diags {
		w, _ := excerptWindow(src, d.Span)
		n += len(w.text)
	}
	if n > 150*len(diags) {
		t.Errorf("the excerpts of %d diagnostics hold %d bytes", len(diags), n)
	}
}

func TestWriteTextMax(t *testing.T) {
	src, diags := oneLinePlan(5)
	diags = append(diags, &Diagnostic{Severity: SeverityError, Code: UnknownTool, File: "p.plan", Message: "unknown tool g", Span: diags[4].Span},
		&Diagnostic{Severity: SeverityError, Code: UnknownTool, File: "p.plan", Message: "unknown tool h", Span: diags[4].Span})
	diags.Sort()
	var b strings.Builder
	if err := WriteText(&b, Sources{"p.plan": src}, diags, TextOptions{Max: 2, More: "--max-diagnostics 0 shows them all"}); err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "p.plan:") {
			headers = append(headers, line)
		}
	}
	want := []string{
		"p.plan:1:1: warning: f is irreversible, and no approval comes before it [unapproved-effect]",
		"p.plan:1:23: warning: f is irreversible, and no approval comes before it [unapproved-effect]",
		"p.plan:1:89: error: unknown tool g [unknown-tool]",
		"p.plan:1:89: error: unknown tool h [unknown-tool]",
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("diagnostics shown (-want +got):\n%s", diff)
	}
	tail := "and 3 more warnings (--max-diagnostics 0 shows them all)\n2 errors, 5 warnings in all\n"
	if !strings.HasSuffix(b.String(), tail) {
		t.Errorf("the text ends\n%s\nwant\n%s", b.String()[max(0, b.Len()-200):], tail)
	}

	b.Reset()
	WriteText(&b, Sources{"p.plan": src}, diags, TextOptions{})
	if got := strings.Count(b.String(), "\np.plan:") + 1; got != 7 || strings.Contains(b.String(), "in all") {
		t.Errorf("without Max, %d diagnostics shown, want 7:\n%s", got, b.String())
	}
}

func TestWriteTextRelatedMax(t *testing.T) {
	src := []byte("f() -> †state.a\n")
	d := &Diagnostic{Severity: SeverityError, Code: Cycle, File: "p", Message: "cycle", Span: Span{Pos{0, 1, 1}, Pos{1, 1, 2}}}
	for i := range 25 {
		d.Related = append(d.Related, Related{Span: d.Span, Message: fmt.Sprintf("step %d", i)})
	}
	var b strings.Builder
	WriteText(&b, Sources{"p": src}, Diagnostics{d}, TextOptions{Max: 100})
	if n := strings.Count(b.String(), ": step "); n != maxRelated || !strings.Contains(b.String(), "  and 15 more related locations\n") {
		t.Errorf("%d related locations shown, want %d and a count of the rest:\n%s", n, maxRelated, b.String())
	}
}

// countingWriter counts what is written to it, and checks that every
// write ends a line unless it is JSON.
type countingWriter struct {
	t      *testing.T
	n      int
	writes int
	json   bool
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if !w.json && len(p) > 0 && p[len(p)-1] != '\n' {
		w.t.Errorf("a write of %d bytes ends in the middle of a line", len(p))
	}
	w.n += len(p)
	w.writes++
	return len(p), nil
}

// TestWriteTextStreams: the text of many diagnostics is written a chunk
// at a time, each write whole lines, and grows with the diagnostics shown,
// not with the length of the line they are on.
func TestWriteTextStreams(t *testing.T) {
	src, diags := oneLinePlan(10000)
	w := &countingWriter{t: t}
	if err := WriteText(w, Sources{"p.plan": src}, diags, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.writes < w.n/(2*textChunk) {
		t.Errorf("%d bytes in %d writes", w.n, w.writes)
	}
	if w.n > 400*len(diags) {
		t.Errorf("%d diagnostics make %d bytes", len(diags), w.n)
	}
	small := &countingWriter{t: t}
	WriteText(small, Sources{"p.plan": src}, diags, TextOptions{Max: 100})
	if small.n > 400*100+200 {
		t.Errorf("100 of %d diagnostics make %d bytes", len(diags), small.n)
	}
	j := countingWriter{t: t, json: true}
	if err := (Report{File: "p.plan", Diagnostics: diags, Source: src}).WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	if j.n > 600*len(diags) || j.writes < j.n/(2*textChunk) {
		t.Errorf("the JSON report of %d diagnostics is %d bytes in %d writes", len(diags), j.n, j.writes)
	}
}

func TestReportJSON(t *testing.T) {
	src, diags := oneLinePlan(20)
	diags = append(diags, &Diagnostic{Severity: SeverityError, Code: UnknownTool, File: "p.plan", Message: strings.Repeat("x", 5000), Span: diags[10].Span,
		Related: make([]Related, 30)})
	for i := range diags[20].Related {
		diags[20].Related[i] = Related{Span: diags[i%20].Span, Message: "here"}
	}
	diags.Sort()
	b, err := json.Marshal(Report{File: "p.plan", OK: false, Diagnostics: diags, Source: src, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Diagnostics []struct {
			Severity      string
			Message       string
			Range         jsonRange
			Excerpt       string
			ExcerptColumn int
			Related       []struct {
				Excerpt       string
				ExcerptColumn int
				Range         jsonRange
			}
			RelatedOmitted int
		}
		Counts, Omitted map[string]int
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"error": 1, "warning": 20, "info": 0}; !cmp.Equal(doc.Counts, want) {
		t.Errorf("counts %v, want %v", doc.Counts, want)
	}
	if want := map[string]int{"error": 0, "warning": 15, "info": 0}; !cmp.Equal(doc.Omitted, want) {
		t.Errorf("omitted %v, want %v", doc.Omitted, want)
	}
	if len(doc.Diagnostics) != 6 {
		t.Fatalf("%d diagnostics, want 6", len(doc.Diagnostics))
	}
	// The excerpt's column is where the range starts, in the source's
	// characters.
	check := func(what, excerpt string, column int, r jsonRange) {
		t.Helper()
		if n := utf8.RuneCountInString(excerpt); n > excerptColumns+2 || n < 50 {
			t.Errorf("%s: an excerpt of %d characters: %q", what, n, excerpt)
		}
		rs := []rune(excerpt)
		if column < 1 || column > len(rs) {
			t.Fatalf("%s: column %d of %q", what, column, excerpt)
		}
		want := []rune(string(src[r.Start.Offset:]))
		if got := string(rs[column-1:]); !strings.HasPrefix(string(want), strings.TrimSuffix(got, cutMark)) {
			t.Errorf("%s: the excerpt %q at column %d reads %q, want the source at offset %d", what, excerpt, column, got, r.Start.Offset)
		}
	}
	for i, d := range doc.Diagnostics {
		check(fmt.Sprintf("diagnostic %d", i), d.Excerpt, d.ExcerptColumn, d.Range)
		for j, r := range d.Related {
			check(fmt.Sprintf("diagnostic %d, related %d", i, j), r.Excerpt, r.ExcerptColumn, r.Range)
		}
		if d.Severity == "error" {
			if len(d.Related) != maxRelated || d.RelatedOmitted != 20 {
				t.Errorf("%d related and %d left out, want %d and 20", len(d.Related), d.RelatedOmitted, maxRelated)
			}
			if len(d.Message) > maxMessageBytes+len(cutMark) || !strings.HasSuffix(d.Message, cutMark) {
				t.Errorf("a message of %d bytes", len(d.Message))
			}
		}
	}
}

func TestDiagnosticsErrorMax(t *testing.T) {
	_, diags := oneLinePlan(500)
	diags = append(diags, &Diagnostic{Severity: SeverityError, Message: "the error"})
	got := diags.Error()
	lines := strings.Split(got, "\n")
	if len(lines) != maxErrorLines+1 || lines[0] != "error: the error" || lines[len(lines)-1] != "and 401 more" {
		t.Errorf("Error() has %d lines, from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// FuzzExcerpt checks that no text and range make an excerpt panic, that
// an excerpt shows about excerptColumns columns at most, with the caret
// under the range's first character, and that the JSON report's excerpt
// column points at that character.
func FuzzExcerpt(f *testing.F) {
	f.Add([]byte("f(x: 1) -> †state.r\n"), 3, 5)
	f.Add([]byte(strings.Repeat("日本\x1b\t†", 100)), 250, 400)
	f.Add([]byte("a\r\nb\xff\u202e"), 1, 9)
	f.Fuzz(func(t *testing.T, src []byte, start, end int) {
		if start < 0 || start > len(src) || end < start || end > len(src) {
			return
		}
		for start > 0 && start < len(src) && !utf8.RuneStart(src[start]) {
			start--
		}
		span := Span{PosAt(src, start), PosAt(src, end)}
		d := &Diagnostic{Severity: SeverityError, File: "f", Message: "m", Span: span}
		var b strings.Builder
		if err := WriteText(&b, Sources{"f": src}, Diagnostics{d}, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		text, caret := excerptLines(t, b.String())
		// An escape may take up to 10 columns and a wide character 2.
		if n := cells(text); n > excerptColumns+2+10 {
			t.Fatalf("an excerpt of %d columns: %q", n, text)
		}
		for _, r := range text {
			if shownRaw(r) {
				t.Fatalf("the excerpt has %U raw: %q", r, text)
			}
		}
		pad := len(caret) - len(strings.TrimLeft(caret, " "))
		w, _ := excerptWindow(src, span)
		shownBefore := ""
		if w.cutLeft {
			shownBefore = cutMark
		}
		shownBefore += strings.ReplaceAll(EscapeControl(string(w.text[:w.start])), "\t", "    ")
		if !strings.HasPrefix(text, shownBefore) || pad != cells(shownBefore) {
			t.Fatalf("caret at column %d of %q, want %d", pad, text, cells(shownBefore))
		}
		var doc struct{ Diagnostics []jsonDiag }
		js, err := json.Marshal(Report{File: "f", Diagnostics: Diagnostics{d}, Source: src})
		if err != nil || json.Unmarshal(js, &doc) != nil || len(doc.Diagnostics) != 1 {
			t.Fatalf("the report %s: %v", js, err)
		}
		jd := doc.Diagnostics[0]
		if rs := []rune(jd.Excerpt); jd.ExcerptColumn < 1 || jd.ExcerptColumn > len(rs)+1 {
			t.Fatalf("excerpt column %d of %q", jd.ExcerptColumn, jd.Excerpt)
		}
	})
}
