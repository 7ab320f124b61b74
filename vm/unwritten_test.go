package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestGuardOfAWaitedSlotRuns: a step guarded by has() of a slot it waits
// for, written by a step with no condition and no error slot, runs, and
// the output that reads its slot without a check (which the checker
// accepts, since the guard holds whenever the step is due) is computed,
// in a whole run and in a stream.
func TestGuardOfAWaitedSlotRuns(t *testing.T) {
	const src = `tool lookup(id: string) -> {name: string} pure
tool greet(name: string) -> string pure
lookup(id: "a1") -> †state.user
greeting: greet(name: †state.user.name) -> †state.greeting
  when has(†state.user)
output †state.greeting + "!"
`
	mocks, err := toolkit.ParseMocks([]byte(`{"lookup": {"cases": [{"args": {"id": "a1"}, "result": {"name": "Ada"}}]},
  "greet": {"cases": [{"args": {"name": "Ada"}, "result": "Hello, Ada"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string, res *Result) {
		t.Helper()
		if res.Status != RunCompleted || res.Err != nil || res.Output != "Hello, Ada!" {
			t.Errorf("%s: status %s (%v), output %v, steps %v", how, res.Status, res.Err, res.Output, statuses(res))
		}
	}
	res, err := Run(context.Background(), compile(t, src), nil, opts(mocks, nil))
	if err != nil {
		t.Fatal(err)
	}
	check("run", res)
	res, diags, err := RunStream(context.Background(), lang.NewStreamParser("s.plan", strings.NewReader(src)), nil, opts(mocks, nil))
	if err != nil || len(diags) > 0 {
		t.Fatalf("stream: %v\n%s", err, diags)
	}
	check("stream", res)
}

// TestGuardSoundness: whenever the checker lets the output read, without
// a check, the slot of a step guarded by has() of a slot it waits for,
// every run that is not stopped by a failure computes the output: with
// the guarded slot's writer plain, conditional, with an error slot, a for
// each or retried, under each failure policy, with the writer succeeding
// or failing and its condition true or false. The plans it must accept
// are accepted.
func TestGuardSoundness(t *testing.T) {
	writers := []string{
		`lookup(id: "a1") -> †state.user`,
		"lookup(id: \"a1\") -> †state.user\n  when †input.go",
		"lookup(id: \"a1\") -> †state.user\n  retry 1",
		`lookup(id: "a1") -> †state.user || †state.err`,
		`for each id in ["a1", "b2"] max 2: lookup(id: †id) -> †state.user`,
	}
	guards := []string{"has(†state.user)", "has(†state.user) && †input.go", "has(†state.user) || †input.go", "!has(†state.user)"}
	accepted := 0
	for _, policy := range []string{"", "on failure skip\n", "on failure continue\n"} {
		for wi, writer := range writers {
			for gi, guard := range guards {
				src := policy + `tool lookup(id: string) -> {name: string} pure
tool greet(name: string) -> string pure
input {
  go: bool
}
` + writer + `
greeting: greet(name: "Ada") -> †state.greeting
  when ` + guard + `
output †state.greeting + "!"
`
				f, diags := lang.Parse("p.plan", []byte(src))
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				info, cd := compiler.Check(f, compiler.Config{})
				// Under on failure abort, with a writer that surely
				// writes and a guard that is no condition, the output
				// reads the slot.
				if want := policy == "" && (wi == 0 || wi == 2 || wi == 4) && (gi == 0 || gi == 2); want == cd.HasErrors() {
					t.Errorf("accepted %v:\n%s\n%s", !cd.HasErrors(), src, cd)
				}
				if cd.HasErrors() {
					continue
				}
				accepted++
				prog, err := compiler.Compile(info, cd, compiler.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, fails := range []bool{false, true} {
					for _, goes := range []bool{false, true} {
						tools := newFakeTools().
							on("lookup", func(context.Context, map[string]any) (any, error) {
								if fails {
									return nil, errors.New("down")
								}
								return map[string]any{"name": "Ada"}, nil
							}).
							on("greet", func(context.Context, map[string]any) (any, error) { return "Hello, Ada", nil })
						res, err := Run(context.Background(), prog, map[string]any{"go": goes}, opts(tools, nil))
						if err != nil {
							t.Fatal(err)
						}
						if res.Err != nil && strings.Contains(res.Err.Error(), "evaluating the output") {
							t.Errorf("lookup fails %v, go %v: %v (%v)\n%s", fails, goes, res.Err, statuses(res), src)
						}
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Error("no plan was accepted")
	}
}
