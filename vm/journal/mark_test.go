package journal

import (
	"context"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/vm"
)

// TestMark: a reader with a connection of its own (as another process
// has) sees the mark of a run, and of the journal, change with each thing
// recorded of the run, and the mark of another run stay as it was.
func TestMark(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd, err := OpenExisting(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	mark := func(id string) string {
		t.Helper()
		m, err := rd.Mark(id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	src := &planfile.Source{Name: "gate.plan", Text: "tool inc(x: int) -> int idempotent\na: inc(x: 1) -> †state.a\n  approve \"go?\"\n"}
	all0, other0 := mark(""), mark("other")
	r, err := w.Create(NewRun{ID: "r", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	created, all1 := mark("r"), mark("")
	if all1 == all0 {
		t.Error("the journal's mark did not change when a run was created")
	}
	res, _ := run(context.Background(), t, r, src, nil, newTools(), vm.Options{Approver: r.Approver(nil, ApprovalPolicy{})})
	if res.Status != vm.RunWaiting {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	waiting := mark("r")
	if waiting == created {
		t.Error("the run's mark did not change when it ran")
	}
	if err := w.Decide("r", 0, "a", Decision{Approved: true}); err != nil {
		t.Fatal(err)
	}
	decided := mark("r")
	if decided == waiting {
		t.Error("the run's mark did not change with a decision")
	}
	if again := mark("r"); again != decided {
		t.Errorf("the mark changed with nothing recorded: %s, then %s", decided, again)
	}
	if mark("other") != other0 {
		t.Error("the mark of a run that does not exist changed")
	}
}

// TestEventArgs: the arguments of a started step are read back from the
// journal with every digit of their integers.
func TestEventArgs(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "big.plan", Text: "tool inc(x: int) -> int idempotent\na: inc(x: 9007199254740993) -> †state.a\n"}
	r, err := d.Create(NewRun{ID: "r", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := run(context.Background(), t, r, src, nil, newTools(), vm.Options{}); res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	evs, err := d.Events("r")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == vm.StepStarted {
			if got := ev.Args["x"]; got != int64(9007199254740993) {
				t.Errorf("the argument read back is %v (%T)", got, got)
			}
			return
		}
	}
	t.Fatal("no step-started event")
}
