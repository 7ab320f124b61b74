package lang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
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
	// Max is the most diagnostics of each severity written, the first
	// ones in order; 0 writes them all. Two lines then count the
	// diagnostics left out and all of them. With a bound, a diagnostic
	// shows at most 10 of its related locations.
	Max int
	// More, when diagnostics are left out, says how to see them: the
	// caller's words, such as the name of its setting of Max.
	More string
}

// maxRelated is how many related locations of a diagnostic are shown when
// the diagnostics are limited: a cycle through every step of a plan has
// one for each.
const maxRelated = 10

// textChunk is about how much text WriteText gathers before it writes: a
// chunk holds whole diagnostics, and so whole lines.
const textChunk = 32 << 10

// WriteText prints diagnostics for people: one header line each, as a
// compiler does ("file:line:col: error: message [code]"), then the source
// line with a caret under the range, related locations, and the suggested
// fix. A line longer than about a hundred columns is cut around the range,
// with "…" where it was cut. Messages and source lines quote plan text,
// which may hold control characters: they are written escaped (see
// EscapeControl), so that the text cannot act on the terminal, and the
// caret stays under its range. The text is written as it is made, a few
// diagnostics at a time, each write ending with a line.
func WriteText(w io.Writer, srcs Sources, diags Diagnostics, opts TextOptions) error {
	var b bytes.Buffer
	var shown, total tally
	for _, d := range diags {
		total.add(d.Severity)
		if opts.Max > 0 && shown.of(d.Severity) >= opts.Max {
			continue
		}
		shown.add(d.Severity)
		writeDiag(&b, srcs, d, opts)
		if b.Len() >= textChunk {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
		}
	}
	writeOmitted(&b, shown, total, opts.More)
	if b.Len() == 0 {
		return nil
	}
	_, err := w.Write(b.Bytes())
	return err
}

// tally counts diagnostics by severity.
type tally [SeverityInfo + 1]int

func severityIndex(s Severity) int { return int(min(max(s, SeverityError), SeverityInfo)) }

func (t *tally) add(s Severity)    { t[severityIndex(s)]++ }
func (t *tally) of(s Severity) int { return t[severityIndex(s)] }

// count says n diagnostics of severity s: "1 error", "2 warnings".
func count(n int, prefix string, s Severity) string {
	noun := s.String()
	if s == SeverityInfo {
		noun = "info diagnostic"
	}
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s%s", n, prefix, noun)
}

// writeOmitted counts, when some were left out, the diagnostics left out
// and all of them.
func writeOmitted(b *bytes.Buffer, shown, total tally, more string) {
	var left, all []string
	for s := SeverityError; s <= SeverityInfo; s++ {
		if n := total.of(s) - shown.of(s); n > 0 {
			left = append(left, count(n, "more ", s))
		}
		if total.of(s) > 0 {
			all = append(all, count(total.of(s), "", s))
		}
	}
	if len(left) == 0 {
		return
	}
	b.WriteString("and " + strings.Join(left, ", "))
	if more != "" {
		b.WriteString(" (" + EscapeControl(more) + ")")
	}
	b.WriteString("\n" + strings.Join(all, ", ") + " in all\n")
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

func writeDiag(b *bytes.Buffer, srcs Sources, d *Diagnostic, opts TextOptions) {
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
	b.WriteString(paint(sevColor, d.Severity.String()+":") + " " + EscapeControl(clipMessage(d.Message)))
	if d.Code != "" {
		b.WriteString(" [" + EscapeControl(string(d.Code)) + "]")
	}
	b.WriteByte('\n')
	excerpt(b, srcs[d.File], d.Span, paint(sevColor, "^"))
	related := d.Related
	if opts.Max > 0 && len(related) > maxRelated {
		related = related[:maxRelated]
	}
	for _, r := range related {
		file := r.File
		if file == "" {
			file = d.File
		}
		fmt.Fprintf(b, "  %s: %s\n", paint(ansiBold, EscapeControl(file)+":"+r.Span.Start.String()), EscapeControl(clipMessage(r.Message)))
		excerpt(b, srcs[file], r.Span, paint(ansiCyan, "-"))
	}
	if n := len(d.Related) - len(related); n > 0 {
		fmt.Fprintf(b, "  and %d more related locations\n", n)
	}
	if d.Fix != nil {
		b.WriteString("  " + paint(ansiCyan, "fix:") + " " + EscapeControl(clipMessage(d.Fix.Message)) + "\n")
	}
}

// excerpt prints the first line of span, or about excerptColumns columns
// of it around the span, with marks under the range.
func excerpt(b *bytes.Buffer, src []byte, span Span, mark string) {
	w, ok := excerptWindow(src, span)
	if !ok {
		return
	}
	gutter := strconv.Itoa(span.Start.Line)
	b.WriteString("  " + gutter + " | ")
	pad := 0
	if w.cutLeft {
		b.WriteString(cutMark)
		pad = utf8.RuneCountInString(cutMark)
	}
	writeShown(b, w.text)
	if w.cutRight {
		b.WriteString(cutMark)
	}
	b.WriteString("\n  ")
	writeSpaces(b, len(gutter))
	b.WriteString(" | ")
	writeSpaces(b, pad+columnsOf(w.text[:w.start]))
	for range max(columnsOf(w.text[w.start:w.end]), 1) {
		b.WriteString(mark)
	}
	b.WriteByte('\n')
}

// writeShown writes source text as an excerpt shows it: tabs as four
// spaces, and escaped (EscapeControl).
func writeShown(b *bytes.Buffer, text []byte) {
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\t')
		if i < 0 {
			i = len(text)
		}
		b.WriteString(EscapeControl(string(text[:i])))
		if i < len(text) {
			b.WriteString("    ")
			i++
		}
		text = text[i:]
	}
}

func writeSpaces(b *bytes.Buffer, n int) {
	for range n {
		b.WriteByte(' ')
	}
}

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
	File          string    `json:"file"`
	Range         jsonRange `json:"range"`
	Message       string    `json:"message"`
	Excerpt       string    `json:"excerpt,omitempty"`
	ExcerptColumn int       `json:"excerptColumn,omitempty"`
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
	Severity       string        `json:"severity"`
	Code           Code          `json:"code"`
	Message        string        `json:"message"`
	Range          jsonRange     `json:"range"`
	Excerpt        string        `json:"excerpt,omitempty"`
	ExcerptColumn  int           `json:"excerptColumn,omitempty"`
	Related        []jsonRelated `json:"related"`
	RelatedOmitted int           `json:"relatedOmitted,omitempty"`
	Fix            *jsonFix      `json:"fix"`
}

// jsonCounts counts diagnostics by severity.
type jsonCounts struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

func (t tally) json() jsonCounts {
	return jsonCounts{Error: t.of(SeverityError), Warning: t.of(SeverityWarning), Info: t.of(SeverityInfo)}
}

// Report is the JSON document `obelisk check --format json` prints for one
// file, and what a model is shown of its plan's problems.
type Report struct {
	File        string
	OK          bool
	Diagnostics Diagnostics
	// Source is the file's text, which the excerpts are cut from; it is
	// not encoded.
	Source []byte
	// Max is the most diagnostics of each severity encoded, the first
	// ones in order; 0 encodes them all. "omitted" counts the
	// diagnostics left out. With a bound, a diagnostic has at most 10 of
	// its related locations, and "relatedOmitted" counts the rest.
	Max int
}

// MarshalJSON encodes the report as one line of JSON (see WriteJSON).
func (r Report) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteJSON writes the report as one line of JSON, a few diagnostics at a
// time:
//
//	{"file", "ok", "diagnostics": [{"severity", "code", "message", "range",
//	"excerpt", "excerptColumn", "related", "relatedOmitted", "fix"}],
//	"counts": {"error", "warning", "info"}, "omitted": {...}}
//
// The excerpt is the source line the range starts on, or about a hundred
// characters of it around the range with "…" where it was cut; this helps
// a model see what to repair. excerptColumn is the column of the excerpt
// (counting characters from 1) that the range starts at. A diagnostic in
// another file than the report's has no excerpt. counts are the report's
// diagnostics by severity, and omitted those Max left out.
func (r Report) WriteJSON(w io.Writer) error {
	var buf bytes.Buffer
	// Messages and excerpts quote plan text, which is clearer without
	// encoding/json's escaping of <, > and & for HTML.
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // the encoder's line feed
		return nil
	}
	// Plan text may hold characters a terminal acts on, which
	// encoding/json writes as they are: EscapeControlJSON escapes them.
	flush := func() error {
		_, err := w.Write(EscapeControlJSON(buf.Bytes()))
		buf.Reset()
		return err
	}
	buf.WriteString(`{"file":`)
	if err := encode(r.File); err != nil {
		return err
	}
	fmt.Fprintf(&buf, `,"ok":%t,"diagnostics":[`, r.OK)
	var shown, total tally
	for _, d := range r.Diagnostics {
		total.add(d.Severity)
		if r.Max > 0 && shown.of(d.Severity) >= r.Max {
			continue
		}
		if shown != (tally{}) {
			buf.WriteByte(',')
		}
		shown.add(d.Severity)
		if err := encode(r.jsonDiag(d)); err != nil {
			return err
		}
		if buf.Len() >= textChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	var omitted tally
	for i := range total {
		omitted[i] = total[i] - shown[i]
	}
	buf.WriteString(`],"counts":`)
	encode(total.json())
	buf.WriteString(`,"omitted":`)
	encode(omitted.json())
	buf.WriteString("}\n")
	return flush()
}

// jsonDiag returns the JSON form of a diagnostic of the report.
func (r Report) jsonDiag(d *Diagnostic) jsonDiag {
	jd := jsonDiag{
		Severity: d.Severity.String(),
		Code:     d.Code,
		Message:  clipMessage(d.Message),
		Range:    toJSONRange(d.Span),
		Related:  []jsonRelated{},
	}
	if d.File == "" || d.File == r.File {
		jd.Excerpt, jd.ExcerptColumn = jsonExcerpt(r.Source, d.Span)
	}
	related := d.Related
	if r.Max > 0 && len(related) > maxRelated {
		related = related[:maxRelated]
	}
	jd.RelatedOmitted = len(d.Related) - len(related)
	for _, rel := range related {
		file := rel.File
		if file == "" {
			file = d.File
		}
		jr := jsonRelated{File: file, Range: toJSONRange(rel.Span), Message: clipMessage(rel.Message)}
		if file == "" || file == r.File {
			jr.Excerpt, jr.ExcerptColumn = jsonExcerpt(r.Source, rel.Span)
		}
		jd.Related = append(jd.Related, jr)
	}
	if d.Fix != nil {
		jf := &jsonFix{Message: clipMessage(d.Fix.Message)}
		for _, e := range d.Fix.Edits {
			jf.Edits = append(jf.Edits, jsonEdit{File: e.File, Range: toJSONRange(e.Span), NewText: e.NewText})
		}
		jd.Fix = jf
	}
	return jd
}

// jsonExcerpt returns the excerpt of span in src as the JSON report gives
// it, and the column of the excerpt the span starts at; "" and 0 when
// span does not point into src.
func jsonExcerpt(src []byte, span Span) (string, int) {
	w, ok := excerptWindow(src, span)
	if !ok {
		return "", 0
	}
	var b strings.Builder
	if w.cutLeft {
		b.WriteString(cutMark)
	}
	column := utf8.RuneCountInString(b.String()) + utf8.RuneCount(w.text[:w.start]) + 1
	b.Write(w.text)
	if w.cutRight {
		b.WriteString(cutMark)
	}
	return b.String(), column
}

func toJSONRange(s Span) jsonRange {
	return jsonRange{
		Start: jsonPos{Line: s.Start.Line, Column: s.Start.Column, Offset: s.Start.Offset},
		End:   jsonPos{Line: s.End.Line, Column: s.End.Column, Offset: s.End.Offset},
	}
}
