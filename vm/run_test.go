package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// compile checks and compiles plan text; it fails the test on any error.
func compile(t testing.TB, src string) *compiler.Program {
	t.Helper()
	f, diags := lang.Parse("test.plan", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse:\n%s", diags)
	}
	info, cd := compiler.Check(f, compiler.Config{})
	if cd.HasErrors() {
		t.Fatalf("check:\n%s", cd)
	}
	prog, err := compiler.Compile(info, cd, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// fakeTools calls Go functions by tool name and counts the calls.
type fakeTools struct {
	mu    sync.Mutex
	fns   map[string]func(ctx context.Context, args map[string]any) (any, error)
	calls map[string]int
}

func newFakeTools() *fakeTools {
	return &fakeTools{fns: map[string]func(context.Context, map[string]any) (any, error){}, calls: map[string]int{}}
}

func (f *fakeTools) on(name string, fn func(ctx context.Context, args map[string]any) (any, error)) *fakeTools {
	f.fns[name] = fn
	return f
}

func (f *fakeTools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	f.mu.Lock()
	f.calls[name]++
	fn := f.fns[name]
	f.mu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("no fake for %s", name)
	}
	return fn(ctx, args)
}

func (f *fakeTools) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// trace returns "type step" lines for the given event types.
func (r *recorder) trace(types ...EventType) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		for _, t := range types {
			if e.Type == t {
				out = append(out, string(e.Type)+" "+e.Step)
			}
		}
	}
	return out
}

// noSleep records backoff delays without waiting.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (n *noSleep) sleep(ctx context.Context, d time.Duration) error {
	n.mu.Lock()
	n.delays = append(n.delays, d)
	n.mu.Unlock()
	return ctx.Err()
}

func opts(tools Caller, rec *recorder) Options {
	o := Options{Tools: tools, Rand: rand.New(rand.NewPCG(1, 2)), Sleep: (&noSleep{}).sleep}
	if rec != nil {
		o.Observer = rec.observe
	}
	return o
}

func statuses(res *Result) map[string]string {
	out := map[string]string{}
	for _, s := range res.Steps {
		st := string(s.Status)
		if s.Handled {
			st += " (handled)"
		}
		out[s.ID] = st
	}
	return out
}

func echoTool(ctx context.Context, args map[string]any) (any, error) { return args["x"], nil }

func TestRunChain(t *testing.T) {
	prog := compile(t, `
tool inc(x: int) -> int pure
input {
  start: int
}
a: inc(x: †input.start) -> †state.a
b: inc(x: †state.a) -> †state.b
c: inc(x: †state.b + 10) -> †state.c
output {
  result: †state.c
  all: [†state.a, †state.b]
}
`)
	tools := newFakeTools().on("inc", func(ctx context.Context, args map[string]any) (any, error) {
		return args["x"].(int64) + 1, nil
	})
	res, err := Run(context.Background(), prog, map[string]any{"start": int64(1)}, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || res.Err != nil {
		t.Fatalf("status %s, err %v", res.Status, res.Err)
	}
	want := map[string]any{"result": int64(14), "all": []any{int64(2), int64(3)}}
	if diff := cmp.Diff(want, res.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if res.Completed != 3 {
		t.Errorf("completed %d, want 3", res.Completed)
	}
}

func TestRunInputChecked(t *testing.T) {
	prog := compile(t, "tool f(x: int) -> int pure\ninput {\n  n: int\n  m?: string\n  k: int = 3\n}\nf(x: †input.n) -> †state.r\n")
	_, err := Run(context.Background(), prog, map[string]any{"n": "one", "extra": true}, opts(newFakeTools(), nil))
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("want an InputError, got %v", err)
	}
	got := strings.Join(ie.Problems, "; ")
	if !strings.Contains(got, `n: the string "one" is not an int`) || !strings.Contains(got, "field extra is not declared") {
		t.Errorf("problems: %s", got)
	}
}

// TestRunErrorAlternative: on failure the error value goes to the second
// slot; steps reading the untaken slot are skipped, not failed.
func TestRunErrorAlternative(t *testing.T) {
	prog := compile(t, `
tool pay(amount: number) -> {id: string} idempotent
tool confirm(receipt: {id: string}) -> string idempotent
tool report(error: error) -> string idempotent
pay(amount: 5.0) -> †state.receipt || †state.err
confirm(receipt: †state.receipt) -> †state.ok
report(error: †state.err) -> †state.reported
output {
  ok: †state.ok
  reported: †state.reported
}
`)
	tools := newFakeTools().
		on("pay", func(ctx context.Context, args map[string]any) (any, error) {
			return nil, &toolkit.Error{Code: "card_declined", Message: "Your card was declined.", NotRetryable: true}
		}).
		on("confirm", echoTool).
		on("report", func(ctx context.Context, args map[string]any) (any, error) {
			e := args["error"].(map[string]any)
			return fmt.Sprintf("%s/%s/%s", e["code"], e["tool"], e["step"]), nil
		})
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted {
		t.Errorf("status %s (%v), want completed: a handled error is not a failure", res.Status, res.Err)
	}
	want := map[string]string{"pay": "failed (handled)", "confirm": "skipped", "report": "completed"}
	if diff := cmp.Diff(want, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if got := res.Output.(map[string]any)["reported"]; got != "card_declined/pay/pay" {
		t.Errorf("report saw %v", got)
	}
	for _, s := range res.Steps {
		if s.ID == "confirm" && !strings.Contains(s.Reason, "pay failed and wrote its error to †state.err") {
			t.Errorf("skip reason: %s", s.Reason)
		}
	}
}

// Conditions of one shape are checked once; each still reads its own
// slots when it runs.
func TestRunWhenSameShape(t *testing.T) {
	prog := compile(t, `
tool check(who: string) -> {orders: int} pure
tool refund(n: int) -> string idempotent
check(who: "a") -> †state.a
check(who: "b") -> †state.b
refund(n: †state.a.orders) -> †state.ra
  when †state.a.orders > 0
refund(n: †state.b.orders) -> †state.rb
  when †state.b.orders > 0
`)
	tools := newFakeTools().
		on("check", func(ctx context.Context, args map[string]any) (any, error) {
			if args["who"] == "a" {
				return map[string]any{"orders": int64(0)}, nil
			}
			return map[string]any{"orders": int64(2)}, nil
		}).
		on("refund", func(ctx context.Context, args map[string]any) (any, error) {
			return fmt.Sprint("refunded ", args["n"]), nil
		})
	res, err := Run(context.Background(), prog, nil, opts(tools, &recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"check#1": "completed", "check#2": "completed", "refund#1": "skipped", "refund#2": "completed"}
	if diff := cmp.Diff(want, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if got := res.State["rb"]; got != "refunded 2" {
		t.Errorf("rb = %v, want refunded 2", got)
	}
}

func TestRunWhen(t *testing.T) {
	prog := compile(t, `
tool check() -> {orders: int} pure
tool refund(n: int) -> string idempotent
tool notify(msg: string) -> string idempotent
check() -> †state.history
refund(n: †state.history.orders) -> †state.receipt
  when †state.history.orders > 0
notify(msg: †state.receipt) -> †state.sent
`)
	tools := newFakeTools().
		on("check", func(ctx context.Context, args map[string]any) (any, error) {
			return map[string]any{"orders": int64(0)}, nil
		}).
		on("refund", echoTool).on("notify", echoTool)
	rec := &recorder{}
	res, err := Run(context.Background(), prog, nil, opts(tools, rec))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"check": "completed", "refund": "skipped", "notify": "skipped"}
	if diff := cmp.Diff(want, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if tools.count("refund") != 0 {
		t.Error("refund was called")
	}
	reasons := map[string]string{}
	for _, s := range res.Steps {
		reasons[s.ID] = s.Reason
	}
	if reasons["refund"] != "its condition is false: when †state.history.orders > 0" {
		t.Errorf("refund: %s", reasons["refund"])
	}
	if !strings.Contains(reasons["notify"], "refund was skipped") {
		t.Errorf("notify: %s", reasons["notify"])
	}
}

// TestRunRetryBackoff: a tool that fails twice then succeeds is called
// three times, with exponentially growing, jittered waits between.
func TestRunRetryBackoff(t *testing.T) {
	prog := compile(t, "tool flaky() -> int idempotent\nflaky() -> †state.v\n  retry 4 backoff 100ms\n")
	var n atomic.Int32
	tools := newFakeTools().on("flaky", func(ctx context.Context, args map[string]any) (any, error) {
		if n.Add(1) < 3 {
			return nil, errors.New("temporarily unavailable")
		}
		return int64(7), nil
	})
	sleeper := &noSleep{}
	rec := &recorder{}
	o := opts(tools, rec)
	o.Sleep = sleeper.sleep
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %v %v", err, res.Status, res.Err)
	}
	if res.Steps[0].Attempts != 3 || res.Retries != 2 {
		t.Errorf("attempts %d, retries %d; want 3 and 2", res.Steps[0].Attempts, res.Retries)
	}
	if len(sleeper.delays) != 2 {
		t.Fatalf("delays %v", sleeper.delays)
	}
	// Retry k waits between half and all of base·2^(k-1).
	for k, d := range sleeper.delays {
		full := 100 * time.Millisecond << k
		if d < full/2 || d > full {
			t.Errorf("delay %d = %s, want within [%s, %s]", k+1, d, full/2, full)
		}
	}
	if got := rec.trace(StepRetried); len(got) != 2 {
		t.Errorf("retried events %v", got)
	}
}

// TestRunTimeoutAndPanic: a tool that hangs and one that panics become
// failed steps; the rest of the plan follows the policy (skip here).
func TestRunTimeoutAndPanic(t *testing.T) {
	prog := compile(t, `
on failure skip
tool hang() -> int idempotent
tool boom() -> int idempotent
tool ok() -> int pure
tool use(x: int) -> int pure
hang() -> †state.h
  timeout 50ms
boom() -> †state.b
ok() -> †state.o
use(x: †state.h) -> †state.uh
use(x: †state.o) -> †state.uo
`)
	tools := newFakeTools().
		on("hang", func(ctx context.Context, args map[string]any) (any, error) {
			select {} // ignores its context entirely
		}).
		on("boom", func(ctx context.Context, args map[string]any) (any, error) { panic("kaboom") }).
		on("ok", func(ctx context.Context, args map[string]any) (any, error) { return int64(1), nil }).
		on("use", echoTool)
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, s := range res.Steps {
		if s.Error != nil {
			codes[s.ID] = s.Error.Code
		}
	}
	if codes["hang"] != toolkit.CodeTimeout || codes["boom"] != toolkit.CodePanic {
		t.Errorf("codes %v", codes)
	}
	want := map[string]string{"hang": "failed", "boom": "failed", "ok": "completed", "use#1": "skipped", "use#2": "completed"}
	if diff := cmp.Diff(want, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if res.Status != RunPartial {
		t.Errorf("status %s, want partial", res.Status)
	}
}

func TestRunFallback(t *testing.T) {
	prog := compile(t, "tool primary(q: string) -> string idempotent\ntool backup(q: string) -> string idempotent\nprimary(q: \"x\") -> †state.v\n  retry 1\n  fallback backup(q: \"y\")\n")
	tools := newFakeTools().
		on("primary", func(ctx context.Context, args map[string]any) (any, error) { return nil, errors.New("down") }).
		on("backup", func(ctx context.Context, args map[string]any) (any, error) {
			return "from backup " + args["q"].(string), nil
		})
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	if res.State["v"] != "from backup y" || tools.count("primary") != 2 || res.Steps[0].Attempts != 3 {
		t.Errorf("v=%v primary calls=%d attempts=%d", res.State["v"], tools.count("primary"), res.Steps[0].Attempts)
	}
}

func TestRunExpect(t *testing.T) {
	prog := compile(t, "tool get() -> {n: int} pure\nget() -> †state.r || †state.err\n  expect †state.r.n > 10\n  expect \"the number is plausible\"\noutput †state.err\n")
	tools := newFakeTools().on("get", func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"n": int64(3)}, nil })
	rec := &recorder{}
	res, err := Run(context.Background(), prog, nil, opts(tools, rec))
	if err != nil {
		t.Fatal(err)
	}
	e := res.Output.(map[string]any)
	if e["code"] != toolkit.CodeExpectFailed || !strings.Contains(e["message"].(string), "†state.r.n > 10") {
		t.Errorf("error value %v", e)
	}
	if _, ok := res.State["r"]; ok {
		t.Error("a step whose expectation fails must not write its result")
	}
	if got := rec.trace(StepVerdict); len(got) != 1 {
		t.Errorf("verdict events %v", got)
	}
}

// policyPlan has two independent branches; a fails.
const policyPlan = `
tool fail() -> int idempotent
tool ok(x?: any) -> int pure
tool slow() -> int pure
a: fail() -> †state.a
after: ok(x: †state.a) -> †state.after
b: slow() -> †state.b
c: ok(x: †state.b) -> †state.c
`

func policyTools(release chan struct{}) *fakeTools {
	return newFakeTools().
		on("fail", func(ctx context.Context, args map[string]any) (any, error) { return nil, errors.New("broken") }).
		on("ok", func(ctx context.Context, args map[string]any) (any, error) { return int64(1), nil }).
		on("slow", func(ctx context.Context, args map[string]any) (any, error) {
			select {
			case <-release:
				return int64(2), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
}

func TestRunPolicies(t *testing.T) {
	cases := []struct {
		policy string
		status RunStatus
		want   map[string]string
	}{
		{"abort", RunFailed, map[string]string{"a": "failed", "after": "skipped", "b": "failed", "c": "skipped"}},
		{"skip", RunPartial, map[string]string{"a": "failed", "after": "skipped", "b": "completed", "c": "completed"}},
		{"continue", RunPartial, map[string]string{"a": "failed", "after": "completed", "b": "completed", "c": "completed"}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			release := make(chan struct{})
			rec := &recorder{}
			o := opts(policyTools(release), rec)
			// The slow branch is still running when a fails. Under abort it
			// is never released, so only the abort's cancellation ends it;
			// the other policies release it once a's failure was seen.
			o.Observer = func(e Event) {
				rec.observe(e)
				if e.Type == StepFailed && e.Step == "a" && tc.policy != "abort" {
					close(release)
				}
			}
			prog := compile(t, "on failure "+tc.policy+"\n"+policyPlan)
			res, err := Run(context.Background(), prog, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Errorf("status %s (%v), want %s", res.Status, res.Err, tc.status)
			}
			if diff := cmp.Diff(tc.want, statuses(res)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// goReplanner replaces the failed work with a step that uses another tool.
type goReplanner struct {
	requests []*ReplanRequest
	plan     string
}

func (g *goReplanner) Replan(ctx context.Context, req *ReplanRequest) (*lang.File, error) {
	g.requests = append(g.requests, req)
	f, diags := lang.Parse("replan.plan", []byte(g.plan))
	if diags.HasErrors() {
		return nil, diags
	}
	return f, nil
}

// replanPlan is the plan of the replanning tests, after its settings.
const replanPlan = `
tool fetch() -> {url: string} pure
tool scrape(url: string) -> string idempotent
tool api(url: string) -> string idempotent
tool summarize(text: string) -> string pure
fetch() -> †state.site
scrape(url: †state.site.url) -> †state.page
summarize(text: †state.page) -> †state.summary
output †state.summary
`

// replanTools are the tools of the replanning tests: scrape fails, api
// does its work.
func replanTools() *fakeTools {
	return newFakeTools().
		on("fetch", func(ctx context.Context, args map[string]any) (any, error) {
			return map[string]any{"url": "https://example.test"}, nil
		}).
		on("scrape", func(ctx context.Context, args map[string]any) (any, error) {
			return nil, errors.New("blocked by the site")
		}).
		on("api", func(ctx context.Context, args map[string]any) (any, error) {
			return "text of " + args["url"].(string), nil
		}).
		on("summarize", func(ctx context.Context, args map[string]any) (any, error) {
			return "summary of " + args["text"].(string), nil
		})
}

// TestRunReplan: a failure under `on failure replan` hands the state to
// the replanner; completed steps are not run again, and the new steps read
// their results.
func TestRunReplan(t *testing.T) {
	prog := compile(t, "on failure replan max 2\n"+replanPlan)
	tools := replanTools()
	rp := &goReplanner{plan: "api(url: †state.site.url) -> †state.page\nsummarize(text: †state.page) -> †state.summary\n"}
	rec := &recorder{}
	o := opts(tools, rec)
	o.Replanner = rp
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial || res.Replans != 1 {
		t.Errorf("status %s replans %d (%v)", res.Status, res.Replans, res.Err)
	}
	if res.Output != "summary of text of https://example.test" {
		t.Errorf("output %v", res.Output)
	}
	if tools.count("fetch") != 1 {
		t.Errorf("fetch called %d times: completed steps must not run again", tools.count("fetch"))
	}
	if len(rp.requests) != 1 {
		t.Fatalf("%d replan requests", len(rp.requests))
	}
	req := rp.requests[0]
	if req.Failed.ID != "scrape" || len(req.Completed) != 1 || req.Completed[0].ID != "fetch" || req.State["site"] == nil {
		t.Errorf("request: failed %v completed %v state %v", req.Failed, req.Completed, req.State)
	}
	if got := rec.trace(Replanned); len(got) != 1 {
		t.Errorf("replanned events: %v", got)
	}
}

func TestRunReplanBounded(t *testing.T) {
	prog := compile(t, "on failure replan max 2\ntool f() -> int idempotent\nf() -> †state.v\n")
	tools := newFakeTools().on("f", func(ctx context.Context, args map[string]any) (any, error) { return nil, errors.New("always") })
	rp := &goReplanner{plan: "f() -> †state.v\n"}
	o := opts(tools, nil)
	o.Replanner = rp
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunFailed || res.Replans != 2 || tools.count("f") != 3 {
		t.Errorf("status %s replans %d calls %d", res.Status, res.Replans, tools.count("f"))
	}
	if !strings.Contains(res.Err.Error(), "replanned 2 times") {
		t.Errorf("error %v", res.Err)
	}
}

type approver struct {
	mu       sync.Mutex
	decide   func(ApprovalRequest) Decision
	requests []ApprovalRequest
}

func (a *approver) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, req)
	return a.decide(req), nil
}

func TestRunApprovals(t *testing.T) {
	plan := `
tool pay(amount: number) -> {id: string} irreversible
tool log(msg: string) -> null idempotent
pay(amount: 5.0) -> †state.receipt || †state.err
  approve "Pay 5?"
log(msg: †state.err.message) -> †state.logged
`
	tools := newFakeTools().
		on("pay", func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"id": "p1"}, nil }).
		on("log", func(ctx context.Context, args map[string]any) (any, error) { return nil, nil })
	// Rejected: the step fails with code rejected, which its || catches.
	a := &approver{decide: func(ApprovalRequest) Decision { return Decision{Approved: false, Note: "too much"} }}
	o := opts(tools, nil)
	o.Approver = a
	res, err := Run(context.Background(), compile(t, plan), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if tools.count("pay") != 0 || res.State["err"].(map[string]any)["code"] != toolkit.CodeRejected {
		t.Errorf("pay calls %d, state %v", tools.count("pay"), res.State)
	}
	if len(a.requests) != 1 || a.requests[0].Step != "pay" || a.requests[0].Message != "Pay 5?" || a.requests[0].Args["amount"] != 5.0 {
		t.Errorf("requests %+v", a.requests)
	}
	// Approved: it runs.
	a.decide = func(ApprovalRequest) Decision { return Decision{Approved: true} }
	res, _ = Run(context.Background(), compile(t, plan), nil, o)
	if tools.count("pay") != 1 || res.State["receipt"] == nil {
		t.Errorf("approved: pay calls %d, state %v", tools.count("pay"), res.State)
	}
	// A plan approved as a whole, rejected: nothing runs.
	a.decide = func(ApprovalRequest) Decision { return Decision{Approved: false} }
	res, _ = Run(context.Background(), compile(t, "approve \"All of it?\"\n"+plan), nil, o)
	if res.Status != RunRejected || tools.count("pay") != 1 {
		t.Errorf("plan rejected: status %s, pay calls %d", res.Status, tools.count("pay"))
	}
	// Edited at approval: the edited plan runs.
	a.decide = func(req ApprovalRequest) Decision {
		if req.Step == "" {
			return Decision{Approved: true, Plan: []byte("tool log(msg: string) -> null idempotent\nlog(msg: \"edited\") -> †state.logged\n")}
		}
		return Decision{Approved: true}
	}
	res, _ = Run(context.Background(), compile(t, "approve\n"+plan), nil, o)
	if res.Status != RunCompleted || tools.count("pay") != 1 || tools.count("log") == 0 {
		t.Errorf("edited: status %s (%v), pay %d, log %d", res.Status, res.Err, tools.count("pay"), tools.count("log"))
	}
}

func TestRunForEachAndSubPlan(t *testing.T) {
	prog := compile(t, `
tool forecast(city: string) -> {city: string, temp: number} pure
tool describe(text: string) -> string pure
plan report(city: string) -> string {
  forecast(city: †input.city) -> †state.f
  describe(text: †state.f.city) -> †state.d
  output †state.d
}
input {
  cities: [string]
}
for each c in †input.cities max 5: forecast(city: †c) -> †state.forecasts
for each c in †input.cities: report(city: †c) -> †state.reports
output {
  temps: †state.forecasts.map(f, f.temp)
  reports: †state.reports
}
`)
	tools := newFakeTools().
		on("forecast", func(ctx context.Context, args map[string]any) (any, error) {
			c := args["city"].(string)
			return map[string]any{"city": c, "temp": float64(len(c))}, nil
		}).
		on("describe", func(ctx context.Context, args map[string]any) (any, error) {
			return "about " + args["text"].(string), nil
		})
	rec := &recorder{}
	res, err := Run(context.Background(), prog, map[string]any{"cities": []any{"Paris", "Oslo"}}, opts(tools, rec))
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	want := map[string]any{"temps": []any{5.0, 4.0}, "reports": []any{"about Paris", "about Oslo"}}
	if diff := cmp.Diff(want, res.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	// Events of sub-plan steps carry the calling step's path.
	var inner []string
	for _, line := range rec.trace(StepCompleted) {
		if strings.Contains(line, "/") {
			inner = append(inner, line)
		}
	}
	if len(inner) != 4 || !strings.HasPrefix(inner[0], "step-completed report[") {
		t.Errorf("inner events %v", inner)
	}
	// Over max: the step fails with limit-exceeded.
	many := make([]any, 6)
	for i := range many {
		many[i] = "x"
	}
	res, _ = Run(context.Background(), prog, map[string]any{"cities": many}, opts(tools, nil))
	if res.Steps[0].Error == nil || res.Steps[0].Error.Code != "limit-exceeded" {
		t.Errorf("over max: %+v", res.Steps[0])
	}
}

// TestRunDataflow: in a skewed graph, a step starts as soon as the steps it
// reads finish, not when its whole level does. The slow step does not
// return until the fast chain beside it has finished, which a
// level-by-level executor never allows (it would wait forever).
func TestRunDataflow(t *testing.T) {
	prog := compile(t, `
tool slow() -> int pure
tool fast(x?: int) -> int pure
s1: slow() -> †state.s1
f1: fast() -> †state.f1
f2: fast(x: †state.f1) -> †state.f2
f3: fast(x: †state.f2) -> †state.f3
f4: fast(x: †state.f3) -> †state.f4
join: fast(x: †state.s1 + †state.f4) -> †state.j
`)
	release := make(chan struct{})
	tools := newFakeTools().
		on("slow", func(ctx context.Context, args map[string]any) (any, error) {
			select {
			case <-release:
				return int64(1), nil
			case <-time.After(10 * time.Second):
				return nil, errors.New("the fast chain did not run while slow was running")
			}
		}).
		on("fast", func(ctx context.Context, args map[string]any) (any, error) { return int64(1), nil })
	rec := &recorder{}
	o := opts(tools, rec)
	o.Observer = func(e Event) {
		rec.observe(e)
		if e.Type == StepCompleted && e.Step == "f4" {
			close(release)
		}
	}
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	order := rec.trace(StepCompleted)
	if diff := cmp.Diff([]string{"step-completed f1", "step-completed f2", "step-completed f3", "step-completed f4", "step-completed s1", "step-completed join"}, order); diff != "" {
		t.Errorf("completion order (-want +got):\n%s", diff)
	}
}

// TestRunMaxParallel: no more than MaxParallel tools run at once.
func TestRunMaxParallel(t *testing.T) {
	var b strings.Builder
	b.WriteString("tool work(i: int) -> int pure\n")
	for i := range 20 {
		fmt.Fprintf(&b, "work(i: %d) -> †state.s%d\n", i, i)
	}
	prog := compile(t, b.String())
	var running, peak atomic.Int32
	tools := newFakeTools().on("work", func(ctx context.Context, args map[string]any) (any, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		running.Add(-1)
		return int64(1), nil
	})
	o := opts(tools, nil)
	o.MaxParallel = 3
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil || res.Completed != 20 {
		t.Fatalf("%v completed %d", err, res.Completed)
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak parallelism %d, want at most 3 (and some)", p)
	}
}

func TestRunCanceled(t *testing.T) {
	prog := compile(t, "tool wait() -> int pure\ntool after(x: int) -> int pure\nwait() -> †state.w\nafter(x: †state.w) -> †state.a\n")
	ctx, cancel := context.WithCancel(context.Background())
	tools := newFakeTools().
		on("wait", func(ctx context.Context, args map[string]any) (any, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}).
		on("after", echoTool)
	res, err := Run(ctx, prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCanceled || tools.count("after") != 0 {
		t.Errorf("status %s, after calls %d", res.Status, tools.count("after"))
	}
	if res.Steps[0].Error == nil || res.Steps[0].Error.Code != toolkit.CodeCanceled {
		t.Errorf("wait: %+v", res.Steps[0])
	}
}
