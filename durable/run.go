package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// Settings are what a run records to be resumed with: the limits it was
// started with, its approval policy, and what its caller needs to build
// its tools again.
type Settings struct {
	MaxParallel    int           `json:"maxParallel,omitempty"`
	StepTimeout    time.Duration `json:"stepTimeout,omitempty"`
	RunTimeout     time.Duration `json:"runTimeout,omitempty"`
	MaxOutputBytes int           `json:"maxOutputBytes,omitempty"`
	// MaxCost bounds the cost of one CEL expression (journaled under
	// its earlier name, costLimit, which journals already hold).
	MaxCost uint64 `json:"costLimit,omitempty"`
	// Limits bound the plans the run checks after it started: replans,
	// edited plans, the statements of a stream.
	Limits compiler.Limits `json:"limits,omitzero"`
	// Approval says what becomes of an approval nobody decides.
	Approval ApprovalPolicy `json:"approval"`
	// Stream is set by Create for a plan that arrives as a stream: its
	// text is in the journal, not in its source.
	Stream bool `json:"stream,omitempty"`
	// Goal, for the run of a goal a model pursues, is the goal (see
	// Run.Pursue).
	Goal *GoalSpec `json:"goal,omitempty"`
	// Caller is the caller's own record of what it needs to build the
	// run's tools again (its mocks, directories, servers): a JSON value
	// kept as it is and given back by Resume (see Run.Caller). It holds
	// no grants and no secrets: those are the resuming program's.
	Caller json.RawMessage `json:"caller,omitempty"`
	// Origin says who made the run; nil for a run recorded before runs
	// recorded it.
	Origin *Origin `json:"origin,omitempty"`
}

// What made a run (Origin.By).
const (
	// ByCLI is the obelisk command (run, apply, agent).
	ByCLI = "cli"
	// ByMCPServer is an MCP server (package mcpserver).
	ByMCPServer = "mcp-server"
)

// Origin says who made a run: the obelisk command, or a server instance
// of a name and grants. A server acts only on the runs of its own origin
// (see package mcpserver); what acts for the operator (obelisk approve,
// resume, the console) acts on every run, whatever its origin.
type Origin struct {
	// By is what made the run: ByCLI or ByMCPServer.
	By string `json:"by"`
	// Name is the name the operator gave the server instance, or "".
	Name string `json:"name,omitempty"`
	// Grants is a fingerprint of what the server's runs may do: its
	// tools, the permission grants and servers behind them, and its
	// approval policy. Equal grants give equal fingerprints.
	Grants string `json:"grants,omitempty"`
}

// decodeSettings reads recorded settings. A run recorded before the
// settings had Caller kept the caller's fields beside the others: the
// whole object is then the caller's.
func decodeSettings(raw []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, err
	}
	if s.Caller == nil {
		s.Caller = json.RawMessage(raw)
	}
	return s, olderGoal(&s, raw)
}

// Run is one run of a plan: journaled (Store.Create, Store.Resume) or not
// (Transient). Execute runs it once.
type Run struct {
	// ID names the run: in the journal, and in the idempotency key of
	// each of its tool calls.
	ID string

	plan     *Plan
	settings Settings
	// store and jr are the journal and the run's record; nil for a run
	// without one.
	store *Store
	jr    *journal.Run
	// resumed is the status the run had when it was resumed, "" for a
	// new run.
	resumed vm.RunStatus
	// text is the text of a streamed plan as ExecuteStream read it.
	text *lockedBuffer
}

// Create records a new run of a plan and makes this process its owner.
// id names it; "" gives it a random name.
func (s *Store) Create(p *Plan, id string, set Settings) (*Run, error) {
	set.Stream = p.Program == nil && set.Goal == nil
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("recording the settings: %w", err)
	}
	jr, err := s.db.Create(journal.NewRun{ID: id, Source: p.Source, Input: p.Input, Settings: b, Hash: p.Hash})
	if err != nil {
		return nil, err
	}
	return &Run{ID: jr.ID, plan: p, settings: set, store: s, jr: jr}, nil
}

// Transient returns a run of a plan that is not journaled: it cannot be
// resumed, and an approval gate with nobody to ask rejects. It has an ID
// of its own all the same, which makes the idempotency keys of its tool
// calls differ from every other run's.
func Transient(p *Plan, set Settings) *Run {
	set.Stream = p.Program == nil && set.Goal == nil
	return &Run{ID: vm.NewRunID(), plan: p, settings: set}
}

// StartOptions say where a new run is journaled (see Start).
type StartOptions struct {
	// Dir is the state directory whose journal records the run; it and
	// the journal are created if needed.
	Dir string
	// NoJournal runs the run without a journal (see Transient): Dir is
	// not opened.
	NoJournal bool
	// ID names the run; "" gives it a random name.
	ID string
	// Options configure the journal.
	Options Options
}

// Start makes a new run of a plan: recorded in the journal of the state
// directory o.Dir, whose Store it returns for the caller to close once
// the run is done with, or not journaled with o.NoJournal, when the Store
// is nil.
func Start(p *Plan, set Settings, o StartOptions) (*Run, *Store, error) {
	if o.NoJournal {
		return Transient(p, set), nil, nil
	}
	st, err := Open(o.Dir, o.Options)
	if err != nil {
		return nil, nil, err
	}
	r, err := st.Create(p, o.ID, set)
	if err != nil {
		return nil, nil, errors.Join(err, st.Close())
	}
	return r, st, nil
}

// Caller decodes into v what the run's caller recorded of its tools
// (Settings.Caller). A record that does not decode cannot be resumed: the
// run is recorded as failed, and the error says why.
func (r *Run) Caller(v any) error {
	if err := json.Unmarshal(r.settings.Caller, v); err != nil {
		err = fmt.Errorf("run %s: the recorded settings: %w", r.ID, err)
		r.Fail(err)
		return err
	}
	return nil
}

// Resume takes over a run that stopped (it waits for a decision, was
// canceled, or its process died), making this process its owner, and
// builds its program again from the journal. A run another live process
// owns is refused with a *BusyError unless force is set, and a run
// that has ended with a *FinishedError. A recorded plan that no
// longer compiles fails the run, with a *CompileError.
func (s *Store) Resume(id string, force bool) (*Run, error) {
	jr, st, err := s.db.Resume(id, force)
	if err != nil {
		return nil, err
	}
	return s.taken(id, jr, st)
}

// taken is the run id once this process has taken it over.
func (s *Store) taken(id string, jr *journal.Run, st *Stored) (*Run, error) {
	var err error
	r := &Run{ID: id, store: s, jr: jr, resumed: st.Status}
	if r.settings, err = decodeSettings(st.Settings); err != nil {
		err = fmt.Errorf("run %s: the recorded settings: %w", id, err)
		r.Fail(err)
		return nil, err
	}
	r.plan = &Plan{Source: st.Source, Input: st.Input, Hash: st.Hash}
	if r.settings.Stream || r.settings.Goal != nil {
		return r, nil // its text is read again by ExecuteStream, or Pursue
	}
	prog, diags, err := st.Source.Compile()
	if err != nil {
		err = &CompileError{Run: id, Source: st.Source, Diagnostics: diags, Err: err}
		r.Fail(err)
		return nil, err
	}
	r.plan.Program = prog
	return r, nil
}

// CompileError is returned by Resume for a run whose recorded plan does
// not compile (it was recorded by another version): the run is recorded
// as failed.
type CompileError struct {
	Run         string
	Source      *planfile.Source
	Diagnostics lang.Diagnostics
	Err         error
}

// Error says so.
func (e *CompileError) Error() string {
	return fmt.Sprintf("run %s: the recorded plan does not compile: %v", e.Run, e.Err)
}

// Unwrap returns the compiler's error.
func (e *CompileError) Unwrap() error { return e.Err }

// Plan returns what the run runs.
func (r *Run) Plan() *Plan { return r.plan }

// Settings returns what the run was started with.
func (r *Run) Settings() Settings { return r.settings }

// Streamed reports whether the run's plan arrives as a stream: it is run
// by ExecuteStream.
func (r *Run) Streamed() bool { return r.settings.Stream }

// Journaled reports whether the run has a journal.
func (r *Run) Journaled() bool { return r.jr != nil }

// Resumed returns the status the run had when Resume took it over
// (running when its process died), or "" for a new run.
func (r *Run) Resumed() vm.RunStatus { return r.resumed }

// Leave gives up a run without running it, to be resumed later, for
// instance once its tools may run: it stays waiting if it was waiting, and
// is recorded as canceled, with why, otherwise. A run without a journal
// has nothing to record.
func (r *Run) Leave(why error) error {
	if r.jr == nil {
		return nil
	}
	if r.resumed == vm.RunWaiting {
		return r.jr.Finish(&vm.Result{Status: vm.RunWaiting})
	}
	return r.jr.Finish(&vm.Result{Status: vm.RunCanceled, Err: why})
}

// Fail records the run as failed without running it: it cannot be run.
func (r *Run) Fail(why error) error {
	if r.jr == nil {
		return nil
	}
	return r.jr.Finish(&vm.Result{Status: vm.RunFailed, Err: why})
}

// ExecOptions are what a run is executed with besides what it records:
// the tools and the people and programs it asks.
type ExecOptions struct {
	// Tools calls the plan's tools.
	Tools vm.Caller
	// Approver decides approvals as they come (a person at a terminal,
	// a policy). Without one, a journaled run waits at an approval gate:
	// Execute returns a result of status waiting, the decision is
	// recorded by any process (Store.Decide), and the run is resumed. A
	// run without a journal rejects the gate instead.
	Approver vm.Approver
	// Observer hears the run's events, each once the journal holds it.
	Observer vm.Observer
	// Replanner and Evaluator are given to the interpreter: see
	// vm.Options. A journaled run records the replanner's plans and
	// replays them when it is resumed.
	Replanner vm.Replanner
	Evaluator vm.Evaluator
	// RunTimeout, when positive, bounds this execution instead of the
	// settings' RunTimeout.
	RunTimeout time.Duration
	// Mocks are the mocks among the tools, if any: a journaled run
	// records where their sequences are, and a resumed run goes on from
	// there instead of starting them again.
	Mocks *toolkit.Mocks
	// Filler completes the plan's holes and tasks, and MaxFills bounds
	// how often it is asked (see vm.Options). A journaled run records
	// each answer, and a resumed run takes it instead of asking again.
	Filler   vm.Filler
	MaxFills int
}

// Execute runs the run until it ends or waits, and records how it went.
// A journaled run restores the steps that finished before (their tools
// are not called again) and records every event as it happens. The error
// is for a run that could not start (its input does not fit the plan) or
// whose end could not be recorded; a run that fails returns a result of
// status failed.
func (r *Run) Execute(ctx context.Context, o ExecOptions) (*vm.Result, error) {
	switch {
	case r.settings.Goal != nil:
		return nil, errors.New("the run is a goal's: pursue it with Pursue")
	case r.settings.Stream:
		return nil, errors.New("the run's plan arrives as a stream: run it with ExecuteStream")
	}
	opts, err := r.options(o)
	if err != nil {
		return nil, err
	}
	opts.Check = r.plan.check(r.settings.Limits)
	ctx, stop := r.watch(ctx)
	res, err := vm.Run(ctx, r.plan.Program, r.plan.Input, opts)
	return r.finish(res, err, stop())
}

// options are the interpreter's options of an execution.
func (r *Run) options(o ExecOptions) (vm.Options, error) {
	set := r.settings
	opts := vm.Options{
		Tools: o.Tools, Observer: o.Observer, Replanner: o.Replanner, Evaluator: o.Evaluator,
		MaxParallel: set.MaxParallel, StepTimeout: set.StepTimeout, RunTimeout: set.RunTimeout,
		MaxOutputBytes: set.MaxOutputBytes, MaxCost: set.MaxCost, RunID: r.ID,
		Filler: o.Filler, MaxFills: o.MaxFills,
	}
	if o.RunTimeout > 0 {
		opts.RunTimeout = o.RunTimeout
	}
	approver := o.Approver
	if r.plan.Hash != "" {
		approver = planApproved{next: approver, note: "approved as planfile " + r.plan.Hash, waits: r.jr != nil}
	}
	opts.Approver = approver
	if r.jr == nil {
		return opts, nil
	}
	if o.Mocks != nil {
		calls, err := r.jr.MockCalls()
		if err != nil {
			return opts, err
		}
		o.Mocks.SetCalls(calls)
		o.Mocks.OnAnswer(r.jr.RecordMockCall)
	}
	opts.Journal, opts.Restore, opts.RestoreFill = r.jr, r.jr.Restore, r.jr.RestoreFill
	opts.Approver = r.jr.Approver(approver, set.Approval)
	if rp := r.jr.Replanner(opts.Replanner); rp != nil {
		opts.Replanner = rp
	}
	return opts, nil
}

// finish records how an execution went; req is the request to cancel the
// run that stopped it, if any.
func (r *Run) finish(res *vm.Result, err error, req *CancelRequest) (*vm.Result, error) {
	if err != nil {
		if r.jr != nil {
			err = errors.Join(err, r.jr.Finish(&vm.Result{Status: vm.RunFailed, Err: err}))
		}
		return nil, err
	}
	if r.jr != nil {
		err := r.jr.Finish(res)
		if oe := (*journal.OutputError)(nil); errors.As(err, &oe) {
			// Recorded as failed: the result says so too.
			res.Status, res.Err, res.Output = vm.RunFailed, err, nil
			return res, nil
		}
		if err != nil {
			return res, err
		}
	}
	return res, r.aborted(res, req)
}

// Pending returns the approvals the run waits for; none for a run without
// a journal.
func (r *Run) Pending() ([]*Approval, error) {
	if r.jr == nil {
		return nil, nil
	}
	return r.store.db.Pending(r.ID)
}

// planApproved grants the plan-level approval of a plan applied from a
// planfile, and asks next for the rest. Without next, the rest waits for
// a decision (vm.ErrWaiting) when waits is set, and is rejected
// otherwise.
type planApproved struct {
	next  vm.Approver
	note  string
	waits bool
}

func (p planApproved) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	if req.Step == "" && req.Round == 0 {
		return vm.Decision{Approved: true, Note: p.note}, nil
	}
	if p.next == nil && p.waits {
		return vm.Decision{}, vm.ErrWaiting
	}
	if p.next == nil {
		return vm.Decision{}, errNoApprover
	}
	return p.next.Approve(ctx, req)
}
