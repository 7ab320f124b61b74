package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
)

func resumeCommand() *command {
	return &command{
		Name:    "resume",
		Args:    "RUN",
		Summary: "continue a run from its journal (stopped, crashed, or waiting for a decision); steps that finished are not run again",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var xf execFlags
			xf.register(fs, false)
			force := fs.Bool("force", false, "resume a run that the journal says another live process is running")
			var gf permission.Flags
			gf.Register(fs) // the grants are the command line's, not the journal's
			var mf modelFlags
			mf.register(fs) // so are the models' address and key, for a goal's run
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "resume", "expected one run, got %d", len(args))
				}
				xf.evalModel = mf.settings.EvalModel
				st, id, status := xf.openRun(e, args[0])
				if st == nil {
					return status
				}
				defer st.Close()
				r, err := st.Resume(id, *force)
				if err != nil {
					if ce := (*durable.CompileError)(nil); errors.As(err, &ce) {
						lang.WriteText(e.Stderr, sourcesOf(ce.Source), ce.Diagnostics, e.textOptions())
					}
					e.Errorf("%v", err)
					return exitInput
				}
				return xf.resumed(ctx, e, r, &gf, &mf)
			}
		},
	}
}

// resumed goes on with a run this process has taken over (obelisk resume,
// a worker): it opens the run's tools from what the run recorded, with
// the grants of this command line, and executes it.
func (xf *execFlags) resumed(ctx context.Context, e *env, r *durable.Run, gf *permission.Flags, mf *modelFlags) int {
	ts, set, stop, status := resumedTools(ctx, e, r, gf)
	if set == nil {
		return status
	}
	defer stop()
	if r.Goal() != nil {
		return resumeGoal(ctx, e, r, xf, set, mf)
	}
	tools, problems, err := recordedTools(set, r.Plan())
	if err != nil {
		err = fmt.Errorf("run %s: %w", r.ID, err)
		r.Fail(err)
		e.Errorf("%v", err)
		return exitInput
	}
	if len(problems) > 0 && xf.replay == "" {
		for _, pr := range problems {
			e.Errorf("%s", pr)
		}
		// The run is left to be resumed with the grants it needs.
		r.Leave(errors.New("its tools may not run: " + problems[0]))
		return exitUsage
	}
	return xf.execute(ctx, e, r, tools, nil, ts.Fill)
}

// resumedTools opens the tools of a run being resumed, from what the run
// recorded, with the grants of this command line. It returns the
// settings recorded, the set and the function that closes it, or a nil
// set and the exit status, having reported why.
func resumedTools(ctx context.Context, e *env, r *durable.Run, grants *permission.Flags) (*toolSettings, *toolset.Set, func(), int) {
	var ts toolSettings
	if err := r.Caller(&ts); err != nil {
		e.Errorf("%v", err)
		return nil, nil, nil, exitInput
	}
	set, stop, status := ts.open(ctx, e, "resume", r.Plan().Source, grants)
	if set == nil {
		r.Leave(errors.New("its tools could not be started"))
		return nil, nil, nil, status
	}
	return &ts, set, stop, exitOK
}

// sourcesOf returns the texts of a source, for diagnostics: the plan and
// its tools files, never its imports, which a plan may name without the
// right to see them.
func sourcesOf(src *planfile.Source) lang.Sources {
	srcs := lang.Sources{src.Name: []byte(src.Text)}
	for _, f := range src.Tools {
		srcs[f.Name] = []byte(f.Text)
	}
	return srcs
}

func approveCommand() *command {
	return &command{
		Name:    "approve",
		Args:    "RUN [STEP]",
		Summary: "record the decision on an approval a journaled run waits for (its waiting process or a worker goes on, or obelisk resume RUN)",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var sf stateFlags
			sf.register(fs)
			reject := fs.Bool("reject", false, "reject instead of approving")
			note := fs.String("note", "", "a note kept with the decision (a rejected step's error message carries it)")
			edit := fs.String("edit", "", "approve the plan as edited in this file (plan text) instead, for an approval of the whole plan")
			by := fs.String("by", defaultDecider(), "who decides, recorded with the decision (default: the user this command runs as)")
			return func(ctx context.Context, args []string) int {
				if len(args) < 1 || len(args) > 2 {
					return usageError(e, "approve", "expected a run and at most one step, got %d arguments", len(args))
				}
				if *edit != "" && *reject {
					return usageError(e, "approve", "--edit approves an edited plan; it cannot go with --reject")
				}
				st, id, status := sf.openRun(e, args[0])
				if st == nil {
					return status
				}
				defer st.Close()
				step := ""
				if len(args) == 2 {
					step = args[1]
				}
				ap, err := st.Choose(id, step)
				if ce := (*durable.ChoiceError)(nil); errors.As(err, &ce) {
					e.Errorf("%v", err)
					listPending(e, ce.Waiting)
					if len(ce.Waiting) > 1 && ce.Step == "" {
						return exitUsage
					}
					return exitInput
				} else if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				dec := durable.Decision{Approved: !*reject, Note: *note, By: *by}
				if *edit != "" {
					if ap.Step != "" || ap.Round != 0 {
						return usageError(e, "approve", "--edit replaces the whole plan: it applies to an approval of the plan, and %s is a step", ap.Step)
					}
					if dec.Plan, err = os.ReadFile(*edit); err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
					dec.PlanName = *edit
				}
				if dec.Note == "" {
					dec.Note = "approved with obelisk approve"
					if *reject {
						dec.Note = "rejected with obelisk approve"
					}
				}
				if err := st.Decide(id, ap, dec); err != nil {
					if diags := lang.Diagnostics(nil); errors.As(err, &diags) {
						lang.WriteText(e.Stderr, lang.Sources{*edit: dec.Plan}, diags, e.textOptions())
						e.Errorf("the edited plan does not check; nothing was recorded")
						return exitInput
					}
					e.Errorf("%v", err)
					return exitInput
				}
				verb := "approved"
				if *reject {
					verb = "rejected"
				}
				fmt.Fprintf(escapingWriter{e.Stdout}, "%s %s of run %s\n", verb, durable.Describe(ap), id)
				if pending, err := st.Pending(id); err == nil && len(pending) > 0 {
					fmt.Fprintf(e.Stderr, "the run waits for %d more decision(s):\n", len(pending))
					listPending(e, pending)
				} else {
					fmt.Fprintf(e.Stderr, "the run goes on by itself if its process waits for the decision (--wait) or a worker runs; otherwise continue it with: obelisk resume%s %s\n", sf.also(), id)
				}
				return exitOK
			}
		},
	}
}

func listPending(e *env, list []*durable.Approval) {
	for _, p := range list {
		step := p.Step
		if step == "" {
			step = "plan"
		}
		fmt.Fprintf(e.Stderr, "  %-20s %s\n", step, durable.Describe(p))
	}
}

func runsCommand() *command {
	return &command{
		Name:    "runs",
		Args:    "",
		Summary: "list the journaled runs, the newest first",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var sf stateFlags
			sf.register(fs)
			format := formatFlag(fs)
			return func(ctx context.Context, args []string) int {
				if len(args) != 0 {
					return usageError(e, "runs", "expected no arguments, got %d", len(args))
				}
				if status := badFormat(e, *format); status != exitOK {
					return status
				}
				var runs []*durable.Summary
				db, err := durable.OpenExisting(sf.dir, durable.Options{})
				switch {
				case errors.Is(err, durable.ErrNoJournal):
					// No journal, no runs: and none is made.
				case err != nil:
					e.Errorf("%v", err)
					return exitUsage
				default:
					defer db.Close()
					if runs, err = db.Runs(); err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
				}
				if *format == "json" {
					if runs == nil {
						runs = []*durable.Summary{}
					}
					e.Stdout.Write(append(jsonIndent(runs), '\n'))
					return exitOK
				}
				if len(runs) == 0 {
					fmt.Fprintf(e.Stderr, "no runs are journaled in %s\n", sf.dir)
					return exitOK
				}
				tw := newTable(escapingWriter{e.Stdout})
				tw.row("RUN", "STATUS", "PLAN", "STEPS", "CREATED", "UPDATED")
				for _, r := range runs {
					tw.row(r.ID, string(r.Status), r.Plan, cmp.Or(durable.StepCounts(r.Steps), "-"), r.Created.Local().Format(time.DateTime), r.Updated.Local().Format(time.DateTime))
				}
				tw.flush()
				return exitOK
			}
		},
	}
}

func showCommand() *command {
	return &command{
		Name:    "show",
		Args:    "RUN",
		Summary: "print a journaled run: its status, steps (results, errors, timings), approvals and output",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var sf stateFlags
			sf.register(fs)
			format := formatFlag(fs)
			events := fs.Bool("events", false, "print the run's event log too (with -format json: the events, one per line)")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "show", "expected one run, got %d", len(args))
				}
				if status := badFormat(e, *format); status != exitOK {
					return status
				}
				db, id, status := sf.openRun(e, args[0])
				if db == nil {
					return status
				}
				defer db.Close()
				det, err := db.Show(id)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				var evs []vm.Event
				if *events {
					if evs, err = db.Events(id); err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
				}
				if *format == "json" {
					if *events {
						obs, _ := vm.JSONLEvents(e.Stdout)
						for _, ev := range evs {
							obs(ev)
						}
						return exitOK
					}
					e.Stdout.Write(append(jsonIndent(det), '\n'))
					return exitOK
				}
				w := escapingWriter{e.Stdout}
				if err := det.WriteText(w); err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				also := sf.also()
				switch det.Status {
				case vm.RunWaiting:
					if next := det.ContinueText(fmt.Sprintf("obelisk resume%s %s", also, det.ID)); next != "" {
						fmt.Fprintf(w, "\n%s\n", next)
					} else {
						fmt.Fprintf(w, "\ndecide with obelisk approve%s %s (the run's process goes on by itself if it waits, with --wait; otherwise continue with obelisk resume%s %s, or a worker)\n", also, det.ID, also, det.ID)
					}
				case "running", vm.RunCanceled:
					fmt.Fprintf(w, "\nif its process has stopped, continue it with obelisk resume%s %s\n", also, det.ID)
				}
				if *events {
					fmt.Fprintf(w, "\nevents:\n")
					for _, ev := range evs {
						fmt.Fprintf(w, "  %s %-8s %-18s %s\n", ev.Time.Local().Format("15:04:05.000"), round(ev.Elapsed), ev.Type, durable.EventText(ev))
					}
				}
				return exitOK
			}
		},
	}
}
