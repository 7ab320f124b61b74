package vm

import (
	"context"
	"strings"
	"testing"
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

// TestRuntimeCostLimit: an expression that costs more than CostLimit to
// evaluate stops with an error instead of running on.
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
	o.CostLimit = 500
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	use := res.Steps[1]
	if use.Status != StatusFailed || use.Error == nil || use.Error.Code != "condition-error" || !strings.Contains(use.Error.Message, "cost limit") {
		t.Errorf("the step whose condition is too costly: %+v %+v", use, use.Error)
	}
	if tools.count("use") != 0 {
		t.Error("the tool was called")
	}
}
