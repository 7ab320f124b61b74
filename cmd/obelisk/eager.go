package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/runtime"
	"github.com/obelisk-plan/obelisk/vm"
)

// runEager runs a plan in eager mode: statements are read from the file
// (or from standard input, as they arrive) and each step runs as soon as
// it is complete and checked.
func runEager(ctx context.Context, e *env, rf *runFlags, xf *execFlags, arg string, opts vm.Options) int {
	opts.Approver = xf.approver(e)
	events, closeEvents, err := xf.eventsFile()
	if err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitUsage
	}
	defer func() {
		if err := closeEvents(); err != nil {
			fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		}
	}()
	observers := []vm.Observer{vm.LogEvents(e.log.Named("run")), events}
	var r io.Reader = e.stdin
	name := "<stdin>"
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		r, name = f, arg
	}
	reg, err := rf.registry()
	if err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitUsage
	}
	src := &source{name: name, path: arg}
	if arg == "-" {
		src.path = ""
	}
	cfg, srcs, diags, err := rf.config(src)
	if err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitUsage
	}
	// Tools files given with --tools may bind tools; a streamed plan's
	// imports are read as it arrives, too late to bind theirs.
	var fromFiles []*compiler.Tool
	for _, d := range cfg.Tools {
		if d.Binding != nil {
			fromFiles = append(fromFiles, &compiler.Tool{Name: d.Name.Name, Doc: d.Doc(), Decl: d})
		}
	}
	bound, bd := bindTools(fromFiles, "", rf.grants.httpOptions())
	diags = append(diags, bd...)
	if diags.HasErrors() {
		lang.WriteText(e.stderr, srcs, diags, e.textOptions())
		return exitInput
	}
	if _, err := rf.registerBound(reg, bound); err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitUsage
	}
	var input map[string]any
	if rf.input != "" {
		c := &checked{src: src, file: &lang.File{}}
		if input, err = rf.readInput(c, ""); err != nil {
			fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
			return exitUsage
		}
	}
	var mocks *runtime.Mocks
	if rf.mocks != "" {
		b, err := os.ReadFile(rf.mocks)
		if err == nil {
			mocks, err = runtime.ParseMocks(b)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "obelisk run: mocks: %v\n", err)
			return exitUsage
		}
	}
	tools, closeTools, err := xf.wrapTools(runtime.Chain{Mocks: mocks, Registry: reg})
	if err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitUsage
	}
	defer func() {
		if err := closeTools(); err != nil {
			fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		}
	}()
	opts.Tools = tools
	opts.Filler = xf.wrapFiller(opts.Filler)
	opts.Check = cfg
	progress := newProgress(e, 0)
	opts.Observer = vm.Observers(append(observers, progress.observe)...)
	sp := lang.NewStreamParser(name, r)
	res, rejected, err := vm.RunStream(ctx, sp, input, opts)
	progress.stop()
	if len(rejected) > 0 {
		srcs[name] = sp.Source()
		lang.WriteText(e.stderr, srcs, rejected, e.textOptions())
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "obelisk run: %v\n", err)
		return exitInput
	}
	status := report(e, res, "")
	if rejected.HasErrors() {
		status = exitInput
	}
	return status
}
