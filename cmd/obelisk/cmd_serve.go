package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/console"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
)

// defaultServeAddr is where the console listens unless --addr says
// otherwise: loopback only.
const defaultServeAddr = "127.0.0.1:7878"

func serveCommand() *command {
	return &command{
		Name:    "serve",
		Args:    "",
		Summary: "serve a web console of the journaled runs: their graphs live, their steps, and the approvals to decide",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var sf stateFlags
			sf.register(fs)
			addr := fs.String("addr", defaultServeAddr, "the address to listen on; on one that is not loopback the console requires a token (--token, or one generated and printed)")
			token := fs.String("token", "", "the token the console requires of every request (at least 16 characters); required, and generated when not given, on an address that is not loopback")
			var cf checkFlags
			fs.Var((*stringList)(&cf.tf.Tools), "tools", "a tools file whose tools the plans checked on the console's plan page may call; may be repeated")
			fs.BoolVar(&cf.strict, "strict", false, "on the plan page, report an irreversible call without an approval gate as an error")
			cf.registerLimits(fs)
			maxParallel := fs.Int("max-parallel", 8, "the parallelism the plan page's estimates and dry runs assume")
			create := fs.Bool("create", false, "create the state directory and an empty journal when --state-dir holds none (a console started before the first run); without it such a directory is an error")
			worker := fs.Bool("worker", false, "also continue, in this process, every run of the journal whose decisions are made (in the console or elsewhere), as obelisk worker does, with the tools each run recorded and the grants of this command line; without it the console runs no tool")
			// The flags of the worker, as obelisk worker's (the grants are
			// the command line's, not the journal's), which only --worker
			// uses.
			var xf execFlags
			var gf permission.Flags
			var mf modelFlags
			wfs := flag.NewFlagSet("serve --worker", flag.ContinueOnError)
			gf.Register(wfs)
			mf.register(wfs)
			wfs.DurationVar(&xf.runTimeout, "run-timeout", 0, "the longest a continued run may take in this process; 0 sets no limit, and a run takes the limit it was started with")
			wfs.StringVar(&xf.evaluator, "evaluator", "", "judge the criteria in words of the continued runs: model or a rules file, as obelisk resume's --evaluator")
			wfs.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, "with --worker: "+f.Usage) })
			return func(ctx context.Context, args []string) int {
				if len(args) != 0 {
					return usageError(e, "serve", "expected no arguments, got %d", len(args))
				}
				if !*worker {
					if only := givenOf(fs, wfs); only != "" {
						return usageError(e, "serve", "%s is for --worker: without it the console continues no run and runs no tool", only)
					}
				}
				stop, status := cf.connect(ctx, e, "serve")
				if stop == nil {
					return status
				}
				defer stop()
				cfg, srcs, diags, err := cf.config(&planfile.Source{Name: "<console>"})
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if diags.HasErrors() {
					lang.WriteText(e.Stderr, srcs, diags, lang.TextOptions{})
					return exitInput
				}
				st, err := sf.openConsole(*create)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				defer st.Close()
				ln, err := net.Listen("tcp", *addr)
				if err != nil {
					e.Errorf("%v: give another address with --addr", err)
					return exitUsage
				}
				srv, err := console.New(st, ln, console.Options{Token: *token, Check: cfg, MaxParallel: *maxParallel,
					ErrorLog: log.New(e.Stderr, "obelisk serve: ", 0)})
				if err != nil {
					ln.Close()
					e.Errorf("%v", err)
					return exitUsage
				}
				fmt.Fprintln(e.Stdout, srv.URL())
				fmt.Fprintf(e.Stderr, "obelisk serve: the console of %s is at %s\n", st.Path(), srv.URL())
				switch {
				case *token == "" && srv.Token() != "":
					fmt.Fprintf(e.Stderr, "obelisk serve: %s is not a loopback address, so the console requires a token: it was generated and is in the address above; give --token to choose it\n", ln.Addr())
				case srv.Token() == "":
					fmt.Fprintf(e.Stderr, "obelisk serve: it answers only on this machine, at localhost; stop it with Ctrl-C\n")
				}
				stopWorker := func() error { return nil }
				if *worker {
					xf.stateFlags = sf
					xf.evalModel = mf.settings.EvalModel
					fmt.Fprintf(e.Stderr, "obelisk serve: it also continues the runs of %s as their decisions are made, with the grants of its command line\n", st.Path())
					// The worker has a journal of its own: it sees the
					// decisions made in the console as another process's.
					wst, err := durable.OpenExisting(sf.dir, durable.Options{})
					if err != nil {
						e.Errorf("%v", err)
						return exitUsage
					}
					defer wst.Close()
					wctx, cancel := context.WithCancel(ctx)
					done := make(chan error, 1)
					go func() { done <- continueDecided(wctx, e, "obelisk serve", wst, &xf, &gf, &mf) }()
					stopWorker = func() error {
						cancel()
						return <-done
					}
				}
				err = srv.Serve(ctx)
				if werr := stopWorker(); werr != nil {
					err = errors.Join(err, werr)
				}
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				return exitOK
			}
		},
	}
}

// givenOf returns the first flag given to fs that of names, as --NAME,
// or "".
func givenOf(fs, of *flag.FlagSet) string {
	given := ""
	fs.Visit(func(f *flag.Flag) {
		if given == "" && of.Lookup(f.Name) != nil {
			given = "--" + f.Name
		}
	})
	return given
}

// openConsole opens the journal the console shows. A state directory
// that holds no journal is an error unless create says to make one: a
// mistyped --state-dir, or serve started in the wrong directory, would
// otherwise show an empty console, and a run started with the intended
// directory would never appear in it.
func (sf *stateFlags) openConsole(create bool) (*durable.Store, error) {
	if create {
		return sf.open()
	}
	st, err := durable.OpenExisting(sf.dir, durable.Options{})
	if errors.Is(err, durable.ErrNoJournal) {
		return nil, fmt.Errorf("%w; give --create to start the console on an empty journal there", err)
	}
	return st, err
}
