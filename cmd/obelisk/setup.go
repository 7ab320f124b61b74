package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/stdlib"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// runFlags are the flags of the commands that run or simulate a plan.
type runFlags struct {
	checkFlags
	input       string
	mocks       string
	noMocks     bool
	files       string
	maxParallel int
	// allowCommands lets command tools (a "command" block in a tools
	// file) run programs.
	allowCommands bool
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
	fs.StringVar(&rf.files, "files", "", "a directory the built-in file.read and file.write tools may use (they are off without it)")
	fs.IntVar(&rf.maxParallel, "max-parallel", 8, "how many steps may run at once")
	fs.BoolVar(&rf.allowCommands, "allow-commands", false, "let command tools (a command block in a tools file) run their programs; they are off without it")
}

// registry returns the built-in tools and the MCP servers' tools.
func (rf *runFlags) registry() (*toolkit.Registry, error) {
	reg := toolkit.NewRegistry()
	if err := stdlib.Register(reg, stdlib.Options{FilesRoot: rf.files, Net: rf.grants.grants().net}); err != nil {
		return nil, err
	}
	if err := rf.registerMCP(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// prepared is a plan ready to run or simulate.
type prepared struct {
	*checked
	prog  *compiler.Program
	input map[string]any
	mocks *toolkit.Mocks
	reg   *toolkit.Registry
	cfg   compiler.Config
	// commandsOff is set when the plan's command tools may not run;
	// netOff when the built-in network tools may reach no host.
	commandsOff, netOff bool
	// source is what the program was compiled from, to build it again;
	// mocksText is the mocks file's text.
	source    *planfile.Source
	mocksPath string
	mocksText []byte
}

// prepare reads, checks and compiles a plan, with the built-in tools'
// signatures available, and reads its input and mocks. It prints
// diagnostics on stderr and returns the exit status when it cannot go on.
func (rf *runFlags) prepare(e *env, arg string) (*prepared, int) {
	reg, err := rf.registry()
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	c, prog, status := rf.compileOne(e, arg, compiler.Options{MaxParallel: rf.maxParallel})
	if prog == nil {
		return nil, status
	}
	p := &prepared{checked: c, prog: prog, reg: reg}
	p.source = rf.source(c)
	off, err := rf.registerBound(reg, c.bound)
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	p.commandsOff = len(off) > 0
	p.netOff = rf.grants.grants().net.Off()
	p.cfg, _, _, _ = rf.config(c.src)
	base := strings.TrimSuffix(strings.TrimSuffix(planPath(c.src), ".plan"), ".json")
	if p.input, err = rf.readInput(c, base); err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	if d := compiler.CheckInput(c.info, p.input); len(d) > 0 {
		// Known before the run: refused before any step has an effect.
		lang.WriteText(e.stderr, c.srcs, d, lang.TextOptions{})
		return nil, exitInput
	}
	mocksBase := base
	if planPath(c.src) == "" {
		mocksBase = ""
	}
	mocksPath := mocksFile(rf.mocks, rf.noMocks, mocksBase)
	if mocksPath != "" {
		b, err := os.ReadFile(mocksPath)
		if err != nil {
			e.errorf("reading mocks: %v", err)
			return nil, exitUsage
		}
		p.mocksPath, p.mocksText = mocksPath, b
		if p.mocks, err = toolkit.ParseMocks(b); err != nil {
			e.errorf("%s: %v", mocksPath, err)
			return nil, exitUsage
		}
		e.log.Info("answering tools from mocks", "file", mocksPath)
	}
	return p, exitOK
}

// base returns the plan's path without its extension, for the files
// beside it (NAME.fills.json); "" for a plan read from standard input.
func (p *prepared) base() string {
	if planPath(p.src) == "" {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(planPath(p.src), ".plan"), ".json")
}

// readInput reads --input, or NAME.input.json, or the input a JSON plan
// carries.
func (rf *runFlags) readInput(c *checked, base string) (map[string]any, error) {
	var raw []byte
	switch {
	case strings.HasPrefix(rf.input, "@"):
		b, err := os.ReadFile(rf.input[1:])
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		raw = b
	case rf.input != "":
		raw = []byte(rf.input)
	case planPath(c.src) != "":
		if b, err := os.ReadFile(base + ".input.json"); err == nil {
			raw = b
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading input: %w", err)
		}
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

// missingTools lists the tools the plan calls that neither the registry
// nor the mocks answer.
func (p *prepared) missingTools() []string {
	var out []string
	for _, name := range p.calledTools() {
		if !p.reg.Has(name) && !p.mocks.Has(name) {
			out = append(out, name)
		}
	}
	return out
}

// explainMissing says why some tools in missing have no implementation:
// a built-in file tool, which works only in a directory --files names, and
// a tool whose declaration comes from an imported file with an http or
// command block (only a tools file given with --tools is bound). It
// returns the other tools.
func (p *prepared) explainMissing(e *env, missing []string) []string {
	var rest []string
	for _, name := range missing {
		if name == "file.read" || name == "file.write" {
			fmt.Fprintf(e.stderr, "obelisk run: %s is off: the file tools work only in a directory the command line names: give --files DIR to let the plan read and write the files in DIR, or answer it in a mocks file\n", name)
			continue
		}
		t := p.prog.Info.Tools[name]
		if t == nil || t.File == "" || t.Plan != nil || t.Decl == nil || t.Decl.Binding == nil {
			rest = append(rest, name)
			continue
		}
		fmt.Fprintf(e.stderr, "obelisk run: no implementation for %s: its %s block is in %s, which the plan imports, and an imported file gives only signatures; give the file with --tools %s to call it, or answer it in a mocks file\n",
			name, t.Decl.Binding.Kind, t.File, shellQuote(filepath.Join(p.src.ImportRoot(), filepath.FromSlash(t.File))))
	}
	return rest
}

// calledTools lists the tools the plan and its sub-plans call (not the
// sub-plans), in the order of their first call.
func (p *prepared) calledTools() []string {
	var out []string
	for _, t := range p.prog.CalledTools() {
		out = append(out, t.Name)
	}
	return out
}

func relOrSelf(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return path
}
