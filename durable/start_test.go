package durable

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestStart: a run started with a state directory is journaled there, by
// the name given, and executes to the end; one started without a journal
// has no store and no record.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	echo := callerFunc(func(_ context.Context, _ string, args map[string]any) (any, error) { return args["x"], nil })
	const text = "input {\n  x: string\n}\ntool echo(x: string) -> string pure\necho(x: †input.x) -> †state.y\noutput †state.y\n"
	r, st, err := Start(compile(t, text, map[string]any{"x": "hi"}), Settings{Origin: &Origin{By: ByCLI}}, StartOptions{Dir: dir, ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r.ID != "s1" || !r.Journaled() || st.Dir() != dir {
		t.Fatalf("run %q journaled %v in %q", r.ID, r.Journaled(), st.Dir())
	}
	res, err := r.Execute(context.Background(), ExecOptions{Tools: echo})
	if err != nil || res.Status != vm.RunCompleted || res.Output != "hi" {
		t.Fatalf("%v %v", res, err)
	}
	det, err := st.Show("s1")
	if err != nil || det.Status != vm.RunCompleted || det.Origin == nil || det.Origin.By != ByCLI {
		t.Fatalf("recorded: %+v %v", det, err)
	}
	if _, _, err := Start(compile(t, text, nil), Settings{}, StartOptions{Dir: dir, ID: "s1"}); err == nil {
		t.Error("a second run of the same name was created")
	}

	r, st, err = Start(compile(t, text, map[string]any{"x": "ho"}), Settings{}, StartOptions{NoJournal: true, Dir: t.TempDir() + "/never"})
	if err != nil || st != nil || r.Journaled() || r.ID == "" {
		t.Fatalf("without a journal: %v %v %v", r, st, err)
	}
	if res, err = r.Execute(context.Background(), ExecOptions{Tools: echo}); err != nil || res.Output != "ho" {
		t.Fatalf("%v %v", res, err)
	}
}

// TestCaller: what a caller recorded of its tools is given back to the
// resuming program; a record it cannot read fails the run.
func TestCaller(t *testing.T) {
	st := openStore(t)
	type tools struct {
		Mocks string   `json:"mocks"`
		MCP   []string `json:"mcp"`
	}
	const text = "tool t() -> string pure\nt() -> †state.a\noutput †state.a\n"
	for _, id := range []string{"good", "bad"} {
		caller := json.RawMessage(`{"mocks": "m.json", "mcp": ["srv"]}`)
		if id == "bad" {
			caller = json.RawMessage(`{"mcp": "not a list"}`)
		}
		r, err := st.Create(compile(t, text, nil), id, Settings{Caller: caller})
		if err != nil {
			t.Fatal(err)
		}
		r.Leave(nil)
	}
	r, err := st.Resume("good", false)
	if err != nil {
		t.Fatal(err)
	}
	var got tools
	if err := r.Caller(&got); err != nil || got.Mocks != "m.json" || !reflect.DeepEqual(got.MCP, []string{"srv"}) {
		t.Errorf("caller: %+v %v", got, err)
	}
	if r, err = st.Resume("bad", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Caller(&got); err == nil {
		t.Fatal("a caller's record that does not decode was taken")
	}
	if det, _ := st.Show("bad"); det.Status != vm.RunFailed {
		t.Errorf("the run with a bad record is %s, want failed", det.Status)
	}
}

// TestGoalContextRoundTrip: a goal's context and models are recorded with
// its spec and read back on resume; a goal recorded before the spec held
// them has them read from its caller's record.
func TestGoalContextRoundTrip(t *testing.T) {
	st := openStore(t)
	spec := &GoalSpec{Goal: "Refund.", Mode: "lazy", MaxRepairs: 2, GoalContext: GoalContext{
		ToolFiles: []string{"shop.tools"}, Builtins: true, Input: map[string]any{"order": "o-1"}, Evaluate: true,
		Models: GoalModels{Provider: "openai", Model: "big", EvalModel: "small", MaxTokens: 900, Timeout: time.Minute}}}
	r, err := st.Create(&Plan{Source: &planfile.Source{Name: "<goal>"}}, "g", Settings{Goal: spec, Caller: json.RawMessage(`{"mocks": "m"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r.Leave(nil)
	if r, err = st.Resume("g", false); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Goal(), spec) {
		t.Errorf("resumed goal:\n%+v\nwant\n%+v", r.Goal(), spec)
	}

	older := `{"goal": {"goal": "Refund.", "mode": "lazy"}, "caller": {"mocks": "m", "toolFiles": ["shop.tools"], "builtins": true,
		"input": {"order": "o-1"}, "evaluate": true, "models": {"provider": "openai", "model": "big", "evalModel": "small", "maxTokens": 900, "timeout": 60000000000}}}`
	set, err := decodeSettings([]byte(older))
	if err != nil {
		t.Fatal(err)
	}
	want := spec.GoalContext
	if !reflect.DeepEqual(set.Goal.GoalContext, want) {
		t.Errorf("older goal's context:\n%+v\nwant\n%+v", set.Goal.GoalContext, want)
	}
}

func TestGoalModelsUnder(t *testing.T) {
	m := GoalModels{Provider: "openai", Model: "big", EvalModel: "small", MaxTokens: 900}
	got := m.Under(llm.Settings{Model: "other", BaseURL: "http://x"})
	want := llm.Settings{Provider: "openai", Model: "other", EvalModel: "small", MaxTokens: 900, BaseURL: "http://x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	if back := ModelsOf(want); back.Provider != "openai" || back.Model != "other" || back.MaxTokens != 900 {
		t.Errorf("ModelsOf: %+v", back)
	}
}
