// Package obtemporal runs Obelisk plans on Temporal: a plan is a workflow,
// each tool call an activity, each approval an update.
//
// The workflow is the engine, not a second implementation of it. Each
// time something new is recorded in its history (an activity's result, a
// decision, a new plan), the workflow runs the plan again with vm.Run, as
// a pure function of what the history holds: a call whose result is
// recorded is answered from it, and a call that is not is noted and left
// waiting (vm.ErrWaiting), so that the engine goes on with the steps that
// do not depend on it. The calls noted are then started as activities, in
// parallel, and their results recorded. Retries, backoff, fallbacks,
// timeouts, `when`, for each, sub-plans, approvals and replans are thus
// the engine's own, decided exactly as in a local run.
//
// A plan and its input are untrusted: the worker checks the plan against
// its own tools (Config.Check) and bounds every step by its own limits;
// nothing a client sends can name a tool the worker did not register, or
// raise a limit.
package obtemporal

import (
	"encoding/json"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/vm"
)

// The names under which the worker registers the workflow, its
// activities, its update and its query.
const (
	WorkflowName   = "obelisk.plan"
	CallActivity   = "obelisk.call"
	ReplanActivity = "obelisk.replan"
	ApproveUpdate  = "obelisk.approve"
	ShowQuery      = "obelisk.show"
	// StatusQuery answers a Status without steps, decisions or output:
	// what following a run needs, in a few hundred bytes however large
	// the run.
	StatusQuery = "obelisk.status"
)

// MaxResultBytes is the largest result a step may have on Temporal, as
// compact JSON: Temporal refuses a payload over 2 MB, so a step's result
// is bounded well below it (Config.MaxOutputBytes may lower the bound,
// never raise it). A larger result fails its step with limit-exceeded.
const MaxResultBytes = 1 << 20

// Plan is a plan as a client sends it: its text (or JSON form) and the
// files it imports. The tools files the client has are not sent: the
// worker's tools decide.
type Plan struct {
	Name    string          `json:"name"`
	Text    string          `json:"text"`
	JSON    bool            `json:"json,omitempty"`
	Imports []planfile.File `json:"imports,omitempty"`
}

// Start is the input of a run's workflow.
type Start struct {
	Plan Plan `json:"plan"`
	// Input is the plan's input, a JSON object; empty takes the input
	// the plan carries.
	Input json.RawMessage `json:"input,omitempty"`
	// ApproveAll approves every approval the run asks for, as `obelisk
	// run --yes` does: the person who starts the run decides.
	ApproveAll bool `json:"approveAll,omitempty"`
}

// Outcome is how a run's workflow ended.
type Outcome struct {
	Status vm.RunStatus `json:"status"`
	// Output is the plan's output, as JSON.
	Output json.RawMessage `json:"output,omitempty"`
	// Error says why the run did not complete; Diagnostics are the
	// checker's findings on a plan that does not check.
	Error       string `json:"error,omitempty"`
	Diagnostics string `json:"diagnostics,omitempty"`
	// Summary counts the steps by outcome, as `obelisk run` prints it.
	Summary Summary `json:"summary"`
	// Failed are the errors of the steps that failed unhandled.
	Failed []*vm.StepError `json:"failed,omitempty"`
}

// Summary counts a run's steps by outcome.
type Summary struct {
	Steps     int `json:"steps"`
	Completed int `json:"completed"`
	Skipped   int `json:"skipped"`
	Failed    int `json:"failed"`
	Handled   int `json:"handled"`
	Retries   int `json:"retries"`
	Replans   int `json:"replans"`
	// Activities counts the tool calls made as activities.
	Activities int `json:"activities"`
}

// Decision is a person's answer to an approval a run waits for.
type Decision struct {
	// Step is the step's ID, or "" for the plan (or the only approval
	// waiting); Round the replanning round (0 before any replan).
	Step    string `json:"step,omitempty"`
	Round   int    `json:"round,omitempty"`
	Approve bool   `json:"approve"`
	By      string `json:"by,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Status is what `show` prints of a run: its state as of the last time
// the workflow ran the plan.
type Status struct {
	ID     string       `json:"id"`
	Status vm.RunStatus `json:"status"`
	Error  string       `json:"error,omitempty"`
	Steps  []StepStatus `json:"steps"`
	// Approvals are the approvals asked for, decided or waiting.
	Approvals []Approval `json:"approvals,omitempty"`
	// Running are the calls running as activities.
	Running []string `json:"running,omitempty"`
	// Replans are the plans of the replans, in order.
	Replans []string `json:"replans,omitempty"`
	Summary Summary  `json:"summary"`
	Output  string   `json:"output,omitempty"`
}

// StepStatus is one step of a run, as `show` prints it: its result is
// shortened to a preview, so that the answer stays small.
type StepStatus struct {
	ID       string        `json:"id"`
	Tool     string        `json:"tool"`
	Status   vm.Status     `json:"status"`
	Round    int           `json:"round,omitempty"`
	Attempts int           `json:"attempts,omitempty"`
	Result   string        `json:"result,omitempty"`
	Error    *vm.StepError `json:"error,omitempty"`
	Handled  bool          `json:"handled,omitempty"`
	Reason   string        `json:"reason,omitempty"`
}

// Approval is an approval a run asked for.
type Approval struct {
	Round   int    `json:"round,omitempty"`
	Step    string `json:"step,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message,omitempty"`
	Args    string `json:"args,omitempty"`
	Decided bool   `json:"decided"`
	// Approved, By and Note are the decision's, once decided.
	Approved bool   `json:"approved,omitempty"`
	By       string `json:"by,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Call is the input of the call activity: one call of a tool.
type Call struct {
	Tool string `json:"tool"`
	// Key, Step, Attempt and Timeout are the call's identity
	// (runtime.CallInfo), which the tool gets in its context.
	Key     string        `json:"key"`
	Run     string        `json:"run"`
	Step    string        `json:"step"`
	Attempt int           `json:"attempt"`
	Timeout time.Duration `json:"timeout"`
	Args    json.RawMessage
	// MaxOutputBytes bounds the result (the worker's bound, if lower).
	MaxOutputBytes int `json:"maxOutputBytes"`
}

// CallResult is what a call returned: its result as JSON, or its error.
// A tool's error is a result, not a failure of the activity: Temporal
// retries an activity only when its worker was lost, and the engine
// decides the step's own retries.
type CallResult struct {
	Value json.RawMessage `json:"value,omitempty"`
	Err   *CallError      `json:"error,omitempty"`
}

// CallError is a tool's error: its code, message, and whether retrying
// can help.
type CallError struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	NotRetryable bool   `json:"notRetryable,omitempty"`
}

// ReplanCall is the input of the replan activity: the state of a run at
// the failure that asks for a new plan.
type ReplanCall struct {
	// Plan is the plan that failed (the plan as started, or the last
	// replan's).
	Plan      Plan             `json:"plan"`
	Attempt   int              `json:"attempt"`
	Completed []*vm.StepResult `json:"completed,omitempty"`
	Failed    *vm.StepResult   `json:"failed,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	State     json.RawMessage  `json:"state,omitempty"`
}
