package vm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestMaxOutputBytes: a step whose result is over the size limit fails
// with limit-exceeded, and the slot stays unwritten; one under it runs.
func TestMaxOutputBytes(t *testing.T) {
	prog := compile(t, "tool big(n: int) -> string pure\nbig(n: 100) -> †state.small\nbig(n: 5000) -> †state.large || †state.err\n")
	tools := newFakeTools().on("big", func(ctx context.Context, args map[string]any) (any, error) {
		return strings.Repeat("x", int(args["n"].(int64))), nil
	})
	o := opts(tools, nil)
	o.MaxOutputBytes = 1000
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps[0].Status != StatusCompleted {
		t.Errorf("the small result: %+v", res.Steps[0])
	}
	large := res.Steps[1]
	if large.Status != StatusFailed || large.Error == nil || large.Error.Code != "limit-exceeded" || !strings.Contains(large.Error.Message, "larger than the limit of 1000 bytes") {
		t.Errorf("the large result: %+v %+v", large, large.Error)
	}
	if _, written := res.State["large"]; written {
		t.Error("the large result was written to the state")
	}
}

// TestRuntimeCostLimit: an expression that costs more than MaxCost to
// evaluate stops with an error of code limit-exceeded instead of running
// on.
func TestRuntimeCostLimit(t *testing.T) {
	prog := compile(t, "tool get() -> [int] pure\ntool use(x: int) -> int pure\nget() -> †state.xs\nuse(x: 1) -> †state.r\n  when †state.xs.exists(i, i < 0)\n")
	tools := newFakeTools().on("get", func(ctx context.Context, args map[string]any) (any, error) {
		xs := make([]any, 10000)
		for i := range xs {
			xs[i] = int64(i)
		}
		return xs, nil
	}).on("use", echoTool)
	o := opts(tools, nil)
	o.MaxCost = 500
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	use := res.Steps[1]
	if use.Status != StatusFailed || use.Error == nil || use.Error.Code != "limit-exceeded" || !strings.Contains(use.Error.Message, "costs more than the limit of 500") {
		t.Errorf("the step whose condition is too costly: %+v %+v", use, use.Error)
	}
	if tools.count("use") != 0 {
		t.Error("the tool was called")
	}
}

// blockTool waits until its call's context ends, and reports the deadline
// it was given.
func blockTool(deadlines chan<- time.Duration) func(ctx context.Context, args map[string]any) (any, error) {
	return func(ctx context.Context, args map[string]any) (any, error) {
		if d, ok := ctx.Deadline(); ok && deadlines != nil {
			deadlines <- time.Until(d)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// TestStepTimeoutIsACap: a plan's timeout may lower the operator's step
// timeout, never raise it; each attempt of a retried step has the whole
// bound.
func TestStepTimeoutIsACap(t *testing.T) {
	prog := compile(t, "tool hang() -> int pure\nhang() -> †state.r\n  timeout 87600h\n  retry 2 backoff 1ms\n")
	// Never closed: the tool of the last attempt may still be starting
	// when the run returns.
	deadlines := make(chan time.Duration, 10)
	tools := newFakeTools().on("hang", blockTool(deadlines))
	o := opts(tools, nil)
	o.StepTimeout = 20 * time.Millisecond
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Steps[0]
	if s.Status != StatusFailed || s.Error.Code != "timeout" || !strings.Contains(s.Error.Message, "within 20ms") || s.Attempts != 3 {
		t.Errorf("the step: %s, %d attempts, %+v", s.Status, s.Attempts, s.Error)
	}
	for len(deadlines) > 0 {
		if d := <-deadlines; d > 20*time.Millisecond {
			t.Errorf("an attempt had %s to run, more than the operator's 20ms", d)
		}
	}
	// A shorter timeout of the plan's own is kept.
	prog = compile(t, "tool hang() -> int pure\nhang() -> †state.r\n  timeout 10ms\n")
	o = opts(newFakeTools().on("hang", blockTool(nil)), nil)
	o.StepTimeout = time.Hour
	res, err = Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Steps[0]; s.Error == nil || !strings.Contains(s.Error.Message, "within 10ms") {
		t.Errorf("the step: %+v", s.Error)
	}
}

// TestRunTimeout: when the run's time limit passes, the step running is
// canceled, no other starts, and the run ends canceled with an error of
// code limit-exceeded that names the limit.
func TestRunTimeout(t *testing.T) {
	prog := compile(t, "tool hang() -> int pure\ntool after(x: int) -> int pure\nhang() -> †state.a\nafter(x: †state.a) -> †state.b\n")
	tools := newFakeTools().on("hang", blockTool(nil)).on("after", echoTool)
	o := opts(tools, nil)
	o.RunTimeout = 20 * time.Millisecond
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	var re *toolkit.Error
	if res.Status != RunCanceled || !errors.As(res.Err, &re) || re.Code != "limit-exceeded" || !strings.Contains(re.Message, "time limit of 20ms") {
		t.Errorf("the run: %s, %v", res.Status, res.Err)
	}
	if s := res.Steps[0]; s.Status != StatusFailed || s.Error.Code != "canceled" || !strings.Contains(s.Error.Message, "hang was stopped: the run took longer than its time limit of 20ms") {
		t.Errorf("the step running: %s %+v", s.Status, s.Error)
	}
	if s := res.Steps[1]; s.Status != StatusSkipped || !strings.Contains(s.Reason, "time limit") {
		t.Errorf("the step after it: %s %q", s.Status, s.Reason)
	}
	if tools.count("after") != 0 {
		t.Error("a step started after the time limit")
	}
}

// TestRunTimeoutApproval: an approval asked in the process counts toward
// the run's time limit.
func TestRunTimeoutApproval(t *testing.T) {
	prog := compile(t, "tool pay() -> int irreversible\npay() -> †state.p\n  approve \"Pay?\"\n")
	tools := newFakeTools().on("pay", echoTool)
	o := opts(tools, nil)
	o.RunTimeout = 20 * time.Millisecond
	o.Approver = ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
		<-ctx.Done()
		return Decision{}, ctx.Err()
	})
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Steps[0]; s.Status != StatusFailed || s.Error.Code != "canceled" || !strings.Contains(s.Error.Message, "time limit") || res.Status != RunCanceled {
		t.Errorf("the run %s, the step %s %+v", res.Status, s.Status, s.Error)
	}
	if tools.count("pay") != 0 {
		t.Error("the tool was called")
	}
}

// TestTimeoutStopsEvaluation: the evaluation of a step's arguments stops
// at the step's time limit and at the run's, even when the cost limit
// would let it go on.
func TestTimeoutStopsEvaluation(t *testing.T) {
	src := "tool use(x: any) -> any pure\nuse(x: lists.range(100000).map(i, lists.range(100000).exists(j, j == -i))) -> †state.r\n"
	f, diags := lang.Parse("slow.plan", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, diags := compiler.Check(f, compiler.Config{Limits: compiler.Limits{MaxCost: 1 << 60}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		step, run  time.Duration
		code, says string
	}{
		{"step", 20 * time.Millisecond, 0, "timeout", "took longer than the step's time limit"},
		{"run", time.Hour, 20 * time.Millisecond, "canceled", "the run took longer than its time limit of 20ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tools := newFakeTools().on("use", echoTool)
			o := opts(tools, nil)
			o.MaxCost = 1 << 60
			o.StepTimeout, o.RunTimeout = c.step, c.run
			res, err := Run(context.Background(), prog, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if s := res.Steps[0]; s.Status != StatusFailed || s.Error.Code != c.code || !strings.Contains(s.Error.Message, c.says) {
				t.Errorf("the step: %s %+v", s.Status, s.Error)
			}
			if tools.count("use") != 0 {
				t.Error("the tool was called")
			}
		})
	}
}
