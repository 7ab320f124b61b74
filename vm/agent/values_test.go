package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

// TestStateAcrossTurnsKeepsTheRule: the state one turn leaves is the
// next turn's initial state, written into its plan as values; the rule for
// values holds across: a number a tool gave as 3 is a double in the next
// turn, an int it gave as 4.0 an int.
func TestStateAcrossTurnsKeepsTheRule(t *testing.T) {
	const decls = "tool measure() -> {v: number, n: int} pure\ntool use(x: any) -> any pure\n"
	for _, mode := range []string{Eager, Lazy} {
		t.Run(mode, func(t *testing.T) {
			j := &journal{}
			ts := &tools{j: j, fns: map[string]func(map[string]any) (any, error){
				"measure": func(map[string]any) (any, error) { return map[string]any{"v": int64(3), "n": 4.0}, nil },
				"use":     func(args map[string]any) (any, error) { return args["x"], nil },
			}}
			srv := llmtest.NewOpenAI(llmtest.Script(
				llmtest.Text("m: measure() -> †state.m\n", llm.Usage{}),
				llmtest.Text("u: use(x: [†state.m.v * 2.0, double(†state.m.v), string(†state.m.v), †state.m.n + 1]) -> †state.u\noutput †state.u\n", llm.Usage{}),
			))
			defer srv.Close()
			c, cfg := testContext(t, decls, nil)
			res, err := Run(context.Background(), Options{Goal: "Measure, then use it.", Mode: mode, Context: c, Check: cfg, Tools: ts,
				Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Err)
			}
			if diff := cmp.Diff([]any{6.0, 3.0, "3", int64(5)}, res.Output); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if res.GoalExecution.Turns != 2 {
				t.Errorf("%d turns, want 2", res.GoalExecution.Turns)
			}
		})
	}
}
