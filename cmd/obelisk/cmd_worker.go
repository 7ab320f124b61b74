package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
	"github.com/obelisk-plan/obelisk/vm"
)

func workerCommand() *command {
	return &command{
		Name:    "worker",
		Args:    "",
		Summary: "stay running and continue every journaled run whose decisions are made, with this command line's grants",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var xf execFlags
			xf.register(fs, false)
			var gf permission.Flags
			gf.Register(fs) // the grants are the command line's, not the journal's
			var mf modelFlags
			mf.register(fs)
			return func(ctx context.Context, args []string) int {
				if len(args) != 0 {
					return usageError(e, "worker", "expected no arguments, got %d", len(args))
				}
				if xf.wait {
					return usageError(e, "worker", "--wait is for a run's own process: the worker continues a run again once its new decisions are made")
				}
				st, err := xf.open()
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				defer st.Close()
				fmt.Fprintf(e.Stderr, "worker: continuing the runs of %s as their decisions are made (stop with Ctrl-C)\n", st.Path())
				xf.evalModel = mf.settings.EvalModel
				if err := continueDecided(ctx, e, "worker", st, &xf, &gf, &mf); err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				return exitOK
			}
		},
	}
}

func cancelCommand() *command {
	return &command{
		Name:    "cancel",
		Args:    "RUN",
		Summary: "stop a journaled run for good: its process stops it within about a second, and a run no process runs is stopped at once",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var sf stateFlags
			sf.register(fs)
			reason := fs.String("reason", "", "why, kept with the request and shown with the run")
			by := fs.String("by", defaultDecider(), "who cancels, kept with the request")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "cancel", "expected one run, got %d", len(args))
				}
				st, id, status := sf.openRun(e, args[0])
				if st == nil {
					return status
				}
				defer st.Close()
				stopped, err := st.Cancel(id, *by, *reason)
				if fe := (*durable.FinishedError)(nil); errors.As(err, &fe) {
					e.Errorf("run %s has ended (%s): there is nothing to cancel", id, fe.Status)
					return exitInput
				} else if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if stopped {
					fmt.Fprintf(escapingWriter{e.Stdout}, "canceled run %s: it is %s\n", id, durable.RunAborted)
					return exitOK
				}
				fmt.Fprintf(escapingWriter{e.Stdout}, "asked run %s to stop: the process running it stops it within about a second (obelisk show%s %s)\n", id, sf.also(), id)
				return exitOK
			}
		},
	}
}

// continueDecided continues, one at a time until ctx is done, every run
// of the journal st whose decisions are made and that no other process
// runs or waits for, with the tools each run recorded and the grants gf
// of this command line: the loop of obelisk worker and of obelisk serve
// --worker, whose messages on stderr start with who. A run its tools may
// not continue with these grants is left waiting, said once, and not
// tried again. It returns an error only when the journal cannot be read.
func continueDecided(ctx context.Context, e *env, who string, st *durable.Store, xf *execFlags, gf *permission.Flags, mf *modelFlags) error {
	// left are the runs this process could not go on with (their tools
	// may not run with its grants): it does not try again.
	left := map[string]bool{}
	changes := st.Changes()
	for changes.Next(ctx) == nil {
		ready, err := st.Ready()
		if err != nil {
			return err
		}
		for _, id := range ready {
			if ctx.Err() != nil || left[id] {
				continue
			}
			r, err := st.Continue(id)
			if err != nil {
				// Another process owns it (the one that waits for it,
				// another worker), or it changed.
				e.log.Debug("not continuing", "run", id, "why", err)
				continue
			}
			fmt.Fprintf(e.Stderr, "%s: run %s: its decisions are made; continuing it\n", who, id)
			xf.resumed(ctx, e, r, gf, mf)
			if det, err := st.Show(id); err == nil && det.Status == vm.RunWaiting {
				if pending, _ := st.Pending(id); len(pending) == 0 {
					left[id] = true
					fmt.Fprintf(e.Stderr, "%s: run %s is left waiting; obelisk resume%s %s with the grants it needs continues it\n", who, id, xf.also(), id)
				}
			}
		}
	}
	return nil
}

// defaultDecider names who decides or cancels from this command line:
// the user the process runs as.
func defaultDecider() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "obelisk approve"
}
