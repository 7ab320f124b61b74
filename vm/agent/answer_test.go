package agent

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/runtime/llm"
	"github.com/obelisk-plan/obelisk/runtime/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

func TestUnfence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a: f(x: 1)\n", "a: f(x: 1)\n"},
		{"```plan\na: f(x: 1)\n```\n", "a: f(x: 1)\n"},
		{"Here is the plan:\n```\na: f(x: 1)\nb: g()\n```\nIt calls f.", "a: f(x: 1)\nb: g()\n"},
		{"```json\n{\"calls\": []}\n```", "{\"calls\": []}\n"},
	}
	for _, tt := range tests {
		if got := unfence(tt.in); got != tt.want {
			t.Errorf("unfence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestUnfenceReader: fence lines are dropped from a stream however it is
// cut, and everything else passes unchanged.
func TestUnfenceReader(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a: f(x: 1)\nb: g(y: `q`)\n", "a: f(x: 1)\nb: g(y: `q`)\n"},
		{"```plan\na: f(x: 1)\n```\n", "a: f(x: 1)\n"},
		{"```\na: f(x: 1)\n```", "a: f(x: 1)\n"},
		{"`x` is not a fence\n", "`x` is not a fence\n"},
		{"a\n```", "a\n"},
		{"a\n``", "a\n``"},
	}
	for _, tt := range tests {
		for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
			got, err := io.ReadAll(newUnfenceReader(r))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("unfenced %q = %q, want %q", tt.in, got, tt.want)
			}
		}
	}
}

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
