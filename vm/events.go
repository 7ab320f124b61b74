package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/lang"
)

// EventType is the kind of an Event.
type EventType string

// The events of a run, in the order they can happen.
const (
	PlanStarted       EventType = "plan-started"
	ApprovalRequested EventType = "approval-requested"
	ApprovalDecided   EventType = "approval-decided"
	StepStarted       EventType = "step-started"
	StepRetried       EventType = "step-retried"
	StepCompleted     EventType = "step-completed"
	StepFailed        EventType = "step-failed"
	StepSkipped       EventType = "step-skipped"
	StepVerdict       EventType = "step-verdict"
	// StepRestored: the step finished in an earlier process of the run;
	// its recorded result (Verdict completed) or error (Verdict failed) is
	// taken from the journal and its tool is not called.
	StepRestored EventType = "step-restored"
	// StepWaiting: the step waits for a decision (an approval) that is to
	// be recorded in the journal; the run stops as waiting when nothing
	// else can run.
	StepWaiting EventType = "step-waiting"
	// StepFilled: a model answered for a hole of the step (Message names
	// the argument) or for its task (Tool names the candidate chosen).
	// Verdict accepted: Result is the answer as the run uses it, and the
	// journal keeps it, so that a resumed run does not ask again (Reason
	// is set when the answer was an earlier step's to the same question,
	// and the model was not asked: see History); Verdict rejected: the
	// answer did not fit (Reason says why) and was not used.
	StepFilled EventType = "step-filled"
	// ElementCompleted: an element of a for each returned its result
	// (Step is the step's ID and the element's index, "fetch[2]"). A
	// journaled run records it, so that a resumed run restores the
	// element (StepRestored, with the element's ID) instead of running it
	// again, though the step had not finished.
	ElementCompleted EventType = "element-completed"
	Replanned        EventType = "replanned"
	PlanFinished     EventType = "plan-finished"
)

// Event is one thing that happened in a run.
type Event struct {
	Type EventType `json:"type"`
	// Time is when it happened; Elapsed the time since the run started.
	Time    time.Time     `json:"time"`
	Elapsed time.Duration `json:"elapsedNs"`
	// Step is the step's ID, prefixed by the sub-plan steps that called it
	// ("research#1/search"); Tool the tool it calls.
	Step string `json:"step,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Attempt counts the tool calls of the step so far.
	Attempt int `json:"attempt,omitempty"`
	// Reason says why a step was skipped or a retry happens; Message is a
	// request's text (an approval) or a decision's note.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Error is a failed step's error; Result a completed step's result.
	Error  *StepError `json:"error,omitempty"`
	Result any        `json:"result,omitempty"`
	// Args are the arguments a started step calls its tool with, as
	// evaluated (StepStarted; not for a for each, whose elements each
	// have their own).
	Args map[string]any `json:"args,omitempty"`
	// Verdict is pass, fail, partial, hitl or unjudged for StepVerdict,
	// approved or rejected for ApprovalDecided, completed or failed for
	// StepRestored, and the run's status for PlanFinished.
	Verdict string `json:"verdict,omitempty"`
	// Duration is how long a finished step ran.
	Duration time.Duration `json:"durationNs,omitempty"`
	// Diff shows a replanned plan's steps against the steps it replaces
	// (Replanned).
	Diff string `json:"diff,omitempty"`
}

// Observer receives the events of a run, one at a time, in order.
type Observer func(Event)

// Observers combines observers into one.
func Observers(obs ...Observer) Observer {
	var list []Observer
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return func(e Event) {
		for _, o := range list {
			o(e)
		}
	}
}

// LogEvents logs each event with hclog: step failures as warnings, the
// rest at debug level, the plan's start and end at info level.
func LogEvents(log hclog.Logger) Observer {
	return func(e Event) {
		args := []any{"step", e.Step}
		if e.Tool != "" {
			args = append(args, "tool", e.Tool)
		}
		if e.Attempt > 0 {
			args = append(args, "attempt", e.Attempt)
		}
		if e.Reason != "" {
			args = append(args, "reason", e.Reason)
		}
		if e.Message != "" {
			args = append(args, "message", e.Message)
		}
		if e.Error != nil {
			args = append(args, "error", e.Error.Message, "code", e.Error.Code)
		}
		if e.Verdict != "" {
			args = append(args, "verdict", e.Verdict)
		}
		switch {
		case e.Type == StepFailed || e.Type == StepRetried || e.Type == StepFilled && e.Verdict == FillRejected:
			log.Warn(string(e.Type), args...)
		case e.Type == StepVerdict && e.Verdict == VerdictUnjudged && e.Reason == NoEvaluator:
			// A criterion the plan states goes unchecked: say so.
			log.Warn(string(e.Type), args...)
		case e.Type == PlanStarted || e.Type == PlanFinished || e.Type == Replanned || e.Type == ApprovalRequested || e.Type == ApprovalDecided:
			log.Info(string(e.Type), args[2:]...)
		default:
			if log.IsDebug() {
				log.Debug(string(e.Type), args...)
			}
		}
	}
}

// JSONLEvents writes each event as one line of JSON, with the characters
// a terminal acts on escaped (lang.EscapeControlJSON). Write errors are
// returned by the returned function err.
func JSONLEvents(w io.Writer) (obs Observer, err func() error) {
	var mu sync.Mutex
	var first error
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	obs = func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil {
			return
		}
		buf.Reset()
		werr := enc.Encode(e)
		if werr == nil {
			_, werr = w.Write(lang.EscapeControlJSON(buf.Bytes()))
		}
		if werr != nil {
			first = fmt.Errorf("writing events: %w", werr)
		}
	}
	return obs, func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// Status is the state of a step.
type Status string

// The step statuses.
const (
	StatusPending   Status = "pending"   // not yet reached
	StatusBlocked   Status = "blocked"   // waiting for the steps it reads
	StatusRunning   Status = "running"   // its tool is being called
	StatusCompleted Status = "completed" // its result is written
	StatusFailed    Status = "failed"    // it failed (Handled when its error went to a || slot)
	StatusSkipped   Status = "skipped"   // it did not run; Reason says why
	StatusWaiting   Status = "waiting"   // it waits for a decision another process records
)

// StepError is the error value a failed step writes to the error slot of
// `-> †state.ok || †state.err`.
type StepError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Tool    string `json:"tool"`
	Step    string `json:"step"`
	// final is set when the tool said retrying cannot help.
	final bool
}

// Error returns the message.
func (e *StepError) Error() string { return e.Message }

// Value returns the error as the object a slot holds.
func (e *StepError) Value() map[string]any {
	return map[string]any{"code": e.Code, "message": e.Message, "tool": e.Tool, "step": e.Step}
}

// StepResult is what became of one step.
type StepResult struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status Status `json:"status"`
	// Reason says why a step was skipped, or the policy applied to a
	// failure.
	Reason string `json:"reason,omitempty"`
	// Attempts counts the tool calls made (each element of a for each,
	// each retry, the fallback); Retries the calls that repeated a failed
	// one.
	Attempts int        `json:"attempts,omitempty"`
	Retries  int        `json:"retries,omitempty"`
	Result   any        `json:"result,omitempty"`
	Error    *StepError `json:"error,omitempty"`
	// Handled is set when the error went to the step's || slot.
	Handled bool `json:"handled,omitempty"`
	// Start and Duration are relative to the start of the run.
	Start    time.Duration `json:"startNs"`
	Duration time.Duration `json:"durationNs"`
	Verdicts []Verdict     `json:"verdicts,omitempty"`
	// Round is the replanning round the step ran in (0 for the first).
	Round int `json:"round,omitempty"`
	// Repeats is set on a step that is the same call as a step of an
	// earlier turn or round that already ran (see History): that step.
	// Its outcome is that step's, and its tool was not called again.
	Repeats *StepRef `json:"repeats,omitempty"`
}

// Verdict is the judgement of one success criterion of a step.
type Verdict struct {
	Criterion string `json:"criterion"`
	// Verdict is pass, fail, partial, hitl (a person must judge) or
	// unjudged (no evaluator was configured).
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// RunStatus is how a run ended.
type RunStatus string

// The run statuses.
const (
	RunCompleted RunStatus = "completed" // every step completed or was skipped by the plan's own logic
	RunPartial   RunStatus = "partial"   // steps failed, and the policy let the rest run
	RunFailed    RunStatus = "failed"    // a step failed and the policy stopped the run
	RunCanceled  RunStatus = "canceled"  // the context was canceled
	RunRejected  RunStatus = "rejected"  // the plan was not approved
	RunWaiting   RunStatus = "waiting"   // an approval gate waits for a decision; the run resumes from its journal
)

// Result is the outcome of a run.
type Result struct {
	Status RunStatus `json:"status"`
	// Output is the plan's output: its output expression, or its final
	// state when it has none.
	Output any            `json:"output"`
	State  map[string]any `json:"state"`
	// Steps holds every step that ran or was decided, in the order of
	// the plans they belong to (earlier replanning rounds first).
	Steps   []*StepResult `json:"steps"`
	Replans int           `json:"replans"`
	// Makespan is the run's duration (virtual time in a dry run);
	// CriticalPath the static estimate of its shortest possible duration.
	Makespan     time.Duration `json:"makespanNs"`
	CriticalPath time.Duration `json:"criticalPathNs"`
	// Counts of steps by outcome (Handled: failed with the error written
	// to a || slot), and of retries.
	Completed, Failed, Handled, Skipped, Retries int
	// Unjudged counts the criteria in words (`expect "…"`) that no
	// evaluator judged, since the run had none.
	Unjudged int
	// Err says why the run did not complete, or is nil.
	Err error `json:"-"`
}

// Error returns the reason the run did not complete, for JSON.
func (r *Result) Error() string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Error()
}
