// Command obelisk checks, compiles, simulates and runs Obelisk plans: data-flow
// graphs of tool calls written in the Obelisk plan language or its JSON form.
//
// Usage:
//
//	obelisk <command> [flags] [files]
//
// Run `obelisk help` for the list of commands and `obelisk <command> -h` for
// the flags of one; both print on standard output. Results go to standard
// output; diagnostics, errors, logs and progress to standard error, each
// error as "obelisk <command>: message". The exit status is 0 on success, 1
// when the input has errors or a run did not complete, 2 on a usage or I/O
// error, and 3 when a journaled run waits for a decision.
package main

import (
	"context"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"os"
	"os/signal"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	e := &env{Env: cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}}
	if term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) {
		e.status = &statusWriter{w: os.Stderr}
		e.Stderr = e.status
	}
	code := run(ctx, os.Args[1:], e)
	stop()
	os.Exit(code)
}
