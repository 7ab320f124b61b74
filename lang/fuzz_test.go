package lang

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse checks that no input makes the parser panic or hang, that a
// plan that parses cleanly formats to text that parses back to the same
// tree and formats to itself, and that the stream parser, fed the text in
// small pieces, agrees with the batch parser.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleForStream))
	f.Add([]byte("tool f(x: int) -> int\nf(x: 1) -> †state.a || †state.b\n  retry 2\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := Parse("fuzz.plan", src)
		if file == nil {
			t.Fatal("nil file")
		}
		for _, d := range diags {
			if !d.Span.IsValid() || d.Span.Start.Offset > len(src) {
				t.Fatalf("diagnostic without a valid position: %v", d)
			}
		}
		if len(diags) == 0 {
			out := Format(file)
			again, d2 := Parse("formatted.plan", out)
			if len(d2) > 0 {
				t.Fatalf("formatted output does not parse: %v\ninput:\n%s\nformatted:\n%s", d2, src, out)
			}
			if diff := cmp.Diff(file, again, exactOptions); diff != "" {
				t.Fatalf("round trip changed the tree:\n%s\ninput:\n%q\nformatted:\n%q", diff, src, out)
			}
			if out2 := Format(again); !bytes.Equal(out, out2) {
				t.Fatalf("format not idempotent:\n%q\n%q", out, out2)
			}
		}
		// Small chunks split every token; past a few hundred bytes they
		// only make each run slow (the stream parser retries an item at
		// every chunk), so larger inputs are fed in larger pieces.
		n := 1 + len(src)%7
		if len(src) > 256 {
			n = 64 + len(src)%64
		}
		sp := NewStreamParser("fuzz.plan", &chunkReader{data: src, n: n})
		var items []Item
		var sdiags Diagnostics
		for {
			it, d, err := sp.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			sdiags = append(sdiags, d...)
			if it != nil {
				items = append(items, it)
			}
		}
		sdiags.Sort()
		if diff := cmp.Diff(file.Items, items, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("stream (chunks of %d) differs from batch:\n%s\ninput: %q", n, diff, src)
		}
		if !bytes.Equal(diagText(diags), diagText(sdiags)) {
			t.Fatalf("stream diagnostics differ:\n%s\nvs\n%s\ninput: %q", diagText(diags), diagText(sdiags), src)
		}
	})
}

// FuzzParseJSON checks that no input makes the JSON importer panic, that
// lowering a bare array of calls as it is read gives what lowering it from
// the whole tree gives, spans and diagnostics included, and that an
// imported plan prints as .plan text that parses to the same tree.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`[{"_tool": "f", "x": "†state.a", "_outputPath": "†state.b || †state.c"}]`))
	f.Add([]byte(`[{"type": "tool", "tool": {"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}}, {"type": "plan", "plan": []}]`))
	f.Add([]byte(`{"calls": [], "output": {"a": 1}}`))
	f.Add([]byte(`[{"_tool":"work","ms":0,"in0":"†input.seed","_outputPath":"†state.s0"},{"_tool":"work","ms":1,"in0":"†state.s0","in1":"$state.s0.a","_outputPath":"†state.s1"}]`))
	f.Add([]byte(`[{"_tool": "f", "x": "†state.a\u0042", "y": "†state.é", "z": "†state.a.0", "_outputPath": "$state._b1"}]`))
	f.Add([]byte(`[{"_tool": "f", "x": [1, {"a": "†state.a"}], "_outputPath": "†state.b"}, {"_tool": "g", "y": "†state.b",}, 3, {"_tool": "h", "z": {"_expr": "†state.b + 1"}},]`))
	f.Add([]byte(`[{"_tool": "f", "_outputPath": "†state.a"}, {"_tool": "g", "x": "†state.a"}, {"_tool": "h", "y": [1, 2}]`))
	f.Add([]byte(`[{"_tool": "f", "x": {"a": 1, "a": 2}, "_tool": "g", "\u005ftool": "h"}]`))
	f.Add([]byte(`[{"_tool": "f", "x": -1e999}]`))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := ParseJSON("fuzz.json", src)
		if file == nil {
			t.Fatal("nil file")
		}
		whole, wholeDiags := parseJSONPlan("fuzz.json", src, false)
		if diff := cmp.Diff(whole, file, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("lowered as read (+) and from the whole tree (-) differ:\n%s\ninput:\n%s", diff, src)
		}
		if !bytes.Equal(diagText(diags), diagText(wholeDiags)) {
			t.Fatalf("diagnostics differ when lowered as read:\n%s\nvs\n%s\ninput:\n%s", diagText(diags), diagText(wholeDiags), src)
		}
		if len(diags) > 0 {
			return
		}
		out := Format(file)
		again, d2 := Parse("formatted.plan", out)
		if len(d2) > 0 {
			t.Fatalf("formatted output does not parse: %v\ninput:\n%s\nformatted:\n%s", d2, src, out)
		}
		if diff := cmp.Diff(file, again, astOptions); diff != "" {
			t.Fatalf("JSON -> .plan -> tree differs:\n%s\ninput:\n%s\nformatted:\n%s", diff, src, out)
		}
	})
}

// FuzzPlainRef: whatever string the fast path for JSON references takes,
// the parser reads as the same reference, spans included, without error.
func FuzzPlainRef(f *testing.F) {
	for _, s := range []string{"†state.s12", "$input.user.name", "†x", "†state..a", "†state.a[0]", "†state.é", "$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		base := Pos{Offset: 10, Line: 2, Column: 5}
		got, ok := plainRef(s, base)
		if !ok {
			return
		}
		want, diags := ParseRef("fuzz", []byte(s))
		if len(diags) > 0 || want == nil {
			t.Fatalf("%q: the fast path takes it, the parser reports %v", s, diags)
		}
		mapSpans(want, func(sp Span) Span { return Span{shiftPos(sp.Start, base), shiftPos(sp.End, base)} })
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q: (-parser +fast path)\n%s", s, d)
		}
	})
}
