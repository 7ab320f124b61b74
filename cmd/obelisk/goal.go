package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// goalSource reads what a goal's context is made of, as a source a run
// records: the context document (--context) as its text, and the tools
// files (--tools), the MCP servers' tools and the built-in tools as its
// tools files.
func (gf *goalFlags) goalSource(e *env) (*planfile.Source, lang.Sources, lang.Diagnostics, error) {
	src := &planfile.Source{}
	if gf.context != "" {
		s, err := readSource(e, gf.context)
		if err != nil {
			return nil, nil, nil, err
		}
		src = s
	}
	_, srcs, diags, err := gf.config(src)
	if err != nil {
		return nil, nil, nil, err
	}
	ps := &planfile.Source{Name: src.Name, JSON: src.JSON, Text: src.Text, Dir: src.Dir, Tools: gf.read.tools, Hints: gf.read.hints, Strict: gf.strict}
	if ps.Name == "" {
		ps.Name = "<goal>" // no context document
	}
	if wd, err := os.Getwd(); err == nil {
		ps.WorkDir = wd
	}
	if gf.context != "" {
		srcs[src.Name] = []byte(src.Text)
	}
	return ps, srcs, diags, nil
}

// contextOf builds a goal's context and the checker's configuration
// from its source (durable.GoalContext.Context): the tools of the tools
// files gc names and of the MCP servers, and the built-in tools of set.
func contextOf(ps *planfile.Source, gc durable.GoalContext, set *toolset.Set) (agent.Context, compiler.Config, lang.Diagnostics) {
	return gc.Context(ps, toolset.Offered(ps.Tools, gc.ToolFiles), set.OfferedBuiltins())
}

// goalExec is how a goal is pursued in this process: its models, the
// people it asks, where its events go.
type goalExec struct {
	planner, evaluator llm.Model
	approver           vm.Approver
	events             string
	runTimeout         time.Duration
	// also is the --state-dir flag to repeat in a suggested command.
	also string
}

// pursue pursues a goal's run and reports how it went: the result on
// stdout, a line per turn and a summary on stderr.
func (gx *goalExec) pursue(ctx context.Context, e *env, r *durable.Run, c agent.Context, cfg compiler.Config, tools toolkit.Chain) int {
	events, closeEvents, err := eventsFile(gx.events)
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	defer closeReporting(e, closeEvents)
	observers := []vm.Observer{vm.LogEvents(e.log.Named(e.Cmd)), turnLines(e), events}
	opts := agent.Options{Context: c, Planner: gx.planner, Evaluator: gx.evaluator, Check: cfg, Tools: tools,
		Approver: gx.approver, Observer: vm.Observers(observers...), RunTimeout: gx.runTimeout,
		Filler: &fill.Model{Model: gx.planner}}
	res, err := r.Pursue(ctx, opts, tools.Mocks)
	if err != nil {
		e.Errorf("%v", err)
		if res == nil {
			return exitUsage
		}
	}
	envelope := struct {
		Status        string        `json:"status"`
		Output        any           `json:"output"`
		Error         string        `json:"error,omitempty"`
		GoalExecution agent.Summary `json:"goalExecution"`
	}{res.Status, res.Output, res.Error(), res.GoalExecution}
	b, err := json.MarshalIndent(envelope, "", "  ")
	if err != nil {
		e.Errorf("encoding the result: %v", err)
		return exitUsage
	}
	e.Stdout.Write(append(lang.EscapeControlJSON(b), '\n'))
	fmt.Fprintln(e.Stderr, goalSummary(res))
	switch {
	case res.Status == agent.GoalWaiting && r.Journaled():
		saved(e, r, "goal", gx.also)
		return exitWaiting
	case res.Status != agent.GoalCompleted:
		if r.Journaled() && res.Status == agent.GoalCanceled {
			fmt.Fprintf(e.Stderr, "continue the goal with obelisk resume%s %s\n", gx.also, r.ID)
		}
		return exitInput
	}
	return exitOK
}

// resumeGoal resumes the run of a goal: it builds the goal's context and
// tools again from what the run recorded, with the grants of the resume
// command, and the models from the resume command's flags and
// environment (the models the goal began with, unless they name others).
func resumeGoal(ctx context.Context, e *env, r *durable.Run, xf *execFlags, set *toolset.Set, mf *modelFlags) int {
	spec := r.Goal()
	c, cfg, diags := contextOf(r.Plan().Source, spec.GoalContext, set)
	if diags.HasErrors() {
		lang.WriteText(e.Stderr, sourcesOf(r.Plan().Source), diags, e.textOptions())
		err := fmt.Errorf("run %s: the recorded context does not parse", r.ID)
		r.Fail(err)
		e.Errorf("%v", err)
		return exitInput
	}
	tools, err := set.CallerOf(c.Tools)
	if err != nil {
		r.Leave(err)
		e.Errorf("%v", err)
		return exitUsage
	}
	m := modelFlags{settings: spec.Models.Under(mf.settings)}
	planner, evaluator, _, err := m.models(e)
	if err != nil {
		r.Leave(err)
		e.Errorf("%v", err)
		return exitUsage
	}
	if !spec.Evaluate {
		evaluator = nil
	}
	gx := &goalExec{planner: planner, evaluator: evaluator, approver: xf.approver(e), events: xf.events, runTimeout: xf.runTimeout, also: xf.also()}
	return gx.pursue(ctx, e, r, c, cfg, tools)
}
