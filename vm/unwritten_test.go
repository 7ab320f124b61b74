package vm

import (
	"context"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/runtime"
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
	mocks, err := runtime.ParseMocks([]byte(`{"lookup": {"cases": [{"args": {"id": "a1"}, "result": {"name": "Ada"}}]},
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
