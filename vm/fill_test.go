package vm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// TestFillBoundedByStepTimeout: filling a hole is part of evaluating the
// step's arguments, which the operator's step timeout bounds: a model
// that does not answer fails the step with timeout, and its tool is not
// called.
func TestFillBoundedByStepTimeout(t *testing.T) {
	prog := compile(t, `tool f(x: int) -> int idempotent
f(x: ? "a number") -> †state.r
output †state.r
`)
	tools := newFakeTools().on("f", func(context.Context, map[string]any) (any, error) { return int64(1), nil })
	filler := FillerFunc(func(ctx context.Context, req FillRequest) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	res, err := Run(context.Background(), prog, nil, Options{Tools: tools, Filler: filler, StepTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Steps[0].Error
	if e == nil || e.Code != toolkit.CodeTimeout || !strings.Contains(e.Message, "filling argument x of f took longer than the step's time limit") {
		t.Fatalf("error %+v", e)
	}
	if tools.count("f") != 0 {
		t.Error("f was called")
	}
}

// TestFillInForEach: a hole of a for each is filled for each element,
// whose index names it, and its instruction reads the element.
func TestFillInForEach(t *testing.T) {
	prog := compile(t, `tool f(x: int, label: string) -> string pure
for each n in [1, 2, 3]: f(x: †n, label: ? "a label for †n") -> †state.r
output †state.r
`)
	tools := newFakeTools().on("f", func(_ context.Context, args map[string]any) (any, error) { return args["label"], nil })
	var steps []string
	filler := FillerFunc(func(_ context.Context, req FillRequest) (any, error) {
		steps = append(steps, req.Step)
		b, _ := json.Marshal(req.Values["†n"])
		return "n=" + string(b), nil
	})
	res, err := Run(context.Background(), prog, nil, Options{Tools: tools, Filler: filler, MaxParallel: 1})
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %v %v", err, res.Status, res.Err)
	}
	if got := strings.Join(steps, " "); got != "f[0] f[1] f[2]" {
		t.Errorf("asked for %s", got)
	}
	if got, _ := json.Marshal(res.Output); string(got) != `["n=1","n=2","n=3"]` {
		t.Errorf("output %s", got)
	}
}

// TestFillEager: in eager mode, a task and a hole streamed in are filled
// as their steps start; an unlabeled task is named task.
func TestFillEager(t *testing.T) {
	src := `tool f(x: int) -> {n: int} pure
tool g(x: int) -> {n: int} pure
input {
  n: int
}
task "double †input.n" using [f, g] -> †state.a
h: f(x: ? "one more than †state.a.n") -> †state.b
output †state.b.n
`
	tools := newFakeTools().
		on("f", func(_ context.Context, args map[string]any) (any, error) { return map[string]any{"n": args["x"]}, nil }).
		on("g", func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"n": args["x"].(int64) * 10}, nil
		})
	var asked []string
	filler := FillerFunc(func(_ context.Context, req FillRequest) (any, error) {
		asked = append(asked, req.Step+":"+req.Argument)
		if req.Argument == "" {
			return map[string]any{"candidate": "g", "arguments": map[string]any{"x": req.Values["†input.n"]}}, nil
		}
		return req.Values["†state.a.n"].(int64) + 1, nil
	})
	res, diags, err := RunStream(context.Background(), lang.NewStreamParser("s.plan", strings.NewReader(src)), map[string]any{"n": int64(2)}, Options{Tools: tools, Filler: filler, MaxParallel: 1})
	if err != nil || len(diags) > 0 || res.Status != RunCompleted {
		t.Fatalf("%v %v %v %v", err, diags, res.Status, res.Err)
	}
	if res.Output != int64(21) || strings.Join(asked, " ") != "task: h:x" || tools.count("f") != 1 || tools.count("g") != 1 {
		t.Errorf("output %v, asked %v, f %d, g %d", res.Output, asked, tools.count("f"), tools.count("g"))
	}
}

// TestMaxFills: a run asks its model at most MaxFills times; a hole in a
// for each cannot make it answer without end.
func TestMaxFills(t *testing.T) {
	prog := compile(t, `tool f(x: int, label: string) -> string pure
for each n in [1, 2, 3, 4, 5]: f(x: †n, label: ? "a label for †n") -> †state.r
output †state.r
`)
	tools := newFakeTools().on("f", func(_ context.Context, args map[string]any) (any, error) { return args["label"], nil })
	asked := 0
	filler := FillerFunc(func(context.Context, FillRequest) (any, error) {
		asked++
		return "x", nil
	})
	res, err := Run(context.Background(), prog, nil, Options{Tools: tools, Filler: filler, MaxFills: 3, MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Steps[0].Error
	if e == nil || e.Code != toolkit.CodeLimitExceeded || !strings.Contains(e.Message, "would ask a model more than 3 times in this run") || asked != 3 || tools.count("f") != 0 {
		t.Fatalf("error %+v, asked %d, f called %d times", e, asked, tools.count("f"))
	}
	wantSetting(t, "fill limit", e.Message, "vm.Options.MaxFills")
}
