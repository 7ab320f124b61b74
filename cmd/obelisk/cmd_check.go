package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolset"
)

// checkFlags are the flags shared by the commands that check a plan.
type checkFlags struct {
	// tf are the flags that name the operator's tools and their grants.
	tf     toolset.Flags
	strict bool
	limits compiler.Limits
	// mocksFile is the mocks file the tools answer from, if any.
	mocksFile string
	// set holds the tools connect opened.
	set *toolset.Set
	// read holds the tools files config read: what a run records to
	// build its program again.
	read *readFiles
	// hints is the operator's hints file.
	hints string
	// hasEvaluator says that the run judges criteria in words
	// (--evaluator).
	hasEvaluator bool
}

func (cf *checkFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&cf.strict, "strict", false, "report an irreversible call without an approval gate as an error, not a warning")
	cf.registerTools(fs)
}

// registerTools adds the flags that name the operator's tools and their
// grants.
func (cf *checkFlags) registerTools(fs *flag.FlagSet) {
	cf.tf.RegisterSignatures(fs)
	fs.StringVar(&cf.hints, "hints", "", "a hints file: the routing hints a step may name (hint researcher), and what each routes a task to: {\"researcher\": {\"tools\": [...], \"mcp\": \"SERVER\", \"plan\": \"SUBPLAN\", \"aliases\": [...]}}")
}

// registerLimits adds the flags of the limits for untrusted plans.
func (cf *checkFlags) registerLimits(fs *flag.FlagSet) {
	fs.IntVar(&cf.limits.MaxSteps, "max-steps", 100000, "the most steps a plan may have, its sub-plans' included")
	fs.IntVar(&cf.limits.MaxForEach, "max-fanout", 1000, "the most elements a for each may run (its max, or the bound of one without max)")
	fs.Uint64Var(&cf.limits.MaxCost, "max-cost", 1000000, "the most a CEL expression may cost to evaluate: estimated when the plan is checked, and counted when it runs")
}

// config builds the checker's configuration for a plan read from src,
// with the signatures of the tools connect opened.
func (cf *checkFlags) config(src *planfile.Source) (compiler.Config, lang.Sources, lang.Diagnostics, error) {
	cfg := compiler.Config{Strict: cf.strict, Imports: compiler.ImportDir(src.ImportRoot()), Limits: cf.limits, Tools: cf.set.Decls(), HasEvaluator: cf.hasEvaluator}
	cf.read = &readFiles{tools: cf.set.Files()}
	if cf.hints != "" {
		b, err := os.ReadFile(cf.hints)
		if err != nil {
			return cfg, nil, nil, fmt.Errorf("reading hints: %w", err)
		}
		if cfg.Hints, err = compiler.ParseHints(b, cf.serverTools); err != nil {
			return cfg, nil, nil, fmt.Errorf("%s: %w", cf.hints, err)
		}
		cf.read.hints = cfg.Hints
	}
	return cfg, cf.set.Sources(), cf.set.Diagnostics(), nil
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
		out.diags = append(out.diags, cf.set.BindDiagnostics()...)
	}
	out.diags.Sort()
	return out, nil
}

func checkCommand() *command {
	return &command{
		Name:    "check",
		Args:    "FILE...",
		Summary: "type-check plans and report every problem, with its position and a suggested fix",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
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
						e.Errorf("%v", err)
						status = max(status, exitUsage)
						continue
					}
					if c.diags.HasErrors() {
						status = max(status, exitInput)
					}
					switch *format {
					case "json":
						lang.Report{File: c.src.Name, OK: !c.diags.HasErrors(), Diagnostics: c.diags, Source: []byte(c.src.Text), Max: e.maxDiagnostics}.WriteJSON(e.Stdout)
					default:
						lang.WriteText(e.Stderr, c.srcs, c.diags, e.textOptions())
					}
				}
				return status
			}
		},
	}
}
