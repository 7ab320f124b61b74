package lang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Sources maps file names to their text, so diagnostics can be printed
// with excerpts of the lines they point at.
type Sources map[string][]byte

// TextOptions configure WriteText.
type TextOptions struct {
	// Color adds ANSI colours; set it only when writing to a terminal.
	Color bool
}

// WriteText prints diagnostics for people: one header line each, as a
// compiler does ("file:line:col: error: message [code]"), then the source
// line with a caret under the range, related locations, and the suggested
// fix. Messages and source lines quote plan text, which may hold control
// characters: they are written escaped (see EscapeControl), so that the
// text cannot act on the terminal, and the caret stays under its range.
func WriteText(w io.Writer, srcs Sources, diags Diagnostics, opts TextOptions) error {
	var b strings.Builder
	for _, d := range diags {
		writeDiag(&b, srcs, d, opts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

func writeDiag(b *strings.Builder, srcs Sources, d *Diagnostic, opts TextOptions) {
	paint := func(code, s string) string {
		if !opts.Color {
			return s
		}
		return code + s + ansiReset
	}
	sevColor := ansiRed
	if d.Severity != SeverityError {
		sevColor = ansiYellow
	}
	loc := EscapeControl(d.File)
	if d.Span.IsValid() {
		loc += ":" + d.Span.Start.String()
	}
	if loc != "" {
		b.WriteString(paint(ansiBold, loc+":") + " ")
	}
	b.WriteString(paint(sevColor, d.Severity.String()+":") + " " + EscapeControl(d.Message))
	if d.Code != "" {
		b.WriteString(" [" + string(d.Code) + "]")
	}
	b.WriteByte('\n')
	excerpt(b, srcs[d.File], d.Span, paint(sevColor, "^"))
	for _, r := range d.Related {
		file := r.File
		if file == "" {
			file = d.File
		}
		fmt.Fprintf(b, "  %s: %s\n", paint(ansiBold, EscapeControl(file)+":"+r.Span.Start.String()), EscapeControl(r.Message))
		excerpt(b, srcs[file], r.Span, paint(ansiCyan, "-"))
	}
	if d.Fix != nil {
		b.WriteString("  " + paint(ansiCyan, "fix:") + " " + EscapeControl(d.Fix.Message) + "\n")
	}
}

// excerpt prints the first line of span with marks under the range.
func excerpt(b *strings.Builder, src []byte, span Span, mark string) {
	if src == nil || !span.IsValid() || span.Start.Offset > len(src) {
		return
	}
	line := lineAt(src, span.Start.Offset)
	gutter := fmt.Sprintf("%d", span.Start.Line)
	pad := strings.Repeat(" ", len(gutter))
	text := EscapeControl(expandTabs(string(line)))
	fmt.Fprintf(b, "  %s | %s\n", gutter, text)
	startCol := displayWidth(line, span.Start.Column-1)
	n := 1
	if span.End.Line == span.Start.Line && span.End.Column > span.Start.Column {
		n = displayWidth(line, span.End.Column-1) - startCol
	} else if span.End.Line > span.Start.Line {
		n = utf8.RuneCountInString(text) - startCol
	}
	n = max(n, 1)
	fmt.Fprintf(b, "  %s | %s%s\n", pad, strings.Repeat(" ", startCol), strings.Repeat(mark, n))
}

// lineAt returns the line of src containing offset off, without its line
// break.
func lineAt(src []byte, off int) []byte {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	end := bytes.IndexByte(src[off:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += off
	}
	return bytes.TrimRight(src[start:end], "\r")
}

// displayWidth returns the width of the first cols characters of line as
// excerpt shows them: tabs expanded to four columns, and the characters
// EscapeControl escapes as wide as their escapes.
func displayWidth(line []byte, cols int) int {
	w := 0
	for i := 0; i < cols && len(line) > 0; i++ {
		r, n := utf8.DecodeRune(line)
		switch {
		case r == '\t':
			w += 4
		case r < utf8.RuneSelf && keepASCII(byte(r)) || r >= utf8.RuneSelf && n > 1 && !escapedRune(r):
			w++
		default:
			w += len(EscapeControl(string(line[:n])))
		}
		line = line[n:]
	}
	return w
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }

// jsonPos, jsonRange and jsonDiag are the JSON form of diagnostics.
type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Offset int `json:"offset"`
}

type jsonRange struct {
	Start jsonPos `json:"start"`
	End   jsonPos `json:"end"`
}

type jsonRelated struct {
	File    string    `json:"file"`
	Range   jsonRange `json:"range"`
	Message string    `json:"message"`
}

type jsonEdit struct {
	File    string    `json:"file,omitempty"`
	Range   jsonRange `json:"range"`
	NewText string    `json:"newText"`
}

type jsonFix struct {
	Message string     `json:"message"`
	Edits   []jsonEdit `json:"edits,omitempty"`
}

type jsonDiag struct {
	Severity string        `json:"severity"`
	Code     Code          `json:"code"`
	Message  string        `json:"message"`
	Range    jsonRange     `json:"range"`
	Excerpt  string        `json:"excerpt,omitempty"`
	Related  []jsonRelated `json:"related"`
	Fix      *jsonFix      `json:"fix"`
}

// Report is the JSON document `obelisk check --format json` prints for one
// file.
type Report struct {
	File        string
	OK          bool
	Diagnostics Diagnostics
	// Source is the file's text, used for excerpts; it is not printed.
	Source []byte
}

// MarshalJSON encodes the report as
// {"file", "ok", "diagnostics": [{"severity", "code", "message", "range",
// "excerpt", "related", "fix"}]}. The excerpt is the source line the range
// starts on, which helps a model see what to repair; a diagnostic in
// another file than the report's has none.
func (r Report) MarshalJSON() ([]byte, error) {
	out := struct {
		File        string     `json:"file"`
		OK          bool       `json:"ok"`
		Diagnostics []jsonDiag `json:"diagnostics"`
	}{File: r.File, OK: r.OK, Diagnostics: []jsonDiag{}}
	for _, d := range r.Diagnostics {
		jd := jsonDiag{
			Severity: d.Severity.String(),
			Code:     d.Code,
			Message:  d.Message,
			Range:    toJSONRange(d.Span),
			Related:  []jsonRelated{},
		}
		if r.Source != nil && (d.File == "" || d.File == r.File) && d.Span.IsValid() && d.Span.Start.Offset <= len(r.Source) {
			jd.Excerpt = string(lineAt(r.Source, d.Span.Start.Offset))
		}
		for _, rel := range d.Related {
			file := rel.File
			if file == "" {
				file = d.File
			}
			jd.Related = append(jd.Related, jsonRelated{File: file, Range: toJSONRange(rel.Span), Message: rel.Message})
		}
		if d.Fix != nil {
			jf := &jsonFix{Message: d.Fix.Message}
			for _, e := range d.Fix.Edits {
				jf.Edits = append(jf.Edits, jsonEdit{File: e.File, Range: toJSONRange(e.Span), NewText: e.NewText})
			}
			jd.Fix = jf
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	// Messages and excerpts quote plan text, which is clearer without
	// encoding/json's escaping of <, > and & for HTML.
	// They may hold characters a terminal acts on, which encoding/json
	// writes as they are: EscapeControlJSON escapes them.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return EscapeControlJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func toJSONRange(s Span) jsonRange {
	return jsonRange{
		Start: jsonPos{Line: s.Start.Line, Column: s.Start.Column, Offset: s.Start.Offset},
		End:   jsonPos{Line: s.End.Line, Column: s.End.Column, Offset: s.End.Offset},
	}
}
