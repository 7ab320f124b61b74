package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// goalSource reads what a goal's context is made of, as a source a run
// records: the context document (--context) as its text, and the tools
// files (--tools), the MCP servers' tools and the built-in tools as its
// tools files.
func (gf *goalFlags) goalSource(e *env) (*planfile.Source, lang.Sources, lang.Diagnostics, error) {
	src := &source{}
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
	ps := &planfile.Source{Name: src.name, JSON: src.json, Text: string(src.text), Tools: gf.read.tools, Hints: gf.read.hints, Strict: gf.strict}
	if ps.Name == "" {
		ps.Name = "<goal>" // no context document
	}
	if src.path != "" {
		ps.Dir = filepath.Dir(src.path)
	}
	if wd, err := os.Getwd(); err == nil {
		ps.WorkDir = wd
	}
	if gf.context != "" {
		srcs[src.name] = src.text
	}
	return ps, srcs, diags, nil
}

// contextOf builds a goal's context and the checker's configuration from
// its source: the context document's tools, types, input, state and plan;
// the tools of the tools files named toolFiles and of the MCP servers,
// offered to the model; the built-in tools, offered too when builtins is
// set or no other tool is; and input over the document's.
func contextOf(ps *planfile.Source, toolFiles []string, builtins bool, input map[string]any) (agent.Context, compiler.Config, lang.Diagnostics) {
	var c agent.Context
	cfg, diags := ps.Config()
	cfg.Imports = compiler.ImportDir(ps.ImportRoot())
	c.Hints = cfg.Hints
	if ps.Text != "" {
		var f *lang.File
		var d lang.Diagnostics
		if ps.JSON {
			f, d = lang.ParseJSON(ps.Name, []byte(ps.Text))
		} else {
			f, d = lang.Parse(ps.Name, []byte(ps.Text))
		}
		diags = append(diags, d...)
		c = agent.ContextOf(f)
	}
	if diags.HasErrors() {
		return c, cfg, diags
	}
	for _, name := range toolFiles {
		for _, f := range ps.Tools {
			if f.Name == name {
				decls, _ := lang.ParseTools(f.Name, []byte(f.Text))
				c.Tools = append(c.Tools, decls...)
			}
		}
	}
	var mcpDecls []*lang.ToolDecl
	for _, f := range ps.Tools {
		if strings.HasPrefix(f.Name, "<") && f.Name != builtinToolsName { // an MCP server's
			decls, _ := lang.ParseTools(f.Name, []byte(f.Text))
			mcpDecls = append(mcpDecls, decls...)
		}
	}
	c.Tools = append(c.Tools, offeredOnce(mcpDecls)...)
	cfg.Tools = append(cfg.Tools, c.Tools...)
	if len(c.Tools) == 0 || builtins {
		for _, d := range builtinSignatures() {
			if !strings.HasPrefix(d.Name.Name, "file.") {
				c.Tools = append(c.Tools, d)
			}
		}
	}
	if input != nil {
		if c.Input == nil {
			c.Input = map[string]any{}
		}
		for k, v := range input {
			c.Input[k] = v
		}
	}
	return c, cfg, diags
}

// offeredOnce leaves out the long name (SERVER.TOOL) of an MCP tool that
// is also offered by its bare name, so that the model sees each tool once.
func offeredOnce(decls []*lang.ToolDecl) []*lang.ToolDecl {
	names := make(map[string]bool, len(decls))
	for _, d := range decls {
		names[d.Name.Name] = true
	}
	out := decls[:0:0]
	for _, d := range decls {
		if _, bare, ok := strings.Cut(d.Name.Name, "."); ok && names[bare] {
			continue
		}
		out = append(out, d)
	}
	return out
}

// goalTools builds the tools of a goal: the built-in tools, the MCP
// servers' (rf's, started), the tools its tools files say how to call,
// and the mocks. Every tool offered must have an implementation.
func goalTools(rf *runFlags, c agent.Context, mocks string) (toolkit.Chain, error) {
	reg, err := rf.registry()
	if err == nil {
		err = bindContextTools(rf, reg, c.Tools)
	}
	if err != nil {
		return toolkit.Chain{}, err
	}
	var mk *toolkit.Mocks
	if mocks != "" {
		if mk, err = toolkit.ParseMocks([]byte(mocks)); err != nil {
			return toolkit.Chain{}, fmt.Errorf("mocks: %w", err)
		}
	}
	var missing []string
	for _, t := range c.Tools {
		if !reg.Has(t.Name.Name) && !mk.Has(t.Name.Name) {
			missing = append(missing, t.Name.Name)
		}
	}
	if len(missing) > 0 {
		return toolkit.Chain{}, fmt.Errorf("no implementation for %s: answer them in a mocks file (--mocks)", strings.Join(missing, ", "))
	}
	return toolkit.Chain{Mocks: mk, Registry: reg}, nil
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
		e.errorf("%v", err)
		return exitUsage
	}
	defer closeReporting(e, closeEvents)
	observers := []vm.Observer{vm.LogEvents(e.log.Named(e.cmd)), turnLines(e), events}
	opts := agent.Options{Context: c, Planner: gx.planner, Evaluator: gx.evaluator, Check: cfg, Tools: tools,
		Approver: gx.approver, Observer: vm.Observers(observers...), RunTimeout: gx.runTimeout,
		Filler: &fill.Model{Model: gx.planner}}
	res, err := r.Pursue(ctx, opts, tools.Mocks)
	if err != nil {
		e.errorf("%v", err)
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
		e.errorf("encoding the result: %v", err)
		return exitUsage
	}
	e.stdout.Write(append(lang.EscapeControlJSON(b), '\n'))
	fmt.Fprintln(e.stderr, goalSummary(res))
	switch {
	case res.Status == agent.GoalWaiting && r.Journaled():
		saved(e, r, "goal", gx.also)
		return exitWaiting
	case res.Status != agent.GoalCompleted:
		if r.Journaled() && res.Status == agent.GoalCanceled {
			fmt.Fprintf(e.stderr, "continue the goal with obelisk resume%s %s\n", gx.also, r.ID)
		}
		return exitInput
	}
	return exitOK
}

// resumeGoal resumes the run of a goal: it builds the goal's context and
// tools again from what the run recorded, with the grants of the resume
// command, and the models from the resume command's flags and
// environment (the models the goal began with, unless they name others).
func resumeGoal(ctx context.Context, e *env, r *durable.Run, xf *execFlags, ts *toolSettings, rf *runFlags, mf *modelFlags) int {
	spec := r.Goal()
	c, cfg, diags := contextOf(r.Plan().Source, spec.ToolFiles, spec.Builtins, spec.Input)
	if diags.HasErrors() {
		lang.WriteText(e.stderr, sourcesOf(r.Plan().Source), diags, e.textOptions())
		err := fmt.Errorf("run %s: the recorded context does not parse", r.ID)
		r.Fail(err)
		e.errorf("%v", err)
		return exitInput
	}
	tools, err := goalTools(rf, c, ts.Mocks)
	if err != nil {
		r.Leave(err)
		e.errorf("%v", err)
		return exitUsage
	}
	m := modelFlags{settings: spec.Models.Under(mf.settings)}
	planner, evaluator, _, err := m.models(e)
	if err != nil {
		r.Leave(err)
		e.errorf("%v", err)
		return exitUsage
	}
	if !spec.Evaluate {
		evaluator = nil
	}
	gx := &goalExec{planner: planner, evaluator: evaluator, approver: xf.approver(e), events: xf.events, runTimeout: xf.runTimeout, also: xf.also()}
	return gx.pursue(ctx, e, r, c, cfg, tools)
}
