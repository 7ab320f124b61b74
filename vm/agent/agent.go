// Package agent is the loop in which a model writes Obelisk plans and
// they run: Generate asks for a whole plan, checks it and sends the
// diagnostics back until it checks; Run pursues a goal turn by turn, in
// eager mode (each step runs as soon as the model has written it, while
// it is still writing) or lazy mode (the whole plan is checked, then
// run). After each turn the new state and what became of each step go
// back to the model, which goes on, changes the plan, or gives the output.
// A statement that is the same call as a step of an earlier turn (the same
// tool, resolved arguments and slot) is that step, answered from what was
// recorded and not called again, and one that would change an
// irreversible step that ran is refused (see vm.History); the turns share
// one history, which a resumed goal rebuilds from its journal as it
// replays. A failed step makes the next turn a replan that keeps the
// completed steps and asks for another approach; an evaluator model judges the
// steps' criteria stated in words and extracts facts into a truth store
// that every later prompt carries (seed 000's planner, evaluator and
// goal loop; seed 003's context messages and modes).
package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
)

// The limits of the goal loop, with seed 000's defaults; the command
// reads MAX_GOAL_STEPS and MAX_REPLAN_ATTEMPTS from the environment.
const (
	DefaultMaxGoalSteps      = 30
	DefaultMaxReplanAttempts = 8
)

// The events of the goal loop, besides the runs' own.
const (
	TurnStarted  vm.EventType = "turn-started"
	TurnFinished vm.EventType = "turn-finished"
	GoalFinished vm.EventType = "goal-finished"
	// FormFallback: the server refused the schema of a plan, and the
	// model answers in plan text from then on; Message says why.
	FormFallback vm.EventType = "form-fallback"
	// AnswerCut: the planner's answer was cut short (llm.ErrTruncated):
	// its unfinished last statement did not run, and the model is asked
	// to go on, or to answer again more briefly. Message says why.
	AnswerCut vm.EventType = "answer-cut"
)

// Options configure Run.
type Options struct {
	Goal    string
	Context Context
	// Mode is Eager (the default) or Lazy.
	Mode string
	// Form is how the model answers: FormText (.plan text, the default)
	// or FormJSON (the JSON form, held to PlanSchema where the provider
	// has constrained output). Eager mode runs a statement, or a call, as
	// soon as it is complete. Where the server refuses the schema, the
	// goal goes on in text.
	Form string
	// Planner writes the plans; Evaluator, the cheaper tier, judges the
	// criteria stated in words and extracts facts. Without an evaluator
	// those criteria stay unjudged.
	Planner, Evaluator llm.Model
	// Check configures the checker. The checker knows only the context's
	// tools, each as Check.Tools defines it where it does (the operator's
	// definition), else as the context declares it; Check's other tools
	// (the built-in ones) are not offered, and a plan cannot call them.
	Check compiler.Config
	// Tools calls the tools (only the context's: a call of another tool
	// fails); Approver decides approval gates and the evaluator's hitl
	// verdicts; Observer receives the runs' events and the loop's own.
	Tools    vm.Caller
	Approver vm.Approver
	Observer vm.Observer
	// MaxGoalSteps bounds the steps run for the goal (default
	// DefaultMaxGoalSteps); MaxReplanAttempts the replans after failures
	// (default DefaultMaxReplanAttempts); MaxRepairs the answers in a row
	// that run nothing, and in lazy mode the repairs of one plan (default
	// DefaultMaxRepairs).
	MaxGoalSteps, MaxReplanAttempts, MaxRepairs int
	// MaxParallel and StepTimeout are passed to the runs.
	MaxParallel int
	StepTimeout time.Duration
	// RunTimeout bounds the whole goal: its model calls, runs and
	// approvals (0: no bound). When it passes, the run under way stops as
	// vm.Options.RunTimeout says, and the goal ends canceled with an error
	// of code limit-exceeded.
	RunTimeout time.Duration
	// Filler completes the holes and tasks of the plans the model writes
	// (see vm.Options.Filler), usually on the planner (vm/fill.Model).
	Filler vm.Filler
	// Journal, when set, makes the goal durable: see Journal. A goal with
	// a journal and no Approver waits at an approval gate or a hitl
	// verdict: it ends with status GoalWaiting, to be run again with the
	// same journal once the decision is recorded.
	Journal Journal
}

// The statuses of a goal.
const (
	GoalCompleted = "completed" // the model gave the output and every step it wrote ran
	GoalFailed    = "failed"    // the replans or repairs ran out, or the planner failed
	GoalStepLimit = "step-limit"
	GoalCanceled  = "canceled"
	// GoalWaiting: a step of the goal's journaled run waits for a
	// decision another process records (an approval, a person's judgment
	// of a result).
	GoalWaiting = "waiting"
)

// Turn is one answer of the planner and what became of it.
type Turn struct {
	N int `json:"turn"`
	// Kind is plan (the first), continue, replan (after a failure) or
	// repair (after statements that did not check, or nothing run).
	Kind   string `json:"kind"`
	Answer string `json:"answer"`
	// Steps are the steps that ran or were decided, in order.
	Steps []*vm.StepResult `json:"steps"`
	// Rejected are the diagnostics of the statements that did not check,
	// in the coordinates of the answer.
	Rejected lang.Diagnostics `json:"-"`
	// Output reports that the answer gave the goal's output.
	Output bool      `json:"output"`
	Usage  llm.Usage `json:"usage"`
	// Form is the form the answer was asked in; PromptTokens the size of
	// the turn's prompt in tokens, as the provider counted it, or
	// estimated (promptTokens) when it did not.
	Form         string `json:"form"`
	PromptTokens int64  `json:"promptTokens"`
	// Repairs counts the corrected answers of a lazy turn.
	Repairs int `json:"repairs,omitempty"`
	// Rejection is a person's rejection of the whole plan (lazy mode).
	Rejection string `json:"rejection,omitempty"`
	// Cut says why the answer was cut short, when it was (see
	// llm.ErrTruncated): in eager mode the statements it finished before
	// the cut ran, not the last one; in lazy mode none did.
	Cut string `json:"cut,omitempty"`

	output any
	// waiting says why the turn's run waits for a decision, if it does.
	waiting string
	// cutNote tells the model what became of an answer cut short.
	cutNote string
}

// Summary is seed 000's goal execution summary.
type Summary struct {
	Goal     string `json:"goal"`
	Mode     string `json:"mode"`
	Status   string `json:"status"`
	Turns    int    `json:"turns"`
	StepsRun int    `json:"stepsRun"`
	Replans  int    `json:"replans"`
	Repairs  int    `json:"repairs"`
	// Form is the form the last answer was asked in; Fallback says why it
	// is text when FormJSON was asked for.
	Form     string `json:"form"`
	Fallback string `json:"fallback,omitempty"`
	Facts    []Fact `json:"facts"`
	// Tokens are counted per use: planner (the answers), filler (the
	// holes and tasks, when the filler counts them: vm/fill.Model does),
	// evaluator, and total, the sum of every request the goal made.
	Tokens  map[string]llm.Usage `json:"tokens"`
	Elapsed time.Duration        `json:"elapsedNs"`
}

// Result is the outcome of a goal.
type Result struct {
	Status string         `json:"status"`
	Output any            `json:"output"`
	State  map[string]any `json:"state"`
	Turns  []*Turn        `json:"turns"`
	// GoalExecution summarises the run.
	GoalExecution Summary `json:"goalExecution"`
	// Err says why the goal was not completed, or is nil.
	Err error `json:"-"`
}

// Error returns the reason the goal was not completed, for JSON.
func (r *Result) Error() string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Error()
}

// goal is the state of a Run.
type goal struct {
	opts      Options
	ctx       Context // the context, with the declarations the model adds
	planner   *llm.Meter
	evaluator *llm.Meter
	facts     *truthStore
	state     map[string]any
	// types are the types the writers of the state's slots declare.
	types    map[string]*compiler.Type
	start    time.Time
	turns    []*Turn
	stepsRun int
	replans  int
	repairs  int
	form     *answerForm
	emitMu   sync.Mutex
	// answers is the journaled planner, or nil; journalErr the journal's
	// first error, which ends the goal.
	answers    *answers
	journalErr error
	// history is the record of the calls of every turn's run: a step
	// that is the same call as one that ran in an earlier turn is that
	// step (see vm.History). A goal resumed from its journal rebuilds it
	// as it replays the turns.
	history *vm.History
}

// Run pursues a goal until the model gives its output, or a limit is
// reached. A goal that fails still returns a result, with Err set; the
// error is for options that cannot work.
func Run(ctx context.Context, opts Options) (*Result, error) {
	switch {
	case strings.TrimSpace(opts.Goal) == "":
		return nil, errors.New("no goal given")
	case opts.Planner == nil:
		return nil, errors.New("no planner model given")
	case opts.Tools == nil:
		return nil, errors.New("no tools given")
	}
	if opts.Mode == "" {
		opts.Mode = Eager
	}
	if opts.Mode != Eager && opts.Mode != Lazy {
		return nil, fmt.Errorf("unknown mode %q: use %s or %s", opts.Mode, Eager, Lazy)
	}
	if opts.MaxGoalSteps <= 0 {
		opts.MaxGoalSteps = DefaultMaxGoalSteps
	}
	if opts.MaxReplanAttempts <= 0 {
		opts.MaxReplanAttempts = DefaultMaxReplanAttempts
	}
	if opts.MaxRepairs <= 0 {
		opts.MaxRepairs = DefaultMaxRepairs
	}
	g := &goal{opts: opts, ctx: opts.Context, planner: llm.Metered(opts.Planner), facts: &truthStore{}, state: map[string]any{},
		types: map[string]*compiler.Type{}, start: time.Now(), history: vm.NewHistory()}
	if opts.Journal != nil {
		g.answers = &answers{model: opts.Planner, journal: opts.Journal}
		g.planner = llm.Metered(g.answers)
		facts, err := opts.Journal.Facts()
		if err != nil {
			return nil, fmt.Errorf("reading the goal's journal: %w", err)
		}
		for _, f := range facts {
			g.facts.add(f.Key, f.Value, f.Step)
		}
		g.facts.journal = opts.Journal
	}
	g.ctx.Decls = append([]lang.Item(nil), opts.Context.Decls...)
	g.opts.Check = offeredConfig(opts.Check, &g.ctx)
	if opts.Filler == nil {
		// Nothing would fill a hole or choose for a task: the model is
		// neither taught them nor let write them.
		g.opts.Check.NoFiller = true
	}
	g.opts.Tools = newOfferedTools(&g.ctx, opts.Tools)
	form, err := newAnswerForm(opts.Form, &g.ctx, g.opts.Check)
	if err != nil {
		return nil, err
	}
	g.form = form
	if opts.Evaluator != nil {
		g.evaluator = llm.Metered(opts.Evaluator)
		// The model's plans are checked knowing that their criteria in
		// words will be judged.
		g.opts.Check.HasEvaluator = true
	}
	if opts.RunTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.RunTimeout, &toolkit.Error{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
			Message: fmt.Sprintf("the goal took longer than its time limit of %s: give it more time (agent.Options.RunTimeout)", opts.RunTimeout)})
		defer cancel()
	}
	return g.run(ctx), nil
}

// stopped is why a goal whose context ended stopped: its time limit, or a
// cancellation.
func stopped(ctx context.Context) error {
	if re := (*toolkit.Error)(nil); errors.As(context.Cause(ctx), &re) && re.Code == toolkit.CodeLimitExceeded {
		return re
	}
	return fmt.Errorf("the goal was canceled: %w", ctx.Err())
}

func (g *goal) event(e vm.Event) {
	if g.opts.Observer == nil && g.opts.Journal == nil {
		return
	}
	e.Time = time.Now()
	e.Elapsed = e.Time.Sub(g.start)
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	if g.opts.Journal != nil && g.journalErr == nil {
		if err := g.opts.Journal.Record(e); err != nil {
			g.journalErr = fmt.Errorf("the journal cannot be written: %w", err)
		}
	}
	if g.opts.Observer != nil {
		g.opts.Observer(e)
	}
}

// journalFailed returns the first error of the journal: of the loop's
// events, or of the facts.
func (g *goal) journalFailed() error {
	g.emitMu.Lock()
	err := g.journalErr
	g.emitMu.Unlock()
	if err != nil {
		return err
	}
	return g.facts.failed()
}

func (g *goal) run(ctx context.Context) *Result {
	info := &turnInfo{goal: g.opts.Goal, facts: g.facts, state: g.state, types: g.types}
	if len(g.ctx.Plan) > 0 {
		info.plan = annotate(g.ctx.Plan, nil)
	}
	kind := "plan"
	idle := 0 // answers in a row that ran nothing
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			return g.finish(GoalCanceled, nil, stopped(ctx))
		}
		remaining := g.opts.MaxGoalSteps - g.stepsRun
		if remaining <= 0 {
			return g.finish(GoalStepLimit, nil, fmt.Errorf("%d steps ran, the most allowed (MAX_GOAL_STEPS), and the model gave no output", g.stepsRun))
		}
		info.note = strings.TrimSpace(info.note + fmt.Sprintf("\nAt most %d more steps may run for this goal.", remaining))
		g.event(vm.Event{Type: TurnStarted, Message: fmt.Sprintf("turn %d (%s), mode %s", n, kind, g.opts.Mode)})
		var t *Turn
		var items []lang.Item
		var err error
		if g.opts.Mode == Lazy {
			t, items, err = g.lazyTurn(ctx, n, info, remaining)
		} else {
			t, items, err = g.eagerTurn(ctx, n, info, remaining)
		}
		t.Kind = kind
		g.turns = append(g.turns, t)
		ran := 0
		results := map[string]*vm.StepResult{}
		for _, s := range t.Steps {
			results[s.ID] = s
			if called(s) {
				ran++
			}
		}
		g.stepsRun += ran
		g.event(vm.Event{Type: TurnFinished, Message: fmt.Sprintf("turn %d: %s ran, %d rejected, output %v; prompt %d tokens", n, plural(ran, "step"), rejectedStatements(t.Answer, t.Rejected), t.Output, t.PromptTokens)})
		if err == nil {
			err = g.journalFailed()
		}
		if err != nil {
			return g.finish(GoalFailed, nil, err)
		}
		if t.waiting != "" {
			return g.finish(GoalWaiting, nil, errors.New(t.waiting))
		}
		if ctx.Err() != nil {
			return g.finish(GoalCanceled, nil, stopped(ctx))
		}
		info = &turnInfo{goal: g.opts.Goal, facts: g.facts, state: g.state, types: g.types, plan: annotate(items, results)}
		if t.Rejected.HasErrors() {
			info.rejected = report(t.name(), t.Answer, t.Rejected)
		}
		failed, refused := "", false
		if s := firstFailure(t.Steps); s != nil {
			refused = refusedChange(s)
			failed = fmt.Sprintf("Step %s (%s) %s: %s [%s].", s.ID, s.Tool, failedVerb(s), s.Error.Message, s.Error.Code)
		} else if t.Rejection != "" {
			failed = "A person rejected the plan: " + t.Rejection
		}
		switch {
		case failed != "":
			g.replans++
			if g.replans > g.opts.MaxReplanAttempts {
				return g.finish(GoalFailed, nil, fmt.Errorf("%s The goal was replanned %d times, the most allowed (MAX_REPLAN_ATTEMPTS)", failed, g.opts.MaxReplanAttempts))
			}
			info.failure = &failure{what: failed, refused: refused}
			for _, s := range t.Steps {
				if s.Status == vm.StatusCompleted {
					info.failure.completed = append(info.failure.completed, s.ID)
				}
			}
			kind, idle = "replan", 0
		case t.Cut != "" && !t.Output:
			// The statements before the cut ran, or were rejected, as any
			// others: the model goes on from where it was cut.
			info.note = t.cutNote
			if t.Rejected.HasErrors() {
				kind = "repair"
			} else {
				kind = "continue"
			}
			if ran == 0 {
				idle++
			} else {
				idle = 0
			}
		case t.Rejected.HasErrors():
			kind = "repair"
			if ran == 0 {
				idle++
			} else {
				idle = 0
			}
		case t.Output:
			return g.finish(GoalCompleted, t.output, nil)
		case ran == 0:
			info.note = "Your last answer ran no step and gave no output: write the next steps, or the output."
			kind = "repair"
			idle++
		default:
			kind, idle = "continue", 0
		}
		if idle > g.opts.MaxRepairs {
			return g.finish(GoalFailed, nil, fmt.Errorf("%d answers in a row ran nothing", idle))
		}
	}
}

// rejectedStatements counts the statements of an answer that did not
// check: the items its errors fall in, and the lines of those that fall
// in none (text that is no statement).
func rejectedStatements(answer string, diags lang.Diagnostics) int {
	f, _, _ := parseAnswer("answer", answer)
	seen := map[int]bool{}
	for _, d := range diags {
		if d.Severity != lang.SeverityError {
			continue
		}
		key := -d.Span.Start.Line - 1 // by line, for an error in no item
		for i, it := range f.Items {
			if d.Span.Start.Line == 0 {
				break // on the context
			}
			if r := it.Range(); r.Start.Offset <= d.Span.Start.Offset && d.Span.Start.Offset < max(r.End.Offset, r.Start.Offset+1) {
				key = i
				break
			}
		}
		seen[key] = true
	}
	return len(seen)
}

// plural writes a count with its noun: 1 step, 2 steps.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// called reports whether a step called its tool in its turn: it
// completed or failed, and is not a step of an earlier turn written again
// (vm.StepResult.Repeats) nor a change of one, refused.
func called(s *vm.StepResult) bool {
	switch {
	case s.Repeats != nil:
		return false
	case s.Status == vm.StatusCompleted:
		return true
	case s.Status == vm.StatusFailed:
		return !refusedChange(s)
	}
	return false
}

// refusedChange reports whether a step failed as a change of an
// irreversible step that already ran: it was refused, not called.
func refusedChange(s *vm.StepResult) bool {
	return s.Error != nil && s.Error.Code == string(lang.ChangedIrreversible)
}

// failedVerb says how a step failed: "was refused" for a change of an
// irreversible step that already ran, which was not called.
func failedVerb(s *vm.StepResult) string {
	if refusedChange(s) {
		return "was refused"
	}
	return "failed"
}

// firstFailure returns the first step that failed without an error slot
// to catch it.
func firstFailure(steps []*vm.StepResult) *vm.StepResult {
	for _, s := range steps {
		if s.Status == vm.StatusFailed && !s.Handled && s.Error != nil {
			return s
		}
	}
	return nil
}

func (g *goal) finish(status string, output any, err error) *Result {
	res := &Result{Status: status, Output: output, State: g.state, Turns: g.turns, Err: err}
	res.GoalExecution = Summary{
		Goal: g.opts.Goal, Mode: g.opts.Mode, Status: status, Turns: len(g.turns), StepsRun: g.stepsRun,
		Replans: g.replans, Repairs: g.repairs, Facts: g.facts.list(), Form: g.form.form, Fallback: g.form.fallback,
		Tokens:  map[string]llm.Usage{"planner": g.planner.Usage()},
		Elapsed: time.Since(g.start),
	}
	if f, ok := g.opts.Filler.(interface{ Usage() llm.Usage }); ok {
		res.GoalExecution.Tokens["filler"] = f.Usage()
	}
	if g.evaluator != nil {
		res.GoalExecution.Tokens["evaluator"] = g.evaluator.Usage()
	}
	var total llm.Usage
	for _, u := range res.GoalExecution.Tokens {
		total = total.Add(u)
	}
	res.GoalExecution.Tokens["total"] = total
	ev := vm.Event{Type: GoalFinished, Verdict: status}
	if err != nil {
		ev.Reason = err.Error()
	}
	g.event(ev)
	return res
}

// vmOptions are the options of the run of turn n.
func (g *goal) vmOptions(n, remaining int) vm.Options {
	o := vm.Options{Tools: g.opts.Tools, Approver: g.opts.Approver, Observer: g.opts.Observer,
		MaxParallel: g.opts.MaxParallel, StepTimeout: g.opts.StepTimeout, Check: g.opts.Check, Filler: g.opts.Filler}
	o.Check.Limits.MaxSteps = remaining
	if g.evaluator != nil {
		o.Evaluator = &evaluator{model: g.evaluator, goal: g.opts.Goal, facts: g.facts, maxResult: 8000}
	}
	o.History = g.history.Turn(n)
	if g.opts.Journal != nil {
		o = g.opts.Journal.Turn(n, o)
	}
	return o
}

// ask sends the planner request k of turn n.
func (g *goal) ask(ctx context.Context, n, k int, req *llm.Request) (llm.Stream, error) {
	if g.answers != nil {
		g.answers.at(n, k)
	}
	return g.planner.Stream(ctx, req)
}

// waits says why a turn's run waits for a decision, or "".
func waits(res *vm.Result) string {
	if res.Status != vm.RunWaiting {
		return ""
	}
	return res.Error()
}

// settings are the plan settings the agent chooses: a failed step stops
// the turn, letting the running steps finish, and the agent replans.
func (g *goal) settings() []string {
	if g.opts.Mode == Lazy {
		return []string{"mode lazy", "on failure replan"}
	}
	// mode eager makes a plan-level approve, which needs the whole plan,
	// an error rather than a gate eager mode could not keep.
	return []string{"mode eager", "on failure replan"}
}

// request is the planner's request for a turn, in the answer form asked
// for: with the schema of a plan of what the context offers now.
func (g *goal) request(info *turnInfo) *llm.Request {
	g.form.refresh(&g.ctx, g.opts.Check)
	return g.form.request(&llm.Request{System: systemPrompt(g.opts.Mode, 0, 0, g.form.form, g.opts.Check),
		Messages: []llm.Message{{Role: llm.User, Content: contextMessage(&g.ctx, info)}}})
}

// refused reports whether err is the server's refusal of a request's
// schema; the goal then goes on in plan text, and says so.
func (g *goal) refused(err error) bool {
	if !g.form.refused(err) {
		return false
	}
	g.event(vm.Event{Type: FormFallback, Message: g.form.fallback})
	return true
}

// keep records the state after a turn, each slot the turn wrote with the
// type its writer declares (never a type read off its value), and the
// declarations the model made, which later turns keep: each type and
// sub-plan that checks with the context (one that was rejected is not
// kept). info is the check of the turn's prelude and answer when the
// whole answer checked (lazy mode); otherwise the prelude is checked
// again with the steps that ran.
func (g *goal) keep(prelude string, state map[string]any, items []lang.Item, steps []*vm.StepResult, info *compiler.Info) {
	if info == nil {
		info = g.checkRan(prelude, items, steps)
	}
	for k, v := range state {
		g.state[k] = v
		if info == nil || info.Main == nil {
			continue
		}
		if slot := info.Main.Slots[k]; slot != nil && slot.Type != nil && len(slot.Writers)+len(slot.ErrorWriters) > 0 {
			g.types[k] = slot.Type
		}
	}
	for _, it := range items {
		switch it.(type) {
		case *lang.TypeDecl, *lang.PlanDecl:
			decls := g.ctx.Decls
			g.ctx.Decls = append(decls, it)
			f, diags := lang.Parse("context.plan", []byte(g.ctx.prelude(g.state, g.types)))
			if !diags.HasErrors() {
				// The declarations are checked alone: that they make no
				// plan (empty-plan) is no fault of theirs.
				_, cd := compiler.Check(f, g.opts.Check)
				diags = slices.DeleteFunc(cd, func(d *lang.Diagnostic) bool { return d.Code == lang.EmptyPlan })
			}
			if diags.HasErrors() {
				g.ctx.Decls = decls
			}
		}
	}
}

// checkRan checks a turn's prelude with the declarations of its answer and
// the steps of it that ran or were decided (not those rejected), for the
// types of the slots they wrote.
func (g *goal) checkRan(prelude string, items []lang.Item, steps []*vm.StepResult) *compiler.Info {
	pf, diags := lang.Parse("context.plan", []byte(prelude))
	if diags.HasErrors() {
		return nil
	}
	ran := map[string]bool{}
	for _, s := range steps {
		ran[s.ID] = true
	}
	f := &lang.File{Name: pf.Name, InputValues: g.opts.Context.Input, Items: pf.Items}
	for _, it := range items {
		switch d := it.(type) {
		case *lang.TypeDecl, *lang.PlanDecl:
			f.Items = append(f.Items, it)
		case *lang.Step:
			if d.Label != nil && ran[d.Label.Name] {
				f.Items = append(f.Items, it)
			}
		}
	}
	info, _ := compiler.Check(f, g.opts.Check)
	return info
}

// name is the file name of the turn's answer in its diagnostics.
func (t *Turn) name() string { return fmt.Sprintf("turn%d.plan", t.N) }

// eagerTurn streams the planner's answer into an eager run: each step is
// dispatched as soon as it is complete and checked.
func (g *goal) eagerTurn(ctx context.Context, n int, info *turnInfo, remaining int) (*Turn, []lang.Item, error) {
	t := &Turn{N: n}
	req := g.request(info)
	stream, err := g.ask(ctx, n, 0, req)
	if g.refused(err) {
		req = g.request(info)
		stream, err = g.ask(ctx, n, 0, req)
	}
	t.Form = g.form.form
	if err != nil {
		return t, nil, fmt.Errorf("asking the planner: %w", err)
	}
	reader := newAnswerReader(llm.Reader(stream))
	body := bufio.NewReader(reader)
	src := &recordingReader{r: body}
	var js *jsonStatements
	if isJSON, err := startsJSON(body); err != nil && !errors.Is(err, llm.ErrTruncated) {
		stream.Close()
		t.Usage = stream.Usage()
		return t, nil, fmt.Errorf("reading the planner's answer: %w", err)
	} else if isJSON {
		// The JSON form runs call by call, each as the plan text it
		// stands for once its JSON is complete.
		var tools map[string]*compiler.Tool
		if req.Schema != nil {
			tools = g.form.tools
		}
		js = newJSONStatements(t.name(), body, tools)
		src = &recordingReader{r: js}
	}
	prelude := g.ctx.prelude(g.state, g.types, g.settings()...)
	sp := lang.NewStreamParser(t.name(), io.MultiReader(strings.NewReader(prelude), src))
	res, rejected, err := vm.RunStream(ctx, sp, g.opts.Context.Input, g.vmOptions(n, remaining))
	stream.Close()
	t.Usage = stream.Usage()
	t.PromptTokens = promptTokens(t.Usage.Input, req)
	if js != nil {
		rejected = append(rejected, js.finish()...)
	}
	t.Answer = src.text()
	if err != nil {
		return t, nil, fmt.Errorf("running the answer: %w", err)
	}
	rerr := src.error()
	if errors.Is(rerr, llm.ErrTruncated) {
		// The stream parser never saw the end of the text, so the
		// statement being written when the answer was cut, which may
		// lack its option lines, was never complete and did not run.
		t.Cut, rerr = rerr.Error(), nil
		rejected = slices.DeleteFunc(rejected, func(d *lang.Diagnostic) bool {
			return d.Code == lang.ParseError && strings.Contains(d.Message, llm.ErrTruncated.Error())
		})
	}
	if rerr != nil {
		return t, nil, fmt.Errorf("reading the planner's answer: %w", rerr)
	}
	t.Steps, t.waiting = res.Steps, waits(res)
	t.Rejected = shift(rejected, t.name(), len(prelude), strings.Count(prelude, "\n"))
	if d := reader.missed().diagnostic(t.name(), t.Form); d != nil {
		// Nothing of the answer was read: what the run said of it is
		// that it was empty.
		t.Rejected = lang.Diagnostics{d}
	}
	f, _ := lang.Parse(t.name(), []byte(t.Answer))
	labelSteps(lang.Steps(f.Items))
	items := f.Items
	if t.Cut != "" {
		var unfinished string
		if js == nil {
			// In the JSON form the unfinished call never became text.
			items, unfinished = dropUnfinished(items, t.Answer, res.Steps)
		}
		t.cutNote = cutNote(t.Cut, unfinished)
		g.event(vm.Event{Type: AnswerCut, Message: fmt.Sprintf("turn %d: %s; its unfinished last statement did not run", n, t.Cut)})
	}
	for _, it := range items {
		if _, ok := it.(*lang.OutputDecl); ok {
			t.Output = true
		}
	}
	g.keep(prelude, res.State, items, res.Steps, nil)
	t.output = res.Output
	return t, items, nil
}

// dropUnfinished returns the items of an answer cut short without its
// last one, the statement being written when it was cut (unless it is a
// step that ran: a statement ended by ';' is complete), and the text of
// the one dropped.
func dropUnfinished(items []lang.Item, answer string, steps []*vm.StepResult) ([]lang.Item, string) {
	if len(items) == 0 {
		return items, ""
	}
	last := items[len(items)-1]
	if st, ok := last.(*lang.Step); ok && st.Label != nil {
		for _, s := range steps {
			if s.ID == st.Label.Name {
				return items, ""
			}
		}
	}
	r := last.Range()
	text := ""
	if r.Start.Offset >= 0 && r.Start.Offset <= len(answer) {
		text = answer[r.Start.Offset:]
	}
	return items[:len(items)-1], text
}

// cutNote tells the model that its answer was cut short, and where.
func cutNote(why, unfinished string) string {
	note := "Your last answer was cut short (" + why + "): what it finished before the cut ran as the results show, but its last statement was unfinished and did not run"
	if s := strings.TrimSpace(unfinished); s != "" {
		if len(s) > 300 {
			n := 300
			for !utf8.RuneStart(s[n]) {
				n--
			}
			s = s[:n] + "…"
		}
		note += " (it began: " + strings.ReplaceAll(s, "\n", " ") + ")"
	}
	return note + ". Go on from there: write that statement whole and the rest of the plan, briefly (no comments, no prose, short descriptions), or the output."
}

// cutMessage asks again for a whole answer after one cut short, in lazy
// mode and in Generate, where nothing of it was used.
func cutMessage(why string) string {
	return "Your answer was cut short (" + why + ") before the plan was complete, so none of it was used. " +
		"Write the whole plan again, shorter: no comments, no prose, no explanation, short descriptions."
}

// lazyTurn asks for a whole plan, has it repaired until it checks, then
// runs it.
func (g *goal) lazyTurn(ctx context.Context, n int, info *turnInfo, remaining int) (*Turn, []lang.Item, error) {
	t := &Turn{N: n}
	prelude := g.ctx.prelude(g.state, g.types, g.settings()...)
	req := g.request(info)
	for {
		if g.answers != nil {
			g.answers.at(n, t.Repairs)
		}
		text, usage, err := llm.Collect(ctx, g.planner, req)
		if g.refused(err) {
			req.System, req = systemPrompt(g.opts.Mode, 0, 0, g.form.form, g.opts.Check), g.form.request(req)
			text, usage, err = llm.Collect(ctx, g.planner, req)
		}
		if t.Repairs == 0 {
			t.PromptTokens = promptTokens(usage.Input, req)
		}
		t.Usage = t.Usage.Add(usage)
		t.Form = g.form.form
		if errors.Is(err, llm.ErrTruncated) {
			// Nothing of a plan cut short runs: it is asked for again.
			t.Answer, _ = g.form.read(text)
			t.Cut = err.Error()
			g.event(vm.Event{Type: AnswerCut, Message: fmt.Sprintf("turn %d: %s; nothing of it ran", n, t.Cut)})
			if t.Repairs >= g.opts.MaxRepairs {
				return t, nil, fmt.Errorf("the planner's answer was cut short after %d repairs: %w", t.Repairs, err)
			}
			t.Repairs++
			g.repairs++
			req.Messages = append(req.Messages, llm.Message{Role: llm.Assistant, Content: text}, llm.Message{Role: llm.User, Content: cutMessage(t.Cut)})
			continue
		}
		if err != nil {
			return t, nil, fmt.Errorf("asking the planner: %w", err)
		}
		t.Cut = ""
		var missed missedBlocks
		t.Answer, missed = g.form.read(text)
		ch := checkAnswer(strings.TrimSuffix(t.name(), ".plan"), t.Answer, prelude, &g.ctx, g.opts.Check, checkRules{approve: true, maxSteps: remaining})
		ch.noPlan(missed, g.form.form)
		if !ch.diags.HasErrors() {
			prog, err := compiler.Compile(ch.info, ch.diags, compiler.Options{MaxParallel: g.opts.MaxParallel})
			if err != nil {
				return t, nil, fmt.Errorf("compiling the plan: %w", err)
			}
			for _, it := range ch.answer.Items {
				if _, ok := it.(*lang.OutputDecl); ok {
					t.Output = true
				}
			}
			res, err := vm.Run(ctx, prog, g.opts.Context.Input, g.vmOptions(n, remaining))
			if err != nil {
				return t, nil, fmt.Errorf("running the plan: %w", err)
			}
			t.Steps, t.Rejected, t.waiting = res.Steps, nil, waits(res)
			if res.Status == vm.RunRejected {
				t.Rejection = res.Error()
			}
			g.keep(prelude, res.State, ch.answer.Items, res.Steps, ch.info)
			t.output = res.Output
			return t, ch.answer.Items, nil
		}
		t.Rejected = ch.diags
		if t.Repairs >= g.opts.MaxRepairs {
			return t, nil, fmt.Errorf("the plan still has errors after %d repairs:\n%s", t.Repairs, ch.diags)
		}
		t.Repairs++
		g.repairs++
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.Assistant, Content: text},
			llm.Message{Role: llm.User, Content: repairMessage(ch.answer.Name, t.Answer, ch.diags, g.form.form)})
	}
}

// startsJSON reports whether an answer starts, after spaces, with '{' or
// '[': the JSON form.
func startsJSON(r *bufio.Reader) (bool, error) {
	for n := 1; ; n++ {
		b, err := r.Peek(n)
		if len(b) < n {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true, nil
		}
		return false, nil
	}
}

// recordingReader keeps the text it passes on, and the error that ended
// it when it is not the end of the text.
type recordingReader struct {
	r   io.Reader
	mu  sync.Mutex
	buf strings.Builder
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

func (r *recordingReader) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

func (r *recordingReader) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
