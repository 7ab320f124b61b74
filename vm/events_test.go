package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

// TestEventsJSONLAndLog: the JSON-lines writer writes every event of a run
// in order, one object a line, and the log observer logs a failure as a
// warning and the run's start and end at info level.
func TestEventsJSONLAndLog(t *testing.T) {
	prog := compile(t, "tool pay() -> int idempotent\ntool note(x?: any) -> int pure\npay: pay() -> †state.ok || †state.err\n  retry 1\nn: note(x: †state.err) -> †state.noted\noutput †state.noted\n")
	tools := newFakeTools().
		on("pay", func(ctx context.Context, args map[string]any) (any, error) { return nil, errors.New("declined") }).
		on("note", func(ctx context.Context, args map[string]any) (any, error) { return int64(1), nil })
	var jsonl, logs bytes.Buffer
	obs, werr := JSONLEvents(&jsonl)
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info, DisableTime: true})
	o := opts(tools, nil)
	o.Observer = Observers(obs, LogEvents(log), nil)
	if _, err := Run(context.Background(), prog, nil, o); err != nil {
		t.Fatal(err)
	}
	if err := werr(); err != nil {
		t.Fatal(err)
	}
	var got []string
	sc := bufio.NewScanner(&jsonl)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, strings.TrimSpace(string(e.Type)+" "+e.Step))
	}
	want := []string{
		"plan-started",
		"step-started pay", "step-retried pay", "step-failed pay",
		"step-started n", "step-completed n",
		"plan-finished",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, line := range []string{"[INFO]  plan-started: message=\"2 steps, mode eager\"", "[WARN]  step-retried: step=pay", "[WARN]  step-failed: step=pay", "[INFO]  plan-finished: verdict=completed"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log has no line with %q:\n%s", line, logs.String())
		}
	}
}

// TestStartedArgs: a started step's event carries the arguments its tool
// is called with, as evaluated, whether the step is called plainly or
// with retries; a for each's does not, its elements having their own.
func TestStartedArgs(t *testing.T) {
	prog := compile(t, "tool add(x: int, y: int) -> int idempotent\na: add(x: 1, y: 2) -> †state.a\nb: add(x: †state.a, y: 10) -> †state.b\n  retry 2\nc: for each n in [1, 2]: add(x: †n, y: †state.b) -> †state.c\noutput †state.c\n")
	tools := newFakeTools().on("add", func(ctx context.Context, args map[string]any) (any, error) {
		return args["x"].(int64) + args["y"].(int64), nil
	})
	o := opts(tools, nil)
	got := map[string]map[string]any{}
	o.Observer = func(e Event) {
		if e.Type == StepStarted {
			got[e.Step] = e.Args
		}
	}
	if _, err := Run(context.Background(), prog, nil, o); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"a": {"x": int64(1), "y": int64(2)},
		"b": {"x": int64(3), "y": int64(10)},
		"c": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arguments of the started steps (-want +got):\n%s", diff)
	}
}
