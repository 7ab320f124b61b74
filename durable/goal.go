package durable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// GoalSpec is a goal a model pursues turn by turn (see package vm/agent),
// as a run records it: the goal in words, and the loop's mode and limits.
// A goal's run is created from a Plan whose Source holds what its
// checking reads (the context document as its text, the tools files) and
// whose Input is the goal's input; Settings.Goal is its spec.
type GoalSpec struct {
	Goal              string `json:"goal"`
	Mode              string `json:"mode,omitempty"`
	Form              string `json:"form,omitempty"`
	MaxGoalSteps      int    `json:"maxGoalSteps,omitempty"`
	MaxReplanAttempts int    `json:"maxReplanAttempts,omitempty"`
	MaxRepairs        int    `json:"maxRepairs,omitempty"`
	GoalContext
}

// GoalContext is what a goal's run records to build its context and its
// models again when it is resumed: which tools files' tools are offered
// to the model, whether the built-in tools are, the input given over the
// context document's, whether an evaluator judges, and the models it
// began with. The models' address and key are not among them: a resumed
// goal takes them from the program that resumes it.
type GoalContext struct {
	ToolFiles []string       `json:"toolFiles,omitempty"`
	Builtins  bool           `json:"builtins,omitempty"`
	Input     map[string]any `json:"input,omitempty"`
	Evaluate  bool           `json:"evaluate,omitempty"`
	Models    GoalModels     `json:"models"`
}

// Context builds a goal's context and the checker's configuration from
// the source its run records: the context document's tools, types,
// input, state and plan; the tools offered to the model (toolset.Offered
// makes them of the source's tools files), which the checker knows too;
// the built-in tools, offered as well when Builtins is set or no other
// tool is; and Input over the document's.
func (gc GoalContext) Context(ps *planfile.Source, offered, builtins []*lang.ToolDecl) (agent.Context, compiler.Config, lang.Diagnostics) {
	var c agent.Context
	cfg, diags := ps.Config()
	cfg.Imports = compiler.ImportDir(ps.ImportRoot())
	c.Hints = cfg.Hints
	if ps.Text != "" {
		f, d := ps.Parse()
		diags = append(diags, d...)
		c = agent.ContextOf(f)
	}
	if diags.HasErrors() {
		return c, cfg, diags
	}
	c.Tools = append(c.Tools, offered...)
	cfg.Tools = append(cfg.Tools, c.Tools...)
	if len(c.Tools) == 0 || gc.Builtins {
		c.Tools = append(c.Tools, builtins...)
	}
	if gc.Input != nil {
		if c.Input == nil {
			c.Input = map[string]any{}
		}
		maps.Copy(c.Input, gc.Input)
	}
	return c, cfg, diags
}

// GoalModels are the models a goal began with.
type GoalModels struct {
	Provider  string        `json:"provider,omitempty"`
	Model     string        `json:"model,omitempty"`
	EvalModel string        `json:"evalModel,omitempty"`
	MaxTokens int           `json:"maxTokens,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
}

// ModelsOf returns the models of settings, as a goal records them.
func ModelsOf(s llm.Settings) GoalModels {
	return GoalModels{Provider: s.Provider, Model: s.Model, EvalModel: s.EvalModel, MaxTokens: s.MaxTokens, Timeout: s.Timeout}
}

// Under returns s with the goal's provider, models and answer bound where
// s names none: a resumed goal keeps the models it began with unless the
// program that resumes it names others.
func (m GoalModels) Under(s llm.Settings) llm.Settings {
	s.Provider = cmp.Or(s.Provider, m.Provider)
	s.Model = cmp.Or(s.Model, m.Model)
	s.EvalModel = cmp.Or(s.EvalModel, m.EvalModel)
	s.MaxTokens = cmp.Or(s.MaxTokens, m.MaxTokens)
	return s
}

// olderGoal reads the context of a goal recorded before its spec held it:
// then its caller's settings did, beside the caller's own fields.
func olderGoal(set *Settings, raw []byte) error {
	var probe struct {
		Goal struct {
			Models json.RawMessage `json:"models"`
		} `json:"goal"`
	}
	if set.Goal == nil || json.Unmarshal(raw, &probe) != nil || probe.Goal.Models != nil || len(set.Caller) == 0 {
		return nil
	}
	return json.Unmarshal(set.Caller, &set.Goal.GoalContext)
}

// Goal returns the run's goal, or nil for the run of a plan.
func (r *Run) Goal() *GoalSpec { return r.settings.Goal }

// Pursue pursues a goal run: o holds what the caller gives (the models,
// the context, the checker's configuration, the tools, the approver and
// the observer), and the run gives the goal, its mode and limits. mocks
// are the mocks among the tools, if any (see ExecOptions.Mocks).
//
// A journaled goal records the planner's answers as they arrive, the
// facts, and each turn's steps and decisions. Resumed after its process
// stopped or died, it replays them: the planner is not asked again for an
// answer it gave, a step that finished is not run again, and an approval
// or a person's judgment of a result (a hitl verdict) recorded since is
// taken. Without an approver, a journaled goal waits at a gate or a hitl
// verdict: it ends with status agent.GoalWaiting, and its run is saved as
// waiting for a decision (Store.Decide), then resumed.
func (r *Run) Pursue(ctx context.Context, o agent.Options, mocks *toolkit.Mocks) (*agent.Result, error) {
	spec := r.settings.Goal
	if spec == nil {
		return nil, errors.New("the run is a plan's, not a goal's: run it with Execute")
	}
	set := r.settings
	o.Goal, o.Mode, o.Form = spec.Goal, spec.Mode, spec.Form
	o.MaxGoalSteps, o.MaxReplanAttempts, o.MaxRepairs = spec.MaxGoalSteps, spec.MaxReplanAttempts, spec.MaxRepairs
	o.MaxParallel, o.StepTimeout = set.MaxParallel, set.StepTimeout
	if o.RunTimeout <= 0 {
		o.RunTimeout = set.RunTimeout
	}
	if r.jr != nil {
		if mocks != nil {
			calls, err := r.jr.MockCalls()
			if err != nil {
				return nil, r.failed(err)
			}
			mocks.SetCalls(calls)
			mocks.OnAnswer(r.jr.RecordMockCall)
		}
		o.Journal = &goalJournal{run: r}
	}
	ctx, stop := r.watch(ctx)
	res, err := agent.Run(ctx, o)
	req := stop()
	if err != nil {
		return nil, r.failed(err)
	}
	if r.jr != nil {
		vres := &vm.Result{Status: goalStatus(res.Status), Output: res.Output, Err: res.Err}
		if err := r.jr.Finish(vres); err != nil {
			return res, err
		}
		if err := r.aborted(vres, req); err != nil || vres.Status != RunAborted {
			return res, err
		}
		res.Status, res.Err = string(RunAborted), vres.Err
	}
	return res, nil
}

// goalStatus is the run status of a goal's status.
func goalStatus(s string) vm.RunStatus {
	switch s {
	case agent.GoalCompleted:
		return vm.RunCompleted
	case agent.GoalWaiting:
		return vm.RunWaiting
	case agent.GoalCanceled:
		return vm.RunCanceled
	}
	return vm.RunFailed
}

// goalJournal keeps a goal in its run's journal (see agent.Journal).
type goalJournal struct{ run *Run }

func answerName(turn, k int) string { return fmt.Sprintf("answer %d.%d", turn, k) }

func (g *goalJournal) Answer(turn, k int) (string, bool, llm.Usage, bool, error) {
	text, whole, meta, found, err := g.run.jr.Text(answerName(turn, k))
	var usage llm.Usage
	if err == nil && len(meta) > 0 {
		err = json.Unmarshal(meta, &usage)
	}
	return string(text), whole, usage, found, err
}

func (g *goalJournal) AppendAnswer(turn, k int, piece string) error {
	return g.run.jr.AppendText(answerName(turn, k), []byte(piece))
}

func (g *goalJournal) EndAnswer(turn, k int, usage llm.Usage) error {
	meta, err := json.Marshal(usage)
	if err != nil {
		return err
	}
	return g.run.jr.EndText(answerName(turn, k), meta)
}

func (g *goalJournal) Facts() ([]agent.Fact, error) {
	facts, err := g.run.jr.Facts()
	out := make([]agent.Fact, len(facts))
	for i, f := range facts {
		out[i] = agent.Fact{Key: f.Key, Value: f.Value, Step: f.Step}
	}
	return out, err
}

func (g *goalJournal) RecordFact(f agent.Fact) error {
	return g.run.jr.RecordFact(journal.Fact{Key: f.Key, Value: f.Value, Step: f.Step})
}

func (g *goalJournal) Record(ev vm.Event) error { return g.run.jr.Record(ev, nil) }

// Turn journals the run of turn n: its steps are recorded, restored and
// approved under round n, and its tool calls' idempotency keys name the
// turn, since two turns may have steps of the same name.
func (g *goalJournal) Turn(n int, opts vm.Options) vm.Options {
	jr := g.run.jr
	jr.Turn(n)
	opts.RunID = fmt.Sprintf("%s/%d", g.run.ID, n)
	opts.Journal = turnRecorder{jr: jr, turn: n}
	opts.Restore = func(_ int, step string) (*vm.StepResult, bool) { return jr.Restore(n, step) }
	opts.RestoreFill = func(_ int, step, argument string) (any, bool) { return jr.RestoreFill(n, step, argument) }
	approver := jr.Approver(opts.Approver, g.run.settings.Approval)
	opts.Approver = vm.ApproverFunc(func(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
		req.Round = n
		return approver.Approve(ctx, req)
	})
	return opts
}

// turnRecorder records the events of a turn's run, its steps under the
// turn's round.
type turnRecorder struct {
	jr   *journal.Run
	turn int
}

func (t turnRecorder) Record(ev vm.Event, step *vm.StepResult) error {
	if step != nil {
		s := *step
		s.Round = t.turn
		step = &s
	}
	return t.jr.Record(ev, step)
}
