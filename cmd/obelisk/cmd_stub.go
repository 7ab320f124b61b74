package main

import (
	"context"
	"flag"
)

func notYet(name, args, summary string) *command {
	return &command{name: name, args: args, summary: summary,
		setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			return func(context.Context, []string) int {
				return usageError(e, name, "not available in this build")
			}
		}}
}

func dryRunCommand() *command {
	return notYet("dry-run", "FILE", "simulate a plan without calling any tool")
}
func runCommand() *command { return notYet("run", "FILE", "run a plan") }
