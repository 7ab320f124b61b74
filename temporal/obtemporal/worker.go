package obtemporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// Config is the operator's configuration of a worker: every authority a
// run has comes from it. All the workers of a task queue must have the
// same tools, limits and check configuration, since each of them may run
// any part of a run's workflow.
type Config struct {
	// Tools calls the tools (a *toolkit.Registry, a toolkit.Chain with
	// mocks); Check holds their signatures, which a plan is checked
	// against, the checker's limits and strictness. Check.Imports is not
	// used: a plan's imports come with it.
	Tools vm.Caller
	Check compiler.Config
	// Has reports whether Tools has a tool; when set, a plan that calls
	// a tool it has not is refused before any step runs, with its name.
	Has func(name string) bool
	// StepTimeout bounds each tool call (default 60s); a step's own
	// timeout may only lower it. It is the activity's time limit.
	StepTimeout time.Duration
	// RunTimeout bounds a whole run, from the start of its workflow,
	// waits for approvals included; 0 sets no bound.
	RunTimeout time.Duration
	// MaxOutputBytes bounds a step's result (default and most:
	// MaxResultBytes).
	MaxOutputBytes int
	// MaxParallel bounds the calls of a run running at once (default 8).
	MaxParallel int
	// MaxCost bounds the cost of one CEL expression (default 1,000,000).
	MaxCost uint64
	// Replanner makes new plans for `on failure replan`, in an
	// activity; without one such a failure fails the run.
	Replanner vm.Replanner
	// HeartbeatTimeout is how soon a call whose worker was lost is
	// started again on another worker (default 10s); LostAttempts how
	// many times a call is started in all when its workers are lost
	// (default 5). A tool's own errors are not retried by Temporal but by
	// the step's retry policy.
	HeartbeatTimeout time.Duration
	LostAttempts     int
}

func (c *Config) defaults() {
	if c.StepTimeout <= 0 {
		c.StepTimeout = 60 * time.Second
	}
	if c.MaxOutputBytes <= 0 || c.MaxOutputBytes > MaxResultBytes {
		c.MaxOutputBytes = MaxResultBytes
	}
	if c.MaxParallel <= 0 {
		c.MaxParallel = 8
	}
	if c.MaxCost == 0 {
		c.MaxCost = 1_000_000
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 10 * time.Second
	}
	if c.LostAttempts <= 0 {
		c.LostAttempts = 5
	}
}

// Register registers the workflow and its activities with a worker.
func Register(w worker.Registry, cfg Config) error {
	if cfg.Tools == nil {
		return errors.New("a worker needs tools: set Config.Tools")
	}
	c := RegisterWorkflow(w, cfg)
	a := &activities{cfg: c}
	w.RegisterActivityWithOptions(a.call, activity.RegisterOptions{Name: CallActivity})
	w.RegisterActivityWithOptions(a.replan, activity.RegisterOptions{Name: ReplanActivity})
	return nil
}

// RegisterWorkflow registers the workflow alone, as a replayer
// (worker.WorkflowReplayer) needs it. It returns the configuration with
// its defaults.
func RegisterWorkflow(w worker.WorkflowRegistry, cfg Config) *Config {
	cfg.defaults()
	c := &cfg
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, s Start) (*Outcome, error) {
		return runWorkflow(ctx, c, s)
	}, workflow.RegisterOptions{Name: WorkflowName})
	return c
}

// NewWorker returns a worker of a task queue that runs plans with the
// configuration's tools; Run or Start it. opts may be zero.
func NewWorker(c client.Client, taskQueue string, cfg Config, opts worker.Options) (worker.Worker, error) {
	if opts.DeadlockDetectionTimeout == 0 {
		// Each time the workflow runs the plan again it computes for
		// as long as the plan is big: allow a big plan the time.
		opts.DeadlockDetectionTimeout = 30 * time.Second
	}
	w := worker.New(c, taskQueue, opts)
	if err := Register(w, cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// activities are the activities of a worker.
type activities struct {
	cfg *Config
}

// call calls a tool, with the call's identity in its context and the
// worker's bounds: its time limit and the size of its result are the
// lower of the call's and the worker's, whatever the workflow asks.
func (a *activities) call(ctx context.Context, c Call) (*CallResult, error) {
	timeout := a.cfg.StepTimeout
	if c.Timeout > 0 && c.Timeout < timeout {
		timeout = c.Timeout
	}
	maxOut := a.cfg.MaxOutputBytes
	if c.MaxOutputBytes > 0 && c.MaxOutputBytes < maxOut {
		maxOut = c.MaxOutputBytes
	}
	var args map[string]any
	if len(c.Args) > 0 {
		v, err := toolkit.DecodeJSON(c.Args)
		if err != nil {
			return &CallResult{Err: &CallError{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("the arguments of %s: %v", c.Step, err), NotRetryable: true}}, nil
		}
		args, _ = v.(map[string]any)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tctx = toolkit.WithCallInfo(tctx, toolkit.CallInfo{Run: c.Run, Step: c.Step, Tool: c.Tool, Attempt: c.Attempt, Key: c.Key, Timeout: timeout})
	// Heartbeats tell Temporal the worker is alive, so that a call
	// whose worker is lost is started again on another soon.
	stop := make(chan struct{})
	defer close(stop)
	if activity.IsActivity(ctx) {
		go func() {
			t := time.NewTicker(max(a.cfg.HeartbeatTimeout/3, 10*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					activity.RecordHeartbeat(ctx)
				}
			}
		}()
	}
	v, err := callTool(tctx, a.cfg.Tools, c.Tool, args)
	if err != nil {
		if ctx.Err() != nil && tctx.Err() != nil && !errors.Is(tctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // the activity was canceled: the workflow is gone
		}
		ce := &CallError{Code: toolkit.CodeToolError, Message: err.Error()}
		var re *toolkit.Error
		switch {
		case errors.As(err, &re):
			ce.Code, ce.Message, ce.NotRetryable = re.Code, re.Message, re.NotRetryable
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			ce.Code, ce.Message = toolkit.CodeTimeout, fmt.Sprintf("%s did not return within %s", c.Tool, timeout)
		}
		return &CallResult{Err: ce}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return &CallResult{Err: &CallError{Code: toolkit.CodeInvalidOutput, NotRetryable: true,
			Message: fmt.Sprintf("the result of %s cannot be written as JSON (%v): the tool must return JSON values", c.Step, err)}}, nil
	}
	if len(b) > maxOut {
		return &CallResult{Err: &CallError{Code: toolkit.CodeLimitExceeded, NotRetryable: true,
			Message: fmt.Sprintf("the result of %s is larger than the limit of %d bytes (%d): a run on Temporal keeps each result in its history; ask the tool for less, or keep large values outside the run (a file, a store) and pass their names", c.Step, maxOut, len(b))}}, nil
	}
	return &CallResult{Value: b}, nil
}

// callTool calls a tool; a panic is its error.
func callTool(ctx context.Context, tools vm.Caller, name string, args map[string]any) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &toolkit.Error{Code: toolkit.CodePanic, Message: fmt.Sprintf("%s panicked: %v", name, p)}
		}
	}()
	return tools.Call(ctx, name, args)
}

// replan asks the worker's replanner for a new plan, and returns its
// text.
func (a *activities) replan(ctx context.Context, rc ReplanCall) (string, error) {
	if a.cfg.Replanner == nil {
		return "", errors.New("this worker has no replanner")
	}
	prog, _, err := compilePlan(a.cfg, rc.Plan)
	if err != nil {
		return "", err
	}
	var state map[string]any
	if len(rc.State) > 0 {
		v, err := toolkit.DecodeJSON(rc.State)
		if err != nil {
			return "", fmt.Errorf("the state: %w", err)
		}
		state, _ = v.(map[string]any)
	}
	f, err := a.cfg.Replanner.Replan(ctx, &vm.ReplanRequest{Attempt: rc.Attempt, Completed: rc.Completed, Failed: rc.Failed, Reason: rc.Reason, State: state, Program: prog})
	if err != nil {
		return "", err
	}
	return string(lang.Format(f)), nil
}

// checkConfig is the configuration a plan is checked with: the worker's
// tools and limits, and the plan's own imports.
func checkConfig(cfg *Config, p Plan) compiler.Config {
	src := planfile.Source{Name: p.Name, Imports: p.Imports}
	c, _ := src.Config()
	out := cfg.Check
	out.Imports = c.Imports
	return out
}

// compilePlan parses, checks and compiles a plan against the worker's
// tools. The diagnostics are returned as text when it does not check.
func compilePlan(cfg *Config, p Plan) (*compiler.Program, *lang.File, error) {
	src := planfile.Source{Name: p.Name, JSON: p.JSON, Text: p.Text, MaxParallel: cfg.MaxParallel}
	c, err := src.Load(checkConfig(cfg, p))
	if c.Diagnostics.HasErrors() {
		return nil, c.File, &diagError{name: p.Name, text: []byte(p.Text), diags: c.Diagnostics}
	}
	return c.Program, c.File, err
}

// diagError is a plan that does not check.
type diagError struct {
	name  string
	text  []byte
	diags lang.Diagnostics
}

func (e *diagError) Error() string { return fmt.Sprintf("%s does not check", e.name) }

// report writes the diagnostics for people.
func (e *diagError) report() string {
	var b bytesBuffer
	e.diags.Sort()
	lang.WriteText(&b, lang.Sources{e.name: e.text}, e.diags, lang.TextOptions{})
	return string(b)
}

// bytesBuffer is an io.Writer into a byte slice.
type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}
