package console

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

var update = flag.Bool("update", false, "rewrite the golden files of the tests")

// timelinePlan has a step that retries, a for each of 3 elements, one of
// 25, and a gate.
const timelinePlan = `tool fetch(n: int) -> int idempotent
tool send(text: string) -> string irreversible

a: fetch(n: 1) -> †state.a
  retry 2 backoff 100ms
b: for each n in [1, 2, 3]: fetch(n: †n) -> †state.b
c: for each n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]: fetch(n: †n) -> †state.c
d: send(text: "x") -> †state.d
  approve "Send?"

output [†state.a, †state.b, †state.c, †state.d]
`

// fixedRun is the journal of a run of timelinePlan at fixed times.
func fixedRun(t *testing.T) (*timelineView, string) {
	t.Helper()
	prog, diags, err := durable.Compile(&planfile.Source{Name: "t.plan", Text: timelinePlan}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ev := func(n int, typ vm.EventType, step string) vm.Event {
		return vm.Event{Type: typ, Step: step, Time: ms(n)}
	}
	events := []vm.Event{
		{Type: vm.PlanStarted, Time: t0},
		ev(0, vm.StepStarted, "a"),
		ev(0, vm.ApprovalRequested, "d"),
		{Type: vm.StepRetried, Step: "a", Time: ms(10), Reason: "the host did not answer; retrying in 100ms"},
		ev(130, vm.StepCompleted, "a"),
		ev(130, vm.StepStarted, "b"),
		ev(150, vm.ElementCompleted, "b[0]"),
		{Type: vm.StepRetried, Step: "b[1]", Time: ms(160), Reason: "busy; retrying in 20ms"},
		ev(170, vm.ElementCompleted, "b[2]"),
		ev(200, vm.ElementCompleted, "b[1]"),
		ev(200, vm.StepCompleted, "b"),
		ev(200, vm.StepStarted, "c"),
	}
	for k := range 25 {
		events = append(events, ev(210+k, vm.ElementCompleted, fmt.Sprintf("c[%d]", k)))
	}
	events = append(events,
		ev(240, vm.StepCompleted, "c"),
		ev(300, vm.ApprovalDecided, "d"),
		ev(300, vm.StepStarted, "d"),
		ev(305, vm.StepStarted, "d#1/notify"),
		ev(310, vm.StepCompleted, "d#1/notify"),
		ev(320, vm.StepFailed, "d"),
	)
	tl := timeline(prog.Program, events, t0, ms(320), []int32{0, 1, 2}, func(i int) string { return fmt.Sprintf("step-%d", i) })
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "timeline", tl); err != nil {
		t.Fatal(err)
	}
	return tl, b.String()
}

// TestTimelineGolden: the timeline of a fixed run is drawn the same each
// time, as testdata/timeline.golden has it (go test -run TestTimelineGolden
// -update rewrites it).
func TestTimelineGolden(t *testing.T) {
	_, got := fixedRun(t)
	_, again := fixedRun(t)
	if got != again {
		t.Fatal("the timeline of the same run is drawn differently twice")
	}
	golden := filepath.Join("testdata", "timeline.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the timeline differs from %s:\n%s", golden, got)
	}
}

// TestTimelineRows: each step has a row; the elements of a for each are
// rows under it (beyond 20, counted on one row), not attempts of the
// step; a retry is two attempts with the backoff between them; a gate's
// wait and a sub-plan's step are drawn; the critical path is marked.
func TestTimelineRows(t *testing.T) {
	tl, _ := fixedRun(t)
	rows := map[string]*tlRow{}
	var labels []string
	for _, r := range tl.Rows {
		labels = append(labels, r.Label)
		if r.Step != "" {
			rows[r.Step] = r
		}
	}
	kinds := func(step string) string {
		r := rows[step]
		if r == nil {
			t.Fatalf("no row for %s: %v", step, labels)
		}
		var k []string
		for _, b := range r.Bars {
			k = append(k, b.Kind+"/"+b.Status)
		}
		return strings.Join(k, " ")
	}
	for step, want := range map[string]string{
		"a":          "attempt/failed backoff/ attempt/completed",
		"b":          "attempt/completed",
		"b[0]":       "attempt/completed",
		"b[1]":       "attempt/failed backoff/ attempt/completed",
		"b[2]":       "attempt/completed",
		"c":          "attempt/completed",
		"c[19]":      "attempt/completed",
		"d":          "wait/ attempt/failed",
		"d#1/notify": "attempt/completed",
	} {
		if got := kinds(step); got != want {
			t.Errorf("%s: bars %q, want %q", step, got, want)
		}
	}
	if rows["c[20]"] != nil {
		t.Error("the 21st element of c is drawn")
	}
	if !strings.Contains(strings.Join(labels, "|"), "|+5 more|d (for each)") && !strings.Contains(strings.Join(labels, "|"), "|+5 more|d|") {
		t.Errorf("rows: %v", labels)
	}
	for step, crit := range map[string]bool{"a": true, "b": true, "c": true, "d": false, "b[0]": false} {
		if rows[step].Critical != crit {
			t.Errorf("%s on the critical path: %v", step, rows[step].Critical)
		}
	}
	// The backoff of a lasts its 100ms: from 10ms to 110ms of 320ms.
	bo := rows["a"].Bars[1]
	if x0, x1 := tlLabelW+10*tlChartW/320, tlLabelW+110*tlChartW/320; bo.X != x0 || bo.X+bo.W != x1 {
		t.Errorf("the backoff spans %d to %d, want %d to %d", bo.X, bo.X+bo.W, x0, x1)
	}
}
