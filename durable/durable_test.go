package durable

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
)

// callerFunc adapts a function to vm.Caller.
type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

func openStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func compile(t *testing.T, text string, input map[string]any) *Plan {
	t.Helper()
	p, diags, err := Compile(&planfile.Source{Name: "p.plan", Text: text}, input)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	return p
}

// TestNonFiniteResult: a tool whose result holds a number JSON cannot
// hold fails its step, and the run is recorded as failed, not left
// running.
func TestNonFiniteResult(t *testing.T) {
	st := openStore(t)
	r, err := st.Create(compile(t, "tool measure() -> any pure\nmeasure() -> †state.m\noutput †state.m\n", nil), "r", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), ExecOptions{Tools: callerFunc(func(context.Context, string, map[string]any) (any, error) {
		return map[string]any{"x": math.Inf(1)}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Steps[0]
	if res.Status != vm.RunFailed || s.Status != vm.StatusFailed || s.Error.Code != "invalid-output" || !strings.Contains(s.Error.Message, "holds a number JSON cannot hold") {
		t.Fatalf("status %s, step %+v", res.Status, s)
	}
	det, err := st.Show("r")
	if err != nil {
		t.Fatal(err)
	}
	if det.Status != vm.RunFailed || det.Steps[0].Status != vm.StatusFailed {
		t.Errorf("recorded: %s, step %s", det.Status, det.Steps[0].Status)
	}
}

// TestStreamImportsRecorded: a streamed plan's imports are recorded as
// they are read, and a resumed run reads them from the journal, not from
// the files as they are now.
func TestStreamImportsRecorded(t *testing.T) {
	dir := t.TempDir()
	tools := `{"tools": [{"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "outputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}}]}`
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	plan := &Plan{Source: &planfile.Source{Name: "s.plan", Dir: dir}}
	r, err := st.Create(plan, "s", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	lookup := callerFunc(func(context.Context, string, map[string]any) (any, error) { calls++; return "found", nil })
	text := "import \"tools.json\"\n\nlookup(id: \"x\") -> †state.found\n  approve\n\noutput †state.found\n"
	res, rejected, err := r.ExecuteStream(context.Background(), strings.NewReader(text), ExecOptions{Tools: lookup})
	if err != nil || rejected.HasErrors() || res.Status != vm.RunWaiting {
		t.Fatalf("the stream: %v %v %v", res, rejected, err)
	}
	// The tools file changes: the run goes on with the one it read.
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{"tools": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ap, err := st.Choose("s", "")
	if err == nil {
		err = st.Decide("s", ap, Decision{Approved: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err = st.Resume("s", false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Streamed() {
		t.Fatal("the resumed run is not streamed")
	}
	res, rejected, err = r.ExecuteStream(context.Background(), nil, ExecOptions{Tools: lookup})
	if err != nil || rejected.HasErrors() || res.Status != vm.RunCompleted || res.Output != "found" || calls != 1 {
		t.Fatalf("resumed: %v %v %v, %d calls", res, rejected, err, calls)
	}
	if string(r.Text()) != text {
		t.Errorf("the text read again: %q", r.Text())
	}
}

// TestGoalWaitsAndResumes: a journaled goal with nobody to ask waits at a
// step's gate; the decision is recorded, and the goal resumed from the
// journal completes without asking the planner again or running the step
// that completed before the gate.
func TestGoalWaitsAndResumes(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text("a: lookup(id: \"c-1\") -> †state.who\nb: notify(name: †state.who) -> †state.sent\n  approve \"Tell them?\"\noutput †state.sent\n", llm.Usage{Input: 100, Output: 20})))
	defer srv.Close()
	planner := openai.New(srv.Settings("planner", "judge"), nil)
	tools := "tool lookup(id: string) -> string pure\ntool notify(name: string) -> string idempotent\n"
	src := &planfile.Source{Name: "tools.plan", Text: tools}
	f, diags := lang.Parse(src.Name, []byte(tools))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := agent.ContextOf(f)
	calls := map[string]int{}
	caller := callerFunc(func(_ context.Context, name string, args map[string]any) (any, error) {
		calls[name]++
		if name == "lookup" {
			return "Ada", nil
		}
		return "told " + args["name"].(string), nil
	})
	opts := agent.Options{Context: c, Planner: planner, Check: compiler.Config{Tools: c.Tools}, Tools: caller}

	st := openStore(t)
	r, err := st.Create(&Plan{Source: src}, "g", Settings{Goal: &GoalSpec{Goal: "Tell c-1."}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Pursue(context.Background(), opts, nil)
	if err != nil || res.Status != agent.GoalWaiting {
		t.Fatalf("pursued: %v %v", res, err)
	}
	if sum, _ := st.Runs(); sum[0].Status != vm.RunWaiting {
		t.Errorf("recorded as %s", sum[0].Status)
	}
	ap, err := st.Choose("g", "b")
	if err == nil {
		err = st.Decide("g", ap, Decision{Approved: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	if r, err = st.Resume("g", false); err != nil {
		t.Fatal(err)
	}
	if r.Goal() == nil || r.Goal().Goal != "Tell c-1." {
		t.Fatalf("the resumed run's goal: %+v", r.Goal())
	}
	res, err = r.Pursue(context.Background(), opts, nil)
	if err != nil || res.Status != agent.GoalCompleted || res.Output != "told Ada" {
		t.Fatalf("resumed: %v %v", res, err)
	}
	if n := len(srv.Requests()); n != 1 || calls["lookup"] != 1 || calls["notify"] != 1 {
		t.Errorf("%d planner requests, calls %v", n, calls)
	}
	if u := res.GoalExecution.Tokens["planner"]; u.Input != 100 {
		t.Errorf("the tokens of the recorded answer: %+v", u)
	}
}

// TestStepCounts: the counts of a run's steps, in a fixed order of
// statuses, and nothing when no step has one of them.
func TestStepCounts(t *testing.T) {
	got := StepCounts(map[vm.Status]int{vm.StatusWaiting: 1, vm.StatusCompleted: 2, vm.StatusPending: 4})
	if got != "2 completed, 1 waiting" {
		t.Errorf("counts %q", got)
	}
	if got := StepCounts(map[vm.Status]int{vm.StatusPending: 3}); got != "" {
		t.Errorf("no counted status: %q", got)
	}
}
