package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/mcpserver"
	"github.com/obelisk-plan/obelisk/toolset"
	"github.com/obelisk-plan/obelisk/vm"
)

func mcpServerCommand() *command {
	return &command{
		Name:    "mcp-server",
		Args:    "",
		Summary: "serve plan mode to MCP clients, on stdio or over HTTP (--http): they find tools, check, dry-run and run plans",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			var rf runFlags
			rf.registerTools(fs)
			rf.registerLimits(fs)
			rf.registerRunTools(fs)
			fs.StringVar(&rf.mocks, "mocks", "", "a mocks file answering tool calls")
			var sf stateFlags
			sf.register(fs)
			name := fs.String("name", "", "the name of this server's runs: it reads and resumes only the runs it made under this name and with the same tools, grants and --yes (not obelisk run's, nor another server's)")
			yes := fs.Bool("yes", false, "approve every approval gate without asking anyone")
			noElicit := fs.Bool("no-elicitation", false, "never ask the person through the client: every approval gate waits for obelisk approve")
			approvalTimeout := fs.Duration("approval-timeout", 0, "decide an approval nobody has decided after this long (e.g. 24h), by --approval-default; 0 waits for ever")
			approvalDefault := fs.String("approval-default", "reject", "what an approval that times out becomes: reject or approve")
			stepTimeout := fs.Duration("step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) or the evaluation of its arguments may take; a step's own timeout may only lower it")
			runTimeout := fs.Duration("run-timeout", 0, "the longest a run may take in this server (e.g. 30m); 0 sets no limit")
			maxOutput := fs.Int("max-output", 16<<20, "the largest result a step may have, in bytes of JSON; a larger one fails the step")
			wait := fs.Duration("wait", 30*time.Second, "how long a call waits for a run before it answers that the run goes on (a call may ask for up to 10m)")
			httpAddr := fs.String("http", "", "serve MCP's streamable HTTP transport at http://ADDR/mcp instead of stdio; ADDR is a loopback address (127.0.0.1:8765, localhost:0) unless --allow-remote-clients. Clients send the header Authorization: Bearer TOKEN, the token "+envMCPToken+" gives, or else one the server makes and prints")
			remote := fs.Bool("allow-remote-clients", false, "let --http listen on an address other machines reach: anyone holding the token may then run plans with every tool and grant of this server, and answer its approvals")
			return func(ctx context.Context, args []string) int {
				if len(args) != 0 {
					return usageError(e, "mcp-server", "expected no arguments, got %d: the plans come from the client", len(args))
				}
				if *httpAddr != "" {
					if err := checkListenAddr(*httpAddr, *remote); err != nil {
						return usageError(e, "mcp-server", "--http %v", err)
					}
				}
				xf := execFlags{approvalTimeout: *approvalTimeout, approvalDefault: *approvalDefault}
				policy, err := xf.policy()
				if err != nil {
					return usageError(e, "mcp-server", "%v", err)
				}
				if *runTimeout < 0 {
					return usageError(e, "mcp-server", "--run-timeout must not be negative")
				}
				rf.mocksFile = rf.mocks
				stop, st := rf.connect(ctx, e, "mcp-server")
				if stop == nil {
					return st
				}
				defer stop()
				opts, status := rf.serverOptions(e)
				if status != exitOK {
					return status
				}
				// Any plan may call any of the tools: the warning obelisk
				// run gives of the tools a plan calls is given of them all.
				for _, w := range rf.set.AllWeakSecrets() {
					fmt.Fprintf(e.Stderr, "obelisk mcp-server: warning: %s\n", w)
				}
				vmo := vm.Options{MaxParallel: rf.maxParallel, StepTimeout: *stepTimeout, RunTimeout: *runTimeout, MaxOutputBytes: *maxOutput, MaxCost: rf.limits.MaxCost}
				if opts.settings, err = opts.tools.record(vmo, policy); err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				stateDir, err := filepath.Abs(sf.dir)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				store, err := (&stateFlags{dir: stateDir}).open()
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				defer store.Close()
				wd, _ := os.Getwd()
				srv, err := mcpserver.New(mcpserver.Options{
					Advise:         advise,
					Version:        moduleVersion(),
					Tools:          opts.files,
					Caller:         opts.caller,
					Preflight:      opts.preflight,
					Store:          store,
					Settings:       opts.settings,
					Limits:         rf.limits,
					MaxParallel:    rf.maxParallel,
					ApproveAll:     *yes,
					NoElicitation:  *noElicit,
					ApproveCommand: "obelisk approve --state-dir " + shellQuote(stateDir),
					Wait:           *wait,
					WorkDir:        wd,
					Name:           *name,
					Grants:         grantsRecord(rf.set, opts.settings.Caller),
					Log:            e.log.Named("mcp-server"),
				})
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				defer srv.Close()
				if *httpAddr == "" {
					e.log.Info("serving MCP on stdio", "journal", store.Path())
					if err := srv.RunStdio(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
						e.Errorf("%v", err)
						return exitUsage
					}
					return exitOK
				}
				return serveHTTP(ctx, e, srv, *httpAddr)
			}
		},
	}
}

// serverSetup is what the server is given of the command line's tools.
type serverSetup struct {
	files     []planfile.File
	caller    vm.Caller
	preflight func(*compiler.Program) []string
	tools     *toolSettings
	settings  durable.Settings
}

// serverOptions gives the server the tools the flags opened: the
// built-in tools, the tools files' (with their http and command blocks
// bound), the MCP servers', and the mocks.
func (rf *runFlags) serverOptions(e *env) (*serverSetup, int) {
	_, srcs, diags, err := rf.config(&planfile.Source{Name: "<mcp-server>"})
	if err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	if diags.HasErrors() {
		lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
		return nil, exitUsage
	}
	// The operator's tools are every tool a plan can call: those with a
	// binding are bound now, not per plan.
	if bd := rf.set.BindDiagnostics(); bd.HasErrors() {
		lang.WriteText(e.Stderr, srcs, bd, e.textOptions())
		return nil, exitUsage
	}
	caller, err := rf.set.Caller()
	if err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	preflight := func(prog *compiler.Program) []string {
		var problems []string
		for _, p := range rf.set.Preflight(prog) {
			if p.Unimplemented() {
				problems = append(problems, fmt.Sprintf("no implementation for %s: the server's tools cannot call it", p.Tool))
			} else {
				problems = append(problems, toolAdvice(p))
			}
		}
		return problems
	}
	// The built-in tools a plan cannot call here (the file tools without
	// --files, the network's without --allow-net) are left out of what
	// the model reads and the checker knows.
	files := slices.Clone(rf.read.tools)
	for i, f := range files {
		if f.Name == toolset.BuiltinsName {
			files[i].Text = string(rf.set.CallableBuiltins())
		}
	}
	return &serverSetup{files: files, caller: caller, preflight: preflight, tools: &toolSettings{Config: rf.set.Config()}}, exitOK
}

// moduleVersion is obelisk's module version, as the build records it.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
