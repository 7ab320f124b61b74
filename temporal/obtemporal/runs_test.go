package obtemporal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// toolFunc is a tool set of one function, which gets every call.
type toolFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f toolFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

// keyLog records the idempotency keys of the calls a worker made.
type keyLog struct {
	mu   sync.Mutex
	keys map[string]int
}

func (l *keyLog) add(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string]int{}
	}
	l.keys[toolkit.IdempotencyKey(ctx)]++
}

// runPlan starts a plan on a queue and waits for its outcome.
func runPlan(t *testing.T, c client.Client, queue, text, input string) (string, *obtemporal.Outcome) {
	t.Helper()
	ctx := testCtx(t)
	var in []byte
	if input != "" {
		in = []byte(input)
	}
	id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: "test.plan", Text: text}, Input: in}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obtemporal.Wait(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	return id, out
}

// TestFanOut: a for each over 1,000 elements is spread over two workers
// of one task queue: each ran some, together exactly all, none twice.
func TestFanOut(t *testing.T) {
	_, c := newServer(t)
	reg, decls := builtins(t)
	work := `tool work(i: int) -> int idempotent`
	var logs [2]keyLog
	for i := range logs {
		tools := toolFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
			if name != "work" {
				return reg.Call(ctx, name, args)
			}
			logs[i].add(ctx)
			time.Sleep(time.Millisecond) // a call that takes a little time, so that both workers take some
			return args["i"].(int64) * 2, nil
		})
		startWorker(t, c, "fanout", obtemporal.Config{Tools: tools, Check: compiler.Config{Tools: decls}, MaxParallel: 200})
	}
	xs := make([]string, 1000)
	for i := range xs {
		xs[i] = fmt.Sprint(i)
	}
	id, out := runPlan(t, c, "fanout", work+`
input {
  xs: [int]
}
each: for each x in †input.xs max 1000: work(i: †x) -> †state.out
output {
  n: size(†state.out)
  last: †state.out[999]
}
`, `{"xs": [`+strings.Join(xs, ",")+`]}`)
	if out.Status != vm.RunCompleted || canonical(t, out.Output) != canonical(t, []byte(`{"n": 1000, "last": 1998}`)) {
		t.Fatalf("%s %s %s", out.Status, out.Error, out.Output)
	}
	all := map[string]int{}
	for i := range logs {
		if len(logs[i].keys) == 0 {
			t.Errorf("worker %d ran nothing", i)
		}
		for k, n := range logs[i].keys {
			all[k] += n
		}
	}
	if len(all) != 1000 {
		t.Errorf("%d keys, want 1000", len(all))
	}
	for k, n := range all {
		if n != 1 || !strings.HasPrefix(k, id+"/each[") {
			t.Errorf("key %q ran %d times", k, n)
		}
	}
	t.Logf("worker 0 ran %d calls, worker 1 %d", len(logs[0].keys), len(logs[1].keys))
	replay(t, c, id, obtemporal.Config{Tools: toolFunc(nil), Check: compiler.Config{Tools: decls}, MaxParallel: 200})
}

// replay replays a run's history with the workflow, which must make the
// same decisions as it made.
func replay(t *testing.T, c client.Client, id string, cfg obtemporal.Config) {
	t.Helper()
	ctx := testCtx(t)
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	r := worker.NewWorkflowReplayer()
	obtemporal.RegisterWorkflow(r, cfg)
	if err := r.ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("replaying %s: %v", id, err)
	}
}

// TestRetriesOnTemporal: a step's retries with backoff and its fallback
// are the engine's, each attempt an activity with the same key, the
// backoff a durable timer; the history replays.
func TestRetriesOnTemporal(t *testing.T) {
	_, c := newServer(t)
	_, decls := builtins(t)
	src := `tool flaky(x: int) -> int idempotent
tool spare(x: int) -> int idempotent
a: flaky(x: 1) -> †state.a
  retry 3 backoff 50ms
b: flaky(x: 2) -> †state.b
  retry 1 backoff 10ms
  fallback spare(x: 2)
output {
  a: †state.a
  b: †state.b
}
`
	var mu sync.Mutex
	calls := map[string][]int{}
	tools := toolFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		calls[info.Key] = append(calls[info.Key], info.Attempt)
		n := len(calls[info.Key])
		mu.Unlock()
		x := args["x"].(int64)
		switch {
		case name == "spare":
			return x * 100, nil
		case x == 1 && n < 3:
			return nil, errors.New("busy")
		case x == 2:
			return nil, &toolkit.Error{Code: "down", Message: "down for good"}
		}
		return x, nil
	})
	cfg := obtemporal.Config{Tools: tools, Check: compiler.Config{Tools: decls}}
	startWorker(t, c, "retries", cfg)
	id, out := runPlan(t, c, "retries", src, "")
	if out.Status != vm.RunCompleted || canonical(t, out.Output) != canonical(t, []byte(`{"a": 1, "b": 200}`)) {
		t.Fatalf("%s %s %s", out.Status, out.Error, out.Output)
	}
	want := map[string][]int{id + "/a": {1, 2, 3}, id + "/b": {1, 2}, id + "/b/fallback": {3}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if out.Summary.Retries != 3 {
		t.Errorf("%d retries, want 3", out.Summary.Retries)
	}
	replay(t, c, id, cfg)
}

// TestReplan: a step that fails under `on failure replan` continues the
// same workflow with the replanner's plan; the completed steps do not run
// again.
func TestReplan(t *testing.T) {
	_, c := newServer(t)
	_, decls := builtins(t)
	src := `tool site(q: string) -> {url: string} pure
tool scrape(url: string) -> string pure
tool api(url: string) -> string pure
tool summarize(text: string) -> string pure
on failure replan max 1
site(q: "x") -> †state.site
scrape(url: †state.site.url) -> †state.page
summarize(text: †state.page) -> †state.summary
output †state.summary
`
	var log keyLog
	tools := toolFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
		log.add(ctx)
		switch name {
		case "site":
			return map[string]any{"url": "https://example.test"}, nil
		case "scrape":
			return nil, &toolkit.Error{Code: "blocked", Message: "the site blocks scrapers", NotRetryable: true}
		case "api":
			return "text of " + args["url"].(string), nil
		case "summarize":
			return "summary of " + args["text"].(string), nil
		}
		return nil, fmt.Errorf("no tool %s", name)
	})
	var asked []*vm.ReplanRequest
	replanner := replannerFunc(func(_ context.Context, req *vm.ReplanRequest) (*lang.File, error) {
		asked = append(asked, req)
		f, diags := lang.Parse("new", []byte("api(url: †state.site.url) -> †state.page\nsummarize(text: †state.page) -> †state.summary\noutput †state.summary\n"))
		if diags.HasErrors() {
			return nil, diags
		}
		return f, nil
	})
	cfg := obtemporal.Config{Tools: tools, Check: compiler.Config{Tools: decls}, Replanner: replanner}
	startWorker(t, c, "replan", cfg)
	local, err := vm.Run(context.Background(), compileLocal(t, "t", src, decls), nil, vm.Options{Tools: toolFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
		return tools(toolkit.WithCallInfo(ctx, toolkit.CallInfo{Key: "local"}), name, args)
	}), Replanner: replanner})
	if err != nil {
		t.Fatal(err)
	}
	asked = nil
	log.keys = nil
	id, out := runPlan(t, c, "replan", src, "")
	if out.Status != local.Status || canonical(t, out.Output) != `"summary of text of https://example.test"` {
		t.Fatalf("%s %s %s; locally %s", out.Status, out.Error, out.Output, local.Status)
	}
	if out.Summary.Replans != 1 || len(asked) != 1 {
		t.Errorf("%d replans, asked %d times", out.Summary.Replans, len(asked))
	}
	if len(asked) == 1 && (asked[0].Failed == nil || asked[0].Failed.ID != "scrape" || asked[0].Program == nil) {
		t.Errorf("the replanner was asked %+v", asked[0])
	}
	want := map[string]int{id + "/site": 1, id + "/scrape": 1, id + "/api": 1, id + "/summarize": 1}
	if fmt.Sprint(log.keys) != fmt.Sprint(want) {
		t.Errorf("calls %v, want each once: %v", log.keys, want)
	}
	st, err := obtemporal.Show(testCtx(t), c, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Replans) != 1 || !strings.Contains(st.Replans[0], "api(") {
		t.Errorf("show: replans %q", st.Replans)
	}
	replay(t, c, id, cfg)
}

type replannerFunc func(ctx context.Context, req *vm.ReplanRequest) (*lang.File, error)

func (f replannerFunc) Replan(ctx context.Context, req *vm.ReplanRequest) (*lang.File, error) {
	return f(ctx, req)
}

// TestHostilePlans: a plan cannot call a tool the worker does not have,
// raise the operator's time limit, or keep a result over the bound; each
// is refused with a message that says why, and the tool never ran (or
// its result was not kept).
func TestHostilePlans(t *testing.T) {
	_, c := newServer(t)
	reg, decls := builtins(t)
	tool := `tool slow(x: int) -> string idempotent
tool big(n: int) -> string pure
`
	var log keyLog
	tools := toolFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
		log.add(ctx)
		switch name {
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		case "big":
			return strings.Repeat("x", int(args["n"].(int64))), nil
		}
		return reg.Call(ctx, name, args)
	})
	has := func(name string) bool { return name == "slow" || name == "big" || reg.Has(name) }
	w, err := obtemporal.NewWorker(c, "hostile", obtemporal.Config{Tools: tools, Has: has, Check: compiler.Config{Tools: decls}, StepTimeout: 500 * time.Millisecond, MaxOutputBytes: 100 << 20}, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A workflow of someone who may start workflows on the queue, which
	// schedules the call activity itself, asking for more time and more
	// room than the worker gives.
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, call obtemporal.Call) (*obtemporal.CallResult, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour})
		var res obtemporal.CallResult
		err := workflow.ExecuteActivity(ctx, obtemporal.CallActivity, call).Get(ctx, &res)
		return &res, err
	}, workflow.RegisterOptions{Name: "rogue"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	t.Run("call activity scheduled directly", func(t *testing.T) {
		ctx := testCtx(t)
		for _, tc := range []struct {
			call       obtemporal.Call
			code, says string
		}{
			{obtemporal.Call{Tool: "slow", Key: "r/x", Step: "x", Args: []byte(`{"x": 1}`), Timeout: time.Hour}, toolkit.CodeTimeout, "did not return within 500ms"},
			{obtemporal.Call{Tool: "big", Key: "r/y", Step: "y", Args: []byte(fmt.Sprintf(`{"n": %d}`, obtemporal.MaxResultBytes+10)), MaxOutputBytes: 100 << 20}, toolkit.CodeLimitExceeded, "larger than the limit of 1048576 bytes"},
		} {
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "hostile"}, "rogue", tc.call)
			if err != nil {
				t.Fatal(err)
			}
			var res obtemporal.CallResult
			if err := run.Get(ctx, &res); err != nil {
				t.Fatal(err)
			}
			if res.Err == nil || res.Err.Code != tc.code || !strings.Contains(res.Err.Message, tc.says) || res.Value != nil {
				t.Errorf("%s: %+v %s", tc.call.Tool, res.Err, res.Value)
			}
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		_, out := runPlan(t, c, "hostile", "tool rm(path: string) -> string pure\nrm(path: \"/\") -> †state.x\n", "")
		if out.Status != vm.RunFailed || !strings.Contains(out.Error, "no implementation for rm") ||
			!strings.Contains(out.Error, "obtemporal.Config.Tools") || strings.Contains(out.Error, "--") {
			t.Errorf("%s %q", out.Status, out.Error)
		}
	})
	t.Run("timeout above the operator's", func(t *testing.T) {
		_, out := runPlan(t, c, "hostile", tool+"slow(x: 1) -> †state.x\n  timeout 10m\n", "")
		if out.Status == vm.RunCompleted || len(out.Failed) != 1 || out.Failed[0].Code != toolkit.CodeTimeout || !strings.Contains(out.Failed[0].Message, "did not return within 500ms") {
			t.Errorf("%s %q %+v", out.Status, out.Error, out.Failed)
		}
	})
	t.Run("result over the bound", func(t *testing.T) {
		// The worker asked for 100 MiB; the bound stays Temporal's.
		n := obtemporal.MaxResultBytes + 10
		_, out := runPlan(t, c, "hostile", tool+fmt.Sprintf("big(n: %d) -> †state.x\n", n), "")
		if out.Status == vm.RunCompleted || len(out.Failed) != 1 || out.Failed[0].Code != toolkit.CodeLimitExceeded || !strings.Contains(out.Failed[0].Message, "larger than the limit of 1048576 bytes") {
			t.Errorf("%s %q %+v", out.Status, out.Error, out.Failed)
		}
	})
	t.Run("plan that does not check", func(t *testing.T) {
		_, out := runPlan(t, c, "hostile", "file.write(path: \"x\", content: 1) -> †state.x\n", "")
		if out.Status != vm.RunFailed || out.Diagnostics == "" {
			t.Errorf("%s %q", out.Status, out.Error)
		}
	})
	for k := range log.keys {
		if strings.Contains(k, "/rm") {
			t.Errorf("an unknown tool was called: %s", k)
		}
	}
}

// TestApprovals: a plan's approval and a step's are asked and answered
// through the workflow's update, as a journaled run's are through
// obelisk approve: approving the plan runs it, rejecting a step fails it
// with the note, as in a local run that rejects it.
func TestApprovals(t *testing.T) {
	_, c := newServer(t)
	ctx := testCtx(t)
	reg, decls := builtins(t)
	for _, tc := range []struct {
		name, step string
		approve    bool
	}{{"travel-pet", "", true}, {"refund", "refund", false}} {
		t.Run(tc.name, func(t *testing.T) {
			text, input := readExample(t, tc.name)
			mocksText, err := os.ReadFile(filepath.Join("..", "..", "examples", tc.name+".mocks.json"))
			if err != nil {
				t.Fatal(err)
			}
			mocks, err := toolkit.ParseMocks(mocksText)
			if err != nil {
				t.Fatal(err)
			}
			queue := "approvals-" + tc.name
			startWorker(t, c, queue, obtemporal.Config{Tools: toolkit.Chain{Mocks: mocks, Registry: reg}, Check: checkConfig(decls)})
			id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: tc.name + ".plan", Text: text}, Input: input}, 0)
			if err != nil {
				t.Fatal(err)
			}
			st := waitFor(t, c, id, func(st *obtemporal.Status) bool { return st.Status == vm.RunWaiting })
			if len(st.Approvals) != 1 || st.Approvals[0].Step != tc.step {
				t.Fatalf("approvals %+v", st.Approvals)
			}
			what, err := obtemporal.Approve(ctx, c, id, obtemporal.Decision{Approve: tc.approve, By: "test", Note: "not today"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obtemporal.Approve(ctx, c, id, obtemporal.Decision{Approve: true}); err == nil {
				t.Errorf("a second decision on %s was taken", what)
			}
			out, err := obtemporal.Wait(ctx, c, id)
			if err != nil {
				t.Fatal(err)
			}
			prog := compileLocal(t, tc.name, text, decls)
			in, _ := toolkit.DecodeJSON(input)
			local, err := vm.Run(ctx, prog, in.(map[string]any), vm.Options{Tools: toolkit.Chain{Mocks: mustMocks(t, mocksText), Registry: reg},
				Approver: vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
					return vm.Decision{Approved: tc.approve, Note: "not today"}, nil
				})})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != local.Status || out.Summary.Failed != local.Failed {
				t.Errorf("%s (%s), locally %s (%v)", out.Status, out.Error, local.Status, local.Err)
			}
			if !tc.approve && (len(out.Failed) != 1 || out.Failed[0].Code != toolkit.CodeRejected || !strings.Contains(out.Failed[0].Message, "a person rejected refund: not today")) {
				t.Errorf("failed %+v", out.Failed)
			}
			st, err = obtemporal.Show(ctx, c, id)
			if err != nil || len(st.Approvals) != 1 || !st.Approvals[0].Decided || st.Approvals[0].By != "test" {
				t.Errorf("show: %v %+v", err, st)
			}
		})
	}
}

func mustMocks(t *testing.T, text []byte) *toolkit.Mocks {
	t.Helper()
	m, err := toolkit.ParseMocks(text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
