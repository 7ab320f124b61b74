package obtemporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// run is the state of a run's workflow: what its history holds. It is
// rebuilt, the same, each time the workflow is replayed.
type run struct {
	cfg   *Config
	id    string
	start Start
	prog  *compiler.Program
	input map[string]any
	check compiler.Config
	// results are the calls' results, by callKey.
	results map[string]*CallResult
	// running are the calls started and not returned.
	running map[string]bool
	// decisions are the approvals decided, by approvalKey.
	decisions map[string]Decision
	// replans are the new plans' texts, by replan (1 for the first).
	replans map[int]string
	// changed is set when something was recorded since the last pass.
	changed bool
	// last is the outcome of the last pass, and asked the approvals it
	// waits for.
	last  *vm.Result
	asked []vm.ApprovalRequest
	calls int
}

// callKey names a call in a run: the replanning round, the call's
// idempotency key (run, step, element, fallback) and its attempt.
func callKey(round int, key string, attempt int) string {
	return fmt.Sprintf("%d %s #%d", round, key, attempt)
}

func approvalKey(round int, step string) string { return fmt.Sprintf("%d %s", round, step) }

// runWorkflow is the workflow of a run.
func runWorkflow(ctx workflow.Context, cfg *Config, s Start) (*Outcome, error) {
	info := workflow.GetInfo(ctx)
	r := &run{cfg: cfg, id: info.WorkflowExecution.ID, start: s, results: map[string]*CallResult{}, running: map[string]bool{},
		decisions: map[string]Decision{}, replans: map[int]string{}}
	if err := workflow.SetQueryHandler(ctx, ShowQuery, func() (*Status, error) { return r.status(true), nil }); err != nil {
		return nil, err
	}
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (*Status, error) { return r.status(false), nil }); err != nil {
		return nil, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, ApproveUpdate, r.decide, workflow.UpdateHandlerOptions{Validator: r.validate}); err != nil {
		return nil, err
	}
	prog, f, err := compilePlan(cfg, s.Plan)
	if err != nil {
		out := &Outcome{Status: vm.RunFailed, Error: err.Error()}
		if de := (*diagError)(nil); errors.As(err, &de) {
			out.Diagnostics = de.report()
		}
		return out, nil
	}
	if missing := missingTools(cfg, prog); len(missing) > 0 {
		return &Outcome{Status: vm.RunFailed, Error: fmt.Sprintf("no implementation for %s: the workers of this task queue have no such tool (the plan declares it, the worker's tools do not: obtemporal.Config.Tools); nothing ran", strings.Join(missing, ", "))}, nil
	}
	r.prog, r.check = prog, checkConfig(cfg, s.Plan)
	r.input = f.InputValues
	if len(s.Input) > 0 {
		v, err := toolkit.DecodeJSON(s.Input)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return &Outcome{Status: vm.RunFailed, Error: "the input must be a JSON object"}, nil
		}
		r.input = m
	}
	if d := compiler.CheckInput(prog.Info, r.input); len(d) > 0 {
		de := &diagError{name: s.Plan.Name, text: []byte(s.Plan.Text), diags: d}
		return &Outcome{Status: vm.RunFailed, Error: "the input does not match the plan's input", Diagnostics: de.report()}, nil
	}
	var deadline time.Time
	if cfg.RunTimeout > 0 {
		deadline = workflow.Now(ctx).Add(cfg.RunTimeout)
	}
	log := workflow.GetLogger(ctx)
	for {
		res, p := r.pass()
		r.last, r.asked = res, p.asked
		if p.replanWanted != nil && len(p.pending) == 0 && len(r.running) == 0 {
			// The engine asks for a new plan once nothing runs: a model
			// makes it, in an activity.
			if err := r.replan(ctx, p.replanWanted); err != nil {
				log.Warn("replanning failed", "error", err)
				r.replans[p.replanWanted.Attempt] = "\x00" + err.Error()
			}
			continue
		}
		if res.Status != vm.RunWaiting && p.replanWanted == nil {
			return r.outcome(res), nil
		}
		r.schedule(ctx, p)
		if len(r.running) == 0 && !r.changed {
			if len(p.asked) == 0 {
				// Nothing runs and nobody is asked: the run waits for
				// something a run on Temporal cannot give it.
				return r.outcome(res), nil
			}
			log.Info("waiting for a decision", "approvals", len(p.asked))
		}
		if deadline.IsZero() {
			if err := workflow.Await(ctx, func() bool { return r.changed }); err != nil {
				return nil, r.canceled(res, err)
			}
		} else {
			ok, err := workflow.AwaitWithTimeout(ctx, deadline.Sub(workflow.Now(ctx)), func() bool { return r.changed })
			if err != nil {
				return nil, r.canceled(res, err)
			}
			if !ok {
				out := r.outcome(res)
				out.Status = vm.RunCanceled
				out.Error = fmt.Sprintf("the run took longer than its time limit of %s: give it more time (obtemporal.Config.RunTimeout)", cfg.RunTimeout)
				return out, nil
			}
		}
		r.changed = false
	}
}

// canceled is the workflow's error when its wait ended with err: when
// the run was canceled, a canceled error that carries the run's outcome
// so far, which Wait returns.
func (r *run) canceled(res *vm.Result, err error) error {
	if !temporal.IsCanceledError(err) {
		return err
	}
	out := r.outcome(res)
	out.Status = vm.RunCanceled
	out.Error = "the run was canceled: it started no call after the request (calls under way when it came may have finished in their workers)"
	return temporal.NewCanceledError(out)
}

// pass is one run of the plan over what the history holds.
type pass struct {
	r     *run
	round atomic.Int32
	mu    sync.Mutex
	// pending are the calls the plan made that have no result yet, by
	// callKey; delays the waits before them (retries' backoffs).
	pending map[string]Call
	delays  map[string]time.Duration
	asked   []vm.ApprovalRequest
	// replanWanted is the replan the engine asked for and the history
	// does not hold yet.
	replanWanted *ReplanCall
}

// pass runs the plan once over what the history holds. It computes and
// returns: it calls no tool, sleeps not and waits for nobody.
func (r *run) pass() (*vm.Result, *pass) {
	p := &pass{r: r, pending: map[string]Call{}, delays: map[string]time.Duration{}}
	h := fnv.New64a()
	h.Write([]byte(r.id))
	seed := h.Sum64()
	opts := vm.Options{
		Tools:          p,
		MaxParallel:    r.cfg.MaxParallel,
		StepTimeout:    r.cfg.StepTimeout,
		Approver:       p,
		Check:          r.check,
		Sleep:          p.sleep,
		Rand:           rand.New(rand.NewPCG(seed, seed>>1)),
		MaxCost:        r.cfg.MaxCost,
		MaxOutputBytes: r.cfg.MaxOutputBytes,
		RunID:          r.id,
	}
	if r.cfg.Replanner != nil {
		opts.Replanner = p
	}
	res, err := vm.Run(context.Background(), r.prog, r.input, opts)
	if err != nil {
		res = &vm.Result{Status: vm.RunFailed, Err: err, State: map[string]any{}}
	}
	// A call noted by a step that did not end up waiting for it (an
	// element of a for each another element's failure stopped) is not
	// made: which of those were noted depends on the engine's goroutines.
	// Only the last round's steps wait, so a step's ID names it.
	waiting := map[string]bool{}
	for _, s := range res.Steps {
		if s.Status == vm.StatusWaiting {
			waiting[s.ID] = true
		}
	}
	for k, c := range p.pending {
		if !waiting[topStep(c.Step)] {
			delete(p.pending, k)
		}
	}
	sort.Slice(p.asked, func(i, j int) bool {
		return approvalKey(p.asked[i].Round, p.asked[i].Step) < approvalKey(p.asked[j].Round, p.asked[j].Step)
	})
	return res, p
}

// topStep returns the step of the plan a call belongs to: "each" for
// "each[2]", "research" for "research[0]/search".
func topStep(id string) string {
	if i := strings.IndexAny(id, "[/"); i >= 0 {
		return id[:i]
	}
	return id
}

// Call answers a call from the history, or notes it and leaves it
// waiting.
func (p *pass) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, _ := toolkit.CallInfoFrom(ctx)
	k := callKey(int(p.round.Load()), info.Key, info.Attempt)
	if res := p.r.results[k]; res != nil {
		if res.Err != nil {
			return nil, &toolkit.Error{Code: res.Err.Code, Message: res.Err.Message, NotRetryable: res.Err.NotRetryable}
		}
		return toolkit.DecodeJSON(res.Value)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("the arguments of %s cannot be written as JSON: %v", info.Step, err), NotRetryable: true}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[k] = Call{Tool: name, Key: info.Key, Run: info.Run, Step: info.Step, Attempt: info.Attempt, Timeout: info.Timeout, Args: b, MaxOutputBytes: p.r.cfg.MaxOutputBytes}
	return nil, fmt.Errorf("%s runs as an activity: %w", name, vm.ErrWaiting)
}

// sleep notes the wait before a retry, which the workflow makes with a
// durable timer before it starts the call.
func (p *pass) sleep(ctx context.Context, d time.Duration) error {
	info, _ := toolkit.CallInfoFrom(ctx)
	k := callKey(int(p.round.Load()), info.Key, info.Attempt)
	if p.r.results[k] == nil && !p.r.running[k] {
		p.mu.Lock()
		p.delays[k] = d
		p.mu.Unlock()
	}
	return ctx.Err()
}

// Approve answers an approval from the decisions recorded, or leaves it
// waiting.
func (p *pass) Approve(_ context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	if p.r.start.ApproveAll {
		return vm.Decision{Approved: true, Note: "approved by whoever started the run (obtemporal.Start.ApproveAll)"}, nil
	}
	if d, ok := p.r.decisions[approvalKey(req.Round, req.Step)]; ok {
		return vm.Decision{Approved: d.Approve, Note: d.Note}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req)
	return vm.Decision{}, fmt.Errorf("approval of %q: %w", req.Step, vm.ErrWaiting)
}

// Replan answers with the plan the history holds for the replan, or
// notes that one is wanted.
func (p *pass) Replan(_ context.Context, req *vm.ReplanRequest) (*lang.File, error) {
	text, ok := p.r.replans[req.Attempt]
	if ok && strings.HasPrefix(text, "\x00") {
		return nil, errors.New(text[1:])
	}
	if ok {
		f, diags := lang.Parse(fmt.Sprintf("replan %d", req.Attempt), []byte(text))
		if diags.HasErrors() {
			return nil, fmt.Errorf("the new plan does not parse: %v", diags)
		}
		p.round.Store(int32(req.Attempt))
		return f, nil
	}
	// The workflow asks for the new plan once the steps still waiting
	// for their calls have them, as a local run finishes them before it
	// replans (see runWorkflow).
	state, _ := json.Marshal(req.State)
	prev := p.r.start.Plan
	if req.Attempt > 1 {
		prev = Plan{Name: fmt.Sprintf("replan %d", req.Attempt-1), Text: p.r.replans[req.Attempt-1], Imports: prev.Imports}
	}
	p.replanWanted = &ReplanCall{Plan: prev, Attempt: req.Attempt, Completed: req.Completed, Failed: req.Failed, Reason: req.Reason, State: state}
	return nil, errors.New("waiting for the new plan")
}

// schedule starts the calls a pass noted that are not running, in the
// order of their keys, up to the bound of calls at once: each after its
// wait (a retry's backoff), as a durable timer.
func (r *run) schedule(ctx workflow.Context, p *pass) {
	keys := make([]string, 0, len(p.pending))
	for k := range p.pending {
		if !r.running[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(r.running) >= r.cfg.MaxParallel {
			return
		}
		c, delay := p.pending[k], p.delays[k]
		r.running[k] = true
		r.calls++
		workflow.Go(ctx, func(ctx workflow.Context) {
			res := r.execute(ctx, c, delay)
			delete(r.running, k)
			r.results[k] = res
			r.changed = true
		})
	}
}

// execute makes one call as an activity, after its wait.
func (r *run) execute(ctx workflow.Context, c Call, delay time.Duration) *CallResult {
	if delay > 0 {
		if err := workflow.Sleep(ctx, delay); err != nil {
			return &CallResult{Err: &CallError{Code: toolkit.CodeCanceled, Message: fmt.Sprintf("%s was canceled", c.Tool)}}
		}
	}
	timeout := r.cfg.StepTimeout
	if c.Timeout > 0 && c.Timeout < timeout {
		timeout = c.Timeout
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The tool's own time limit is the step's; the activity's is
		// longer, so that a tool that takes too long is a step error
		// (timeout) and only a lost worker times the activity out.
		StartToCloseTimeout: timeout + r.cfg.HeartbeatTimeout,
		HeartbeatTimeout:    r.cfg.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    int32(r.cfg.LostAttempts),
		},
	})
	var res CallResult
	if err := workflow.ExecuteActivity(actx, CallActivity, c).Get(ctx, &res); err != nil {
		return &CallResult{Err: &CallError{Code: toolkit.CodeToolError,
			Message: fmt.Sprintf("%s: its activity failed on Temporal: %v", c.Tool, err)}}
	}
	return &res
}

// replan runs the replan activity and records the new plan.
func (r *run) replan(ctx workflow.Context, rc *ReplanCall) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: r.cfg.StepTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: int32(r.cfg.LostAttempts)},
	})
	var text string
	if err := workflow.ExecuteActivity(actx, ReplanActivity, rc).Get(ctx, &text); err != nil {
		return err
	}
	r.replans[rc.Attempt] = text
	return nil
}

// validate refuses a decision on an approval the run does not wait for.
func (r *run) validate(_ workflow.Context, d Decision) error {
	_, err := r.choose(d)
	return err
}

// decide records a decision.
func (r *run) decide(_ workflow.Context, d Decision) (string, error) {
	req, err := r.choose(d)
	if err != nil {
		return "", err
	}
	d.Step, d.Round = req.Step, req.Round
	r.decisions[approvalKey(req.Round, req.Step)] = d
	r.changed = true
	what := "the plan"
	if req.Step != "" {
		what = "step " + req.Step
	}
	if d.Approve {
		return "approved " + what, nil
	}
	return "rejected " + what, nil
}

// choose finds the approval a decision answers, among those the run
// waits for.
func (r *run) choose(d Decision) (vm.ApprovalRequest, error) {
	open := r.waitingFor()
	var names []string
	for _, a := range open {
		if d.Step == "" && len(open) == 1 || a.Step == d.Step && (d.Round == 0 || a.Round == d.Round) {
			return a, nil
		}
		names = append(names, cmpOr(a.Step, "the plan"))
	}
	switch {
	case len(names) == 0:
		return vm.ApprovalRequest{}, errors.New("the run waits for no approval")
	case d.Step == "":
		return vm.ApprovalRequest{}, fmt.Errorf("the run waits for %d approvals (%s): name the step", len(names), strings.Join(names, ", "))
	}
	return vm.ApprovalRequest{}, fmt.Errorf("the run does not wait for an approval of %s: it waits for %s", d.Step, strings.Join(names, ", "))
}

// waitingFor returns the approvals the last pass asked for that are not
// decided.
func (r *run) waitingFor() []vm.ApprovalRequest {
	var out []vm.ApprovalRequest
	for _, a := range r.asked {
		if _, done := r.decisions[approvalKey(a.Round, a.Step)]; !done {
			out = append(out, a)
		}
	}
	return out
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// outcome is the workflow's result for a pass's result.
func (r *run) outcome(res *vm.Result) *Outcome {
	out := &Outcome{Status: res.Status, Error: res.Error(), Summary: r.summary(res)}
	b, err := json.Marshal(res.Output)
	switch {
	case err != nil:
		out.Status, out.Error = vm.RunFailed, fmt.Sprintf("the output cannot be written as JSON: %v", err)
	case len(b) > r.cfg.MaxOutputBytes:
		out.Status, out.Error = vm.RunFailed, fmt.Sprintf("the output is larger than the limit of %d bytes (%d): output less, or keep large values outside the run", r.cfg.MaxOutputBytes, len(b))
	default:
		out.Output = b
	}
	for _, s := range res.Steps {
		if s.Status == vm.StatusFailed && !s.Handled && s.Error != nil {
			out.Failed = append(out.Failed, s.Error)
		}
	}
	return out
}

func (r *run) summary(res *vm.Result) Summary {
	return Summary{Steps: len(res.Steps), Completed: res.Completed, Skipped: res.Skipped, Failed: res.Failed, Handled: res.Handled,
		Retries: res.Retries, Replans: res.Replans, Activities: r.calls}
}

// status is what the show query answers (full) or the status query
// (not full: no steps, decisions, running calls, replans or output).
func (r *run) status(full bool) *Status {
	st := &Status{ID: r.id, Status: "running"}
	if r.last == nil {
		return st
	}
	res := r.last
	st.Status, st.Error, st.Summary = res.Status, res.Error(), r.summary(res)
	if res.Status == vm.RunWaiting && (len(r.running) > 0 || r.changed) {
		// Calls run, or a decision came that the plan has not seen yet.
		st.Status = "running"
	}
	if !full {
		for _, a := range r.waitingFor() {
			st.Approvals = append(st.Approvals, Approval{Round: a.Round, Step: a.Step, Tool: a.Tool, Message: a.Message})
		}
		return st
	}
	for _, s := range res.Steps {
		ss := StepStatus{ID: s.ID, Tool: s.Tool, Status: s.Status, Round: s.Round, Attempts: s.Attempts, Error: s.Error, Handled: s.Handled, Reason: s.Reason}
		if s.Status == vm.StatusCompleted {
			ss.Result = preview(s.Result, 60)
		}
		st.Steps = append(st.Steps, ss)
	}
	for _, d := range sortedDecisions(r.decisions) {
		st.Approvals = append(st.Approvals, Approval{Round: d.Round, Step: d.Step, Decided: true, Approved: d.Approve, By: d.By, Note: d.Note})
	}
	for _, a := range r.waitingFor() {
		st.Approvals = append(st.Approvals, Approval{Round: a.Round, Step: a.Step, Tool: a.Tool, Message: a.Message, Args: preview(a.Args, 200)})
	}
	for k := range r.running {
		st.Running = append(st.Running, k)
	}
	slices.Sort(st.Running)
	for i := 1; r.replans[i] != ""; i++ {
		st.Replans = append(st.Replans, strings.TrimPrefix(r.replans[i], "\x00"))
	}
	if res.Status != vm.RunWaiting {
		st.Output = preview(res.Output, 4000)
	}
	return st
}

func sortedDecisions(m map[string]Decision) []Decision {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Decision, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// preview writes a value as one line of JSON of at most n characters.
func preview(v any, n int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := []rune(string(b))
	if len(s) > n {
		return string(s[:n-1]) + "…"
	}
	return string(s)
}

// missingTools lists the tools the plan and its sub-plans call that the
// worker does not have.
func missingTools(cfg *Config, prog *compiler.Program) []string {
	if cfg.Has == nil {
		return nil
	}
	var out []string
	for _, t := range prog.CalledTools() {
		if !cfg.Has(t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}
