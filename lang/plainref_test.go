package lang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlainRef: the fast path for references in JSON strings builds the
// tree, spans included, that the parser builds, and leaves everything it
// does not handle to the parser.
func TestPlainRef(t *testing.T) {
	base := Pos{Offset: 40, Line: 3, Column: 17}
	for _, s := range []string{"†state.s12", "$input.user.name", "†x", "†state.a.b.c", "$state._x1.Y_2", "†item"} {
		got, ok := plainRef(s, base)
		if !ok {
			t.Errorf("%q: not taken by the fast path", s)
			continue
		}
		want, diags := ParseRef("x", []byte(s))
		if len(diags) > 0 {
			t.Fatalf("%q: %v", s, diags)
		}
		mapSpans(want, func(sp Span) Span { return Span{shiftPos(sp.Start, base), shiftPos(sp.End, base)} })
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%q: (-parser +fast path)\n%s", s, d)
		}
	}
	for _, s := range []string{"†", "†state.", "†state..a", "†state.items[0]", "†state.a b", "† state", "†state.é", "†1a", "†state.0", "†state.size()", "state.x", "$"} {
		if r, ok := plainRef(s, base); ok {
			t.Errorf("%q: taken by the fast path as %v; the parser should have it", s, r)
		}
	}
}
