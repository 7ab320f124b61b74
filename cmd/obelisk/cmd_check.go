package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// checkFlags are the flags shared by the commands that check a plan.
type checkFlags struct {
	tools  stringList
	strict bool
	limits compiler.Limits
	mcp    stringList
	// mcpParallel bounds the calls in progress at once to a server
	// (--mcp-parallel NAME=N).
	mcpParallel stringList
	// servers are the MCP servers connect started.
	servers *mcpServers
	// read holds the tools files config read: what a run records to
	// build its program again.
	read *readFiles
	// grants are the network and environment the tools may use.
	grants grantFlags
	// hints is the operator's hints file.
	hints string
}

func (cf *checkFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&cf.strict, "strict", false, "report an irreversible call without an approval gate as an error, not a warning")
	cf.registerTools(fs)
}

// mcpParallelUsage is the help of --mcp-parallel.
const mcpParallelUsage = "NAME=N: at most N calls at once to the MCP server NAME, reads and writes, the others waiting their turn " +
	"(default: reads at once, and one write at a time: a call of a tool whose annotations do not say readOnlyHint waits for the server's other writes); may be repeated"

// registerTools adds the flags that name the operator's tools and their
// grants.
func (cf *checkFlags) registerTools(fs *flag.FlagSet) {
	fs.Var(&cf.tools, "tools", "a tools file (MCP tools/list or OpenAI functions JSON, where a tool may have an http or command block saying how it is called) whose tools the plan may call; may be repeated")
	fs.Var(&cf.mcp, "mcp", "an MCP server whose tools the plan may call, as TOOL or NAME.TOOL: 'NAME=COMMAND [ARGS...]', started on stdio; may be repeated")
	fs.StringVar(&cf.hints, "hints", "", "a hints file: the routing hints a step may name (hint researcher), and what each routes a task to: {\"researcher\": {\"tools\": [...], \"mcp\": \"SERVER\", \"plan\": \"SUBPLAN\", \"aliases\": [...]}}")
	fs.Var(&cf.mcpParallel, "mcp-parallel", mcpParallelUsage)
	cf.grants.register(fs)
}

// registerLimits adds the flags of the limits for untrusted plans.
func (cf *checkFlags) registerLimits(fs *flag.FlagSet) {
	fs.IntVar(&cf.limits.MaxSteps, "max-steps", 100000, "the most steps a plan may have, its sub-plans' included")
	fs.IntVar(&cf.limits.MaxForEach, "max-fanout", 1000, "the most elements a for each may run (its max, or the bound of one without max)")
	fs.Uint64Var(&cf.limits.MaxCost, "max-cost", 1000000, "the most a CEL expression may cost to evaluate: estimated when the plan is checked, and counted when it runs")
}

// config reads the tools files and builds the checker's configuration for
// a plan read from src.
func (cf *checkFlags) config(src *planfile.Source) (compiler.Config, lang.Sources, lang.Diagnostics, error) {
	cf.read = &readFiles{}
	cfg := compiler.Config{Strict: cf.strict, Imports: compiler.ImportDir(src.ImportRoot()), Limits: cf.limits}
	srcs := lang.Sources{}
	var diags lang.Diagnostics
	for _, path := range cf.tools {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, srcs, nil, fmt.Errorf("reading tools file: %w", err)
		}
		srcs[path] = b
		decls, d := lang.ParseTools(path, b)
		diags = append(diags, d...)
		cfg.Tools = append(cfg.Tools, decls...)
		cf.read.tools = append(cf.read.tools, planfile.File{Name: path, Text: string(b)})
	}
	cfg.Tools = append(cfg.Tools, cf.mcpDecls()...)
	if cf.servers != nil {
		cf.read.tools = append(cf.read.tools, cf.servers.files...)
	}
	if cf.hints != "" {
		b, err := os.ReadFile(cf.hints)
		if err != nil {
			return cfg, srcs, nil, fmt.Errorf("reading hints: %w", err)
		}
		if cfg.Hints, err = compiler.ParseHints(b, cf.serverTools); err != nil {
			return cfg, srcs, nil, fmt.Errorf("%s: %w", cf.hints, err)
		}
		cf.read.hints = cfg.Hints
	}
	builtins := builtinToolsJSON()
	decls, _ := lang.ParseTools(builtinToolsName, builtins)
	cfg.Tools = append(cfg.Tools, decls...)
	cf.read.tools = append(cf.read.tools, planfile.File{Name: builtinToolsName, Text: string(builtins)})
	return cfg, srcs, diags, nil
}

// builtinToolsName names the built-in tools' definitions among the tools
// files a run records.
const builtinToolsName = "<built-in tools>"

// builtinToolsJSON returns the definitions of the built-in tools, which
// every plan may call (the file tools run only when the user gives
// --files).
func builtinToolsJSON() []byte {
	reg := toolkit.NewRegistry()
	if err := stdlib.Register(reg, stdlib.Options{FilesRoot: "."}); err != nil {
		return []byte(`{"tools": []}`)
	}
	return reg.ToolsJSON()
}

// builtinSignatures are the signatures of the built-in tools.
func builtinSignatures() []*lang.ToolDecl {
	decls, _ := lang.ParseTools(builtinToolsName, builtinToolsJSON())
	return decls
}

// readFiles keeps the tools files and the hints a check reads.
type readFiles struct {
	tools []planfile.File
	hints map[string]compiler.Hint
}

// checked is a plan read, parsed, checked and, when it checks, compiled.
type checked struct {
	src   *planfile.Source
	file  *lang.File
	info  *compiler.Info
	diags lang.Diagnostics
	srcs  lang.Sources
	// prog is the program, or nil with err the compiler's error (or
	// with errors in diags).
	prog *compiler.Program
	err  error
	// bound are the tools a tools file says how to call.
	bound []*boundTool
}

// load reads, parses, checks and compiles one plan with opts. A parse
// error stops before the checker, whose findings would follow from it.
func (cf *checkFlags) load(e *env, arg string, opts compiler.Options) (*checked, error) {
	src, err := readSource(e, arg)
	if err != nil {
		return nil, err
	}
	cfg, srcs, diags, err := cf.config(src)
	if err != nil {
		return nil, err
	}
	srcs[src.Name] = []byte(src.Text)
	f, pd := src.Parse()
	c, err := planfile.Build(f, append(diags, pd...), cfg, opts)
	out := &checked{src: src, srcs: srcs, file: c.File, info: c.Info, diags: c.Diagnostics, prog: c.Program, err: err}
	if c.Info != nil {
		bound, bd := bindTools(sortedTools(c.Info), "", cf.grants.httpOptions())
		out.bound = bound
		out.diags = append(out.diags, bd...)
	}
	out.diags.Sort()
	return out, nil
}

func checkCommand() *command {
	return &command{
		name:    "check",
		args:    "FILE...",
		summary: "type-check plans and report every problem, with its position and a suggested fix",
		setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var cf checkFlags
			cf.register(fs)
			cf.registerLimits(fs)
			format := fs.String("format", "text", "output format: text, or json (one document per file)")
			return func(ctx context.Context, args []string) int {
				if len(args) == 0 {
					return usageError(e, "check", "no files given (use - for standard input)")
				}
				if *format != "text" && *format != "json" {
					return usageError(e, "check", "unknown format %q: use text or json", *format)
				}
				stop, st := cf.connect(ctx, e, "check")
				if stop == nil {
					return st
				}
				defer stop()
				status := exitOK
				for _, arg := range args {
					c, err := cf.load(e, arg, compiler.Options{})
					if err != nil {
						e.errorf("%v", err)
						status = max(status, exitUsage)
						continue
					}
					if c.diags.HasErrors() {
						status = max(status, exitInput)
					}
					switch *format {
					case "json":
						lang.Report{File: c.src.Name, OK: !c.diags.HasErrors(), Diagnostics: c.diags, Source: []byte(c.src.Text), Max: e.maxDiagnostics}.WriteJSON(e.stdout)
					default:
						lang.WriteText(e.stderr, c.srcs, c.diags, e.textOptions())
					}
				}
				return status
			}
		},
	}
}
