package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// The operator's tools (toolset): the built-in tools, the tools files
// (--tools) whose definitions may say how a tool is called (an "http" or
// "command" block), the MCP servers (--mcp), the mocks and the grants.

// connect opens the tools the flags name: it starts the MCP servers --mcp
// names and lists their tools, reads the tools files and the mocks. It
// returns the function that stops the servers, or nil and the exit status
// when the tools cannot be opened.
func (cf *checkFlags) connect(ctx context.Context, e *env, cmd string) (func(), int) {
	cfg, err := cf.tf.Config()
	if err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	cfg.MocksFile = cf.mocksFile
	set, stop, status := openTools(ctx, e, cmd, cfg, "")
	if set == nil {
		return nil, status
	}
	cf.set = set
	return stop, exitOK
}

// openTools opens the tools of cfg; workDir is the directory the tools
// files' names are relative to ("" for the current one). It returns the
// set and the function that closes it, or nil and the exit status, having
// said why.
func openTools(ctx context.Context, e *env, cmd string, cfg toolset.Config, workDir string) (*toolset.Set, func(), int) {
	set, err := toolset.Open(ctx, cfg, toolset.Options{Log: e.log, WorkDir: workDir, Explain: toolAdvice})
	if err != nil {
		if fe := toolset.FlagError(err); fe != nil {
			return nil, nil, usageError(e, cmd, "%v", fe)
		}
		e.Errorf("%v", err)
		return nil, nil, exitUsage
	}
	stop := func() {
		if err := set.Close(); err != nil {
			e.log.Warn("stopping an MCP server", "error", err)
		}
	}
	return set, stop, exitOK
}

// serverTools lists the tools of an MCP server, by the names a plan
// calls them by, for a hint that routes to the server.
func (cf *checkFlags) serverTools(server string) ([]string, error) {
	out, found := cf.set.MCPTools(server)
	if !found {
		return nil, fmt.Errorf("it routes to MCP server %s, which no --mcp starts", server)
	}
	return out, nil
}

// toolAdvice says what keeps a tool from running, and which flag or file
// lets it run (toolset.FlagAdvice).
func toolAdvice(p toolset.Problem) string { return toolset.FlagAdvice(p, "run again") }

// importedAdvice says how to call a tool whose binding is in a file the
// plan imports: dir is the directory the plan's imports are read from.
func importedAdvice(p toolset.Problem, dir string) string {
	return fmt.Sprintf("%s; give the file with --tools %s to call it, or answer it in a mocks file", p.Error(), shellQuote(filepath.Join(dir, filepath.FromSlash(p.File))))
}

// toolProblems returns what keeps the tools from running, as advice,
// leaving out the tools nothing implements.
func toolProblems(problems []toolset.Problem) []string {
	var out []string
	for _, p := range problems {
		if !p.Unimplemented() {
			out = append(out, toolAdvice(p))
		}
	}
	return out
}

// toolSettings are what a journaled run records of its tools, to open
// them again when it is resumed (durable.Settings.Caller): the record of
// its toolset.Config (the mocks, the directory of the file tools, the MCP
// servers, whether command tools run), and what fills its holes and
// tasks. The grants are not among them: they are the resuming command's.
type toolSettings struct {
	toolset.Config
	// Fill says what completes the plan's holes and tasks.
	Fill fill.Settings `json:"fill,omitzero"`
}

// record returns the settings a run records: its limits and approval
// policy, and the tool settings.
func (s *toolSettings) record(opts vm.Options, policy durable.ApprovalPolicy) (durable.Settings, error) {
	rec := *s
	rec.Config = s.Config.Record()
	b, err := json.Marshal(rec)
	if err != nil {
		return durable.Settings{}, err
	}
	return durable.Settings{MaxParallel: opts.MaxParallel, StepTimeout: opts.StepTimeout, RunTimeout: opts.RunTimeout,
		MaxOutputBytes: opts.MaxOutputBytes, MaxCost: opts.MaxCost, Approval: policy, Caller: b}, nil
}

// open opens the tools of a recorded plan: those the settings record,
// the tools files the plan's source holds (relative to its working
// directory), and the grants of this command line. It returns the set and
// the function that closes it, or nil and the exit status.
func (s *toolSettings) open(ctx context.Context, e *env, cmd string, src *planfile.Source, grants *permission.Flags) (*toolset.Set, func(), int) {
	cfg := s.Config
	cfg.Tools = toolset.OperatorFiles(src.Tools)
	cfg.Grants = grants.Args()
	return openTools(ctx, e, cmd, cfg, src.WorkDir)
}

// recordedTools returns the tools a recorded plan calls, and what keeps them
// from running (see toolset.Set.Preflight).
func recordedTools(set *toolset.Set, plan *durable.Plan) (toolkit.Chain, []string, error) {
	chain, err := set.CallerOf(nil)
	if err != nil {
		return toolkit.Chain{}, nil, err
	}
	// A stream's program is known only as it runs: no preflight.
	return chain, toolProblems(set.Preflight(plan.Program)), nil
}
