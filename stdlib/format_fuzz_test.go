package stdlib

import (
	"fmt"
	"testing"
	"text/template"
)

// FuzzPrintfBound: the bound printfBound gives is never less than the
// length of the text fmt.Sprintf makes, nor printBound's than
// fmt.Sprint's and fmt.Sprintln's (and, grown, than the escapers'), for
// the values a template handles.
func FuzzPrintfBound(f *testing.F) {
	for _, seed := range []string{"%v", "%q|%x", "%#v %+q", "%[2]*[1]d", "%-10.3f%%", "%[3]v %!", "%# x", "%*.*e", "%U %c %T %p", "%08b"} {
		f.Add(seed, "a\x00é😀", int64(-42), 1e300, true)
	}
	f.Fuzz(func(t *testing.T, format, s string, i int64, x float64, b bool) {
		args := []any{s, i, x, b, nil, []any{s, i, map[string]any{s: x, "k": []any{}}}, map[string]any{}, 3 + 4i, 7}
		for _, as := range [][]any{args, args[:1], args[1:3], args[5:6], nil} {
			bound, _ := printfBound(format, as, 1<<40)
			if got := int64(len(fmt.Sprintf(format, as...))); got > bound {
				t.Fatalf("Sprintf(%q, %#v): %d bytes, bound %d", format, as, got, bound)
			}
			pb, _ := printBound(as, 1<<40)
			if got := int64(len(fmt.Sprintln(as...))); got > pb {
				t.Fatalf("Sprintln(%#v): %d bytes, bound %d", as, got, pb)
			}
			for _, esc := range []struct {
				fn   func(...any) string
				grow int64
			}{{template.HTMLEscaper, 6}, {template.JSEscaper, 6}, {template.URLQueryEscaper, 3}} {
				if got := int64(len(esc.fn(as...))); got > pb*esc.grow {
					t.Fatalf("escaping %#v: %d bytes, bound %d", as, got, pb*esc.grow)
				}
			}
		}
	})
}
