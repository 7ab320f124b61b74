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
