package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

// journal is an ordered log shared by the fake tools, the approver and the
// observer, so that tests can assert on the order of what happened.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

func (j *journal) count(prefix string) int {
	n := 0
	for _, l := range j.all() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// index returns the position of the first line with the prefix, or -1.
func (j *journal) index(prefix string) int {
	for i, l := range j.all() {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// tools are the fake tools of the agent tests: each call is journaled as
// "call NAME".
type tools struct {
	j   *journal
	fns map[string]func(args map[string]any) (any, error)
}

func (ts *tools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	ts.j.add("call %s", name)
	fn := ts.fns[name]
	if fn == nil {
		return nil, fmt.Errorf("no fake for %s", name)
	}
	return fn(args)
}

func customerToolbox(j *journal) *tools {
	return &tools{j: j, fns: map[string]func(map[string]any) (any, error){
		"lookup": func(args map[string]any) (any, error) {
			return map[string]any{"name": "Ada", "orders": int64(7)}, nil
		},
		"score": func(args map[string]any) (any, error) { return float64(args["orders"].(int64)) * 1.5, nil },
		"notify": func(args map[string]any) (any, error) {
			return map[string]any{"sent": true}, nil
		},
	}}
}

// observe journals the runs' step and approval events and the loop's turns.
func (j *journal) observe(e vm.Event) {
	switch e.Type {
	case vm.StepStarted, vm.StepCompleted, vm.StepFailed, vm.ApprovalRequested, vm.ApprovalDecided:
		j.add("%s %s", e.Type, e.Step)
	case TurnStarted, GoalFinished:
		j.add("%s %s%s", e.Type, e.Message, e.Verdict)
	}
}

// TestEagerDispatchesWhileWriting: the first step runs while the model is
// still writing. The fake server holds the rest of the answer until the
// tool has been called; if the run waited for the whole answer, the
// server would give up holding and record it.
func TestEagerDispatchesWhileWriting(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			called := make(chan struct{})
			ts := customerToolbox(j)
			lookup := ts.fns["lookup"]
			ts.fns["lookup"] = func(args map[string]any) (any, error) {
				close(called)
				return lookup(args)
			}
			srv := p.start(llmtest.Script(llmtest.Reply{
				Pieces: []string{
					// The step is complete once the next line's first
					// token shows that it does not continue it.
					"fetch: lookup(id: †input.id) -> †state.customer\nsc: ",
					"score(orders: †state.customer.orders) -> †state.score\n",
					"output {name: †state.customer.name, score: †state.score}\n",
				},
				Before: map[int]<-chan struct{}{1: called},
				Usage:  llm.Usage{Input: 900, Output: 60},
			}))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			res, err := Run(context.Background(), Options{Goal: "Score customer c-1.", Context: c, Check: cfg, Tools: ts,
				Planner: p.open(srv.Settings("planner", "judge")), Observer: j.observe})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || len(reqs[0].HeldTooLong) > 0 {
				t.Fatalf("the server waited in vain for the tool call before sending the rest of the answer (requests %d)", len(reqs))
			}
			if diff := cmp.Diff(map[string]any{"name": "Ada", "score": 10.5}, res.Output); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			sum := res.GoalExecution
			if sum.Turns != 1 || sum.StepsRun != 2 || sum.Replans != 0 || sum.Tokens["planner"] != (llm.Usage{Input: 900, Output: 60, Requests: 1}) {
				t.Errorf("summary %+v", sum)
			}
			if sum.Elapsed <= 0 || sum.Mode != Eager || sum.Goal != "Score customer c-1." {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

// TestEagerReplansAfterFailure: a failed step ends the turn; the next
// prompt says what failed, keeps the completed step (it does not run
// again, its result is in the state) and asks for another approach.
func TestEagerReplansAfterFailure(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			ts := customerToolbox(j)
			ts.fns["charge"] = func(map[string]any) (any, error) {
				return nil, &toolkit.Error{Code: "card_declined", Message: "the card was declined", NotRetryable: true}
			}
			ts.fns["invoice"] = func(args map[string]any) (any, error) { return map[string]any{"id": "INV-9"}, nil }
			tools := customerTools + `
tool charge(customer: string, amount: number) -> {receipt: string} irreversible
tool invoice(customer: string, amount: number) -> {id: string} idempotent
`
			srv := p.start(llmtest.Script(
				llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\npay: charge(customer: †state.customer.name, amount: 5.0) -> †state.receipt\n  approve \"Charge Ada?\"\noutput {paid: †state.receipt.receipt}\n", llm.Usage{Input: 100, Output: 10}),
				llmtest.Text("bill: invoice(customer: †state.customer.name, amount: 5.0) -> †state.invoice\noutput {invoice: †state.invoice.id}\n", llm.Usage{Input: 200, Output: 20}),
			))
			defer srv.Close()
			c, cfg := testContext(t, tools, map[string]any{"id": "c-1"})
			res, err := Run(context.Background(), Options{Goal: "Get paid 5 by customer c-1.", Context: c, Check: cfg, Tools: ts,
				Planner: p.open(srv.Settings("planner", "judge")), Approver: approveAll{}, Observer: j.observe})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Err)
			}
			if diff := cmp.Diff(map[string]any{"invoice": "INV-9"}, res.Output); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if n := j.count("call lookup"); n != 1 {
				t.Errorf("lookup ran %d times; a completed step must not run again", n)
			}
			if res.GoalExecution.Replans != 1 || res.GoalExecution.Turns != 2 || res.Turns[1].Kind != "replan" || res.GoalExecution.StepsRun != 3 {
				t.Errorf("summary %+v, second turn %s", res.GoalExecution, res.Turns[1].Kind)
			}
			second := srv.Requests()[1].Messages[0].Content
			for _, want := range []string{
				"[failure] Step pay (charge) failed: the card was declined [card_declined].",
				"The completed steps (fetch) are kept",
				"change approach",
				`customer: {name: string, orders: int} = {name: "Ada", orders: 7}`,
				"fetch: lookup(id: †input.id) -> †state.customer  # completed",
				"pay: charge(customer: †state.customer.name, amount: 5.0) -> †state.receipt  # failed: the card was declined [card_declined]",
			} {
				if !strings.Contains(second, want) {
					t.Errorf("the replan prompt lacks %q:\n%s", want, second)
				}
			}
		})
	}
}

type approveAll struct{}

func (approveAll) Approve(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
	return vm.Decision{Approved: true}, nil
}

// pausingApprover journals each request and waits for the test's
// decision.
type pausingApprover struct {
	j         *journal
	requests  chan vm.ApprovalRequest
	decisions chan vm.Decision
}

func (a *pausingApprover) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	a.requests <- req
	select {
	case d := <-a.decisions:
		a.j.add("decided %s", req.Step)
		return d, nil
	case <-ctx.Done():
		return vm.Decision{}, ctx.Err()
	}
}

// TestEvaluatorHITLPausesAndResumes: the evaluator cannot judge a step and
// says hitl; the run waits for a person (the steps that read the result
// do not start), and goes on when the person approves. The evaluator's
// facts go to the truth store and its tokens to its own tier.
func TestEvaluatorHITLPausesAndResumes(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			ts := customerToolbox(j)
			srv := p.start(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
				"planner": llmtest.Script(llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\n  expect \"the customer exists and has a name\"\nsc: score(orders: †state.customer.orders) -> †state.score\noutput {score: †state.score}\n", llm.Usage{Input: 300, Output: 40})),
				"judge":   llmtest.Script(llmtest.Text(`{"verdict": "hitl", "note": "the name may be a placeholder", "facts": {"customer_name": "Ada", "order_count": 7}}`, llm.Usage{Input: 50, Output: 12})),
			}))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			a := &pausingApprover{j: j, requests: make(chan vm.ApprovalRequest), decisions: make(chan vm.Decision)}
			settings := srv.Settings("planner", "judge")
			done := make(chan *Result)
			go func() {
				res, err := Run(context.Background(), Options{Goal: "Score customer c-1.", Context: c, Check: cfg, Tools: ts,
					Planner: p.open(settings), Evaluator: p.open(settings.ForEvaluator()), Approver: a, Observer: j.observe})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			req := <-a.requests
			if req.Step != "fetch" || !strings.Contains(req.Message, "the customer exists and has a name") || !strings.Contains(req.Message, "placeholder") {
				t.Errorf("approval request %+v", req)
			}
			// Paused: the step that reads the judged result has not started.
			if n := j.count("call score"); n != 0 {
				t.Fatalf("score ran while the run waited for a person")
			}
			a.decisions <- vm.Decision{Approved: true, Note: "Ada is real"}
			res := <-done
			if res.Status != GoalCompleted || res.Output.(map[string]any)["score"] != 10.5 {
				t.Fatalf("status %s (%v), output %v", res.Status, res.Err, res.Output)
			}
			if d, s := j.index("decided fetch"), j.index("step-started sc"); d < 0 || s < d {
				t.Errorf("score started before the decision: %v", j.all())
			}
			fetch := res.Turns[0].Steps[0]
			if diff := cmp.Diff([]vm.Verdict{{Criterion: "the customer exists and has a name", Verdict: "pass", Note: "a person approved the result: Ada is real"}}, fetch.Verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			want := []Fact{{Key: "customer_name", Value: "Ada", Step: "fetch"}, {Key: "order_count", Value: int64(7), Step: "fetch"}}
			if diff := cmp.Diff(want, res.GoalExecution.Facts); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
			tokens := res.GoalExecution.Tokens
			if tokens["planner"] != (llm.Usage{Input: 300, Output: 40, Requests: 1}) || tokens["evaluator"] != (llm.Usage{Input: 50, Output: 12, Requests: 1}) {
				t.Errorf("tokens %+v", tokens)
			}
			judge := srv.Requests()[1]
			if judge.Model != "judge" || !strings.Contains(judge.Messages[0].Content, `"orders":7`) || !strings.Contains(judge.Messages[0].Content, "Criterion: the customer exists and has a name") {
				t.Errorf("evaluator request %+v", judge)
			}
		})
	}
}

// TestEagerRejectedStatementGoesBack: a statement that does not check is
// rejected while the others run; the next prompt carries the checker's
// report and the model repairs it.
func TestEagerRejectedStatementGoesBack(t *testing.T) {
	j := &journal{}
	srv := llmtest.NewAnthropic(llmtest.Script(
		llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\nsc: score(orders: †state.customer.name) -> †state.score\n", llm.Usage{}),
		llmtest.Text("sc: score(orders: †state.customer.orders) -> †state.score\noutput †state.score\n", llm.Usage{}),
	))
	defer srv.Close()
	c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
	res, err := Run(context.Background(), Options{Goal: "Score c-1.", Context: c, Check: cfg, Tools: customerToolbox(j),
		Planner: fakeProviders[1].open(srv.Settings("planner", "judge"))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != GoalCompleted || res.Output != 10.5 || res.Turns[1].Kind != "repair" {
		t.Fatalf("status %s (%v), output %v", res.Status, res.Err, res.Output)
	}
	first := res.Turns[0]
	if len(first.Rejected) != 1 || first.Rejected[0].Code != "type-mismatch" || first.Rejected[0].Span.Start.Line != 2 {
		t.Errorf("rejected %v", first.Rejected)
	}
	second := srv.Requests()[1].Messages[0].Content
	if !strings.Contains(second, `"excerpt":"sc: score(orders: †state.customer.name) -> †state.score"`) || !strings.Contains(second, `"line":2`) {
		t.Errorf("the second prompt lacks the report:\n%s", second)
	}
}

// TestLimits: MAX_GOAL_STEPS stops a goal whose model never gives the
// output; MAX_REPLAN_ATTEMPTS one whose steps keep failing.
func TestLimits(t *testing.T) {
	c, cfg := testContext(t, customerTools+"tool flaky(x: int) -> int pure\n", map[string]any{"id": "c-1"})
	t.Run("steps", func(t *testing.T) {
		j := &journal{}
		var mu sync.Mutex
		n := 0 // each answer looks up new ids: the same call again would not run again
		srv := llmtest.NewOpenAI(func(*llmtest.Request) llmtest.Reply {
			mu.Lock()
			defer mu.Unlock()
			n++
			return llmtest.Text(fmt.Sprintf("a: lookup(id: \"a%d\") -> †state.a\nb: lookup(id: \"b%d\") -> †state.b\n", n, n), llm.Usage{})
		})
		defer srv.Close()
		res, err := Run(context.Background(), Options{Goal: "Look forever.", Context: c, Check: cfg, Tools: customerToolbox(j), MaxGoalSteps: 5,
			Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != GoalStepLimit || res.GoalExecution.StepsRun != 5 || j.count("call lookup") != 5 {
			t.Errorf("status %s (%v), steps run %d, calls %d", res.Status, res.Err, res.GoalExecution.StepsRun, j.count("call lookup"))
		}
	})
	t.Run("replans", func(t *testing.T) {
		j := &journal{}
		ts := customerToolbox(j)
		ts.fns["flaky"] = func(map[string]any) (any, error) { return nil, fmt.Errorf("down") }
		srv := llmtest.NewOpenAI(func(*llmtest.Request) llmtest.Reply {
			return llmtest.Text("f: flaky(x: 1) -> †state.f\noutput †state.f\n", llm.Usage{})
		})
		defer srv.Close()
		res, err := Run(context.Background(), Options{Goal: "Try.", Context: c, Check: cfg, Tools: ts, MaxReplanAttempts: 2,
			Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != GoalFailed || res.GoalExecution.Replans != 3 || len(srv.Requests()) != 3 || !strings.Contains(res.Error(), "MAX_REPLAN_ATTEMPTS") {
			t.Errorf("status %s (%v), replans %d, requests %d", res.Status, res.Err, res.GoalExecution.Replans, len(srv.Requests()))
		}
	})
}

// TestLazyRepairsThenRuns: in lazy mode the whole plan is checked first;
// a plan with a type error goes back with the report, and the repaired
// plan runs.
func TestLazyRepairsThenRuns(t *testing.T) {
	j := &journal{}
	srv := llmtest.NewAnthropic(llmtest.Script(
		llmtest.Text(brokenPlan, llm.Usage{Input: 10, Output: 5}),
		llmtest.Text(fixedPlan, llm.Usage{Input: 20, Output: 5}),
	))
	defer srv.Close()
	c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
	res, err := Run(context.Background(), Options{Goal: "Score c-1 and tell them.", Mode: Lazy, Context: c, Check: cfg, Tools: customerToolbox(j),
		Planner: fakeProviders[1].open(srv.Settings("planner", "judge")), Observer: j.observe})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != GoalCompleted || res.Output.(map[string]any)["sent"] != true {
		t.Fatalf("status %s (%v), output %v", res.Status, res.Err, res.Output)
	}
	if res.GoalExecution.Repairs != 1 || res.GoalExecution.Turns != 1 || res.GoalExecution.Tokens["planner"] != (llm.Usage{Input: 30, Output: 10, Requests: 2}) {
		t.Errorf("summary %+v", res.GoalExecution)
	}
	if j.count("call") != 3 {
		t.Errorf("calls: %v", j.all())
	}
	if !strings.Contains(srv.Requests()[1].Messages[2].Content, `"code":"type-mismatch"`) {
		t.Errorf("the repair request lacks the report")
	}
}

// TestEagerJSONAnswer: an answer in seed 003's JSON solution form goes
// through the same checker and runs once it is whole.
func TestEagerJSONAnswer(t *testing.T) {
	j := &journal{}
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text("```json\n"+`{"calls": [
  {"_tool": "lookup", "_id": "fetch", "id": "†input.id", "_outputPath": "†state.customer"},
  {"_tool": "score", "orders": "†state.customer.orders", "_outputPath": "†state.score"}
], "output": {"score": "†state.score"}}`+"\n```\n", llm.Usage{})))
	defer srv.Close()
	c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
	res, err := Run(context.Background(), Options{Goal: "Score c-1.", Context: c, Check: cfg, Tools: customerToolbox(j),
		Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != GoalCompleted || res.Output.(map[string]any)["score"] != 10.5 {
		t.Fatalf("status %s (%v), output %v", res.Status, res.Err, res.Output)
	}
	if !strings.HasPrefix(res.Turns[0].Answer, "fetch: lookup(id: †input.id) -> †state.customer;\n") {
		t.Errorf("answer as plan text:\n%s", res.Turns[0].Answer)
	}
}

// TestDeclarationsKept: a type the model declares in one turn is in the
// context of the next turns; a declaration that does not check is not
// kept (in eager mode it also stops the turn's steps, which go back as
// rejected).
func TestDeclarationsKept(t *testing.T) {
	j := &journal{}
	srv := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text("type Summary {name: string, score: number}\ntype Broken {a: Missing}\nfetch: lookup(id: †input.id) -> †state.customer\n", llm.Usage{}),
		llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\n", llm.Usage{}),
		llmtest.Text("sc: score(orders: †state.customer.orders) -> †state.score\noutput {name: †state.customer.name, score: †state.score}\n", llm.Usage{}),
	))
	defer srv.Close()
	c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
	res, err := Run(context.Background(), Options{Goal: "Summarise c-1.", Context: c, Check: cfg, Tools: customerToolbox(j),
		Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != GoalCompleted || res.GoalExecution.Turns != 3 || j.count("call lookup") != 1 {
		t.Fatalf("status %s (%v), turns %d, calls %v", res.Status, res.Err, res.GoalExecution.Turns, j.all())
	}
	if rej := res.Turns[0].Rejected; len(rej) == 0 || rej[0].Code != "unknown-type" {
		t.Errorf("first turn rejected %v", rej)
	}
	for _, r := range srv.Requests()[1:] {
		p := r.Messages[0].Content
		if !strings.Contains(p, "[types] Declared types (use them; do not declare them again):\ntype Summary {name: string, score: number}\n\n[input]") {
			t.Errorf("a later prompt:\n%s", p)
		}
	}
}

// hangTools is customerToolbox with a tool hang that returns only when its
// call's context ends.
type hangTools struct{ *tools }

func (h hangTools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if name == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.tools.Call(ctx, name, args)
}

// TestRunTimeout: RunTimeout bounds the whole goal; when it passes, the
// step running is stopped and the goal ends canceled, with an error of
// code limit-exceeded that names the limit.
func TestRunTimeout(t *testing.T) {
	c, cfg := testContext(t, customerTools+"tool hang(x: int) -> int pure\n", map[string]any{"id": "c-1"})
	j := &journal{}
	srv := llmtest.NewOpenAI(func(*llmtest.Request) llmtest.Reply {
		return llmtest.Text("h: hang(x: 1) -> †state.h\noutput †state.h\n", llm.Usage{})
	})
	defer srv.Close()
	res, err := Run(context.Background(), Options{Goal: "Wait.", Context: c, Check: cfg, Tools: hangTools{customerToolbox(j)}, RunTimeout: 50 * time.Millisecond,
		Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
	if err != nil {
		t.Fatal(err)
	}
	var re *toolkit.Error
	if res.Status != GoalCanceled || !errors.As(res.Err, &re) || re.Code != "limit-exceeded" || !strings.Contains(re.Message, "time limit of 50ms") ||
		!strings.Contains(re.Message, "(agent.Options.RunTimeout)") || strings.Contains(re.Message, "--") {
		t.Errorf("status %s (%v)", res.Status, res.Err)
	}
}
