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
			if readAnswer(answer) != readAnswerWhole(answer) {
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
	f.Fuzz(func(t *testing.T, answer string) {
		whole := readAnswer(answer)
		b, err := io.ReadAll(newAnswerReader(iotest.OneByteReader(strings.NewReader(answer))))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != whole {
			t.Fatalf("read whole %q, byte by byte %q", whole, b)
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
