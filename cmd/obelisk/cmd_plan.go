package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
)

func planCommand() *command {
	return &command{
		Name:    "plan",
		Args:    "FILE",
		Summary: "check and compile a plan with its input, show what it will do, and with -o write it as a planfile for obelisk apply",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var rf runFlags
			rf.register(fs)
			out := fs.String("o", "", "write the planfile to this file")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "plan", "expected one file, got %d", len(args))
				}
				stop, st := rf.connectPlan(ctx, e, "plan", args[0])
				if stop == nil {
					return st
				}
				defer stop()
				p, status := rf.prepare(e, args[0])
				if p == nil {
					return status
				}
				pf, err := planfile.New(p.source, p.prog, p.input)
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk plan: %v\n", err)
					return exitUsage
				}
				writePlan(e, p, pf)
				if *out == "" {
					return exitOK
				}
				b, err := pf.Marshal()
				if err == nil {
					err = os.WriteFile(*out, b, 0o644)
				}
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk plan: %v\n", err)
					return exitUsage
				}
				fmt.Fprintf(e.Stderr, "wrote %s; run exactly this plan with: obelisk apply %s\n", *out, shellQuote(*out))
				return exitOK
			}
		},
	}
}

// writePlan prints what a planfile will do.
func writePlan(e *env, p *prepared, pf *planfile.Planfile) {
	w := escapingWriter{e.Stdout}
	fmt.Fprintf(w, "plan %s\nhash %s\n", pf.Source.Name, pf.Hash)
	fmt.Fprintf(w, "\ninput:\n%s\n", indentLines(jsonText(pf.Input)))
	fmt.Fprintf(w, "\nsteps, in the order they are declared:\n")
	for _, s := range p.prog.Steps {
		fmt.Fprintf(w, "%s\n", indentLines(strings.TrimRight(lang.FormatItem(s.Node), "\n")))
	}
	fmt.Fprintf(w, "\ntools it relies on:\n")
	tw := newTable(w)
	for _, t := range pf.Tools {
		tw.row("  "+t.Name, t.Signature)
	}
	tw.flush()
	var gates []string
	if p.prog.Plan.Approve {
		gates = append(gates, "the whole plan, before any step (applying the planfile approves it)")
	}
	for _, s := range p.prog.Steps {
		if s.Approve {
			gates = append(gates, "step "+s.ID)
		}
	}
	if len(gates) > 0 {
		fmt.Fprintf(w, "\napproval gates:\n")
		for _, g := range gates {
			fmt.Fprintf(w, "  %s\n", g)
		}
	}
	a := p.prog.Analysis
	fmt.Fprintf(w, "\nestimate: %g tool calls, critical path %s\n", a.Calls.Total, round(a.CriticalLatency))
}

func applyCommand() *command {
	return &command{
		Name:    "apply",
		Args:    "PLANFILE",
		Summary: "run exactly the plan of a planfile (made with obelisk plan -o), refusing it if a tool it calls has changed since",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var xf execFlags
			xf.register(fs, true)
			mocks := fs.String("mocks", "", "a mocks file answering tool calls (default: NAME.mocks.json beside the plan, if any)")
			noMocks := fs.Bool("no-mocks", false, "do not pick up NAME.mocks.json")
			files := fs.String("files", "", "a directory the built-in file.read and file.write tools may use (they are off without it)")
			stepTimeout := fs.Duration("step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) or the evaluation of its arguments may take; a step's own timeout may only lower it")
			var mcpSpecs stringList
			fs.Var(&mcpSpecs, "mcp", "an MCP server the plan's tools come from, as given to obelisk plan: 'NAME=COMMAND [ARGS...]'; may be repeated")
			var mcpParallel stringList
			fs.Var(&mcpParallel, "mcp-parallel", toolset.MCPParallelUsage)
			allowCommands := fs.Bool("allow-commands", false, "let command tools (a command block in a tools file) run their programs; they are off without it")
			var gf permission.Flags
			gf.Register(fs) // the grants are the command line's, not the planfile's
			var ff fillFlags
			ff.register(fs)
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "apply", "expected one planfile, got %d", len(args))
				}
				policy, err := xf.policy()
				if err != nil {
					return usageError(e, "apply", "%v", err)
				}
				b, err := os.ReadFile(args[0])
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk apply: %v\n", err)
					return exitUsage
				}
				pf, err := planfile.Read(b)
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk apply: %s: %v\n", args[0], err)
					return exitInput
				}
				fill, err := ff.settings("")
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				ts := &toolSettings{Config: toolset.Config{MCP: mcpSpecs, MCPParallel: mcpParallel, AllowCommands: *allowCommands,
					Tools: toolset.OperatorFiles(pf.Source.Tools), Grants: gf.Args()}, Fill: fill}
				if *files != "" {
					if ts.Files, err = filepath.Abs(*files); err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
				}
				ts.MocksFile = mocksFile(*mocks, *noMocks, strings.TrimSuffix(strings.TrimSuffix(pf.Source.Path(pf.Source.Name), ".plan"), ".json"))
				tset, stop, status := openTools(ctx, e, "apply", ts.Config, pf.Source.WorkDir)
				if tset == nil {
					return status
				}
				defer stop()
				now, err := pf.Source.Refresh(func(name string) ([]byte, error) { return readCurrent(tset, pf.Source.Path(name)) })
				if err == nil {
					err = unrecordedServers(&pf.Source, tset)
				}
				if err == nil {
					err = pf.Stale(now)
				}
				if err != nil {
					e.Errorf("%s: %v", args[0], err)
					var stale *planfile.StaleError
					if errors.As(err, &stale) {
						fmt.Fprintf(e.Stderr, "The plan was made against other tools: check it, and make it again with obelisk plan.\n")
					}
					return exitInput
				}
				plan, diags, err := durable.FromPlanfile(pf)
				if err != nil {
					lang.WriteText(e.Stderr, sourcesOf(&pf.Source), diags, e.textOptions())
					e.Errorf("%s: %v", args[0], err)
					return exitInput
				}
				tools, problems, err := recordedTools(tset, plan)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if len(problems) > 0 && xf.replay == "" {
					for _, pr := range problems {
						e.Errorf("%s", pr)
					}
					return exitUsage
				}
				ts.Config = tset.Config()
				set, err := ts.record(vm.Options{MaxParallel: pf.Source.MaxParallel, StepTimeout: *stepTimeout, RunTimeout: max(xf.runTimeout, 0)}, policy)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				r, store, status := xf.create(e, plan, set)
				if r == nil {
					return status
				}
				if store != nil {
					defer store.Close()
				}
				return xf.execute(ctx, e, r, tools, nil, fill)
			}
		},
	}
}

// unrecordedServers refuses MCP servers set started whose tools the
// source was not checked against: the run would call their tools, so the
// plan must have been made with them.
func unrecordedServers(src *planfile.Source, set *toolset.Set) error {
	for _, f := range set.MCPFiles() {
		if !slices.ContainsFunc(src.Tools, func(g planfile.File) bool { return g.Name == f.Name }) {
			return fmt.Errorf("the plan was made without the %s: make it again with obelisk plan and the same --mcp", strings.Trim(f.Name, "<>"))
		}
	}
	return nil
}

// readCurrent reads a tools file or an import as it is now: the built-in
// tools are this program's, an MCP server's tools those it lists now.
func readCurrent(set *toolset.Set, name string) ([]byte, error) {
	if strings.HasPrefix(name, "<") {
		for _, f := range set.Files() {
			if f.Name == name {
				return []byte(f.Text), nil
			}
		}
		return nil, fmt.Errorf("the plan was made with the tools of the MCP server %s: give it with --mcp", strings.Trim(name, "<>"))
	}
	return os.ReadFile(name)
}
