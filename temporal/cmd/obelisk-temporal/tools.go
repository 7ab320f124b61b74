package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolset"
)

// toolFlags are the worker's tools and limits: the flags of obelisk run
// that say which tools a plan may call, what they may touch, and how long
// and how much.
type toolFlags struct {
	tools                   toolset.Flags
	mocks                   string
	strict                  bool
	limits                  compiler.Limits
	maxParallel             int
	stepTimeout, runTimeout time.Duration
	maxOutput               int
	heartbeat               time.Duration
}

func (tf *toolFlags) register(fs *flag.FlagSet) {
	tf.tools.Register(fs)
	fs.StringVar(&tf.mocks, "mocks", "", "a mocks file answering tool calls before the other tools")
	fs.BoolVar(&tf.strict, "strict", false, "report an irreversible call without an approval gate as an error, not a warning")
	fs.IntVar(&tf.limits.MaxSteps, "max-steps", 100000, "the most steps a plan may have, its sub-plans' included")
	fs.IntVar(&tf.limits.MaxForEach, "max-fanout", 1000, "the most elements a for each may run")
	fs.Uint64Var(&tf.limits.MaxCost, "max-cost", 1000000, "the most a CEL expression may cost to evaluate")
	fs.IntVar(&tf.maxParallel, "max-parallel", 8, "how many calls of a run may run at once")
	fs.DurationVar(&tf.stepTimeout, "step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) may take; a step's own timeout may only lower it")
	fs.DurationVar(&tf.runTimeout, "run-timeout", 0, "the longest a run may take, waits for approvals included (0: no bound)")
	fs.IntVar(&tf.maxOutput, "max-output", obtemporal.MaxResultBytes, fmt.Sprintf("the largest result a step may have, in bytes of JSON (at most %d: Temporal keeps each result in the run's history)", obtemporal.MaxResultBytes))
	fs.DurationVar(&tf.heartbeat, "heartbeat", 10*time.Second, "how soon a call whose worker was lost is started again on another worker")
}

// config opens the worker's tools (toolset): the built-in tools, the MCP
// servers', the tools files' and the mocks. Warnings go to stderr. It
// returns the function that stops the MCP servers.
func (tf *toolFlags) config(ctx context.Context, stderr io.Writer) (obtemporal.Config, func(), error) {
	if tf.maxOutput > obtemporal.MaxResultBytes || tf.maxOutput <= 0 {
		return obtemporal.Config{}, nil, fmt.Errorf("--max-output %d: give 1 to %d bytes; Temporal refuses larger payloads, so keep large values outside the run", tf.maxOutput, obtemporal.MaxResultBytes)
	}
	cfg, err := tf.tools.Config()
	if err != nil {
		return obtemporal.Config{}, nil, err
	}
	cfg.MocksFile = tf.mocks
	log := hclog.New(&hclog.LoggerOptions{Name: "obelisk-temporal worker", Output: stderr, Level: hclog.Warn})
	set, err := toolset.Open(ctx, cfg, toolset.Options{Log: log, Explain: workerAdvice})
	if err != nil {
		if fe := toolset.FlagError(err); fe != nil {
			err = fe
		}
		return obtemporal.Config{}, nil, err
	}
	fail := func(err error) (obtemporal.Config, func(), error) {
		set.Close()
		return obtemporal.Config{}, nil, err
	}
	if diags := append(set.Diagnostics(), set.BindDiagnostics()...); diags.HasErrors() {
		return fail(diags)
	}
	tools, err := set.Caller()
	if err != nil {
		return fail(err)
	}
	return obtemporal.Config{
		Tools:            tools,
		Has:              set.Has,
		Check:            compiler.Config{Tools: set.Decls(), Strict: tf.strict, Limits: tf.limits},
		StepTimeout:      tf.stepTimeout,
		RunTimeout:       tf.runTimeout,
		MaxOutputBytes:   tf.maxOutput,
		MaxParallel:      tf.maxParallel,
		MaxCost:          tf.limits.MaxCost,
		HeartbeatTimeout: tf.heartbeat,
	}, func() { set.Close() }, nil
}

// workerAdvice says what keeps a tool from running on this worker, and
// which flag lets it run.
func workerAdvice(p toolset.Problem) string { return toolset.FlagAdvice(p, "start the worker") }
