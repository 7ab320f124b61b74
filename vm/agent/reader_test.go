package agent

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/tools/txtar"
)

// TestAnswerReaderCorpus reads each messy answer of testdata/answers,
// whole and in pieces: the plan it gives is the case's, and each of its
// lines is part of the answer's line of the same number (a reasoning
// block or prose may share that line), so diagnostics point at the
// model's own lines.
func TestAnswerReaderCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/answers/*.txtar")
	if err != nil || len(files) < 15 {
		t.Fatalf("%d cases: %v", len(files), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			parts := map[string]string{}
			for _, f := range ar.Files {
				parts[f.Name] = string(f.Data)
			}
			answer, want := parts["answer"], parts["plan"]
			for _, r := range []io.Reader{strings.NewReader(answer), iotest.OneByteReader(strings.NewReader(answer)), iotest.HalfReader(strings.NewReader(answer))} {
				b, err := io.ReadAll(newAnswerReader(r))
				if err != nil {
					t.Fatal(err)
				}
				got := string(b)
				if nonBlank(got) != nonBlank(want) {
					t.Errorf("plan:\n%s\nwant:\n%s", got, want)
				}
				lines, answerLines := strings.Split(got, "\n"), strings.Split(answer, "\n")
				for i, l := range lines {
					if strings.TrimSpace(l) != "" && (i >= len(answerLines) || !strings.Contains(answerLines[i], l)) {
						t.Errorf("line %d of the plan, %q, is not line %d of the answer", i+1, l, i+1)
					}
				}
			}
			if plan, _ := readAnswer(answer); plan != readAnswerWhole(answer) {
				t.Errorf("readAnswer differs from the reader")
			}
		})
	}
}

func readAnswerWhole(s string) string {
	b, _ := io.ReadAll(newAnswerReader(strings.NewReader(s)))
	return string(b)
}

// nonBlank drops the blank lines of a text and its carriage returns.
func nonBlank(s string) string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAnswerReaderStreams: the reader passes on the start of a statement
// before its line ends, in a plan with or without a fence, so that eager
// mode knows the statement before it is complete; it holds only lines that
// may be prose or a closing fence.
func TestAnswerReaderStreams(t *testing.T) {
	tests := []struct{ first, want string }{
		{"fetch: lookup(id: 1) -> †state.c\nsc", "fetch: lookup(id: 1) -> †state.c\nsc"},
		{"Sure:\nfetch: lookup(id: 1) -> †state.c\nsc", "\nfetch: lookup(id: 1) -> †state.c\nsc"},
		{"```plan\nfetch: lookup(id: 1) -> †state.c\nsc", "\nfetch: lookup(id: 1) -> †state.c\nsc"},
		{"```plan\nfetch: lookup(id: 1) -> †state.c\n``", "\nfetch: lookup(id: 1) -> †state.c\n"},
		{"<think>\nhmm\n</think>\nfetch: lookup(id: 1) -> †state.c\nsc: s", "\n\n\nfetch: lookup(id: 1) -> †state.c\nsc: s"},
		{"Here:\n  {\"calls\": [{\"_tool\": \"f\"}, ", "\n  {\"calls\": [{\"_tool\": \"f\"}, "},
	}
	for _, tt := range tests {
		pr, pw := io.Pipe()
		r := newAnswerReader(pr)
		go pw.Write([]byte(tt.first))
		var got []byte
		buf := make([]byte, 100)
		for len(got) < len(tt.want) {
			n, err := r.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
		if string(got) != tt.want {
			t.Errorf("after %q the reader gave %q, want %q", tt.first, got, tt.want)
		}
		pw.Close()
		if rest, _ := io.ReadAll(r); len(rest) > 0 && tt.first[len(tt.first)-1] != '`' {
			t.Errorf("after the end, %q more", rest)
		}
	}
}

// TestAnswerReaderHoldsBlocks: a code block that may not be the plan is
// held until it shows that it is, so that eager mode runs nothing of a
// block that is not: a json block until it closes, even when it is a
// plan; a block of text until its first line that is neither blank nor a
// comment starts a statement, or else until it closes.
func TestAnswerReaderHoldsBlocks(t *testing.T) {
	tests := []struct{ first, held, rest, want string }{
		{"```json\n{\"calls\": [{\"_tool\": \"lookup\", \"id\": \"x\"}],\n", "", "\"output\": null}\n```\n",
			"{\"calls\": [{\"_tool\": \"lookup\", \"id\": \"x\"}],\n\"output\": null}"},
		{"```json\n{\"id\": \"x\"}\n```\n```plan\nfetch: lookup(id: 1) -> †state.c\nsc", "fetch: lookup(id: 1) -> †state.c\nsc", ": score(orders: 1)\n```\n",
			"fetch: lookup(id: 1) -> †state.c\nsc: score(orders: 1)"},
		{"```\n# first\nfetch: lookup(id: 1) -> †state.c\n", "# first\nfetch: lookup(id: 1) -> †state.c", "```\n", "# first\nfetch: lookup(id: 1) -> †state.c"},
		{"```\ncustomerId: c-1\nfetch: lookup(id: 1) -> †state.c\n", "", "```\n", ""},
		{"```text\noutput 1\n```\nThe result:\n```text\n{\"a\": 1}\n", "output 1", "```\n", "output 1"},
	}
	for _, tt := range tests {
		a := newAnswerReader(nil)
		for _, c := range []byte(tt.first) {
			a.feed(c)
		}
		if got := nonBlank(a.out.String()); got != tt.held {
			t.Errorf("after %q the reader gave %q, want %q", tt.first, got, tt.held)
		}
		for _, c := range []byte(tt.rest) {
			a.feed(c)
		}
		if got := nonBlank(a.out.String()); got != tt.want {
			t.Errorf("after %q the reader gave %q, want %q", tt.first+tt.rest, got, tt.want)
		}
	}
}

// FuzzAnswerReader: whatever a model answers, the reader does not fail,
// reads the same plan however the answer is cut, and each line it gives
// is part of the answer's line of the same number.
func FuzzAnswerReader(f *testing.F) {
	files, _ := filepath.Glob("testdata/answers/*.txtar")
	for _, file := range files {
		if ar, err := txtar.ParseFile(file); err == nil && len(ar.Files) > 0 {
			f.Add(string(ar.Files[0].Data))
		}
	}
	f.Add("<think>\n```plan\n</think>\n{\"a\": [\"}\"]}\n")
	f.Add("```json\n{\"a\": 1}\n```\n```\nf(x: 1)\n```\n~~~json\n[{\"_tool\": \"f\"}]")
	f.Add("```\n# c\n\nx: 1\n```\n```yaml\n```\n```\n{\"calls\": [\n```\n```\nf(")
	f.Fuzz(func(t *testing.T, answer string) {
		whole, missed := readAnswer(answer)
		r := newAnswerReader(iotest.OneByteReader(strings.NewReader(answer)))
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != whole {
			t.Fatalf("read whole %q, byte by byte %q", whole, b)
		}
		if m := r.missed(); m.n != missed.n || strings.Join(m.shown, "\n") != strings.Join(missed.shown, "\n") {
			t.Fatalf("blocks set aside: whole %+v, byte by byte %+v", missed, m)
		}
		if missed.n > 0 && strings.TrimSpace(whole) != "" {
			t.Fatalf("blocks set aside %+v, but the plan %q was read", missed, whole)
		}
		lines, answerLines := strings.Split(whole, "\n"), strings.Split(answer, "\n")
		if len(lines) > len(answerLines) {
			t.Fatalf("%d lines from an answer of %d", len(lines), len(answerLines))
		}
		for i, l := range lines {
			if !strings.Contains(answerLines[i], l) {
				t.Fatalf("line %d, %q, is not in the answer's %q", i+1, l, answerLines[i])
			}
		}
	})
}
