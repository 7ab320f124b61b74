package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// compileOne reads, checks and compiles a plan, printing its diagnostics
// on stderr. It returns nil and the exit status when it cannot compile.
func (cf *checkFlags) compileOne(e *env, arg string, opts compiler.Options) (*checked, *compiler.Program, int) {
	c, err := cf.load(e, arg, opts)
	if err != nil {
		e.Errorf("%v", err)
		return nil, nil, exitUsage
	}
	if len(c.diags) > 0 {
		lang.WriteText(e.Stderr, c.srcs, c.diags, e.textOptions())
	}
	if c.diags.HasErrors() {
		return c, nil, exitInput
	}
	if c.prog == nil {
		e.Errorf("%v", c.err)
		return c, nil, exitInput
	}
	return c, c.prog, exitOK
}

func compileCommand() *command {
	return &command{
		Name:    "compile",
		Args:    "FILE",
		Summary: "check a plan and print the compiled plan as JSON: steps, edges, levels, critical path, estimates",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var cf checkFlags
			cf.register(fs)
			cf.registerLimits(fs)
			maxParallel := fs.Int("max-parallel", 8, "the parallelism the estimates assume")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "compile", "expected one file, got %d", len(args))
				}
				stop, st := cf.connect(ctx, e, "compile")
				if stop == nil {
					return st
				}
				defer stop()
				_, prog, status := cf.compileOne(e, args[0], compiler.Options{MaxParallel: *maxParallel})
				if prog == nil {
					return status
				}
				b, err := prog.JSON()
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk compile: %v\n", err)
					return exitUsage
				}
				e.Stdout.Write(lang.EscapeControlJSON(b))
				return exitOK
			}
		},
	}
}

func graphCommand() *command {
	return &command{
		Name:    "graph",
		Args:    "FILE",
		Summary: "draw a plan's dependency graph in Graphviz DOT or Mermaid",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var cf checkFlags
			cf.register(fs)
			cf.registerLimits(fs)
			format := fs.String("format", "dot", "dot or mermaid")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "graph", "expected one file, got %d", len(args))
				}
				if *format != "dot" && *format != "mermaid" {
					return usageError(e, "graph", "unknown format %q: use dot or mermaid", *format)
				}
				stop, st := cf.connect(ctx, e, "graph")
				if stop == nil {
					return st
				}
				defer stop()
				_, prog, status := cf.compileOne(e, args[0], compiler.Options{})
				if prog == nil {
					return status
				}
				var err error
				if *format == "mermaid" {
					err = prog.WriteMermaid(e.Stdout)
				} else {
					err = prog.WriteDOT(e.Stdout)
				}
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk graph: %v\n", err)
					return exitUsage
				}
				return exitOK
			}
		},
	}
}
