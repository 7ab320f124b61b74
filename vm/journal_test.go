package vm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// memJournal records what Run hands a journal, and what the observer saw
// at each moment.
type memJournal struct {
	mu      sync.Mutex
	lines   []string
	steps   map[string]*StepResult
	failOn  string // "type step" whose Record fails
	seen    *recorder
	atStart map[string]int // events the observer had seen when a step's start was recorded
}

func newMemJournal(seen *recorder) *memJournal {
	return &memJournal{steps: map[string]*StepResult{}, seen: seen, atStart: map[string]int{}}
}

func (j *memJournal) Record(ev Event, step *StepResult) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	line := string(ev.Type) + " " + ev.Step
	if line == j.failOn {
		return errors.New("disk full")
	}
	j.lines = append(j.lines, line)
	if step != nil {
		cp := *step
		j.steps[ev.Step] = &cp
	}
	if ev.Type == StepStarted && j.seen != nil {
		j.seen.mu.Lock()
		j.atStart[ev.Step] = len(j.seen.events)
		j.seen.mu.Unlock()
	}
	return nil
}

func (j *memJournal) restore(round int, step string) (*StepResult, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s, ok := j.steps[step]
	return s, ok && round == s.Round
}

const chainPlan = `
tool inc(x: int) -> int idempotent
input {
  start: int
}
a: inc(x: †input.start) -> †state.a
b: inc(x: †state.a) -> †state.b
c: inc(x: †state.b) -> †state.c
output †state.c
`

func incTool(ctx context.Context, args map[string]any) (any, error) {
	return args["x"].(int64) + 1, nil
}

// TestJournalOrder: every event reaches the journal before the observer,
// and a step's completion is recorded before the next step starts.
func TestJournalOrder(t *testing.T) {
	rec := &recorder{}
	j := newMemJournal(rec)
	o := opts(newFakeTools().on("inc", incTool), rec)
	o.Journal = j
	res, err := Run(context.Background(), compile(t, chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil || res.Status != RunCompleted || res.Output != int64(4) {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Output)
	}
	want := []string{
		"plan-started ", "step-started a", "step-completed a", "step-started b", "step-completed b",
		"step-started c", "step-completed c", "plan-finished ",
	}
	if diff := cmp.Diff(want, j.lines); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	if len(rec.events) != len(j.lines) {
		t.Errorf("the observer saw %d events, the journal %d", len(rec.events), len(j.lines))
	}
	// When b's start was recorded, the observer had heard of a's
	// completion: plan-started, a started, a completed.
	if j.atStart["b"] != 3 {
		t.Errorf("observer had %d events when b started, want 3", j.atStart["b"])
	}
	if s := j.steps["b"]; s == nil || s.Status != StatusCompleted || s.Result != int64(3) || s.Attempts != 1 {
		t.Errorf("recorded b: %+v", s)
	}
}

// TestJournalFailureStops: a step whose completion cannot be recorded
// stops the run; nothing after it is called.
func TestJournalFailureStops(t *testing.T) {
	tools := newFakeTools().on("inc", incTool)
	j := newMemJournal(nil)
	j.failOn = "step-completed b"
	o := opts(tools, nil)
	o.Journal = j
	res, err := Run(context.Background(), compile(t, chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunFailed || !strings.Contains(res.Err.Error(), "disk full") {
		t.Errorf("status %s, err %v", res.Status, res.Err)
	}
	if tools.count("inc") != 2 {
		t.Errorf("inc called %d times, want 2 (c must not run)", tools.count("inc"))
	}
}

// TestRestore: steps recorded as finished are not run again; their
// results feed the steps that run.
func TestRestore(t *testing.T) {
	first := newMemJournal(nil)
	o := opts(newFakeTools().on("inc", incTool), nil)
	o.Journal = first
	full, err := Run(context.Background(), compile(t, chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil {
		t.Fatal(err)
	}
	delete(first.steps, "c") // as if the process died while c ran
	first.steps["b"].Result = int64(10)

	tools := newFakeTools().on("inc", incTool)
	rec := &recorder{}
	o = opts(tools, rec)
	o.Restore = first.restore
	res, err := Run(context.Background(), compile(t, chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if tools.count("inc") != 1 || res.Output != int64(11) || full.Output != int64(4) {
		t.Errorf("inc called %d times, output %v", tools.count("inc"), res.Output)
	}
	want := []string{"step-restored a", "step-restored b", "step-completed c"}
	if diff := cmp.Diff(want, rec.trace(StepRestored, StepCompleted)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if res.Completed != 3 || res.Status != RunCompleted {
		t.Errorf("completed %d, status %s", res.Completed, res.Status)
	}
}

// waitingApprover waits for every request, or answers from decisions.
type waitingApprover struct {
	mu        sync.Mutex
	decisions map[string]Decision
	requests  []ApprovalRequest
}

func (w *waitingApprover) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests = append(w.requests, req)
	if d, ok := w.decisions[fmt.Sprintf("%d/%s", req.Round, req.Step)]; ok {
		return d, nil
	}
	return Decision{}, fmt.Errorf("step %s: %w", req.Step, ErrWaiting)
}

// TestWaitingGate: a gate that waits lets independent steps run and
// holds the ones behind it; a later process with the decision resumes.
func TestWaitingGate(t *testing.T) {
	plan := `
tool pay(amount: number) -> {id: string} irreversible
tool note(msg: string) -> string idempotent
tool mail(id: string) -> string idempotent
pay(amount: 5.0) -> †state.receipt
  approve "Pay 5?"
note(msg: "hello") -> †state.note
mail(id: †state.receipt.id) -> †state.mail
`
	tools := newFakeTools().
		on("pay", func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"id": "p1"}, nil }).
		on("note", func(ctx context.Context, args map[string]any) (any, error) { return "noted", nil }).
		on("mail", func(ctx context.Context, args map[string]any) (any, error) { return "sent " + args["id"].(string), nil })
	j := newMemJournal(nil)
	a := &waitingApprover{decisions: map[string]Decision{}}
	o := opts(tools, nil)
	o.Journal, o.Approver = j, a
	res, err := Run(context.Background(), compile(t, plan), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunWaiting || !strings.Contains(res.Err.Error(), "pay") {
		t.Fatalf("status %s err %v", res.Status, res.Err)
	}
	if diff := cmp.Diff(map[string]string{"pay": "waiting", "note": "completed", "mail": "blocked"}, statuses(res)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if tools.count("pay") != 0 || tools.count("note") != 1 {
		t.Errorf("pay %d note %d", tools.count("pay"), tools.count("note"))
	}
	if !contains(j.lines, "step-waiting pay") || !contains(j.lines, "plan-finished ") {
		t.Errorf("journal: %v", j.lines)
	}

	a.decisions["0/pay"] = Decision{Approved: true}
	o.Restore = j.restore
	res, err = Run(context.Background(), compile(t, plan), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || res.State["mail"] != "sent p1" {
		t.Errorf("resumed: status %s (%v) state %v", res.Status, res.Err, res.State)
	}
	if tools.count("pay") != 1 || tools.count("note") != 1 || tools.count("mail") != 1 {
		t.Errorf("calls: pay %d note %d mail %d", tools.count("pay"), tools.count("note"), tools.count("mail"))
	}
}

// TestWaitingPlan: a plan approved as a whole waits before any step.
func TestWaitingPlan(t *testing.T) {
	tools := newFakeTools().on("inc", incTool)
	o := opts(tools, nil)
	o.Approver = &waitingApprover{}
	res, err := Run(context.Background(), compile(t, "approve\n"+chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunWaiting || tools.count("inc") != 0 || len(res.Steps) != 3 {
		t.Errorf("status %s, calls %d, steps %d", res.Status, tools.count("inc"), len(res.Steps))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestIdempotencyKey: every attempt of a call, and each element of a for
// each, carries a key made of the run and the step; a fallback has its
// own.
func TestIdempotencyKey(t *testing.T) {
	prog := compile(t, `
tool put(x: int) -> int idempotent
tool spare(x: int) -> int idempotent
input {
  xs: [int]
}
one: put(x: 0) -> †state.one
  retry 2
each: for each x in †input.xs: put(x: †x) -> †state.each
fb: put(x: 99) -> †state.fb
  fallback spare(x: 1)
`)
	var mu sync.Mutex
	var keys []string
	seen := map[int64]int{}
	tools := newFakeTools().
		on("put", func(ctx context.Context, args map[string]any) (any, error) {
			info, _ := toolkit.CallInfoFrom(ctx)
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, fmt.Sprintf("%s #%d", toolkit.IdempotencyKey(ctx), info.Attempt))
			x := args["x"].(int64)
			seen[x]++
			if x == 99 || (x == 0 && seen[x] == 1) {
				return nil, errors.New("try again")
			}
			return x, nil
		}).
		on("spare", func(ctx context.Context, args map[string]any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, toolkit.IdempotencyKey(ctx))
			return int64(1), nil
		})
	o := opts(tools, nil)
	o.RunID = "r1"
	o.MaxParallel = 1
	res, err := Run(context.Background(), prog, map[string]any{"xs": []any{int64(7), int64(8)}}, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	want := []string{"r1/one #1", "r1/one #2", "r1/each[0] #1", "r1/each[1] #1", "r1/fb #1", "r1/fb/fallback"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// TestReplanDiff: after a replan, a plan approved as a whole shows the new
// plan as a diff and asks approval of the changed steps only.
func TestReplanDiff(t *testing.T) {
	prog := compile(t, "approve \"Go?\"\non failure replan max 1\n"+replanPlan)
	tools := replanTools()
	a := &approver{decide: func(ApprovalRequest) Decision { return Decision{Approved: true} }}
	rec := &recorder{}
	o := opts(tools, rec)
	o.Approver = a
	o.Replanner = &goReplanner{plan: "api(url: †state.site.url) -> †state.page\nsummarize(text: †state.page) -> †state.summary\n"}
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "summary of text of https://example.test" {
		t.Fatalf("output %v (%v)", res.Output, res.Err)
	}
	if len(a.requests) != 2 {
		t.Fatalf("%d approval requests", len(a.requests))
	}
	req := a.requests[1]
	wantDiff := `--- the plan before replan 1
+++ the plan of replan 1
- scrape(url: †state.site.url) -> †state.page
+ api(url: †state.site.url) -> †state.page
  summarize(text: †state.page) -> †state.summary
`
	if diff := cmp.Diff(wantDiff, req.Diff); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"api"}, req.Changed); diff != "" || req.Round != 1 {
		t.Errorf("changed (-want +got):\n%s round %d", diff, req.Round)
	}
	var replanned Event
	for _, ev := range rec.events {
		if ev.Type == Replanned {
			replanned = ev
		}
	}
	if replanned.Diff != wantDiff {
		t.Errorf("the replanned event has diff %q", replanned.Diff)
	}

	// Rejecting the changed steps stops the run before they run.
	a.decide = func(req ApprovalRequest) Decision { return Decision{Approved: req.Round == 0} }
	tools = replanTools()
	o.Tools = tools
	res, _ = Run(context.Background(), prog, nil, o)
	if res.Status != RunFailed || !strings.Contains(res.Err.Error(), "the new plan was not approved") || tools.count("api") != 0 {
		t.Errorf("rejected replan: status %s err %v api %d", res.Status, res.Err, tools.count("api"))
	}
}

// TestStepDiffLarge: past the size of the table, the diff still keeps
// equal steps and reports the others.
func TestStepDiffLarge(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("tool f(x: int) -> int pure\n")
	b.WriteString("tool f(x: int) -> int pure\n")
	for i := range 2100 {
		fmt.Fprintf(&a, "f(x: %d) -> †state.s%d\n", i, i)
		if i != 5 {
			fmt.Fprintf(&b, "f(x: %d) -> †state.s%d\n", i, i)
		}
	}
	b.WriteString("f(x: -1) -> †state.extra\n")
	pa, pb := compile(t, a.String()), compile(t, b.String())
	diff, changed := StepDiff(pa.Steps, pb.Steps, "a", "b")
	if diff := cmp.Diff([]string{"f#2100"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if !strings.Contains(diff, "- f(x: 5) -> †state.s5\n") || !strings.Contains(diff, "+ f(x: -1) -> †state.extra\n") {
		t.Errorf("diff lacks the removed or added step")
	}
}

// TestRestoreSubPlanSteps: a sub-plan step that had not finished runs
// again, and takes the results of its inner steps that had.
func TestRestoreSubPlanSteps(t *testing.T) {
	plan := `
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
for each c in †input.cities: report(city: †c) -> †state.reports
`
	tools := func() *fakeTools {
		return newFakeTools().
			on("forecast", func(ctx context.Context, args map[string]any) (any, error) {
				return map[string]any{"city": args["city"], "temp": 1.0}, nil
			}).
			on("describe", func(ctx context.Context, args map[string]any) (any, error) {
				return "about " + args["text"].(string), nil
			})
	}
	input := map[string]any{"cities": []any{"Paris", "Oslo"}}
	j := newMemJournal(nil)
	o := opts(tools(), nil)
	o.Journal = j
	if res, err := Run(context.Background(), compile(t, plan), input, o); err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %v", err, res.Err)
	}
	var ids []string
	for id := range j.steps {
		ids = append(ids, id)
	}
	for _, want := range []string{"report", "report[0]/forecast", "report[1]/describe"} {
		if j.steps[want] == nil {
			t.Fatalf("no record of %s in %v", want, ids)
		}
	}
	// As if the process died during report[1]/describe.
	delete(j.steps, "report")
	delete(j.steps, "report[1]/describe")
	again := tools()
	o = opts(again, nil)
	o.Restore = j.restore
	res, err := Run(context.Background(), compile(t, plan), input, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %v", err, res.Err)
	}
	if diff := cmp.Diff([]any{"about Paris", "about Oslo"}, res.State["reports"]); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if again.count("forecast") != 0 || again.count("describe") != 1 {
		t.Errorf("forecast %d describe %d, want 0 and 1", again.count("forecast"), again.count("describe"))
	}
}

// groupJournal is a GroupJournal in memory: Sync commits what was
// appended up to its position, after letting other goroutines run, so
// that a step that started too soon would see its inputs uncommitted.
type groupJournal struct {
	mu        sync.Mutex
	lines     []string
	committed int
	failOn    string // "type step" whose commit fails
	failed    error
}

func (j *groupJournal) Record(ev Event, step *StepResult) error {
	pos, err := j.Append(ev, step)
	if err != nil {
		return err
	}
	return j.Sync(pos)
}

func (j *groupJournal) Append(ev Event, step *StepResult) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, string(ev.Type)+" "+ev.Step)
	return uint64(len(j.lines)), nil
}

func (j *groupJournal) Sync(pos uint64) error {
	for range 3 {
		runtime.Gosched()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for ; j.committed < int(pos) && j.failed == nil; j.committed++ {
		if j.lines[j.committed] == j.failOn {
			j.failed = errors.New("disk full")
		}
	}
	return j.failed
}

// isCommitted reports whether an event is committed.
func (j *groupJournal) isCommitted(line string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, l := range j.lines[:j.committed] {
		if l == line {
			return true
		}
	}
	return false
}

const diamondPlan = `
tool inc(x: int) -> int idempotent
tool add(x: int, y: int) -> int idempotent
input {
  start: int
}
a: inc(x: †input.start) -> †state.a
b: inc(x: †state.a) -> †state.b
c: inc(x: †state.a) -> †state.c
d: add(x: †state.b, y: †state.c) -> †state.d
e: inc(x: †state.d) -> †state.e
f: inc(x: †state.d) -> †state.f
output †state.e + †state.f
`

// TestGroupJournalOrder: with a journal that commits in groups, no step
// starts before the outcomes it reads are committed, and the observer
// hears of each event only once it is committed, in a lazy run and a
// streamed one.
func TestGroupJournalOrder(t *testing.T) {
	reads := map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "e": {"d"}, "f": {"d"}}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream-%v", stream), func(t *testing.T) {
			j := &groupJournal{}
			var mu sync.Mutex
			var problems []string
			problem := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				problems = append(problems, fmt.Sprintf(format, args...))
			}
			check := func(ctx context.Context) {
				info, _ := toolkit.CallInfoFrom(ctx)
				for _, p := range reads[info.Step] {
					if !j.isCommitted("step-completed " + p) {
						problem("%s started before the outcome of %s was committed", info.Step, p)
					}
				}
			}
			tools := newFakeTools().
				on("inc", func(ctx context.Context, args map[string]any) (any, error) {
					check(ctx)
					return args["x"].(int64) + 1, nil
				}).
				on("add", func(ctx context.Context, args map[string]any) (any, error) {
					check(ctx)
					return args["x"].(int64) + args["y"].(int64), nil
				})
			o := opts(tools, nil)
			o.Journal, o.MaxParallel = j, 4
			heard := 0
			o.Observer = func(e Event) {
				heard++
				if l := string(e.Type) + " " + e.Step; !j.isCommitted(l) {
					problem("the observer heard %q before it was committed", l)
				}
			}
			input := map[string]any{"start": int64(1)}
			var res *Result
			var err error
			if stream {
				o.Check = compiler.Config{}
				res, _, err = RunStream(context.Background(), lang.NewStreamParser("s.plan", strings.NewReader(diamondPlan)), input, o)
			} else {
				res, err = Run(context.Background(), compile(t, diamondPlan), input, o)
			}
			if err != nil || res.Status != RunCompleted || res.Output != int64(14) {
				t.Fatalf("run: %v %v %v %v", err, res.Status, res.Output, res.Err)
			}
			for _, p := range problems {
				t.Error(p)
			}
			if heard != len(j.lines) || j.committed != len(j.lines) {
				t.Errorf("heard %d events, committed %d, appended %d", heard, j.committed, len(j.lines))
			}
		})
	}
}

// TestGroupJournalFailureStops: a step whose outcome cannot be committed
// stops the run; the steps that read it are not called.
func TestGroupJournalFailureStops(t *testing.T) {
	tools := newFakeTools().on("inc", incTool)
	j := &groupJournal{failOn: "step-completed b"}
	o := opts(tools, nil)
	o.Journal = j
	res, err := Run(context.Background(), compile(t, chainPlan), map[string]any{"start": int64(1)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunFailed || !strings.Contains(res.Err.Error(), "disk full") {
		t.Errorf("status %s, err %v", res.Status, res.Err)
	}
	if tools.count("inc") != 2 {
		t.Errorf("inc called %d times, want 2 (c must not run)", tools.count("inc"))
	}
}

// TestCallInfoTimeoutAndSleep: a call's identity carries its time limit
// (the operator's, or the step's when shorter), and the wait before a
// retry carries the identity of the call it comes before, so that a hook
// that waits elsewhere (a durable timer) can tell the waits apart.
func TestCallInfoTimeoutAndSleep(t *testing.T) {
	prog := compile(t, `
tool put(x: int) -> int idempotent
a: put(x: 1) -> †state.a
  retry 1 backoff 10ms
  timeout 2s
b: put(x: 2) -> †state.b
`)
	var mu sync.Mutex
	calls := map[string]time.Duration{}
	seen := 0
	tools := newFakeTools().on("put", func(ctx context.Context, args map[string]any) (any, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		calls[fmt.Sprintf("%s #%d", info.Step, info.Attempt)] = info.Timeout
		if args["x"].(int64) == 1 {
			if seen++; seen == 1 {
				return nil, errors.New("try again")
			}
		}
		return args["x"], nil
	})
	o := opts(tools, nil)
	o.RunID = "r1"
	o.StepTimeout = 30 * time.Second
	var waits []string
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		info, ok := toolkit.CallInfoFrom(ctx)
		if !ok {
			t.Error("the wait's context carries no call identity")
		}
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, fmt.Sprintf("%s #%d %s %s", info.Key, info.Attempt, info.Tool, info.Timeout))
		return nil
	}
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	want := map[string]time.Duration{"a #1": 2 * time.Second, "a #2": 2 * time.Second, "b #1": 30 * time.Second}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("timeouts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r1/a #2 put 2s"}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// TestReplannedStepsKeepTheirRound: the steps of a replanned plan that
// never ran (one waiting for a decision, one waiting for it) are of the
// new plan's round, as the ones that ran are.
func TestReplannedStepsKeepTheirRound(t *testing.T) {
	prog := compile(t, "on failure replan max 1\n"+replanPlan)
	o := opts(replanTools(), nil)
	o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{}, ErrWaiting })
	o.Replanner = &goReplanner{plan: "api(url: †state.site.url) -> †state.page\n  approve \"Call the API?\"\nsummarize(text: †state.page) -> †state.summary\n"}
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunWaiting {
		t.Fatalf("status %s (%v)", res.Status, res.Err)
	}
	var got []string
	for _, s := range res.Steps {
		got = append(got, fmt.Sprintf("%s %s %d", s.ID, s.Status, s.Round))
	}
	want := []string{"fetch completed 0", "scrape failed 0", "api waiting 1", "summarize blocked 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}
