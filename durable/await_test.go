package durable

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/vm"
)

const gatedText = "tool send(x: string) -> string\nsend(x: \"hi\") -> †state.y\n  approve \"Send?\"\noutput †state.y\n"

// TestAwaitDecidedElsewhere: a run that waits at its gate is taken over
// again by Await once another Store (another connection, as another
// process would be) records the decision, and goes on; while it waits,
// Continue from elsewhere is refused as not ready, and once the run ends,
// as ended.
func TestAwaitDecidedElsewhere(t *testing.T) {
	dir := t.TempDir()
	var sent atomic.Int32
	send := callerFunc(func(context.Context, string, map[string]any) (any, error) { sent.Add(1); return "sent", nil })
	r, st, err := Start(compile(t, gatedText, nil), Settings{}, StartOptions{Dir: dir, ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := r.Execute(context.Background(), ExecOptions{Tools: send})
	if err != nil || res.Status != vm.RunWaiting {
		t.Fatalf("%v %v", res, err)
	}
	other, err := OpenExisting(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Continue("g"); !errors.Is(err, ErrNotReady) {
		t.Fatalf("continue before the decision: %v", err)
	}
	shown := make(chan []*Approval, 4)
	done := make(chan error, 1)
	var next *Run
	go func() {
		var err error
		next, err = r.Await(context.Background(), func(p []*Approval) { shown <- p })
		done <- err
	}()
	if p := <-shown; len(p) != 1 || p[0].Tool != "send" {
		t.Fatalf("waiting for %v", p)
	}
	ap, err := other.Choose("g", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Decide("g", ap, Decision{Approved: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res, err = next.Execute(context.Background(), ExecOptions{Tools: send})
	if err != nil || res.Status != vm.RunCompleted || sent.Load() != 1 {
		t.Fatalf("%v %v, sent %d times", res, err, sent.Load())
	}
	var fe *FinishedError
	if _, err := other.Continue("g"); !errors.As(err, &fe) {
		t.Fatalf("continue after the end: %v", err)
	}
}

// TestCancelWatched: a request to cancel a run, recorded by another Store
// while a step runs, cancels the step and records the run as aborted; the
// request of a run that waits aborts it at once; an aborted run is not
// resumed, and an ended one not canceled.
func TestCancelWatched(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	slow := callerFunc(func(ctx context.Context, _ string, _ map[string]any) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	const text = "tool wait() -> string\ntool after(x: string) -> string\nwait() -> †state.a\nafter(x: †state.a) -> †state.b\noutput †state.b\n"
	r, st, err := Start(compile(t, text, nil), Settings{}, StartOptions{Dir: dir, ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := OpenExisting(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		<-started
		if stopped, err := other.Cancel("c", "ann", "enough"); err != nil || stopped {
			t.Errorf("cancel of a running run: stopped %v, %v", stopped, err)
		}
	}()
	res, err := r.Execute(context.Background(), ExecOptions{Tools: slow})
	var ce *CanceledError
	if err != nil || res.Status != RunAborted || !errors.As(res.Err, &ce) || ce.Request.By != "ann" {
		t.Fatalf("%+v %v", res, err)
	}
	det, err := other.Show("c")
	if err != nil || det.Status != RunAborted || det.Error != "canceled by ann: enough" || det.Finished.IsZero() {
		t.Fatalf("recorded %+v %v", det, err)
	}
	var fe *FinishedError
	if _, err := other.Resume("c", false); !errors.As(err, &fe) {
		t.Errorf("resume of an aborted run: %v", err)
	}
	if _, err := other.Cancel("c", "", ""); !errors.As(err, &fe) {
		t.Errorf("cancel of an ended run: %v", err)
	}

	w, wst, err := Start(compile(t, gatedText, nil), Settings{}, StartOptions{Dir: dir, ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer wst.Close()
	if res, err := w.Execute(context.Background(), ExecOptions{Tools: slow}); err != nil || res.Status != vm.RunWaiting {
		t.Fatalf("%v %v", res, err)
	}
	if stopped, err := other.Cancel("w", "", "not needed"); err != nil || !stopped {
		t.Fatalf("cancel of a waiting run: stopped %v, %v", stopped, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.Await(ctx, nil); !errors.As(err, &ce) {
		t.Errorf("await of a canceled run: %v", err)
	}
}
