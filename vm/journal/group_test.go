package journal

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestMockAnswersGroupCommitted runs a fan-out of 1,000 mocked steps, as
// `obelisk run` does (at most 8 at once, the mocks' answers recorded by
// RecordMockCall), and counts the transactions: the answers are written
// with the steps' events, never in a transaction of their own, and every
// one is kept.
func TestMockAnswersGroupCommitted(t *testing.T) {
	p := bench.FanOut(1000, 0)
	src := &planfile.Source{Name: p.Name + ".plan", Text: string(p.Text())}
	mocks, err := toolkit.ParseMocks([]byte(`{"work": {"result": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := open(t, Options{})
	var mu sync.Mutex
	var commits, withEvents, answers int
	d.committed = func(batch []record) {
		mu.Lock()
		defer mu.Unlock()
		commits++
		events := false
		for i := range batch {
			switch batch[i].kind {
			case anEvent:
				events = true
			case aMockCall:
				answers++
			}
		}
		if events {
			withEvents++
		}
	}
	r, err := d.Create(NewRun{ID: "fan", Source: src, Input: map[string]any{"seed": int64(0)}})
	if err != nil {
		t.Fatal(err)
	}
	mocks.OnAnswer(r.RecordMockCall)
	res, _ := run(context.Background(), t, r, src, map[string]any{"seed": int64(0)}, mocks, vm.Options{MaxParallel: 8})
	if res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The transactions without events are the run's creation and its end
	// (Finish).
	if alone := commits - withEvents; alone != 2 {
		t.Errorf("%d transactions without events of %d (want 2: the run's creation and end): the mocks' answers are not written with the events", alone, commits)
	}
	if answers != 1000 {
		t.Errorf("%d mock answers committed, want 1000", answers)
	}
	calls, err := r.MockCalls()
	if err != nil || calls["work"] != 1000 {
		t.Errorf("recorded calls %v %v, want 1000 of work", calls, err)
	}
	t.Logf("%d transactions for 1000 steps", commits)
}

// killPlan's first step is answered by a mock; its second calls a tool
// that never returns.
const killPlan = `
tool book(n: int) -> string idempotent
tool hold(x: string) -> string idempotent
a: book(n: 1) -> †state.a
b: hold(x: †state.a) -> †state.b
output †state.b
`

// TestGroupRecordsSurviveKill runs a plan in a process of its own (this
// test binary again, see TestGroupRecordsKillChild) and kills it with
// SIGKILL once the observer has heard of the first step's outcome: the
// mock's answer, queued without a transaction of its own before that
// outcome, is in the journal, and a resumed run finds the mock's position.
func TestGroupRecordsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	// The child's own time limit ends it should it hang before its first
	// step is reported.
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupRecordsKillChild$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "OBELISK_JOURNAL_KILL_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reported := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "reported a" {
			reported = true
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !reported {
		t.Fatal("the run's process ended before its first step was reported")
	}
	d, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, _, err := d.Resume("k", true)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := r.MockCalls()
	if err != nil || calls["book"] != 1 {
		t.Errorf("mock calls after the kill: %v %v, want 1 of book", calls, err)
	}
	if s, ok := r.Restore(0, "a"); !ok || s.Result != "first" {
		t.Errorf("a restored: %v %v", s, ok)
	}
}

// TestGroupRecordsKillChild is the process TestGroupRecordsSurviveKill
// kills; it does nothing unless that test starts it.
func TestGroupRecordsKillChild(t *testing.T) {
	dir := os.Getenv("OBELISK_JOURNAL_KILL_DIR")
	if dir == "" {
		t.Skip("started by TestGroupRecordsSurviveKill")
	}
	d, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := &planfile.Source{Name: "kill.plan", Text: killPlan}
	r, err := d.Create(NewRun{ID: "k", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	mocks, err := toolkit.ParseMocks([]byte(`{"book": {"sequence": [{"result": "first"}, {"result": "second"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	mocks.OnAnswer(r.RecordMockCall)
	tl := newTools()
	tl.fns["book"] = func(ctx context.Context, args map[string]any) (any, error) { return mocks.Call(ctx, "book", args) }
	tl.fns["hold"] = func(ctx context.Context, _ map[string]any) (any, error) { select {} }
	observer := func(ev vm.Event) {
		if ev.Type == vm.StepCompleted && ev.Step == "a" {
			os.Stdout.WriteString("reported a\n")
		}
	}
	prog, _, err := src.Compile()
	if err != nil {
		t.Fatal(err)
	}
	vm.Run(context.Background(), prog, nil, vm.Options{Tools: tl, Journal: r, RunID: r.ID, Observer: observer})
	t.Fatal("the run ended: it should have been killed")
}

// TestMockCallsOutOfOrder: of the calls of a mock answered at once and
// recorded out of order, in one batch or in several, the journal keeps
// the most; records queued are written by the next record waited for.
func TestMockCallsOutOfOrder(t *testing.T) {
	d := open(t, Options{})
	r, err := d.Create(NewRun{ID: "m", Source: &planfile.Source{Name: "c.plan", Text: chain}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 5, 3} {
		if err := r.RecordMockCall("book", n); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RecordMockCall("pay", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendText("t", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordMockCall("book", 4); err != nil {
		t.Fatal(err)
	}
	if err := r.EndText("t", nil); err != nil {
		t.Fatal(err)
	}
	calls, err := r.MockCalls()
	if err != nil || calls["book"] != 5 || calls["pay"] != 1 || len(calls) != 2 {
		t.Errorf("calls %v %v, want book 5 and pay 1", calls, err)
	}
}
