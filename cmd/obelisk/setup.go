package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// runFlags are the flags of the commands that run or simulate a plan.
type runFlags struct {
	checkFlags
	input       string
	mocks       string
	noMocks     bool
	maxParallel int
}

func (rf *runFlags) register(fs *flag.FlagSet) {
	rf.checkFlags.register(fs)
	rf.checkFlags.registerLimits(fs)
	fs.StringVar(&rf.input, "input", "", "the plan's input: JSON text, or @FILE (default: NAME.input.json beside the plan, if any)")
	fs.StringVar(&rf.mocks, "mocks", "", "a mocks file answering tool calls (default: NAME.mocks.json beside the plan, if any)")
	fs.BoolVar(&rf.noMocks, "no-mocks", false, "do not pick up NAME.mocks.json")
	rf.registerRunTools(fs)
}

// registerRunTools adds the flags that let the tools run: the file tools'
// directory, how many steps at once, command tools.
func (rf *runFlags) registerRunTools(fs *flag.FlagSet) {
	rf.tf.RegisterRun(fs)
	fs.IntVar(&rf.maxParallel, "max-parallel", 8, "how many steps may run at once")
}

// connectPlan opens the tools for the plan arg names (see connect), the
// mocks among them: --mocks, else NAME.mocks.json beside the plan unless
// --no-mocks.
func (rf *runFlags) connectPlan(ctx context.Context, e *env, cmd, arg string) (func(), int) {
	base := ""
	if arg != "-" {
		base = strings.TrimSuffix(strings.TrimSuffix(arg, ".plan"), ".json")
	}
	rf.mocksFile = mocksFile(rf.mocks, rf.noMocks, base)
	return rf.connect(ctx, e, cmd)
}

// prepared is a plan ready to run or simulate.
type prepared struct {
	*checked
	prog  *compiler.Program
	input map[string]any
	mocks *toolkit.Mocks
	// tools are the tools the plan calls.
	tools toolkit.Chain
	cfg   compiler.Config
	// source is what the program was compiled from, to build it again.
	source *planfile.Source
}

// prepare reads, checks and compiles a plan, with the signatures of the
// tools connectPlan opened, and reads its input. It prints diagnostics on
// stderr and returns the exit status when it cannot go on.
func (rf *runFlags) prepare(e *env, arg string) (*prepared, int) {
	c, prog, status := rf.compileOne(e, arg, compiler.Options{MaxParallel: rf.maxParallel})
	if prog == nil {
		return nil, status
	}
	p := &prepared{checked: c, prog: prog}
	p.source = rf.source(c)
	p.cfg, _, _, _ = rf.config(c.src)
	var err error
	if p.input, err = rf.readInput(c); err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	if d := compiler.CheckInput(c.info, p.input); len(d) > 0 {
		// Known before the run: refused before any step has an effect.
		lang.WriteText(e.Stderr, c.srcs, d, lang.TextOptions{})
		return nil, exitInput
	}
	if p.tools, err = rf.set.Caller(); err != nil {
		e.Errorf("%v", err)
		return nil, exitUsage
	}
	p.mocks = p.tools.Mocks
	if p.mocks != nil {
		e.log.Info("answering tools from mocks", "file", rf.set.Config().MocksFile)
	}
	return p, exitOK
}

// base returns the plan's path without its extension, for the files
// beside it (NAME.fills.json); "" for a plan read from standard input.
func (p *prepared) base() string { return planfile.Base(planPath(p.src)) }

// readInput reads --input, or NAME.input.json beside the plan
// (planfile.ReadInput), or the input a JSON plan carries.
func (rf *runFlags) readInput(c *checked) (map[string]any, error) {
	raw, err := planfile.ReadInput(rf.input, planPath(c.src))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return c.file.InputValues, nil
	}
	if err := toolkit.CheckUniqueKeys(raw); err != nil {
		return nil, fmt.Errorf("the input: %w", err)
	}
	v, err := toolkit.DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("the input is not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the input must be a JSON object")
	}
	return m, nil
}

func relOrSelf(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return path
}
