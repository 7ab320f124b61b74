package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
)

func runCommand() *command {
	return &command{
		Name:    "run",
		Args:    "FILE",
		Summary: "run a plan: print its output (JSON) on stdout and a summary on stderr; the run is journaled in --state-dir",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var rf runFlags
			rf.register(fs)
			var xf execFlags
			xf.register(fs, true)
			var ff fillFlags
			ff.register(fs)
			mode := fs.String("mode", "", "lazy: check the whole plan, then run it; eager: run each statement as it arrives (FILE may be - for a stream, journaled as it arrives); default: the plan's mode")
			stepTimeout := fs.Duration("step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) or the evaluation of its arguments may take; a step's own timeout may only lower it")
			maxOutput := fs.Int("max-output", 16<<20, "the largest result a step may have, in bytes of JSON; a larger one fails the step")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "run", "expected one file, got %d", len(args))
				}
				if *mode != "" && *mode != "lazy" && *mode != "eager" {
					return usageError(e, "run", "unknown mode %q: use lazy or eager", *mode)
				}
				policy, err := xf.policy()
				if err != nil {
					return usageError(e, "run", "%v", err)
				}
				eager := *mode == "eager" || (*mode == "" && args[0] == "-")
				if eager {
					rf.noMocks = true // a stream picks up no mocks beside it, only --mocks
				}
				stop, st := rf.connectPlan(ctx, e, "run", args[0])
				if stop == nil {
					return st
				}
				defer stop()
				opts := vm.Options{MaxParallel: rf.maxParallel, StepTimeout: *stepTimeout, RunTimeout: max(xf.runTimeout, 0), MaxOutputBytes: *maxOutput, MaxCost: rf.limits.MaxCost}
				if eager {
					base := ""
					if args[0] != "-" {
						base = strings.TrimSuffix(strings.TrimSuffix(args[0], ".plan"), ".json")
					}
					fill, err := ff.settings(base)
					if err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
					return runEager(ctx, e, &rf, &xf, args[0], opts, policy, fill)
				}
				rf.hasEvaluator = xf.evaluator != ""
				p, status := rf.prepare(e, args[0])
				if p == nil {
					return status
				}
				if xf.replay == "" {
					if status := rf.preflight(e, p); status != exitOK {
						return status
					}
				}
				fill, err := ff.settings(p.base())
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if _, err := openFiller(e, fill, p.prog); err != nil && xf.replay == "" {
					// Refused before the run starts, as missing tools are.
					e.Errorf("%v", err)
					return exitUsage
				}
				if _, err := xf.openEvaluator(e, fill); err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				ts := toolSettings{Config: rf.set.Config(), Fill: fill}
				set, err := ts.record(opts, policy)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				set.Limits = rf.limits
				plan := &durable.Plan{Source: p.source, Program: p.prog, Input: p.input, Check: p.cfg}
				r, store, status := xf.create(e, plan, set)
				if r == nil {
					return status
				}
				if store != nil {
					defer store.Close()
				}
				return xf.execute(ctx, e, r, p.tools, nil, fill)
			}
		},
	}
}

// report prints a run's output on stdout and its summary on stderr.
// Stdout carries an output only when the run completed, the one case
// that exits 0: a run that failed, was canceled or rejected, or waits for
// a decision prints nothing there, and its summary says why. A run that
// ended partial (the policy let the rest run past a failure) has an
// output with null where the failed steps' results would be; it exits 1
// too, so that output is not on stdout either, where a script would take
// it for a result: the summary says where to read it (obelisk show RUN),
// or, for a run not journaled, prints it on stderr. runID, when the run
// is journaled, names it in the summary; also is the flags that name its
// journal in a suggested command.
func report(e *env, res *vm.Result, runID, also string) int {
	var output []byte
	if res.Status == vm.RunCompleted || res.Status == vm.RunPartial {
		b, err := marshalJSON(res.Output, true)
		if err != nil {
			fmt.Fprintf(e.Stderr, "obelisk run: encoding the output: %v\n", err)
			return exitUsage
		}
		output = append(b, '\n')
	}
	if res.Status == vm.RunCompleted {
		e.Stdout.Write(output)
	}
	if runID != "" {
		fmt.Fprintf(e.Stderr, "run %s ", runID)
	}
	fmt.Fprintln(e.Stderr, summary(res))
	printed := false
	for _, s := range res.Steps {
		if s.Status == vm.StatusFailed && !s.Handled {
			fmt.Fprintf(e.Stderr, "  %s failed: %s [%s]\n", s.ID, s.Error.Message, s.Error.Code)
			printed = true
		}
	}
	if res.Err != nil && res.Status != vm.RunCompleted && !(printed && res.Status != vm.RunCanceled && res.Status != durable.RunAborted) {
		if re := (*toolkit.Error)(nil); errors.As(res.Err, &re) {
			fmt.Fprintf(e.Stderr, "  %v [%s]\n", res.Err, re.Code)
		} else {
			fmt.Fprintf(e.Stderr, "  %v\n", res.Err)
		}
	}
	if res.Status == vm.RunPartial {
		if runID != "" {
			fmt.Fprintf(e.Stderr, "  its partial output (null for what failed) is not printed on stdout; read it with obelisk show%s %s\n", also, runID)
		} else {
			fmt.Fprintf(e.Stderr, "  its partial output (null for what failed), not printed on stdout:\n%s\n", indentLines(string(output)))
		}
	}
	if res.Status != vm.RunCompleted {
		return exitInput
	}
	return exitOK
}

func summary(res *vm.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s", res.Status, round(res.Makespan))
	if res.CriticalPath > 0 {
		fmt.Fprintf(&b, " (critical path estimate %s)", round(res.CriticalPath))
	}
	fmt.Fprintf(&b, ": %s, %d completed, %d skipped, %d failed", plural(len(res.Steps), "step"), res.Completed, res.Skipped, res.Failed)
	if res.Handled > 0 {
		fmt.Fprintf(&b, ", %d failed into a || slot", res.Handled)
	}
	fmt.Fprintf(&b, ", %s", plural(res.Retries, "retry"))
	if res.Replans > 0 {
		fmt.Fprintf(&b, ", %s", plural(res.Replans, "replan"))
	}
	switch {
	case res.Unjudged == 1:
		b.WriteString("; 1 criterion was not judged: no evaluator is configured (--evaluator)")
	case res.Unjudged > 1:
		fmt.Fprintf(&b, "; %d criteria were not judged: no evaluator is configured (--evaluator)", res.Unjudged)
	}
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// approveAll approves every request (--yes).
type approveAll struct{}

func (approveAll) Approve(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
	return vm.Decision{Approved: true, Note: "approved by --yes"}, nil
}

// terminalApprover asks on the terminal.
type terminalApprover struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
}

// Approve shows what is to be approved and reads the answer. The plan's
// text, messages and arguments may hold control characters that would
// erase or reorder what the person reads: they are shown escaped.
func (t *terminalApprover) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	if req.Diff != "" {
		fmt.Fprintf(&b, "\nThe plan was replanned; approve its new and changed steps (%s)?\n\n%s\n", strings.Join(req.Changed, ", "), indentLines(req.Diff))
	} else if req.Step == "" {
		fmt.Fprintf(&b, "\nThe plan asks for approval before it runs")
		if req.Message != "" {
			fmt.Fprintf(&b, ": %s", req.Message)
		}
		fmt.Fprintf(&b, "\n\n%s\n", indentLines(req.Plan))
	} else {
		fmt.Fprintf(&b, "\nStep %s (%s) asks for approval", req.Step, req.Tool)
		if req.Message != "" {
			fmt.Fprintf(&b, ": %s", req.Message)
		}
		args, _ := json.MarshalIndent(req.Args, "  ", "  ")
		fmt.Fprintf(&b, "\n  arguments: %s\n", lang.EscapeControlJSON(args))
		if len(req.Filled) > 0 {
			fmt.Fprintf(&b, "  filled in by a model: %s\n", strings.Join(req.Filled, ", "))
		}
	}
	io.WriteString(t.out, lang.EscapeControl(b.String()))
	for {
		fmt.Fprintf(t.out, "Approve? [y/n] ")
		type answer struct {
			line string
			err  error
		}
		ch := make(chan answer, 1)
		go func() {
			line, err := t.in.ReadString('\n')
			ch <- answer{line, err}
		}()
		select {
		case <-ctx.Done():
			return vm.Decision{}, ctx.Err()
		case a := <-ch:
			switch strings.ToLower(strings.TrimSpace(a.line)) {
			case "y", "yes":
				return vm.Decision{Approved: true, Note: "approved on the terminal"}, nil
			case "n", "no":
				return vm.Decision{Approved: false, Note: "rejected on the terminal"}, nil
			}
			if a.err != nil {
				return vm.Decision{}, fmt.Errorf("no answer on the terminal: %w", a.err)
			}
		}
	}
}

func indentLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ")
}

func dryRunCommand() *command {
	return &command{
		Name:    "dry-run",
		Args:    "FILE",
		Summary: "simulate a plan without calling any tool: the schedule, the makespan against the critical path, the final state and output, and the problems found",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var rf runFlags
			rf.register(fs)
			seed := fs.Uint64("seed", 1, "the seed of the invented values")
			symbolic := fs.Bool("symbolic", false, "invent no values: carry what is known only after the run as \"(known after run)\" and show each condition both ways")
			format := fs.String("format", "text", "text or json")
			return func(ctx context.Context, args []string) int {
				if len(args) != 1 {
					return usageError(e, "dry-run", "expected one file, got %d", len(args))
				}
				if *format != "text" && *format != "json" {
					return usageError(e, "dry-run", "unknown format %q: use text or json", *format)
				}
				stop, st := rf.connectPlan(ctx, e, "dry-run", args[0])
				if stop == nil {
					return st
				}
				defer stop()
				p, status := rf.prepare(e, args[0])
				if p == nil {
					return status
				}
				res, err := vm.Simulate(ctx, p.prog, p.input, vm.SimOptions{MaxParallel: rf.maxParallel, Seed: *seed, Mocks: p.mocks, Symbolic: *symbolic, MaxCost: rf.limits.MaxCost})
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk dry-run: %v\n", err)
					return exitInput
				}
				if *format == "json" {
					out := struct {
						*vm.SimResult
						Estimate *compiler.Analysis `json:"-"`
					}{SimResult: res}
					b, err := marshalJSON(out, true)
					if err != nil {
						fmt.Fprintf(e.Stderr, "obelisk dry-run: %v\n", err)
						return exitUsage
					}
					e.Stdout.Write(append(b, '\n'))
				} else {
					writeDryRun(escapingWriter{e.Stdout}, p, res, *seed, *symbolic, rf.maxParallel)
				}
				if len(res.Problems) > 0 {
					return exitInput
				}
				return exitOK
			}
		},
	}
}

// writeDryRun prints a dry run for people.
func writeDryRun(w io.Writer, p *prepared, res *vm.SimResult, seed uint64, symbolic bool, maxParallel int) {
	a := p.prog.Analysis
	how := fmt.Sprintf("values invented from the output types, seed %d", seed)
	if symbolic {
		how = "symbolic: values are known after the run"
	}
	if p.mocks != nil {
		how += ", mocked tools answered from the mocks file"
	}
	fmt.Fprintf(w, "dry run of %s (%s)\n\n", p.src.Name, how)
	fmt.Fprintf(w, "schedule (virtual time, up to %d steps at once):\n", maxParallel)
	for _, wv := range res.Waves {
		fmt.Fprintf(w, "  %8s  %s\n", round(wv.At), strings.Join(wv.Steps, ", "))
	}
	if len(res.Waves) == 0 {
		fmt.Fprintln(w, "  (no step runs)")
	}
	fmt.Fprintf(w, "\nmakespan %s", round(res.Makespan))
	if p.mocks != nil {
		fmt.Fprintf(w, " (with the mocks' latencies)")
	}
	fmt.Fprintf(w, "\nby the declared latencies: critical path %s; level by level %s; one call after another %s\n",
		round(a.CriticalLatency), round(a.LevelLatency), round(a.SequentialLatency))
	fmt.Fprintf(w, "\nestimate before running:\n")
	fmt.Fprintf(w, "  tool calls:  %g in all, %g on the longest path, %.2f on an average path\n", a.Calls.Total, a.Calls.Longest, a.Calls.Average)
	fmt.Fprintf(w, "  model calls: %g in all, %g on the longest path, %.2f on an average path\n", a.ModelCalls.Total, a.ModelCalls.Longest, a.ModelCalls.Average)
	if a.Tokens > 0 {
		fmt.Fprintf(w, "  tokens:      %d in all, %d on the critical path\n", a.Tokens, a.CriticalTokens)
	}
	fmt.Fprintf(w, "  critical-path depth %d steps, widest level %d steps, speed-up over one call after another %.2fx\n", a.Depth, a.Width, a.SpeedUp)
	var estimated []string
	for i, est := range a.Estimated {
		if est {
			estimated = append(estimated, p.prog.Steps[i].ID)
		}
	}
	if len(estimated) > 0 {
		fmt.Fprintf(w, "  (latency estimated, not declared, for %s)\n", strings.Join(estimated, ", "))
	}
	if len(res.Approvals) > 0 {
		fmt.Fprintf(w, "\napproval gates the run stops at:\n")
		for _, ap := range res.Approvals {
			fmt.Fprintf(w, "  %s\n", ap)
		}
	}
	writeFills(w, res.Fills)
	if len(res.Branches) > 0 {
		fmt.Fprintf(w, "\nchoices left to the run:\n")
		for _, b := range res.Branches {
			if b.Condition != "" {
				fmt.Fprintf(w, "  %s: when %s\n    if true:  %s\n    if false: %s\n", b.Step, b.Condition, b.IfTrue, b.IfFalse)
			} else {
				fmt.Fprintf(w, "  %s:\n    if it succeeds: %s\n    if it fails:    %s\n", b.Step, b.IfTrue, b.IfFalse)
			}
		}
	}
	fmt.Fprintf(w, "\nsteps:\n")
	for _, s := range res.Steps {
		line := fmt.Sprintf("  %-24s %-9s", s.ID, s.Status)
		switch {
		case s.Status == vm.StatusSkipped:
			line += " " + s.Reason
		case s.Error != nil:
			line += fmt.Sprintf(" %s [%s]", s.Error.Message, s.Error.Code)
		default:
			line += fmt.Sprintf(" at %s for %s", round(s.Start), round(s.Duration))
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "\nproblems:\n")
	if len(res.Problems) == 0 {
		fmt.Fprintf(w, "  none found\n")
	}
	for _, pr := range res.Problems {
		fmt.Fprintf(w, "  %s: %s [%s]\n", pr.Step, pr.Message, pr.Code)
	}
	fmt.Fprintf(w, "\nfinal state:\n%s\n", indentLines(jsonText(res.State)))
	fmt.Fprintf(w, "\noutput:\n%s\n", indentLines(jsonText(res.Output)))
}

// writeFills prints what a run leaves to a model: holes, known after the
// run, and tasks with their candidates.
func writeFills(w io.Writer, fills []vm.Fill) {
	if len(fills) == 0 {
		return
	}
	fmt.Fprintf(w, "\nleft to a model when the step runs:\n")
	for _, f := range fills {
		hint := ""
		if f.Hint != "" {
			hint = " (hint " + f.Hint + ")"
		}
		if f.Candidates != nil {
			fmt.Fprintf(w, "  %s: task %q%s: a model chooses one of %s; its result is of type %s\n", f.Step, f.Instruction, hint, strings.Join(f.Candidates, ", "), f.Type)
			continue
		}
		fmt.Fprintf(w, "  %s: argument %s of %s, of type %s: %q, known after the run\n", f.Step, f.Argument, f.Tool, f.Type, f.Instruction)
	}
}

func jsonText(v any) string {
	b, err := marshalJSON(v, true)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// progress shows a live line of a run's progress under what is logged on
// stderr, when stdout and stderr are terminals.
type progress struct {
	status  *statusWriter
	total   int
	mu      sync.Mutex
	counts  map[vm.EventType]int
	running int
	start   time.Time
	done    chan struct{}
	stopped sync.WaitGroup
}

func newProgress(e *env, total int) *progress {
	p := &progress{status: e.status, total: total, counts: map[vm.EventType]int{}, start: time.Now(), done: make(chan struct{})}
	if p.status == nil {
		return p
	}
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				p.status.Status("")
				return
			case <-t.C:
				p.status.Status(p.line())
			}
		}
	}()
	return p
}

func (p *progress) observe(ev vm.Event) {
	if strings.Contains(ev.Step, "/") {
		return // steps of sub-plans are counted in their caller
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case vm.StepStarted:
		p.running++
	case vm.StepCompleted, vm.StepFailed:
		if p.running > 0 {
			p.running--
		}
	}
	p.counts[ev.Type]++
}

func (p *progress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := p.counts[vm.StepCompleted] + p.counts[vm.StepFailed] + p.counts[vm.StepSkipped]
	return fmt.Sprintf("steps %d/%d done, %d running, %d failed  %s", done, p.total, p.running, p.counts[vm.StepFailed], time.Since(p.start).Round(100*time.Millisecond))
}

func (p *progress) stop() {
	if p.status != nil {
		close(p.done)
		p.stopped.Wait()
	}
}

// preflight says what keeps the tools the plan calls from running, before
// anything runs: the tools nothing implements (exit 1), then what the
// grants or the settings keep from running (exit 2).
func (rf *runFlags) preflight(e *env, p *prepared) int {
	problems := rf.set.Preflight(p.prog)
	var missing []string
	unimplemented := false
	for _, pr := range problems {
		if !pr.Unimplemented() {
			continue
		}
		unimplemented = true
		switch pr.Code {
		case toolset.FilesOff:
			fmt.Fprintf(e.Stderr, "obelisk run: %s\n", toolAdvice(pr))
		case toolset.Imported:
			fmt.Fprintf(e.Stderr, "obelisk run: %s\n", importedAdvice(pr, p.src.ImportRoot()))
		default:
			missing = append(missing, pr.Tool)
		}
	}
	if unimplemented {
		if len(missing) > 0 {
			fmt.Fprintf(e.Stderr, "obelisk run: no implementation for %s: answer them in a mocks file (--mocks, or %s.mocks.json beside the plan), or use a dry run (obelisk dry-run)\n",
				strings.Join(missing, ", "), strings.TrimSuffix(strings.TrimSuffix(relOrSelf(p.src.Name), ".plan"), ".json"))
		}
		return exitInput
	}
	if advice := toolProblems(problems); len(advice) > 0 {
		for _, a := range advice {
			fmt.Fprintf(e.Stderr, "obelisk run: %s\n", a)
		}
		return exitUsage
	}
	for _, w := range rf.set.WeakSecrets(p.prog) {
		fmt.Fprintf(e.Stderr, "obelisk run: warning: %s\n", w)
	}
	return exitOK
}
