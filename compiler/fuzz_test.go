package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// FuzzCheck checks that no plan makes the checker panic, and that every
// diagnostic it reports points into the plan.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.plan")
	for _, path := range files {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("tool f(x: int) -> {a: [int]} pure\nf(x: †state.v.a[0]) -> †state.v\n"))
	// Near the limits: nesting, expression cost, fan-out, sub-plan depth.
	f.Add([]byte("tool f(x: [[{a: [int]}]]) -> [[int]] pure\nf(x: [[{a: [1]}]]) -> †state.m\nf(x: []) -> †state.n\n  when †state.m.exists(a, a.exists(x, †state.m.exists(b, b.exists(y, x == y))))\n"))
	f.Add([]byte("tool f(x: int) -> int pure\ninput {\n  xs: [int]\n}\nfor each x in †input.xs max 1001: f(x: †x) -> †state.r\n"))
	f.Add([]byte("plan a(x: int) -> int {\n  b(x: †input.x) -> †state.r\n  output †state.r\n}\nplan b(x: int) -> int {\n  a(x: †input.x) -> †state.r\n  output †state.r\n}\na(x: 1) -> †state.o\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := lang.Parse("fuzz.plan", src)
		if diags.HasErrors() {
			return
		}
		_, cd := Check(file, Config{})
		for _, d := range cd {
			if d.File != "fuzz.plan" {
				continue
			}
			if !d.Span.IsValid() || d.Span.Start.Offset > len(src) || d.Span.End.Offset > len(src) {
				t.Fatalf("diagnostic outside the plan: %v (len %d)", d, len(src))
			}
			if strings.Contains(d.Message, "internal error") {
				t.Fatalf("internal error: %v", d)
			}
		}
	})
}
