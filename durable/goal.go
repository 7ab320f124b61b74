package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	res, err := agent.Run(ctx, o)
	if err != nil {
		return nil, r.failed(err)
	}
	if r.jr != nil {
		if err := r.jr.Finish(&vm.Result{Status: goalStatus(res.Status), Output: res.Output, Err: res.Err}); err != nil {
			return res, err
		}
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
