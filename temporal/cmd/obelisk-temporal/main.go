// Command obelisk-temporal runs Obelisk plans on Temporal: `worker` runs
// the tools, with the flags of `obelisk run`; `run` starts a plan as a
// workflow and waits for its output; `approve` and `show` work on a run's
// workflow as on a journaled run.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/hashicorp/go-hclog"
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/vm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is a subcommand: its flags, and what it does with its
// arguments.
type command = cli.Command[*env]

// env is where a command writes.
type env = cli.Env

func commands() []*command {
	return []*command{
		{
			Name:    "worker",
			Summary: "run the tools of plans on a task queue, with the tool and permission flags of obelisk run",
			Setup:   setupWorker,
		},
		{
			Name:    "run",
			Args:    "FILE",
			Summary: "start a plan as a workflow and print its output (JSON) on stdout and a summary on stderr",
			Setup:   setupRun,
		},
		{
			Name:    "approve",
			Args:    "WORKFLOW [STEP]",
			Summary: "record the decision on an approval a run's workflow waits for; the run goes on by itself",
			Setup:   setupApprove,
		},
		{
			Name:    "show",
			Args:    "WORKFLOW",
			Summary: "print a run's workflow: its status, steps, approvals and output",
			Setup:   setupShow,
		},
		{
			Name:    "wait",
			Args:    "WORKFLOW",
			Summary: "follow a run's workflow as run does, until it ends or waits for a decision (re-attach to a run)",
			Setup:   setupWait,
		},
		{
			Name:    "cancel",
			Args:    "WORKFLOW",
			Summary: "ask a run's workflow to stop: it starts no more calls and ends canceled with what it had done",
			Setup:   setupCancel,
		},
		{
			Name:    "terminate",
			Args:    "WORKFLOW",
			Summary: "end a run's workflow at once, with no worker involved (calls under way are abandoned)",
			Setup:   setupTerminate,
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "obelisk-temporal runs Obelisk plans on Temporal.\n\nUsage:\n\n\tobelisk-temporal COMMAND [flags] [arguments]\n\nThe commands are:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-8s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nUse \"obelisk-temporal COMMAND -h\" for more about a command.\n")
}

// run runs the command args name, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := cli.Program[*env]{Name: "obelisk-temporal", Commands: commands(), Usage: usage}
	return p.Run(ctx, args, &env{Stdout: stdout, Stderr: stderr})
}

// connFlags say how to reach Temporal.
type connFlags struct {
	address, namespace, queue           string
	tlsCert, tlsKey, tlsCA, tlsServName string
	// logLevel is the least level of the Temporal SDK's log lines that
	// are written on stderr.
	logLevel string
}

// registerConn registers the flags that say how to reach Temporal.
func registerConn(fs *flag.FlagSet) *connFlags {
	cf := &connFlags{logLevel: "warn"}
	fs.StringVar(&cf.address, "temporal", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "the Temporal frontend, HOST:PORT; $TEMPORAL_ADDRESS sets the default")
	fs.StringVar(&cf.namespace, "namespace", envOr("TEMPORAL_NAMESPACE", "default"), "the Temporal namespace; $TEMPORAL_NAMESPACE sets the default")
	fs.StringVar(&cf.queue, "task-queue", "obelisk", "the task queue the workers of the plans poll")
	fs.StringVar(&cf.tlsCert, "tls-cert", "", "a client certificate (PEM) for mutual TLS; with --tls-key")
	fs.StringVar(&cf.tlsKey, "tls-key", "", "the client certificate's private key (PEM)")
	fs.StringVar(&cf.tlsCA, "tls-ca", "", "the certificate authorities (PEM) the server's certificate is checked against (default: the system's)")
	fs.StringVar(&cf.tlsServName, "tls-server-name", "", "the server name the server's certificate must have (default: the host of --temporal); any --tls flag turns TLS on")
	fs.Func("log-level", "the least level of the Temporal SDK's log lines written on stderr: error, warn, info, debug or trace (default warn)", func(v string) error {
		if hclog.LevelFromString(v) == hclog.NoLevel {
			return fmt.Errorf("%q: give error, warn, info, debug or trace", v)
		}
		cf.logLevel = v
		return nil
	})
	return cf
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// dial connects to Temporal.
func (cf *connFlags) dial(e *env) (client.Client, error) {
	opts := client.Options{HostPort: cf.address, Namespace: cf.namespace, Logger: hclog.New(&hclog.LoggerOptions{Name: "temporal", Output: e.Stderr, Level: hclog.LevelFromString(cf.logLevel)})}
	if cf.tlsCert != "" || cf.tlsKey != "" || cf.tlsCA != "" || cf.tlsServName != "" {
		cfg := &tls.Config{ServerName: cf.tlsServName, MinVersion: tls.VersionTLS12}
		if (cf.tlsCert == "") != (cf.tlsKey == "") {
			return nil, errors.New("--tls-cert and --tls-key go together: give both")
		}
		if cf.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(cf.tlsCert, cf.tlsKey)
			if err != nil {
				return nil, fmt.Errorf("the client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		if cf.tlsCA != "" {
			b, err := os.ReadFile(cf.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("the certificate authorities: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("the certificate authorities: %s holds no PEM certificate", cf.tlsCA)
			}
			cfg.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = cfg
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", cf.address, cf.namespace, err)
	}
	return c, nil
}

// setupWorker registers the flags of worker, which runs the tools of plans.
func setupWorker(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	var tf toolFlags
	tf.register(fs)
	var wo worker.Options
	fs.IntVar(&wo.MaxConcurrentActivityExecutionSize, "max-concurrent-activities", 0, "the most tool calls this worker makes at once, over all runs (0: the SDK's default, 1000)")
	fs.IntVar(&wo.MaxConcurrentWorkflowTaskExecutionSize, "max-concurrent-workflow-tasks", 0, "the most workflow tasks (engine passes) this worker runs at once (0: the SDK's default)")
	fs.DurationVar(&wo.StickyScheduleToStartTimeout, "sticky-timeout", 0, "how long a run's next workflow task waits for this worker, which holds the run in its cache, before another worker takes it (0: the SDK's default, 5s)")
	return func(ctx context.Context, args []string) int {
		if len(args) != 0 {
			return e.UsageError("expected no arguments, got %d", len(args))
		}
		if wo.MaxConcurrentActivityExecutionSize < 0 || wo.MaxConcurrentWorkflowTaskExecutionSize < 0 || wo.StickyScheduleToStartTimeout < 0 {
			return e.UsageError("--max-concurrent-activities, --max-concurrent-workflow-tasks and --sticky-timeout must not be negative")
		}
		cfg, stop, err := tf.config(ctx, e.Stderr)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		defer stop()
		c, err := cf.dial(e)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		defer c.Close()
		w, err := obtemporal.NewWorker(c, cf.queue, cfg, wo)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		fmt.Fprintf(e.Stderr, "obelisk-temporal worker: polling task queue %s of namespace %s at %s\n", cf.queue, cf.namespace, cf.address)
		if err := w.Run(interruptOn(ctx)); err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
}

// interruptOn returns a channel closed when ctx ends.
func interruptOn(ctx context.Context) <-chan any {
	ch := make(chan any)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch
}

// setupRun registers the flags of run, which starts a plan as a workflow and follows it.
func setupRun(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
	cf := registerConn(fs)
	input := fs.String("input", "", "the plan's input: JSON text, or @FILE (default: NAME.input.json beside the plan, if any)")
	id := fs.String("id", "", "the workflow ID (default: a new one)")
	detach := fs.Bool("detach", false, "print the workflow ID and return at once, without waiting for the output")
	yes := fs.Bool("yes", false, "approve every approval the run asks for")
	timeout := fs.Duration("run-timeout", 0, "bound the workflow's whole run (0: only the worker's bound)")
	return func(ctx context.Context, args []string) int {
		if len(args) != 1 {
			return e.UsageError("expected one file, got %d", len(args))
		}
		plan, in, err := readPlan(args[0], *input)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		c, err := cf.dial(e)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		defer c.Close()
		wid, err := obtemporal.StartRun(ctx, c, cf.queue, *id, obtemporal.Start{Plan: plan, Input: in, ApproveAll: *yes}, *timeout)
		if err != nil {
			e.Errorf("%v", err)
			return cli.ExitUsage
		}
		if *detach {
			fmt.Fprintln(e.Stdout, wid)
			return cli.ExitOK
		}
		fmt.Fprintf(e.Stderr, "workflow %s\n", wid)
		return follow(ctx, e, c, cf, wid)
	}
}

// readPlan reads a plan, the files it imports, and its input.
func readPlan(path, input string) (obtemporal.Plan, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return obtemporal.Plan{}, nil, fmt.Errorf("reading plan: %w", err)
	}
	p := obtemporal.Plan{Name: filepath.Base(path), Text: string(b), JSON: planfile.IsJSON(path, b)}
	// The files it imports go with it; the worker checks it against its
	// tools.
	src := planfile.Source{Name: p.Name, JSON: p.JSON, Text: p.Text}
	f, diags := src.Parse()
	c, _ := planfile.Build(f, diags, compiler.Config{Imports: compiler.ImportDir(filepath.Dir(path))}, compiler.Options{})
	p.Imports = planfile.Imports(c.Info)
	in, err := planfile.ReadInput(input, path)
	if err != nil {
		return p, nil, err
	}
	if len(in) > 0 && !json.Valid(in) {
		return p, nil, errors.New("the input is not JSON")
	}
	return p, in, nil
}

// follow waits for a run's workflow to end, or to wait for a decision,
// and reports it.
func follow(ctx context.Context, e *env, c client.Client, cf *connFlags, id string) int {
	fctx, stop := context.WithCancel(ctx)
	go warnNoWorker(fctx, e, c, cf, id)
	out, st, err := obtemporal.Follow(ctx, c, id)
	stop()
	if err != nil {
		e.Errorf("%v", err)
		fmt.Fprintf(e.Stderr, "the run goes on without this command: follow it again with obelisk-temporal wait%s %s\n", cf.also(), id)
		return cli.ExitUsage
	}
	if out != nil {
		return report(e, out)
	}
	for _, a := range st.Approvals {
		if !a.Decided {
			fmt.Fprintf(e.Stderr, "run %s waits for approval of %s: %s\n", id, cmpOr(a.Step, "the plan"), lang.EscapeControl(a.Message))
		}
	}
	fmt.Fprintf(e.Stderr, "decide with obelisk-temporal approve%s %s [STEP] (or --reject); it then goes on by itself\n", cf.also(), id)
	return cli.ExitWaiting
}

// noWorkerAfter is how long a run waits for a worker before the command
// says that none polls its task queue.
const noWorkerAfter = 10 * time.Second

// warnNoWorker says, once, on stderr, when no worker has polled the task
// queue of run id for a while: the run then waits, silently, until one
// does.
func warnNoWorker(ctx context.Context, e *env, c client.Client, cf *connFlags, id string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(noWorkerAfter):
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return
	}
	queue := desc.GetWorkflowExecutionInfo().GetTaskQueue()
	last, err := obtemporal.LastPoll(ctx, c, queue)
	if err != nil || (!last.IsZero() && time.Since(last) < time.Minute) || ctx.Err() != nil {
		return
	}
	fmt.Fprintf(e.Stderr, "no worker has polled task queue %s in the last minute: the run waits until one does (obelisk-temporal worker%s --task-queue %s)\n", queue, cf.also(), queue)
}

// also repeats the connection flags that are not the defaults, for the
// commands a message suggests.
func (cf *connFlags) also() string {
	var b strings.Builder
	if cf.address != envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233") {
		fmt.Fprintf(&b, " --temporal %s", cf.address)
	}
	if cf.namespace != envOr("TEMPORAL_NAMESPACE", "default") {
		fmt.Fprintf(&b, " --namespace %s", cf.namespace)
	}
	return b.String()
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// report prints a run's summary on stderr and, as obelisk run does, its
// output on stdout only when the run completed: a run that failed, was
// canceled or ended partial prints nothing there, and the partial output
// of one that ended partial (null for what failed) goes to stderr.
func report(e *env, out *obtemporal.Outcome) int {
	if out.Diagnostics != "" {
		io.WriteString(e.Stderr, out.Diagnostics)
	}
	var output []byte
	if len(out.Output) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, out.Output, "", "  ") == nil {
			b.WriteByte('\n')
			output = lang.EscapeControlJSON(b.Bytes())
		}
	}
	if out.Status == vm.RunCompleted {
		e.Stdout.Write(output)
	}
	s := out.Summary
	fmt.Fprintf(e.Stderr, "%s: %d steps, %d completed, %d skipped, %d failed", out.Status, s.Steps, s.Completed, s.Skipped, s.Failed)
	if s.Handled > 0 {
		fmt.Fprintf(e.Stderr, ", %d failed into a || slot", s.Handled)
	}
	fmt.Fprintf(e.Stderr, ", %d retries", s.Retries)
	if s.Replans > 0 {
		fmt.Fprintf(e.Stderr, ", %d replans", s.Replans)
	}
	fmt.Fprintf(e.Stderr, ", %d activities\n", s.Activities)
	for _, f := range out.Failed {
		fmt.Fprintf(e.Stderr, "  %s failed: %s [%s]\n", f.Step, lang.EscapeControl(f.Message), f.Code)
	}
	if out.Error != "" && out.Status != vm.RunCompleted && len(out.Failed) == 0 {
		fmt.Fprintf(e.Stderr, "  %s\n", lang.EscapeControl(out.Error))
	}
	if out.Status == vm.RunPartial && output != nil {
		fmt.Fprintf(e.Stderr, "  its partial output (null for what failed), not printed on stdout:\n  %s\n", strings.ReplaceAll(strings.TrimRight(string(output), "\n"), "\n", "\n  "))
	}
	if out.Status != vm.RunCompleted {
		return cli.ExitInput
	}
	return cli.ExitOK
}
