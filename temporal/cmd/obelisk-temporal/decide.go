package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"go.temporal.io/sdk/client"
)

// setupApprove registers the flags of approve, which records a decision on a run's approval.
func setupApprove(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	reject := fs.Bool("reject", false, "reject instead of approving")
	note := fs.String("note", "", "a note kept with the decision (a rejected step's error message carries it)")
	by := fs.String("by", "obelisk-temporal approve", "who decides, as the run records it")
	wait := fs.Bool("wait", false, "then wait for the run's output, or its next wait for a decision")
	return func(ctx context.Context, args []string) int {
		if len(args) < 1 || len(args) > 2 {
			return e.UsageError("expected a workflow and at most one step, got %d arguments", len(args))
		}
		d := obtemporal.Decision{Approve: !*reject, By: *by, Note: *note}
		if len(args) == 2 {
			d.Step = args[1]
		}
		if d.Note == "" {
			d.Note = "approved with obelisk-temporal approve"
			if *reject {
				d.Note = "rejected with obelisk-temporal approve"
			}
		}
		c, err := cf.dial(e)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		defer c.Close()
		what, err := obtemporal.Approve(ctx, c, args[0], d)
		if errors.Is(err, obtemporal.ErrNoWorker) {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitInput
		}
		fmt.Fprintf(e.Stdout, "%s of workflow %s\n", lang.EscapeControl(what), args[0])
		if *wait {
			return follow(ctx, e, c, cf, args[0])
		}
		return cli.ExitOK
	}
}

// setupShow registers the flags of show, which prints a run's workflow.
func setupShow(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	format := fs.String("format", "text", "text or json")
	return func(ctx context.Context, args []string) int {
		if *format != "text" && *format != "json" {
			return e.UsageError("unknown format %q: use text or json", *format)
		}
		return cf.onWorkflow(e, args, func(c client.Client, id string) int {
			st, err := obtemporal.Show(ctx, c, id)
			if err != nil {
				e.Errorf("%v", err)
				return cli.ExitInput
			}
			if *format == "json" {
				b, _ := json.MarshalIndent(st, "", "  ")
				e.Stdout.Write(append(lang.EscapeControlJSON(b), '\n'))
				return cli.ExitOK
			}
			writeStatus(e, st, cf.also())
			return cli.ExitOK
		})
	}
}

// writeStatus prints a run for people, as obelisk show prints a journaled
// run.
func writeStatus(e *env, st *obtemporal.Status, also string) {
	w := e.Stdout
	p := func(format string, args ...any) { fmt.Fprint(w, lang.EscapeControl(fmt.Sprintf(format, args...))) }
	p("workflow %s: %s\n", st.ID, st.Status)
	if st.Error != "" {
		p("error:     %s\n", st.Error)
	}
	p("\nsteps:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STEP\tSTATUS\tATTEMPTS\tRESULT")
	for _, s := range st.Steps {
		id := s.ID
		if s.Round > 0 {
			id = fmt.Sprintf("%s (replan %d)", id, s.Round)
		}
		what := s.Result
		switch {
		case s.Error != nil:
			what = durable.ErrorText(s.Error, s.Handled)
		case s.Reason != "":
			what = s.Reason
		}
		fmt.Fprintln(tw, lang.EscapeControl(fmt.Sprintf("  %s\t%s\t%d\t%s", id, s.Status, s.Attempts, what)))
	}
	tw.Flush()
	if len(st.Running) > 0 {
		p("\nrunning:\n")
		for _, r := range st.Running {
			p("  %s\n", r)
		}
	}
	if len(st.Approvals) > 0 {
		p("\napprovals:\n")
		for _, a := range st.Approvals {
			what := "the plan"
			if a.Step != "" {
				what = "step " + a.Step
			}
			state := "waiting"
			if a.Decided {
				state = durable.DecisionText(a.Approved, a.By, a.Note)
			} else if a.Message != "" {
				what += " (" + a.Message + ")"
			}
			p("  %s: %s\n", what, state)
			if !a.Decided && a.Args != "" {
				p("    arguments: %s\n", a.Args)
			}
		}
	}
	for i, r := range st.Replans {
		p("\nplan of replan %d:\n  %s\n", i+1, r)
	}
	if st.Output != "" {
		p("\noutput:\n  %s\n", st.Output)
	}
	if st.Status == "waiting" {
		p("\ndecide with obelisk-temporal approve%s %s [STEP]\n", also, st.ID)
	}
}

// setupCancel registers the flags of cancel, which asks a run's workflow
// to stop.
func setupCancel(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	wait := fs.Bool("wait", false, "then wait for the run to end and report it")
	return func(ctx context.Context, args []string) int {
		return cf.onWorkflow(e, args, func(c client.Client, id string) int {
			if err := obtemporal.Cancel(ctx, c, id); err != nil {
				e.Errorf("%v", err)
				return cli.ExitInput
			}
			fmt.Fprintf(e.Stdout, "asked workflow %s to stop: it starts no more calls\n", id)
			if *wait {
				return follow(ctx, e, c, cf, id)
			}
			return cli.ExitOK
		})
	}
}

// setupTerminate registers the flags of terminate, which ends a run's
// workflow at once.
func setupTerminate(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	reason := fs.String("reason", "terminated with obelisk-temporal terminate", "why, as the workflow's history keeps it")
	return func(ctx context.Context, args []string) int {
		return cf.onWorkflow(e, args, func(c client.Client, id string) int {
			if err := obtemporal.Terminate(ctx, c, id, *reason); err != nil {
				e.Errorf("%v", err)
				return cli.ExitInput
			}
			fmt.Fprintf(e.Stdout, "terminated workflow %s\n", id)
			return cli.ExitOK
		})
	}
}

// setupWait registers the flags of wait, which follows a run's workflow
// as run does: to re-attach to a run started with run --detach, or by a
// run that gave up.
func setupWait(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	return func(ctx context.Context, args []string) int {
		return cf.onWorkflow(e, args, func(c client.Client, id string) int { return follow(ctx, e, c, cf, id) })
	}
}

// onWorkflow runs f with a client of Temporal, for a command whose one
// argument is a run's workflow ID.
func (cf *connFlags) onWorkflow(e *env, args []string, f func(c client.Client, id string) int) int {
	if len(args) != 1 {
		return e.UsageError("expected one workflow, got %d arguments", len(args))
	}
	c, err := cf.dial(e)
	if err != nil {
		e.Errorf("%v", err)
		return cli.ExitUsage
	}
	defer c.Close()
	return f(c, args[0])
}
