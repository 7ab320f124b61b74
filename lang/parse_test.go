package lang

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/obelisk-plan/obelisk/internal/testsize"
	"github.com/obelisk-plan/obelisk/spec"
)

// planFiles returns the .plan and .json plans of examples/ (which may not
// exist yet in a fresh checkout of a branch).
func planFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"../examples/*.plan", "../examples/*.json"} {
		m, _ := filepath.Glob(pat)
		for _, f := range m {
			if strings.HasSuffix(f, ".input.json") || strings.HasSuffix(f, ".mocks.json") || strings.HasSuffix(f, ".tools.json") || strings.HasSuffix(f, ".fills.json") || strings.HasSuffix(f, ".verdicts.json") {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

func TestExamplesRoundTrip(t *testing.T) {
	for _, path := range planFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := parseInput(path, src)
			if len(diags) > 0 {
				t.Fatalf("parse: %s", diags)
			}
			out := Format(f)
			if strings.HasSuffix(path, ".plan") && !bytes.Equal(out, src) {
				t.Errorf("%s is not in canonical layout; run obelisk fmt -w %s", path, path)
			}
			checkRoundTrip(t, path, f, out)
		})
	}
}

// TestCorpusImports reads every plan of the Berkeley Function Calling
// Leaderboard corpus, in both forms, and prints it as .plan text that parses
// back to the same tree.
func TestCorpusImports(t *testing.T) {
	files, _ := filepath.Glob("../spec/corpus/bfcl/bfcl_plans/*.json")
	if len(files) < 100 {
		t.Fatalf("corpus missing: found %d files", len(files))
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := ParseJSON(path, src)
		if len(diags) > 0 {
			t.Errorf("%s: %s", path, diags)
			continue
		}
		if len(Steps(f.Items)) == 0 {
			t.Errorf("%s: no steps imported", path)
		}
		checkRoundTrip(t, path, f, Format(f))
	}
	tools, diags := ParseTools("bfcl_tools.json", mustRead(t, "../spec/corpus/bfcl/bfcl_tools.json"))
	if len(diags) > 0 {
		t.Fatalf("bfcl_tools.json: %s", diags)
	}
	if len(tools) != 155 {
		t.Errorf("imported %d tools, want 155", len(tools))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamMatchesBatch feeds plans to the stream parser a few bytes at a
// time and checks that it yields the same items as parsing the whole text.
func TestStreamMatchesBatch(t *testing.T) {
	srcs := map[string][]byte{}
	for _, path := range planFiles(t) {
		if strings.HasSuffix(path, ".plan") {
			srcs[path] = mustRead(t, path)
		}
	}
	srcs["inline"] = []byte(sampleForStream)
	// The conformance cases hold malformed plans, whose messages may look
	// at the item before (a line that continues it).
	for _, c := range spec.Cases(t, "../spec/conformance") {
		if name, text, ok := c.Input(); ok && strings.HasSuffix(name, ".plan") {
			srcs[c.Name] = text
		}
	}
	// A byte at a time, a few, and whole; the sizes between in the full
	// run.
	chunks := testsize.Pick(t, []int{1, 7, 4096}, []int{1, 3, 7, 64, 4096})
	for name, src := range srcs {
		for _, chunk := range chunks {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(name), chunk), func(t *testing.T) {
				want, wantDiags := Parse(name, src)
				sp := NewStreamParser(name, &chunkReader{data: src, n: chunk})
				var got []Item
				var gotDiags Diagnostics
				for {
					it, diags, err := sp.Next(context.Background())
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					gotDiags = append(gotDiags, diags...)
					if it != nil {
						got = append(got, it)
					}
				}
				gotDiags.Sort()
				if diff := cmp.Diff(want.Items, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("stream items differ from batch (-batch +stream):\n%s", diff)
				}
				if diff := cmp.Diff(diagText(wantDiags), diagText(gotDiags)); diff != "" {
					t.Errorf("stream diagnostics differ (-batch +stream):\n%s", diff)
				}
			})
		}
	}
}

const sampleForStream = `# header
tool f(x: int) -> int
a: f(x: 1) -> †state.a  # trailing
  retry 2
  when †input.go == "yes"
f(x: †state.a) -> †state.b; f(x: 2)
broken(( -> x
f(
  x: †state.b,
) -> †state.c
output {
  c: †state.c
}
`

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestStreamYieldsBeforeEnd checks that a step is returned as soon as the
// line after it begins, while the writer is still writing.
func TestStreamYieldsBeforeEnd(t *testing.T) {
	pr, pw := io.Pipe()
	sp := NewStreamParser("s.plan", pr)
	items := make(chan Item)
	go func() {
		defer close(items)
		for {
			it, _, err := sp.Next(context.Background())
			if err != nil {
				return
			}
			items <- it
		}
	}()
	pw.Write([]byte("f(x: 1) -> †state.a\n"))
	pw.Write([]byte("g("))
	first := <-items
	if s, ok := first.(*Step); !ok || s.Call.Tool.Name != "f" {
		t.Fatalf("first item = %#v, want the call of f", first)
	}
	pw.Write([]byte("y: 2)\n"))
	pw.Close()
	second := <-items
	if s, ok := second.(*Step); !ok || s.Call.Tool.Name != "g" {
		t.Fatalf("second item = %#v, want the call of g", second)
	}
	if _, ok := <-items; ok {
		t.Fatal("more items than written")
	}
}

func TestPositions(t *testing.T) {
	src := "tool f(x: any) -> any\nf(x: \"é†\", y: †state.ab) -> †state.out\n"
	f, diags := Parse("p.plan", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	s := Steps(f.Items)[0]
	ref := s.Call.Args[1].Value.(*Ref)
	// é is two bytes and † three, one column each.
	want := Span{Start: Pos{Offset: 39, Line: 2, Column: 15}, End: Pos{Offset: 50, Line: 2, Column: 24}}
	if diff := cmp.Diff(want, ref.Span); diff != "" {
		t.Errorf("reference span (-want +got):\n%s", diff)
	}
	if got := src[ref.Span.Start.Offset:ref.Span.End.Offset]; got != "†state.ab" {
		t.Errorf("reference text = %q", got)
	}

	// A reference inside a JSON string points at its characters.
	js := `[{"_tool": "f", "x": "†state.a..b"}]`
	_, jd := ParseJSON("p.json", []byte(js))
	if len(jd) != 1 {
		t.Fatalf("want one diagnostic, got %v", jd)
	}
	if got := jd[0].Span.Start; got.Column != 31 || got.Offset != 32 || js[got.Offset:got.Offset+1] != "." {
		t.Errorf("diagnostic at %v (offset %d), want the '.' after a in †state.a..b (1:31, offset 32)", got, got.Offset)
	}
}

func TestDiagnosticText(t *testing.T) {
	src := []byte("tool f(x: int) -> int\nf(x: †state..a) -> †state.r\n")
	_, diags := Parse("p.plan", src)
	var b strings.Builder
	if err := WriteText(&b, Sources{"p.plan": src}, diags, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `p.plan:2:12: error: expected a field name after '.' in reference †state. [parse-error]
  2 | f(x: †state..a) -> †state.r
    |            ^
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
