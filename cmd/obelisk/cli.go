package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/lang"
)

// Exit statuses.
const (
	exitOK    = 0 // success
	exitInput = 1 // the input has errors
	exitUsage = 2 // usage or I/O error
	// exitWaiting: the run is journaled and waits for a decision
	// (obelisk approve, then obelisk resume).
	exitWaiting = 3
)

// env is what a command may touch: the standard streams, the logger, and
// the terminal state of stdout.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// status, when standard output and standard error are terminals, is
	// stderr itself, able to keep a live status line under what is logged
	// (the progress of a run); nil otherwise.
	status *statusWriter
	log    hclog.Logger
	// getenv reads the environment (os.Getenv when nil).
	getenv func(string) string
	// cmd is the name of the command that runs, which prefixes its
	// errors; "" before one is known.
	cmd string
	// maxDiagnostics is --max-diagnostics: the most diagnostics of each
	// severity the command prints (0: all).
	maxDiagnostics int
}

// errorf reports an error on stderr, prefixed "obelisk CMD: " (or
// "obelisk: " before a command is known), the one form every error of
// the command line takes.
func (e *env) errorf(format string, args ...any) {
	prefix := "obelisk"
	if e.cmd != "" {
		prefix += " " + e.cmd
	}
	fmt.Fprintf(e.stderr, "%s: %s\n", prefix, fmt.Sprintf(format, args...))
}

// command is one subcommand.
type command struct {
	name    string
	args    string // the positional arguments, for the usage line
	summary string
	// setup declares the command's flags and returns the function that
	// runs it with the positional arguments.
	setup func(fs *flag.FlagSet, e *env) func(ctx context.Context, args []string) int
}

func commands() []*command {
	cmds := []*command{
		parseCommand(),
		fmtCommand(),
		checkCommand(),
		compileCommand(),
		graphCommand(),
		dryRunCommand(),
		runCommand(),
		explainCommand(),
		resumeCommand(),
		approveCommand(),
		runsCommand(),
		serveCommand(),
		showCommand(),
		planCommand(),
		applyCommand(),
		generateCommand(),
		agentCommand(),
		mcpServerCommand(),
		versionCommand(),
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Obelisk checks, compiles, simulates and runs plans of tool calls.\n\n")
	fmt.Fprintf(w, "Usage:\n\n\tobelisk <command> [flags] [files]\n\nCommands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nA file is a .plan file, a .json plan, or - for standard input.\n")
	fmt.Fprintf(w, "Run 'obelisk <command> -h' for the flags of a command.\n\n")
	fmt.Fprintf(w, "Results go to standard output: a run's output, JSON, fmt's plans, graphs, listings,\n")
	fmt.Fprintf(w, "and help asked for. Diagnostics, errors, logs and progress go to standard error; an error\n")
	fmt.Fprintf(w, "reads 'obelisk <command>: message'. The exit status is 0 on success, 1 when the input has\n")
	fmt.Fprintf(w, "errors or a run did not complete, 2 on a usage or I/O error, and 3 when a journaled run\n")
	fmt.Fprintf(w, "waits for a decision (obelisk approve, then obelisk resume).\n\n")
	fmt.Fprintf(w, "Set OBELISK_LOG=debug|info|warn|error to change how much is logged on standard error,\n")
	fmt.Fprintf(w, "and OBELISK_STATE_DIR to journal runs elsewhere than in .obelisk.\n")
}

// run dispatches to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, e *env) int {
	if e.getenv == nil {
		e.getenv = os.Getenv
	}
	// Everything on standard error is for people, and much of it quotes
	// plans and tools' results: it is escaped, whether or not it goes to
	// a terminal, since a log file is read on one later. It names the
	// flags the library's messages mean (advise).
	if _, ok := e.stderr.(advisingWriter); !ok {
		e.stderr = advisingWriter{escapingWriter{e.stderr}}
	}
	if e.log == nil {
		level := hclog.LevelFromString(e.getenv("OBELISK_LOG"))
		if level == hclog.NoLevel {
			level = hclog.Warn
		}
		e.log = hclog.New(&hclog.LoggerOptions{Name: "obelisk", Output: e.stderr, Level: level, IndependentLevels: true})
	}
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		// help CMD is CMD -h; help help, help -h and the like are help.
		if len(args) > 1 && !isHelp(args[1]) {
			return run(ctx, []string{args[1], "-h"}, e)
		}
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		e.cmd = c.name
		fs := flag.NewFlagSet("obelisk "+c.name, flag.ContinueOnError)
		// The flag package's own messages are left out: a bad flag is
		// reported in one line, and the usage only when asked for.
		fs.SetOutput(io.Discard)
		fs.Usage = func() {}
		exec := c.setup(fs, e)
		pos, err := parseInterspersed(fs, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(e.stdout, c, fs)
			return exitOK
		}
		if err != nil {
			return usageError(e, c.name, "%v", err)
		}
		return exec(ctx, pos)
	}
	if strings.HasPrefix(name, "-") {
		e.errorf("unknown flag %s: a command comes first, its flags after it", name)
		fmt.Fprintf(e.stderr, "Run 'obelisk help' for usage.\n")
		return exitUsage
	}
	e.errorf("unknown command %q", name)
	names := make([]string, 0)
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := lang.Closest(name, names); s != "" {
		fmt.Fprintf(e.stderr, "Did you mean %q?\n", s)
	}
	fmt.Fprintf(e.stderr, "Run 'obelisk help' for usage.\n")
	return exitUsage
}

// isHelp reports whether an argument asks for help rather than names a
// command.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// commandUsage prints a command's usage line, summary and flags.
func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	args := " " + c.args
	if hasFlags(fs) {
		args = " [flags]" + args
	}
	fmt.Fprintf(w, "usage: obelisk %s%s\n\n%s\n", c.name, strings.TrimRight(args, " "), c.summary)
	if hasFlags(fs) {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, as in `obelisk dry-run plan.plan --input x.json`.
// "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag argument, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage problem and returns the usage exit status.
func usageError(e *env, cmd, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "obelisk %s: %s\n", cmd, fmt.Sprintf(format, args...))
	fmt.Fprintf(e.stderr, "Run 'obelisk %s -h' for usage.\n", cmd)
	return exitUsage
}

// stringList is a flag that may be given several times.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// marshalJSON encodes v for a person or a program to read: indented or
// not, with <, > and & left as they are (encoding/json escapes them for
// HTML by default), the characters a terminal acts on escaped (see
// lang.EscapeControlJSON), and without a trailing newline.
func marshalJSON(v any, indent bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return lang.EscapeControlJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// escapingWriter writes text for people with the characters a terminal
// acts on escaped (lang.EscapeControl). Each Write is escaped by itself,
// so a character split between two writes shows as the escapes of its
// bytes: write whole lines.
type escapingWriter struct{ w io.Writer }

// Write writes p escaped, and returns len(p) when all of it is written.
func (e escapingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, lang.EscapeControl(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// statusWriter writes to a terminal what the program logs, and keeps a
// status line below it: a write clears the line first, and the next status
// update draws it again.
type statusWriter struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

// Write writes p after clearing the status line.
func (s *statusWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	return s.w.Write(p)
}

// Status replaces the status line with line; "" removes it.
func (s *statusWriter) Status(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	if line != "" {
		io.WriteString(s.w, line)
		s.shown = true
	}
}

func (s *statusWriter) clear() {
	if s.shown {
		io.WriteString(s.w, "\r\033[K")
		s.shown = false
	}
}
