package vm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Caller calls tools by name; *toolkit.Registry is one. A result is
// JSON-shaped (nil, bool, int64, float64, string, []any, map[string]any;
// see toolkit.Normalize), and the run conforms it to the step's type (see
// compiler.Conform) before anything reads it. args is made for one step
// (or one element of a for each), whose retries get it again, and never
// for another, so a Caller may keep it; the step's StepStarted event
// carries the same map.
type Caller interface {
	Call(ctx context.Context, name string, args map[string]any) (any, error)
}

// Approver decides approval requests: of a whole plan before it runs (lazy
// mode), or of a step marked approve before it runs.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// ErrWaiting is returned, wrapped or not, by an Approver whose decision
// will be recorded later, by another process: the gated step (or the
// whole plan) waits, the steps that do not depend on it run, and the run
// ends with status waiting. A journaled run is resumed once the decision
// is recorded.
var ErrWaiting = errors.New("waiting for a decision")

// ApprovalRequest is what a person is asked to approve.
type ApprovalRequest struct {
	// Round is the replanning round (0 for the plan as it started); Step
	// is the step's ID, or "" for the whole plan.
	Round   int
	Step    string
	Tool    string
	Message string
	// Args are the step's arguments; Plan is the plan's text for a plan
	// approval. Filled names the arguments a model filled in (a step's
	// holes, every argument of a task), which a person should read as
	// such; for a task, Tool is the candidate the model chose.
	Args   map[string]any
	Filled []string
	Plan   string
	// Diff shows a replanned plan against the one it replaces, and
	// Changed lists its new or changed steps: those are what a person
	// approves after a replan, the rest was approved before.
	Diff    string
	Changed []string
}

// Decision answers an approval request.
type Decision struct {
	Approved bool
	Note     string
	// Plan, for a plan approval, replaces the plan with an edited one
	// (plan text); it is checked before it runs.
	Plan []byte
}

// Replanner makes a new plan for the remaining work after a step fails.
type Replanner interface {
	Replan(ctx context.Context, req *ReplanRequest) (*lang.File, error)
}

// ReplanRequest is the state of a run at the failure that asks for a new
// plan: what completed, what failed and why, and the state so far.
// Completed steps are never run again; the new plan starts from State.
type ReplanRequest struct {
	Attempt   int
	Completed []*StepResult
	Failed    *StepResult
	Reason    string
	State     map[string]any
	// Program is the plan that failed.
	Program *compiler.Program
}

// Options configure Run.
type Options struct {
	// Tools calls the plan's tools (not its sub-plans, which Run runs).
	Tools Caller
	// MaxParallel bounds the steps running at once (default 8).
	MaxParallel int
	// StepTimeout bounds each tool call, and the evaluation of each step's
	// arguments (default 60s), so a tool that hangs fails instead of
	// hanging the run. It is the operator's bound: a step's own timeout
	// option may only lower it. Each attempt of a step that is retried
	// has the whole bound.
	StepTimeout time.Duration
	// RunTimeout bounds the whole run in this process, from the call of
	// Run (or RunStream) to its return, approvals asked in the process
	// included; 0 sets no bound. When it passes, the steps running are
	// canceled (their errors, of code canceled, say why), no step starts,
	// and the run ends with status canceled and an error (a
	// *toolkit.Error) of code limit-exceeded. A journaled run stopped so
	// can be resumed; its canceled steps run again, and the resumption is
	// bounded anew.
	RunTimeout time.Duration
	// Approver decides approvals; without one, a run that needs approval
	// fails with code rejected.
	Approver Approver
	// Replanner makes new plans when a step fails under `on failure
	// replan`; MaxReplans bounds how often (default: the plan's max, else
	// 3).
	Replanner  Replanner
	MaxReplans int
	// Evaluator judges the criteria stated in words (`expect "…"`) of
	// each step that returns a result; without one they stay unjudged.
	Evaluator Evaluator
	// Check configures the checking of replanned and edited plans.
	Check compiler.Config
	// Observer receives the run's events.
	Observer Observer
	// Sleep waits between retries; tests inject a fake. It must return
	// early with ctx's error when ctx is done. ctx carries the identity
	// of the call the wait comes before (toolkit.CallInfoFrom), so that a
	// hook can tell the waits of different calls apart.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand gives the jitter of retry backoffs; nil uses a random source.
	Rand *rand.Rand
	// MaxCost bounds the cost of evaluating one CEL expression, taking
	// its value out of CEL included (default 1,000,000; see
	// compiler.Program.CEL); 0 takes the default. An expression over it
	// fails its step with code limit-exceeded.
	MaxCost uint64
	// MaxOutputBytes bounds the size of a step's result, measured as
	// compact JSON (default 16 MiB); a larger result fails the step with
	// limit-exceeded instead of filling the state.
	MaxOutputBytes int
	// RunID names the run in the idempotency key of each tool call (see
	// toolkit.CallInfo): a journaled run has its journal's ID. Empty gives
	// the run a new random ID (NewRunID), so that two runs of the same
	// plan never send the same key: a server that acts once per key acts
	// on each run's calls.
	RunID string
	// Journal, when set, records the run as it happens.
	Journal Journal
	// Restore returns what an earlier process of the same run recorded
	// of a step, by replanning round and step ID (with the caller's
	// prefix for a step of a sub-plan): a step recorded as completed or
	// failed is not run again, its recorded outcome is taken as it is.
	// Nil restores nothing.
	Restore func(round int, step string) (*StepResult, bool)
	// Filler completes what the plan leaves to a model when a step runs:
	// the value of a hole, the choice of a task and its arguments. Its
	// answers are held to the plan's types before they are used (see
	// Filler). Without one, a step with a hole or a task fails with
	// code no-filler.
	Filler Filler
	// MaxFillAttempts bounds how many times the Filler is asked for one
	// answer that does not fit (default 3); then the step fails with code
	// invalid-fill.
	MaxFillAttempts int
	// MaxFills bounds how many times a run asks the Filler in all, in
	// this process (default 1000): a plan cannot make a model answer
	// without end, with a hole in a large for each. A step that would ask
	// once more fails with code limit-exceeded.
	MaxFills int
	// RestoreFill returns the answer an earlier process of the same run
	// recorded (a StepFilled event) for a hole or a task, by replanning
	// round, step ID (as in FillRequest.Step) and argument ("" for a
	// task): the run takes it, held to the plan's types again, and does
	// not ask the Filler. Nil restores nothing.
	RestoreFill func(round int, step, argument string) (any, bool)
	// History records the calls the run makes, and decides each step of
	// a later part of the work by the calls of the earlier ones: a step
	// that is the same call as one that already ran takes its outcome
	// without calling its tool, and one that would change an irreversible
	// step that ran is refused (see History). An agent gives the runs of
	// its turns one history; without one, a run that may replan keeps its
	// own, for its rounds.
	History *History
}

// Journal makes a run durable. Run calls Record with every event, one at
// a time and before the Observer; the events that decide a step
// (StepCompleted, StepFailed, StepSkipped, StepRestored) come with the
// step's result, and so does the StepWaiting of a step whose result waits
// for a person's judgment (a hitl verdict), with the verdicts so far.
// ElementCompleted carries an element's result: a journal that records it
// and gives it back through Options.Restore, under the element's ID,
// keeps the element from running again. A step counts as finished, and the steps that wait for
// it may start, only once Record has returned, and a tool is called only
// once the StepStarted event of its step is recorded. When Record fails
// the run stops, since what it does next could not be recorded. A
// journal that is also a GroupJournal is given the events with Append
// and Sync instead, so that steps that settle together are committed
// together, with the same guarantees but for a step's start, which is
// written within GroupDelay of its tool's call.
type Journal interface {
	Record(ev Event, step *StepResult) error
}

func (o *Options) defaults() {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 60 * time.Second
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.MaxCost == 0 {
		o.MaxCost = 1_000_000
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = defaultMaxOutput
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if o.MaxFills <= 0 {
		o.MaxFills = defaultMaxFills
	}
	if o.History == nil && o.Replanner != nil {
		o.History = NewHistory()
	}
	if o.Evaluator != nil {
		// Replanned and edited plans are checked knowing that their
		// criteria in words will be judged.
		o.Check.HasEvaluator = true
	}
}

// defaultMaxOutput is the default of Options.MaxOutputBytes.
const defaultMaxOutput = 16 << 20

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run runs a program with its input and returns its result. A run that
// ends with failed steps still returns a result (with Err set); the error
// is for runs that cannot start (bad input, no tools).
func Run(ctx context.Context, prog *compiler.Program, input map[string]any, opts Options) (*Result, error) {
	opts.defaults()
	r := &runner{opts: opts, start: time.Now(), group: newGroupCommit(opts.Journal), history: opts.History}
	r.emitMu = &sync.Mutex{}
	defer r.calls.stop()
	defer r.flush()
	ctx, cancel := r.limitTime(ctx)
	defer cancel()
	return r.run(ctx, prog, input)
}

// limitTime bounds ctx by the run's time limit, if it has one: when the
// limit passes, ctx ends with a *toolkit.Error of code limit-exceeded as
// its cause (see stopped and runStopped).
func (r *runner) limitTime(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.RunTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	cause := &toolkit.Error{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
		Message: fmt.Sprintf("the run took longer than its time limit of %s: give it more time (vm.Options.RunTimeout); a journaled run can be resumed", r.opts.RunTimeout)}
	return context.WithTimeoutCause(ctx, r.opts.RunTimeout, cause)
}

// runStopped is why a run whose context ended stopped: its time limit
// (an error of code limit-exceeded), or a cancellation.
func runStopped(ctx context.Context) error {
	if re := (*toolkit.Error)(nil); errors.As(context.Cause(ctx), &re) && re.Code == toolkit.CodeLimitExceeded {
		return re
	}
	return fmt.Errorf("the run was canceled: %w", ctx.Err())
}

// runner drives engines with goroutines.
type runner struct {
	opts   Options
	start  time.Time
	emitMu *sync.Mutex
	// journalErr is the first error of the journal; emitMu guards it.
	journalErr error
	// randMu guards opts.Rand, which workers share.
	randMu sync.Mutex
	// calls watches the deadlines of the tool calls.
	calls watcher
	// asked counts the times the Filler was asked (MaxFills).
	asked atomic.Int64
	// group is set when the journal commits in groups.
	group *groupCommit
	// history is Options.History, or the run's own when it may replan.
	history *History
}

func (r *runner) elapsed() time.Duration { return time.Since(r.start) }

// clock returns the time and the time since the run started, from one
// reading of the monotonic clock: the time is the run's start on the wall
// clock and the time since then, so events are in time order even when
// the wall clock is set during the run (time.Now would read both clocks).
func (r *runner) clock() (time.Time, time.Duration) {
	el := time.Since(r.start)
	return r.start.Add(el), el
}

// emit records an event in the journal, then hands it to the observer.
func (r *runner) emit(e Event, step *StepResult) {
	if r.opts.Observer == nil && r.opts.Journal == nil {
		return
	}
	if r.group != nil {
		r.appendEvent(e, step)
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.opts.Journal != nil && r.journalErr == nil {
		if err := r.opts.Journal.Record(e, step); err != nil {
			r.journalErr = fmt.Errorf("the journal cannot be written: %w", err)
		}
	}
	if r.opts.Observer != nil {
		r.opts.Observer(e)
	}
}

// event emits an event that happens now, or at e.Time when it is set,
// and returns once it is written.
func (r *runner) event(e Event) {
	if r.opts.Observer == nil && r.opts.Journal == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time, e.Elapsed = r.clock()
	}
	r.emit(e, nil)
	r.sync()
}

// journalFailed returns the journal's first error.
func (r *runner) journalFailed() error {
	if r.opts.Journal == nil {
		return nil
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	return r.journalErr
}

// run runs the main plan: approval, the rounds of replanning, and the
// output.
func (r *runner) run(ctx context.Context, prog *compiler.Program, input map[string]any) (*Result, error) {
	if r.opts.Tools == nil {
		return nil, errors.New("running a plan: no tools are configured")
	}
	plan := prog.Plan
	r.event(Event{Type: PlanStarted, Message: fmt.Sprintf("%d steps, mode %s", len(prog.Steps), plan.RunMode())})
	if plan.Approve {
		dec, err := r.approve(ctx, ApprovalRequest{Message: plan.ApproveMessage, Plan: planText(prog)}, nil)
		if errors.Is(err, ErrWaiting) {
			return r.waitingPlan(prog, "the plan waits for approval"), nil
		}
		if err != nil || !dec.Approved {
			res := &Result{Status: RunRejected, CriticalPath: prog.Analysis.CriticalLatency, State: map[string]any{}}
			res.Err = errors.New("the plan was not approved")
			if err != nil {
				res.Err = fmt.Errorf("the plan was not approved: %w", err)
			} else if dec.Note != "" {
				res.Err = fmt.Errorf("the plan was not approved: %s", dec.Note)
			}
			r.finishPlan(res)
			return res, nil
		}
		if len(dec.Plan) > 0 {
			edited, err := r.compileEdit(dec.Plan)
			if err != nil {
				res := &Result{Status: RunRejected, State: map[string]any{}, Err: err}
				r.finishPlan(res)
				return res, nil
			}
			prog = edited
		}
	}
	var all []*StepResult
	var state map[string]any
	replans := 0
	maxReplans := r.opts.MaxReplans
	if maxReplans <= 0 {
		maxReplans = plan.Policy.MaxReplans
	}
	if maxReplans <= 0 {
		maxReplans = 3
	}
	for round := 0; ; round++ {
		e, err := newEngine(ctx, prog, input, state, r.emit, r.clock, r.opts.MaxCost)
		if err != nil {
			return nil, err
		}
		e.fills = modelFiller{r: r}
		e.history = r.history
		e.setRound(round)
		r.drive(ctx, e)
		all = append(all, e.res...)
		if e.replanAt == nil || ctx.Err() != nil {
			return r.conclude(ctx, e, all, replans), nil
		}
		if r.opts.Replanner == nil || replans >= maxReplans {
			why := "no replanner is configured"
			if r.opts.Replanner != nil {
				why = fmt.Sprintf("the plan was replanned %d times, the most allowed", replans)
			}
			e.stop = fmt.Errorf("%w, and %s", e.stop, why)
			e.replanAt = nil
			return r.conclude(ctx, e, all, replans), nil
		}
		next, changed, err := r.replan(ctx, e, replans+1)
		if err != nil {
			e.stop = fmt.Errorf("%w; replanning failed: %v", e.stop, err)
			e.replanAt = nil
			return r.conclude(ctx, e, all, replans), nil
		}
		if len(changed.ids) > 0 && plan.Approve {
			// The plan was approved as a whole: a person approves what the
			// new plan changes, not what was approved already.
			dec, err := r.approve(ctx, ApprovalRequest{
				Round:   round + 1,
				Message: "the plan was replanned: approve its new and changed steps (" + strings.Join(changed.ids, ", ") + ")",
				Plan:    planText(next),
				Diff:    changed.diff,
				Changed: changed.ids,
			}, nil)
			if errors.Is(err, ErrWaiting) {
				e.awaiting = "the new plan waits for approval of its changed steps"
				return r.conclude(ctx, e, all, replans), nil
			}
			if err != nil || !dec.Approved {
				why := "the new plan was not approved"
				if err != nil {
					why += ": " + err.Error()
				} else if dec.Note != "" {
					why += ": " + dec.Note
				}
				e.stop = fmt.Errorf("%w; %s", e.stop, why)
				e.replanAt = nil
				return r.conclude(ctx, e, all, replans), nil
			}
		}
		replans++
		state = e.state()
		prog = next
		// Completed steps are kept; the others are replaced by the new plan.
		kept := all[:0]
		for _, s := range all {
			if s.Status == StatusCompleted || s.Status == StatusFailed && s.Round == round && s == e.replanAt {
				kept = append(kept, s)
			}
		}
		all = kept
	}
}

// conclude computes the output and the run's status.
func (r *runner) conclude(ctx context.Context, e *engine, steps []*StepResult, replans int) *Result {
	res := e.result()
	res.Steps = steps
	res.Replans = replans
	res.Completed, res.Failed, res.Handled, res.Skipped, res.Retries, res.Unjudged = 0, 0, 0, 0, 0, 0
	for _, s := range steps {
		res.Unjudged += unjudged(s)
		switch {
		case s.Status == StatusCompleted:
			res.Completed++
		case s.Status == StatusFailed && s.Handled:
			res.Handled++
		case s.Status == StatusFailed:
			res.Failed++
		case s.Status == StatusSkipped:
			res.Skipped++
		}
		res.Retries += s.Retries
	}
	out, err := any(res.State), error(nil)
	if e.plan.Output != nil {
		out, err = e.output()
	}
	var outputErr error
	if err != nil {
		outputErr = fmt.Errorf("evaluating the output: %w", err)
		res.Err = outputErr
	}
	res.Output = out
	var waiting []string
	for _, s := range steps {
		if s.Status == StatusWaiting {
			waiting = append(waiting, s.ID)
		}
	}
	switch {
	case ctx.Err() != nil:
		res.Status, res.Err = RunCanceled, runStopped(ctx)
	case e.awaiting != "":
		res.Status, res.Err = RunWaiting, errors.New(e.awaiting)
	case e.stop != nil:
		res.Status = RunFailed
		res.Err = e.stop
	case len(waiting) > 0:
		res.Status, res.Err = RunWaiting, fmt.Errorf("waiting for approval of %s", strings.Join(waiting, ", "))
	case outputErr != nil:
		// Every step ran, but the run has no output to give.
		res.Status = RunFailed
	case res.Failed > 0:
		res.Status = RunPartial
		res.Err = fmt.Errorf("%d step(s) failed", res.Failed)
	default:
		res.Status = RunCompleted
	}
	res.Makespan = r.elapsed()
	r.finishPlan(res)
	return res
}

// waitingPlan ends a run whose plan waits for approval before any step
// runs.
func (r *runner) waitingPlan(prog *compiler.Program, why string) *Result {
	res := &Result{Status: RunWaiting, CriticalPath: prog.Analysis.CriticalLatency, State: map[string]any{}, Err: errors.New(why)}
	for _, s := range prog.Steps {
		res.Steps = append(res.Steps, &StepResult{ID: s.ID, Tool: s.ToolName(), Status: StatusPending})
	}
	r.finishPlan(res)
	return res
}

func (r *runner) finishPlan(res *Result) {
	ev := Event{Type: PlanFinished, Verdict: string(res.Status)}
	if res.Err != nil {
		ev.Reason = res.Err.Error()
	}
	r.event(ev)
}

// completion is a finished step, reported by its worker.
type completion struct {
	i   int
	out outcome
}

// drive runs one engine to the end: it dispatches ready steps up to the
// parallelism bound, in index order, and settles their successors as they
// finish. There is no driver goroutine: the goroutine whose step finishes
// settles it under the dispatcher's lock and goes on with the first step
// it dispatches, so a chain runs on one goroutine without handing over.
// A worker with nothing to run waits for a step to be handed to it, and
// a goroutine is started for a step only when no worker waits. The
// caller only waits: a tool that hangs may hold a worker for good.
func (r *runner) drive(ctx context.Context, e *engine) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &dispatcher{r: r, e: e, ctx: ctx, cancel: cancel, idle: make(chan struct{}), calls: r.calls.group(ctx)}
	defer d.calls.stop()
	d.mu.Lock()
	if r.group != nil {
		d.hold(e.settle(e.roots()))
		d.commit()
	} else {
		d.ready.add(e.settle(e.roots()))
	}
	first := d.next(true)
	d.mu.Unlock()
	if first >= 0 {
		go d.worker(first)
	}
	<-d.idle
	// Steps never reached: skipped when the run stopped or was canceled;
	// under replan they are left to the new plan, and behind a step that
	// waits for a decision they wait too.
	if e.replanAt == nil && (e.waiting == 0 || e.stop != nil || ctx.Err() != nil) {
		why := runStopped(ctx).Error()
		if e.stop != nil {
			why = "the run stopped: " + e.stop.Error()
		}
		for _, i := range e.undecided() {
			e.skip(i, why)
		}
	}
}

// dispatcher shares one engine among the goroutines running its steps.
// What decides steps (finishing them, settling their successors,
// dispatching) happens under its lock; what a step does alone (evaluating
// its arguments, calling its tool, checking the size of its result)
// happens outside it, on the goroutine that runs the step. A step's
// arguments read slots whose writers have all finished, which nothing
// writes again, so they are read without the lock.
type dispatcher struct {
	r      *runner
	e      *engine
	ctx    context.Context
	cancel context.CancelFunc
	// calls are the tool calls made under ctx.
	calls *callGroup
	// mu guards the engine (but for the reads of a step's arguments),
	// ready, running, syncing, held, closed and parked.
	mu      sync.Mutex
	ready   readyQueue
	running int
	// With a group journal, syncing counts the goroutines waiting for
	// the journal, and held are the steps made ready by outcomes not yet
	// written, in the order they were made ready (moved is the list
	// commit reuses).
	syncing int
	held    []heldStep
	moved   []int
	// idle is closed once nothing runs and nothing more can start.
	idle   chan struct{}
	closed bool
	// parked are the channels of the workers that wait for a step, the
	// last to wait last; each is closed when the dispatcher is idle.
	parked []chan int
}

// next dispatches ready steps in index order, up to the parallelism
// bound. It returns the first for the calling goroutine to run (when
// take is set), or -1, and hands each of the others to a waiting worker
// or starts a goroutine for it. d.mu is held.
func (d *dispatcher) next(take bool) int {
	e, r := d.e, d.r
	mine := -1
	for d.running < r.opts.MaxParallel && d.ready.len() > 0 && e.stop == nil && d.ctx.Err() == nil {
		i := d.ready.pop()
		d.running++
		e.res[i].Status = StatusRunning
		switch n := len(d.parked); {
		case take && mine < 0:
			mine = i
		case n > 0:
			d.parked[n-1] <- i
			d.parked = d.parked[:n-1]
		default:
			go d.worker(i)
		}
	}
	if d.running == 0 && d.syncing == 0 && !d.closed {
		d.closed = true
		close(d.idle)
		for _, w := range d.parked {
			close(w)
		}
		d.parked = nil
	}
	return mine
}

// finish records a step's outcome and takes in the steps it makes ready
// (with a group journal, held until the outcome is written); the run
// stops when the journal cannot be written, and an abort cancels the
// steps still running. d.mu is held.
func (d *dispatcher) finish(i int, out outcome) {
	if ready := d.e.settle(d.e.finish(i, out)); d.r.group != nil {
		d.hold(ready)
	} else {
		d.ready.add(ready)
	}
	d.r.checkJournal(d.e)
	if d.e.stop != nil && d.e.replanAt == nil {
		d.cancel()
	}
}

// worker runs step i, settles it, and goes on with the next step it
// dispatches; when it dispatches none, it waits for a step to be handed
// to it, until the dispatcher is idle.
func (d *dispatcher) worker(i int) {
	wake := make(chan int, 1)
	var specs specBlock
	for i >= 0 {
		out, mine := d.run(i, &specs)
		if !mine {
			return // the tool returned too late; its step was settled
		}
		i = d.settle(i, out, wake)
	}
}

// run evaluates the arguments of step i and runs it, or takes the
// outcome an earlier process of the run recorded. It reports false when
// the step was settled without it: its tool did not return before its
// context ended (see callPlain).
func (d *dispatcher) run(i int, specs *specBlock) (outcome, bool) {
	r, e := d.r, d.e
	spec, out, done := r.begin(d.ctx, e, i, specs)
	if done {
		return out, true
	}
	if !r.plain(spec) {
		out := r.work(d.calls, e, spec)
		spec.done()
		return out, true
	}
	if serr := r.startPlain(d, spec); serr != nil {
		return outcome{err: serr, start: r.elapsed(), call: spec.identity}, true
	}
	out, mine := r.callPlain(spec)
	if !mine {
		return outcome{}, false
	}
	spec.done()
	return r.limitOutput(spec, out), true
}

// begin prepares step i of e to run, or decides it without running it:
// it is the same call as one that already ran, or would change one that
// may not be changed (see History), or it finished in an earlier process
// of the run, or its arguments cannot be evaluated. done reports that
// out is the step's outcome; otherwise spec is the step to run. The
// eager and the whole-plan drivers both begin each step here; the spec
// comes from specs (nil: a new one).
func (r *runner) begin(ctx context.Context, e *engine, i int, specs *specBlock) (spec *callSpec, out outcome, done bool) {
	st := e.prog.Steps[i]
	prev, finished := r.restored(e, i)
	if finished && e.history == nil {
		return nil, prev, true
	}
	fills := e.fills
	if finished {
		// It is prepared again only for its identity, from the answers
		// the journal recorded: a model is not asked again.
		fills = modelFiller{r: r, replay: true}
	}
	spec, serr := e.prepare(ctx, i, r.timeout(st), fills, specs)
	if serr == nil {
		out, call, decided := e.recall(spec)
		if decided {
			out.start = r.elapsed()
			return nil, out, true
		}
		spec.identity = call
	}
	if finished {
		if spec != nil {
			prev.call = spec.identity
		} else if prev.attempts > 0 {
			prev.call = unidentified(st, prev.tool)
		}
		return nil, prev, true
	}
	if serr != nil {
		return nil, outcome{err: serr, start: r.elapsed()}, true
	}
	return spec, outcome{}, false
}

// abandon settles a plain step whose tool did not return before its
// context ended, on the goroutine the call's watcher started, which goes
// on in the worker's place.
func (d *dispatcher) abandon(c *callCtx) {
	serr := toStepError(c.Err(), c, c.info.Tool, c.spec.step.ID, c.timeout)
	d.worker(d.settle(c.spec.i, outcome{err: serr, attempts: 1, start: c.start, duration: d.r.elapsed() - c.start, call: c.spec.identity}, nil))
}

// settle records the outcome of step i, or its waiting for a decision,
// and dispatches what is ready; it returns the step the calling goroutine
// runs next. When there is none, a worker (wake not nil) waits for one on
// wake; settle returns -1 once the dispatcher is idle.
func (d *dispatcher) settle(i int, out outcome, wake chan int) int {
	// What finishing a step reads of the step alone is done before the
	// lock: the conformance of its result to its type.
	out = d.e.conformOutcome(d.e.prog.Steps[i], out)
	d.mu.Lock()
	d.running--
	if out.waiting {
		d.e.res[i].Status = StatusWaiting
		d.e.waiting++
	} else {
		d.finish(i, out)
	}
	if d.r.group != nil {
		d.commit()
	}
	next := d.next(true)
	if next >= 0 || d.closed || wake == nil {
		d.mu.Unlock()
		return next
	}
	d.parked = append(d.parked, wake)
	d.mu.Unlock()
	if next, ok := <-wake; ok {
		return next
	}
	return -1
}

// restored returns the outcome an earlier process recorded for a step, if
// it finished there. A step that was canceled did not finish.
func (r *runner) restored(e *engine, i int) (outcome, bool) {
	if r.opts.Restore == nil {
		return outcome{}, false
	}
	sr, ok := r.opts.Restore(e.round, e.prefix+e.prog.Steps[i].ID)
	if !ok || sr == nil {
		return outcome{}, false
	}
	out := outcome{attempts: sr.Attempts, retries: sr.Retries, start: sr.Start, duration: sr.Duration, restored: true, verdicts: sr.Verdicts}
	if t := e.prog.Steps[i].Task; t != nil {
		out.tool = t.Candidate(sr.Tool)
	}
	switch {
	case sr.Status == StatusCompleted:
		out.value = sr.Result
	case sr.Status == StatusFailed && sr.Error != nil && sr.Error.Code != toolkit.CodeCanceled && sr.Error.Code != codeJournal:
		se := *sr.Error
		out.err = &se
	default:
		return outcome{}, false
	}
	return out, true
}

// judging returns what an earlier process of the run recorded of a step
// whose result waits for a person's judgment (a hitl verdict): its result
// and the verdicts given so far. Nil for any other step.
func (r *runner) judging(e *engine, id string) *StepResult {
	if r.opts.Restore == nil {
		return nil
	}
	sr, ok := r.opts.Restore(e.round, id)
	if !ok || sr == nil || sr.Status != StatusWaiting || !hasHITL(sr.Verdicts) {
		return nil
	}
	return sr
}

// restoredElement returns the result an earlier process of the run
// recorded for an element of a for each (elem is the step's ID with the
// element's index), and the calls it took, if the element returned there.
func (r *runner) restoredElement(e *engine, elem, tool string) (any, int, bool) {
	if r.opts.Restore == nil {
		return nil, 0, false
	}
	sr, ok := r.opts.Restore(e.round, elem)
	if !ok || sr == nil || sr.Status != StatusCompleted {
		return nil, 0, false
	}
	r.event(Event{Type: StepRestored, Step: elem, Tool: tool, Verdict: string(StatusCompleted), Attempt: sr.Attempts})
	return sr.Result, sr.Attempts, true
}

// checkJournal stops the run when the journal cannot be written.
func (r *runner) checkJournal(e *engine) {
	if err := r.journalFailed(); err != nil && e.stop == nil {
		e.stop = err
		e.replanAt = nil
	}
}

// readyQueue holds the ready steps of a dispatcher in index order.
type readyQueue struct {
	steps []int // steps[head:] are ready
	head  int
	spare []int // the list the next merge writes
}

func (q *readyQueue) len() int { return len(q.steps) - q.head }

// pop takes the first ready step.
func (q *readyQueue) pop() int {
	i := q.steps[q.head]
	q.head++
	if q.head == len(q.steps) {
		q.steps, q.head = q.steps[:0], 0
	}
	return i
}

// add adds a sorted list of steps. Steps made ready later mostly come
// after those waiting, so they are appended; otherwise the two lists are
// merged.
func (q *readyQueue) add(b []int) {
	if len(b) == 0 {
		return
	}
	a := q.steps[q.head:]
	if len(a) == 0 || a[len(a)-1] <= b[0] {
		if q.head > 0 && len(q.steps)+len(b) > cap(q.steps) {
			q.steps, q.head = append(q.steps[:0], a...), 0
		}
		q.steps = append(q.steps, b...)
		return
	}
	out := q.spare[:0]
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(append(out, a...), b...)
	q.spare = q.steps[:0]
	q.steps, q.head = out, 0
}

// mergeSorted merges two sorted lists of step indexes into a new one
// (unless b is empty): b may be a list the engine reuses.
func mergeSorted(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return append([]int(nil), b...)
	}
	out := make([]int, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// work runs one step and holds its result to the size limit.
func (r *runner) work(g *callGroup, e *engine, spec *callSpec) outcome {
	return r.limitOutput(spec, r.runStep(g, e, spec))
}

// limitOutput fails a step whose result is over the size limit, or
// holds a number JSON cannot hold, which neither the journal nor the
// plan's readers could take.
func (r *runner) limitOutput(spec *callSpec, out outcome) outcome {
	out.call = spec.identity
	if out.err == nil && !out.waiting {
		n, over, nonFinite := jsonSize(out.value, r.opts.MaxOutputBytes)
		s := spec.step
		switch {
		case nonFinite:
			out.value, out.err = nil, &StepError{Code: toolkit.CodeInvalidOutput, Tool: s.ToolName(), Step: s.ID,
				Message: fmt.Sprintf("the result of %s holds a number JSON cannot hold (NaN or an infinity): the tool must return finite numbers", s.ID)}
		case over:
			out.value, out.err = nil, &StepError{Code: "limit-exceeded", Tool: s.ToolName(), Step: s.ID,
				Message: fmt.Sprintf("the result of %s is larger than the limit of %d bytes (at least %d): ask the tool for less, or raise the limit (vm.Options.MaxOutputBytes)", s.ID, r.opts.MaxOutputBytes, n)}
		}
	}
	return out
}

// plain reports whether a step is one call of a tool and nothing else:
// no approval, no known result, no for each, no retries, no fallback, no
// criterion for an evaluator, not a sub-plan. Most steps are; callPlain
// runs them.
func (r *runner) plain(spec *callSpec) bool {
	s := spec.step
	return !s.Approve && !spec.hasKnown && s.Each == nil && s.Retry <= 0 && s.Fallback == nil && len(s.Criteria) == 0 && s.Tool != nil && s.Tool.Plan == nil
}

// startPlain starts a plain step of d: its step-started event, and the
// context of its call, watched from now. It returns the step's error when
// the journal cannot be written.
func (r *runner) startPlain(d *dispatcher, spec *callSpec) *StepError {
	s := spec.step
	now, start := r.clock()
	id := d.e.prefix + s.ID
	r.appendSoon(Event{Type: StepStarted, Step: id, Tool: s.Tool.Name, Time: now, Elapsed: start, Args: spec.args})
	if err := r.journalFailed(); err != nil {
		return &StepError{Code: codeJournal, Message: err.Error(), Tool: s.Tool.Name, Step: s.ID}
	}
	c := &spec.call
	r.newCall(c, d.calls, s, s.Tool, id, 1)
	c.d, c.spec, c.start = d, spec, start
	r.calls.watch(c, now)
	return nil
}

// callPlain runs a plain step started by startPlain: what runStep does
// for it, with the tool called on this goroutine instead of one of its
// own. If the call is not over when its context ends (its timeout, or the
// run stopping), the watcher settles the step as failed on a goroutine of
// its own (dispatcher.abandon), and callPlain reports false once the tool
// returns: the goroutine that called it must then leave the step alone.
func (r *runner) callPlain(spec *callSpec) (outcome, bool) {
	c := &spec.call
	tool := c.info.Tool
	v, err := r.callTool(tool, func() (any, error) { return r.opts.Tools.Call(c, tool, spec.args) })
	if !c.returned() {
		return outcome{}, false
	}
	defer c.release()
	out := outcome{value: v, attempts: 1, start: c.start}
	switch {
	case err == nil:
	case errors.Is(err, ErrWaiting):
		return outcome{waiting: true, start: c.start}, true
	default:
		out.value, out.err = nil, toStepError(err, c, tool, spec.step.ID, c.timeout)
	}
	out.duration = r.elapsed() - c.start
	return out, true
}

// callTool makes a call of a tool (or a sub-plan); a panic is its error.
func (r *runner) callTool(tool string, call func() (any, error)) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &toolkit.Error{Code: toolkit.CodePanic, Message: fmt.Sprintf("%s panicked: %v", tool, p) + "\n" + string(debug.Stack())}
		}
	}()
	return call()
}

// runStep runs one step: approval, then the known result, the for-each
// elements or the call, with retries and fallback.
func (r *runner) runStep(g *callGroup, e *engine, spec *callSpec) outcome {
	ctx := g.ctx
	s := spec.step
	start := r.elapsed()
	id := e.prefix + s.ID
	tool := s.ToolName()
	var chosen *compiler.Tool
	if s.Task != nil {
		// The candidate the model chose: its approval, its call.
		chosen = spec.tool
		tool = chosen.Name
	}
	fail := func(code, msg string) outcome {
		return outcome{err: &StepError{Code: code, Message: msg, Tool: tool, Step: s.ID}, start: start, duration: r.elapsed() - start, tool: chosen}
	}
	if s.Approve && !spec.hasKnown {
		dec, err := r.approve(ctx, ApprovalRequest{Round: spec.round, Step: id, Tool: tool, Message: s.ApproveMessage, Args: spec.args, Filled: filledArgs(s, spec.args)}, nil)
		switch {
		case errors.Is(err, ErrWaiting):
			return outcome{waiting: true, start: start}
		case err != nil && ctx.Err() != nil:
			why := stopped(ctx, "the approval of "+s.ID)
			return fail(errorCode(why, toolkit.CodeCanceled), why.Error())
		case err != nil:
			return fail(toolkit.CodeRejected, fmt.Sprintf("approval of %s failed: %v", s.ID, err))
		case !dec.Approved:
			msg := fmt.Sprintf("a person rejected %s", s.ID)
			if dec.Note != "" {
				msg += ": " + dec.Note
			}
			return fail(toolkit.CodeRejected, msg)
		}
	}
	started := Event{Type: StepStarted, Step: id, Tool: tool}
	if s.Each == nil {
		started.Args = spec.args
	}
	r.appendSoon(started)
	if err := r.journalFailed(); err != nil {
		return fail(codeJournal, err.Error())
	}
	if sr := r.judging(e, id); sr != nil {
		// It returned in an earlier process, and waits for a person to
		// judge its result: it is not run again, and only what was not
		// judged there is.
		return r.judged(ctx, e, s, id, spec.args, outcome{value: sr.Result, attempts: sr.Attempts, retries: sr.Retries, start: start}, sr.Verdicts)
	}
	if spec.hasKnown {
		return r.judged(ctx, e, s, id, spec.args, outcome{value: spec.known, start: start, duration: r.elapsed() - start}, nil)
	}
	if s.Each == nil {
		var fb map[string]any
		if len(spec.fallback) > 0 {
			fb = spec.fallback[0]
		}
		v, attempts, retries, serr := r.attempts(g, e, spec, id, spec.args, fb)
		if serr != nil && serr.Code == codeWaiting {
			return outcome{waiting: true, start: start}
		}
		return r.judged(ctx, e, s, id, spec.args, outcome{value: v, err: serr, attempts: attempts, retries: retries, start: start, duration: r.elapsed() - start, tool: chosen}, nil)
	}
	// A for each: the elements run in parallel, up to the bound; the first
	// failure cancels the rest.
	n := len(spec.elems)
	results := make([]any, n)
	var firstErr *StepError
	waiting := false
	var mu sync.Mutex
	total, retried := 0, 0
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	eg := r.calls.group(ectx)
	defer eg.stop()
	sem := make(chan struct{}, max(1, min(r.opts.MaxParallel, n)))
	var wg sync.WaitGroup
	for k := range n {
		elem := fmt.Sprintf("%s[%d]", id, k)
		if v, attempts, ok := r.restoredElement(e, elem, tool); ok {
			// It returned in an earlier process of the run.
			results[k] = v
			total += attempts
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var fb map[string]any
			if k < len(spec.fallback) {
				fb = spec.fallback[k]
			}
			v, attempts, retries, serr := r.attempts(eg, e, spec, elem, spec.elems[k], fb)
			if serr == nil && (r.opts.Journal != nil || r.opts.Observer != nil) {
				if _, _, nonFinite := jsonSize(v, math.MaxInt); !nonFinite {
					// (One that is not finite fails the step.)
					r.event(Event{Type: ElementCompleted, Step: elem, Tool: tool, Attempt: attempts, Result: v})
				}
			}
			mu.Lock()
			defer mu.Unlock()
			total += attempts
			retried += retries
			results[k] = v
			if serr != nil && serr.Code == codeWaiting {
				// A sub-plan waits for a decision: the other elements go on.
				waiting = true
				return
			}
			if serr != nil && firstErr == nil {
				serr.Message = fmt.Sprintf("element %d: %s", k, serr.Message)
				firstErr = serr
				cancel()
			}
		}()
	}
	wg.Wait()
	if waiting && firstErr == nil {
		return outcome{waiting: true, start: start}
	}
	return r.judged(ctx, e, s, id, nil, outcome{value: results, err: firstErr, attempts: total, retries: retried, start: start, duration: r.elapsed() - start}, nil)
}

// filledArgs names the arguments of a step that a model filled in.
func filledArgs(s *compiler.Step, args map[string]any) []string {
	if s.Task != nil {
		return sortedKeys(args)
	}
	var out []string
	for _, a := range s.Holes() {
		out = append(out, a.Name)
	}
	return out
}

// attempts calls a step's tool (a task's, the candidate chosen) with its
// retries and backoff, then its fallback. It returns the value, the number
// of calls made, how many of them were retries, and the error of the last
// call when all failed.
func (r *runner) attempts(g *callGroup, e *engine, spec *callSpec, id string, args, fbArgs map[string]any) (any, int, int, *StepError) {
	s := spec.step
	tool := spec.tool
	ctx := g.ctx
	calls, retries := 0, 0
	var last *StepError
	for attempt := 0; attempt <= s.Retry; attempt++ {
		if attempt > 0 {
			delay := r.backoff(s.Backoff, attempt)
			r.event(Event{Type: StepRetried, Step: id, Tool: tool.Name, Attempt: calls, Reason: fmt.Sprintf("%s; retrying in %s", strings.TrimSuffix(last.Message, "."), delay.Round(time.Millisecond))})
			next := toolkit.CallInfo{Run: r.opts.RunID, Step: id, Tool: tool.Name, Attempt: calls + 1, Key: r.opts.RunID + "/" + id, Timeout: r.timeout(s)}
			if err := r.opts.Sleep(toolkit.WithCallInfo(ctx, next), delay); err != nil {
				break
			}
			retries++
		}
		calls++
		v, serr := r.call(g, e, spec, tool, args, id, calls)
		if serr == nil {
			return v, calls, retries, nil
		}
		last = serr
		if serr.Code == toolkit.CodeCanceled || ctx.Err() != nil || notRetryable(serr) {
			break
		}
	}
	if s.Fallback != nil && s.Fallback.Tool != nil && ctx.Err() == nil && last.Code != codeWaiting {
		calls++
		r.event(Event{Type: StepRetried, Step: id, Tool: s.Fallback.Tool.Name, Attempt: calls, Reason: fmt.Sprintf("%s; calling the fallback %s", strings.TrimSuffix(last.Message, "."), s.Fallback.Tool.Name)})
		v, serr := r.call(g, e, spec, s.Fallback.Tool, fbArgs, id, calls)
		if serr == nil {
			return v, calls, retries, nil
		}
		serr.Message = fmt.Sprintf("%s (after %s failed: %s)", serr.Message, tool.Name, last.Message)
		last = serr
	}
	return nil, calls, retries, last
}

// The codes of the step errors the interpreter makes for itself: a step
// that waits for a decision (never written to a slot), a step whose
// start could not be journaled.
const (
	codeWaiting = "waiting"
	codeJournal = "journal"
)

func notRetryable(e *StepError) bool {
	if e.final {
		return true
	}
	switch e.Code {
	case toolkit.CodeInvalidArguments, toolkit.CodeUnknownTool, toolkit.CodeRejected, toolkit.CodeLimitExceeded, codeWaiting, codeJournal:
		return true
	}
	return false
}

// backoff is the wait before retry number attempt: base doubled each
// time, with up to 50% jitter, capped at one minute.
func (r *runner) backoff(base time.Duration, attempt int) time.Duration {
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	d := base << (attempt - 1)
	if d > time.Minute || d <= 0 {
		d = time.Minute
	}
	r.randMu.Lock()
	j := r.opts.Rand.Float64()
	r.randMu.Unlock()
	return d/2 + time.Duration(float64(d/2)*j)
}

// call makes one call of a tool (or runs a sub-plan) with the step's
// timeout. A tool that panics or does not return in time fails; one that
// ignores its context keeps running in the background until it returns.
func (r *runner) call(g *callGroup, e *engine, spec *callSpec, tool *compiler.Tool, args map[string]any, id string, attempt int) (any, *StepError) {
	s := spec.step
	cctx := new(callCtx)
	r.newCall(cctx, g, s, tool, id, attempt)
	r.calls.watch(cctx, time.Now())
	defer cctx.release()
	timeout := cctx.timeout
	type reply struct {
		v   any
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := r.callTool(tool.Name, func() (any, error) {
			if tool.Plan != nil {
				return r.subPlan(cctx, spec, tool, args, id)
			}
			return r.opts.Tools.Call(cctx, tool.Name, args)
		})
		ch <- reply{v, err}
	}()
	select {
	case rep := <-ch:
		if rep.err == nil {
			return rep.v, nil
		}
		if errors.Is(rep.err, ErrWaiting) {
			return nil, &StepError{Code: codeWaiting, Message: rep.err.Error(), Tool: tool.Name, Step: s.ID}
		}
		return nil, toStepError(rep.err, cctx, tool.Name, s.ID, timeout)
	case <-cctx.Done():
		return nil, toStepError(cctx.Err(), cctx, tool.Name, s.ID, timeout)
	}
}

// newCall sets up c, a new context of one call of a tool in group g: the
// step's timeout, and the call's identity for the tool. The caller
// watches it once it is set up.
func (r *runner) newCall(c *callCtx, g *callGroup, s *compiler.Step, tool *compiler.Tool, id string, attempt int) {
	c.group, c.timeout, c.fallback = g, r.timeout(s), tool != s.Tool
	c.info = toolkit.CallInfo{Run: r.opts.RunID, Step: id, Tool: tool.Name, Attempt: attempt, Timeout: c.timeout}
}

// timeout is the time limit of each call of a step: the operator's
// (Options.StepTimeout), or the step's own timeout when it is shorter. A
// plan may lower the operator's bound, never raise it.
func (r *runner) timeout(s *compiler.Step) time.Duration {
	if s.Timeout > 0 && s.Timeout < r.opts.StepTimeout {
		return s.Timeout
	}
	return r.opts.StepTimeout
}

// toStepError turns a tool's error into the error value of its step.
func toStepError(err error, ctx context.Context, tool, step string, timeout time.Duration) *StepError {
	se := &StepError{Code: toolkit.CodeToolError, Message: err.Error(), Tool: tool, Step: step}
	var re, limit *toolkit.Error
	switch {
	case errors.As(context.Cause(ctx), &limit) && limit.Code == toolkit.CodeLimitExceeded:
		// The run's time limit passed while the tool ran: the step is
		// canceled (and run again if the run is resumed); the run's
		// error says which limit.
		se.Code, se.Message = toolkit.CodeCanceled, fmt.Sprintf("%s was stopped: %s", tool, limit.Message)
	case errors.As(err, &re):
		se.Code, se.Message, se.final = re.Code, re.Message, re.NotRetryable
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		se.Code, se.Message = toolkit.CodeTimeout, fmt.Sprintf("%s did not return within %s", tool, timeout)
	case errors.Is(err, context.Canceled):
		se.Code, se.Message = toolkit.CodeCanceled, fmt.Sprintf("%s was canceled", tool)
	}
	if se.Code == toolkit.CodePanic {
		// Keep the panic's first line in the message; the stack goes to
		// the log through the event.
		if i := indexByte(se.Message, '\n'); i > 0 {
			se.Message = se.Message[:i]
		}
	}
	return se
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// subPlan runs a sub-plan as a step: its arguments are its input, its
// output the step's result.
func (r *runner) subPlan(ctx context.Context, spec *callSpec, tool *compiler.Tool, args map[string]any, id string) (any, error) {
	sub := spec.subs[tool.Name]
	if sub == nil {
		return nil, fmt.Errorf("sub-plan %s was not compiled", tool.Name)
	}
	e, err := newEngine(ctx, sub, args, nil, r.emit, r.clock, r.opts.MaxCost)
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: err.Error()}
	}
	e.fills = modelFiller{r: r}
	e.prefix = id + "/"
	e.setRound(spec.round)
	r.drive(ctx, e)
	if e.stop != nil {
		return nil, &toolkit.Error{Code: "sub-plan-failed", Message: fmt.Sprintf("sub-plan %s failed: %v", tool.Name, e.stop)}
	}
	if e.waiting > 0 {
		return nil, fmt.Errorf("sub-plan %s: %w", tool.Name, ErrWaiting)
	}
	out, err := e.output()
	if err != nil || e.plan.Output == nil {
		return out, err
	}
	if msg := compiler.CheckValue(out, tool.Result, ""); msg != "" {
		// An output reads what is missing (a slot not written, an absent
		// field, an index past the end) as null: say what was missing,
		// rather than that null is not of the result's type.
		sc := e.sc
		if _, serr := e.eval(e.finishing(), e.plan.Output, &sc); serr != nil {
			return nil, &toolkit.Error{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("the output of sub-plan %s does not match its type %s: %s, since %v", tool.Name, tool.Result, msg, serr)}
		}
	}
	return out, nil
}

// ErrNoApprover is the error of an approval gate in a run that has no
// Approver (Options.Approver), nor a journal to wait in: the gate
// rejects its step with it.
var ErrNoApprover = errors.New("approval is required and no approver is configured (vm.Options.Approver)")

// approve asks the approver, with the request's events around it. A step
// that waits for the decision is recorded as waiting (with its result
// and verdicts so far, for one that waits for a person's judgment of its
// result).
func (r *runner) approve(ctx context.Context, req ApprovalRequest, waiting *StepResult) (Decision, error) {
	r.event(Event{Type: ApprovalRequested, Step: req.Step, Tool: req.Tool, Message: req.Message})
	if r.opts.Approver == nil {
		r.event(Event{Type: ApprovalDecided, Step: req.Step, Tool: req.Tool, Verdict: "rejected", Reason: ErrNoApprover.Error()})
		return Decision{}, ErrNoApprover
	}
	dec, err := r.opts.Approver.Approve(ctx, req)
	if errors.Is(err, ErrWaiting) {
		ev := Event{Type: StepWaiting, Step: req.Step, Tool: req.Tool, Message: req.Message}
		ev.Time, ev.Elapsed = r.clock()
		r.emit(ev, waiting)
		return dec, err
	}
	verdict := "rejected"
	if err == nil && dec.Approved {
		verdict = "approved"
	}
	ev := Event{Type: ApprovalDecided, Step: req.Step, Tool: req.Tool, Verdict: verdict, Message: dec.Note}
	if err != nil {
		ev.Reason = err.Error()
	}
	r.event(ev)
	return dec, err
}

// planText renders a program's plan for a person to read.
func planText(prog *compiler.Program) string {
	if prog.Info != nil && prog.Info.File != nil {
		return string(lang.Format(prog.Info.File))
	}
	return ""
}
