package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

func TestLabelSteps(t *testing.T) {
	f, diags := lang.Parse("a.plan", []byte("f(x: 1)\nf(x: 2)\nf2: g(x: 3)\nmath.sum(a: 1)\nf(x: 4)\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	steps := lang.Steps(f.Items)
	labelSteps(steps)
	var got []string
	for _, s := range steps {
		got = append(got, s.Label.Name)
	}
	// As vm.RunStream names them: an explicit label seen later is not
	// known yet when f(x: 2) is named.
	if diff := cmp.Diff([]string{"f", "f2", "f2", "sum", "f3"}, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// TestEvaluatorIsStrict: an evaluator answer that is not a verdict fails
// the step (no default verdict), and the goal replans.
func TestEvaluatorIsStrict(t *testing.T) {
	for _, answer := range []string{"Looks good to me.", `{"verdict": "probably"}`} {
		j := &journal{}
		srv := llmtest.NewOpenAI(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
			"planner": llmtest.Script(
				llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\n  expect \"it has a name\"\noutput †state.customer\n", llm.Usage{}),
				llmtest.Text("output †state.customer\n", llm.Usage{})),
			"judge": llmtest.Script(llmtest.Text(answer, llm.Usage{})),
		}))
		c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
		s := srv.Settings("planner", "judge")
		res, err := Run(context.Background(), Options{Goal: "Find c-1.", Context: c, Check: cfg, Tools: customerToolbox(j),
			Planner: fakeProviders[0].open(s), Evaluator: fakeProviders[0].open(s.ForEvaluator())})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		fetch := res.Turns[0].Steps[0]
		if fetch.Status != vm.StatusFailed || fetch.Error.Code != "evaluation-failed" || res.GoalExecution.Replans != 1 {
			t.Errorf("%q: step %s %+v, replans %d", answer, fetch.Status, fetch.Error, res.GoalExecution.Replans)
		}
	}
}
