package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// defaultStateDir is where runs are journaled unless OBELISK_STATE_DIR or
// --state-dir says otherwise.
func defaultStateDir() string {
	if d := os.Getenv("OBELISK_STATE_DIR"); d != "" {
		return d
	}
	return ".obelisk"
}

// stateFlags name the journal.
type stateFlags struct {
	dir string
}

func (sf *stateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.dir, "state-dir", defaultStateDir(), "the directory of the run journal (journal.db); OBELISK_STATE_DIR sets the default")
}

// open opens the journal, creating it if needed: for a run to start.
func (sf *stateFlags) open() (*durable.Store, error) {
	return durable.Open(sf.dir, durable.Options{})
}

// openRun opens the journal that holds the run named arg, creating
// nothing, and returns the run's ID: for the commands that read or decide
// on a journaled run. It reports the error itself and returns nil and the
// exit status: 1 when there is no journal or no such run.
func (sf *stateFlags) openRun(e *env, arg string) (*durable.Store, string, int) {
	st, err := durable.OpenExisting(sf.dir, durable.Options{})
	if errors.Is(err, durable.ErrNoJournal) {
		e.Errorf("no run %s: %v", arg, err)
		return nil, "", exitInput
	}
	if err != nil {
		e.Errorf("%v", err)
		return nil, "", exitUsage
	}
	id, err := st.Lookup(arg)
	if err != nil {
		st.Close()
		e.Errorf("%v", err)
		return nil, "", exitInput
	}
	return st, id, exitOK
}

// also returns the flag to repeat in a suggested command.
func (sf *stateFlags) also() string {
	if sf.dir == defaultStateDir() {
		return ""
	}
	return " --state-dir " + shellQuote(sf.dir)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// execFlags are the flags of the commands that start or resume a run.
type execFlags struct {
	stateFlags
	noJournal       bool
	runID           string
	approve, yes    bool
	events          string
	record, replay  string
	approvalTimeout time.Duration
	approvalDefault string
	runTimeout      time.Duration
	wait            bool
	waitTimeout     time.Duration
	// evaluator is --evaluator: "model", or a rules file; evalModel the
	// evaluator tier's model (--eval-model).
	evaluator, evalModel string
}

func (xf *execFlags) register(fs *flag.FlagSet, starts bool) {
	fs.BoolVar(&xf.approve, "approve", false, "ask on the terminal before each approval gate (the plan, steps marked approve)")
	fs.BoolVar(&xf.yes, "yes", false, "approve every approval gate without asking")
	fs.StringVar(&xf.events, "events", "", "write the run's events to this file, one JSON object per line")
	fs.StringVar(&xf.record, "record", "", "record every tool call and its result to this file (JSON lines)")
	fs.StringVar(&xf.replay, "replay", "", "answer tool calls from a recording made with --record, calling no tool; a call it has no answer for fails")
	fs.StringVar(&xf.evaluator, "evaluator", "", "judge the criteria in words (expect \"…\"): model (the evaluator tier of the model flags: --eval-model, else OBELISK_EVAL_MODEL or the provider's default) or a rules file (JSON: criterion text to pass, partial, fail or hitl; \"*\" for the rest); without it they are recorded as unjudged")
	fs.DurationVar(&xf.runTimeout, "run-timeout", 0, "the longest the run may take in this process (e.g. 30m), approvals asked on the terminal included: then its running steps are canceled and it stops (canceled, limit-exceeded); 0 sets no limit, and a resumed run takes the limit it was started with")
	fs.BoolVar(&xf.wait, "wait", false, "when the run waits for a decision, wait for it in this process, and go on once it is made elsewhere (obelisk approve, the console, an MCP client)")
	fs.DurationVar(&xf.waitTimeout, "wait-timeout", time.Hour, "with --wait, the longest to wait for the decisions; then the run is left waiting, for obelisk resume or a worker")
	if starts {
		// resume takes --eval-model with the other model flags.
		fs.StringVar(&xf.evalModel, "eval-model", "", "with --evaluator model: the model that judges (default: OBELISK_EVAL_MODEL, else the provider's cheaper model)")
		xf.registerJournal(fs)
	} else {
		xf.stateFlags.register(fs)
	}
}

// registerJournal adds the flags that say where and how a new run is
// journaled.
func (xf *execFlags) registerJournal(fs *flag.FlagSet) {
	xf.stateFlags.register(fs)
	fs.BoolVar(&xf.noJournal, "no-journal", false, "do not journal the run: it cannot be resumed, and an approval gate without --approve or --yes rejects")
	fs.StringVar(&xf.runID, "run-id", "", "name the run (default: a random ID)")
	fs.DurationVar(&xf.approvalTimeout, "approval-timeout", 0, "decide an approval nobody has decided after this long (e.g. 24h), by --approval-default; 0 waits for ever")
	fs.StringVar(&xf.approvalDefault, "approval-default", "reject", "what an approval that times out becomes: reject or approve")
}

// openEvaluator opens what --evaluator names: the evaluator tier of the
// model settings fs (those of the run's fills), or a rules file; nil
// without the flag.
func (xf *execFlags) openEvaluator(e *env, fs fill.Settings) (vm.Evaluator, error) {
	switch xf.evaluator {
	case "":
		return nil, nil
	case "model":
		s := fs.LLM()
		s.EvalModel = xf.evalModel
		if s.Model == "" {
			s.Model = s.EvalModel // only the evaluator's is needed
		}
		resolved, err := llm.Resolve(s, e.getenv)
		if err != nil {
			return nil, fmt.Errorf("--evaluator model: %w", err)
		}
		return agent.NewEvaluator(fill.OpenModel(resolved.ForEvaluator()), ""), nil
	}
	b, err := os.ReadFile(xf.evaluator)
	if err != nil {
		return nil, fmt.Errorf("--evaluator: %w (give model, or a rules file)", err)
	}
	rules, err := vm.ParseRules(b)
	if err != nil {
		return nil, fmt.Errorf("--evaluator %s: %w", xf.evaluator, err)
	}
	return rules, nil
}

func (xf *execFlags) policy() (durable.ApprovalPolicy, error) {
	switch xf.approvalDefault {
	case "reject", "approve":
	default:
		return durable.ApprovalPolicy{}, fmt.Errorf("unknown --approval-default %q: use reject or approve", xf.approvalDefault)
	}
	if xf.approvalTimeout < 0 {
		return durable.ApprovalPolicy{}, errors.New("--approval-timeout must not be negative")
	}
	if xf.wait && xf.waitTimeout <= 0 {
		return durable.ApprovalPolicy{}, errors.New("--wait-timeout must be positive")
	}
	return durable.ApprovalPolicy{Timeout: xf.approvalTimeout, Approve: xf.approvalDefault == "approve"}, nil
}

// approver returns the interactive approver the flags ask for, or nil.
func (xf *execFlags) approver(e *env) vm.Approver {
	switch {
	case xf.yes:
		return approveAll{}
	case xf.approve:
		return &terminalApprover{in: bufio.NewReader(e.Stdin), out: e.Stderr}
	}
	return nil
}

// closeReporting calls close and reports its error: for a deferred close.
func closeReporting(e *env, close func() error) {
	if err := close(); err != nil {
		e.Errorf("%v", err)
	}
}

// eventsFile returns the observer that writes events to the file named
// path, one JSON object a line (nil for ""), and the function that closes
// the file.
func eventsFile(path string) (vm.Observer, func() error, error) {
	if path == "" {
		return nil, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	obs, werr := vm.JSONLEvents(f)
	return obs, func() error { return errors.Join(werr(), f.Close()) }, nil
}

// mocksFile returns the mocks file to use: the one given, else
// NAME.mocks.json beside the plan (base is the plan's path without its
// extension) unless off; "" for none.
func mocksFile(given string, off bool, base string) string {
	if given != "" || off || base == "" {
		return given
	}
	if _, err := os.Stat(base + ".mocks.json"); err == nil {
		return base + ".mocks.json"
	}
	return ""
}

// source returns what a checked plan was compiled from.
func (rf *runFlags) source(c *checked) *planfile.Source {
	src := &planfile.Source{Name: c.src.Name, JSON: c.src.JSON, Text: c.src.Text, Dir: c.src.Dir, Strict: rf.strict, MaxParallel: rf.maxParallel}
	if wd, err := os.Getwd(); err == nil {
		src.WorkDir = wd
	}
	if rf.read != nil {
		src.Tools, src.Hints = rf.read.tools, rf.read.hints
	}
	src.Imports = planfile.Imports(c.info)
	return src
}

// create records a new run of a plan in the journal, made by the command
// line, or makes one that is not journaled with --no-journal. It reports
// problems itself and returns nil and the exit status when it cannot.
func (xf *execFlags) create(e *env, p *durable.Plan, set durable.Settings) (*durable.Run, *durable.Store, int) {
	set.Origin = &durable.Origin{By: durable.ByCLI}
	r, st, err := durable.Start(p, set, durable.StartOptions{Dir: xf.dir, NoJournal: xf.noJournal, ID: xf.runID})
	switch {
	case err != nil:
		e.Errorf("%v", err)
		return nil, nil, exitUsage
	case st == nil:
		e.log.Info("running without a journal", "run", r.ID)
	default:
		e.log.Info("journaling the run", "run", r.ID, "journal", st.Path())
	}
	return r, st, exitOK
}

// execute runs a run with its tools, and with what fs says fills its
// holes and tasks, as the flags say (--record or --replay, --events,
// --approve or --yes, --run-timeout), and reports how it went. The plan
// of a streamed run is read from text as it arrives; nil reads it from
// the journal, for a resumed run.
func (xf *execFlags) execute(ctx context.Context, e *env, r *durable.Run, chain toolkit.Chain, text io.Reader, fs fill.Settings) int {
	if xf.runTimeout < 0 {
		return usageError(e, e.Cmd, "--run-timeout must not be negative")
	}
	if xf.wait && xf.waitTimeout <= 0 {
		return usageError(e, e.Cmd, "--wait-timeout must be positive")
	}
	rec, err := fill.NewRecording(chain, xf.record, xf.replay)
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	defer closeReporting(e, rec.Close)
	events, closeEvents, err := eventsFile(xf.events)
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	defer closeReporting(e, closeEvents)
	total := 0
	if p := r.Plan().Program; p != nil {
		total = len(p.Steps)
	}
	progress := newProgress(e, total)
	observer := vm.Observers(vm.LogEvents(e.log.Named(e.Cmd)), showReplans(e), events, progress.observe)
	var filler vm.Filler
	switch {
	case xf.replay != "":
	case r.Plan().Program == nil:
		filler, err = openFiller(e, fs, nil)
	default:
		filler, err = openFiller(e, fs, r.Plan().Program)
	}
	if err != nil {
		progress.stop()
		e.Errorf("%v", err)
		return exitUsage
	}
	evaluator, err := xf.openEvaluator(e, fs)
	if err != nil {
		progress.stop()
		e.Errorf("%v", err)
		return exitUsage
	}
	o := durable.ExecOptions{Tools: rec.Tools(), Mocks: chain.Mocks, Approver: xf.approver(e), Observer: observer, RunTimeout: xf.runTimeout,
		Filler: rec.Filler(filler), MaxFills: fs.MaxFills, Evaluator: evaluator}
	var res *vm.Result
	var rejected lang.Diagnostics
	for {
		if r.Streamed() {
			res, rejected, err = r.ExecuteStream(ctx, text, o)
			if len(rejected) > 0 {
				lang.WriteText(e.Stderr, lang.Sources{r.Plan().Source.Name: r.Text()}, rejected, e.textOptions())
			}
		} else {
			res, err = r.Execute(ctx, o)
		}
		if err != nil || res.Status != vm.RunWaiting || !r.Journaled() || !xf.wait {
			break
		}
		next, status := xf.await(ctx, e, r, res)
		if next == nil {
			progress.stop()
			return status
		}
		r, text = next, nil // a streamed run reads its text from the journal
	}
	progress.stop()
	if m, ok := filler.(*fill.Model); ok && m.Usage().Requests > 0 {
		fmt.Fprintf(e.Stderr, "fills: tokens: %s\n", usageText(m.Usage()))
	}
	if err != nil {
		e.Errorf("%v", err)
		if res == nil {
			return exitInput
		}
	}
	if res.Status == vm.RunWaiting && r.Journaled() {
		return xf.waiting(e, r, res)
	}
	runID := ""
	if r.Journaled() {
		runID = r.ID
	}
	status := report(e, res, runID, xf.also())
	if rejected.HasErrors() {
		status = exitInput
	}
	return status
}

// await waits, with --wait, for the decisions a run waits for to be made
// by another process (obelisk approve, the console, an MCP client),
// saying on stderr what it waits for, and returns the run taken over
// again to go on. Without them within --wait-timeout, or when the run is
// canceled or taken over by another process, it says so and returns nil
// and the exit status.
func (xf *execFlags) await(ctx context.Context, e *env, r *durable.Run, res *vm.Result) (*durable.Run, int) {
	wctx, cancel := context.WithTimeout(ctx, xf.waitTimeout)
	defer cancel()
	also := xf.also()
	next, err := r.Await(wctx, func(pending []*durable.Approval) {
		for _, p := range pending {
			step := cmp.Or(p.Step, "plan")
			fmt.Fprintf(escapingWriter{e.Stderr}, "waiting for a decision on %s: obelisk approve%s %s %s, or the console\n", step, also, r.ID, step)
		}
	})
	var ce *durable.CanceledError
	var be *durable.BusyError
	switch {
	case err == nil:
		fmt.Fprintf(e.Stderr, "the decisions are made: run %s goes on\n", r.ID)
		return next, exitOK
	case errors.As(err, &ce):
		e.Errorf("%v", err)
		return nil, exitInput
	case errors.As(err, &be):
		fmt.Fprintf(e.Stderr, "run %s was taken over by process %d, which goes on with it: obelisk show%s %s says how it went\n", r.ID, be.PID, also, r.ID)
		return nil, exitWaiting
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		fmt.Fprintf(e.Stderr, "no decision within --wait-timeout %s\n", xf.waitTimeout)
	case ctx.Err() != nil:
	default:
		e.Errorf("%v", err)
	}
	return nil, xf.waiting(e, r, res)
}

// showReplans prints the diff of each replan on stderr.
func showReplans(e *env) vm.Observer {
	return func(ev vm.Event) {
		if ev.Type == vm.Replanned && ev.Diff != "" {
			fmt.Fprintf(e.Stderr, "replanned (%s): %s\n%s\n", ev.Message, ev.Reason, indentLines(ev.Diff))
		}
	}
}

// waiting tells the user what to run next for a run that waits.
func (xf *execFlags) waiting(e *env, r *durable.Run, res *vm.Result) int {
	fmt.Fprintln(e.Stderr, summary(res))
	saved(e, r, "run", xf.also())
	if policy := r.Settings().Approval; policy.Timeout > 0 {
		fmt.Fprintf(e.Stderr, "Without a decision, a resumed run takes the default after %s: %s.\n", policy.Timeout, policy)
	}
	return exitWaiting
}

// saved tells the user what a journaled run waits for, and the commands
// that decide and continue it (what is "run" or "goal"; also repeats the
// --state-dir flag).
func saved(e *env, r *durable.Run, what, also string) {
	pending, err := r.Pending()
	if err != nil {
		e.Errorf("%v", err)
	}
	for _, p := range pending {
		fmt.Fprintf(e.Stderr, "  waiting for approval of %s\n", durable.Describe(p))
	}
	fmt.Fprintf(e.Stderr, "run %s is saved, waiting for a decision. Record one with\n  obelisk approve%s %s          (or --reject, --note TEXT)\nthen continue the %s with\n  obelisk resume%s %s\n", r.ID, also, r.ID, what, also, r.ID)
}
