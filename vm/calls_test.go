package vm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestCallContext: the context a tool is called with carries the call's
// identity and deadline, ends at the timeout (for contexts derived from it
// too), and ends once the call is over.
func TestCallContext(t *testing.T) {
	prog := compile(t, `
tool probe() -> int pure
tool wait() -> int pure
probe() -> †state.p
  timeout 1h
wait() -> †state.w
  timeout 20ms
`)
	var probed context.Context
	var info toolkit.CallInfo
	var deadline time.Time
	var hasDeadline bool
	waitErr := make(chan error, 1)
	tools := newFakeTools().
		on("probe", func(ctx context.Context, _ map[string]any) (any, error) {
			probed = ctx
			info, _ = toolkit.CallInfoFrom(ctx)
			deadline, hasDeadline = ctx.Deadline()
			if ctx.Err() != nil {
				return nil, errors.New("the context ended before the call")
			}
			return int64(1), nil
		}).
		on("wait", func(ctx context.Context, _ map[string]any) (any, error) {
			derived, cancel := context.WithCancel(ctx)
			defer cancel()
			<-derived.Done()
			// The run may be over already: the step was settled when its
			// context ended.
			waitErr <- ctx.Err()
			return nil, derived.Err()
		})
	o := opts(tools, nil)
	o.RunID = "r1"
	o.MaxParallel = 1
	o.StepTimeout = 2 * time.Hour // the step's timeout of 1h lowers it
	before := time.Now()
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if diff := cmp.Diff(toolkit.CallInfo{Run: "r1", Step: "probe", Tool: "probe", Attempt: 1, Key: "r1/probe", Timeout: time.Hour}, info); diff != "" {
		t.Errorf("call info (-want +got):\n%s", diff)
	}
	if !hasDeadline || deadline.Before(before.Add(time.Hour)) || deadline.After(after.Add(time.Hour)) {
		t.Errorf("deadline %v (%v), want an hour after the call started", deadline, hasDeadline)
	}
	if !errors.Is(probed.Err(), context.Canceled) {
		t.Errorf("the context of a call that is over: %v, want canceled", probed.Err())
	}
	select {
	case <-probed.Done():
	default:
		t.Error("the context of a call that is over is not done")
	}
	if err := <-waitErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait saw %v, want the deadline exceeded", err)
	}
	w := res.Steps[1]
	if w.Error == nil || w.Error.Code != toolkit.CodeTimeout {
		t.Errorf("wait: %+v, want a timeout", w)
	}
}

// TestCallTimeoutsInterleaved: a short timeout that starts after a long
// one ends first, and each call ends at its own.
func TestCallTimeoutsInterleaved(t *testing.T) {
	prog := compile(t, `
on failure skip
tool long() -> int pure
tool mark() -> int pure
tool short(x: int) -> int pure
long() -> †state.l
  timeout 1h
mark() -> †state.m
short(x: †state.m) -> †state.s
  timeout 20ms
`)
	started := make(chan struct{})
	shortDone := make(chan struct{})
	tools := newFakeTools().
		on("long", func(ctx context.Context, _ map[string]any) (any, error) {
			close(started)
			select {
			case <-shortDone:
				return int64(1), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}).
		on("mark", func(ctx context.Context, _ map[string]any) (any, error) {
			<-started // short starts after long
			return int64(1), nil
		}).
		on("short", func(ctx context.Context, _ map[string]any) (any, error) {
			defer close(shortDone)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"long": "completed", "mark": "completed", "short": "failed"}
	if diff := cmp.Diff(want, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if e := res.Steps[2].Error; e == nil || e.Code != toolkit.CodeTimeout {
		t.Errorf("short: %+v, want a timeout", res.Steps[2])
	}
}

// TestCallHangsCanceled: canceling the run leaves a plain step whose tool
// ignores its context; the run ends canceled without waiting for it.
func TestCallHangsCanceled(t *testing.T) {
	prog := compile(t, "tool hang() -> int pure\ntool after(x: int) -> int pure\nhang() -> †state.h\nafter(x: †state.h) -> †state.a\n")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	tools := newFakeTools().
		on("hang", func(context.Context, map[string]any) (any, error) {
			cancel()
			<-release // ignores its context
			return int64(1), nil
		}).
		on("after", echoTool)
	res, err := Run(ctx, prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCanceled || tools.count("after") != 0 {
		t.Errorf("status %s, after calls %d", res.Status, tools.count("after"))
	}
	if e := res.Steps[0].Error; e == nil || e.Code != toolkit.CodeCanceled {
		t.Errorf("hang: %+v, want canceled", res.Steps[0])
	}
}

// TestCallQueue: a queue drops the calls that are over from its head,
// and from anywhere when it is full, keeping the live ones in order.
func TestCallQueue(t *testing.T) {
	q := callQueue{calls: make([]*callCtx, 0, 4)}
	calls := make([]*callCtx, 5)
	for i := range calls {
		calls[i] = &callCtx{timeout: time.Duration(i)}
	}
	over := func(is ...int) {
		for _, i := range is {
			calls[i].release()
		}
		q.drop()
	}
	left := func() []time.Duration {
		var out []time.Duration
		for _, c := range q.calls[q.head:] {
			out = append(out, c.timeout)
		}
		return out
	}
	for _, c := range calls[:4] {
		q.push(c)
	}
	for _, step := range []struct {
		over []int
		push bool
		want []time.Duration
	}{
		{over: []int{1, 3}, want: []time.Duration{0, 1, 2, 3}}, // behind a live head
		{push: true, want: []time.Duration{0, 2, 4}},           // full: the calls over go
		{over: []int{0}, want: []time.Duration{2, 4}},
		{over: []int{2, 4}},
	} {
		over(step.over...)
		if step.push {
			q.push(calls[4])
		}
		if diff := cmp.Diff(step.want, left()); diff != "" {
			t.Errorf("over %v, push %v (-want +got):\n%s", step.over, step.push, diff)
		}
	}
	if q.head != 0 || len(q.calls) != 0 {
		t.Errorf("an empty queue has head %d and %d calls", q.head, len(q.calls))
	}
}
