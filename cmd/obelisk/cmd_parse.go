package main

import (
	"context"
	"flag"

	"github.com/obelisk-plan/obelisk/lang"
)

func parseCommand() *command {
	return &command{
		Name:    "parse",
		Args:    "FILE",
		Summary: "print the syntax tree of a plan as JSON",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "parse", "expected one file, got %d", len(args))
				}
				src, err := readSource(e, args[0])
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				f, diags := src.Parse()
				e.Stdout.Write(lang.EscapeControlJSON(lang.DumpJSON(f)))
				if len(diags) > 0 {
					printDiagnostics(e, lang.Sources{src.Name: []byte(src.Text)}, diags)
				}
				if diags.HasErrors() {
					return exitInput
				}
				return exitOK
			}
		},
	}
}
