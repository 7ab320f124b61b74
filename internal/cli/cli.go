// Package cli is the command framework of the obelisk and obelisk-temporal
// programs: their commands, the streams a command writes to, the one form
// of their errors, the dispatch of a command line to a command, and the
// exit statuses.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

// The exit statuses of the programs.
const (
	ExitOK    = 0 // success
	ExitInput = 1 // the input has errors, or a run did not complete
	ExitUsage = 2 // usage or I/O error
	// ExitWaiting: the run waits for a decision (an approval).
	ExitWaiting = 3
)

// Env is what every command may touch: the standard streams, and the
// names of the program and the command that run, which prefix its errors.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Program is the program's name ("obelisk"); Cmd the command's, ""
	// before one is known. Run sets both.
	Program, Cmd string
}

// Base returns e itself, so that a program's own environment, a struct
// embedding an Env, is an Environ.
func (e *Env) Base() *Env { return e }

// Errorf reports an error on Stderr, prefixed "PROGRAM CMD: " (or
// "PROGRAM: " before a command is known), the one form every error of the
// command line takes.
func (e *Env) Errorf(format string, args ...any) {
	prefix := e.Program
	if e.Cmd != "" {
		prefix += " " + e.Cmd
	}
	fmt.Fprintf(e.Stderr, "%s: %s\n", prefix, fmt.Sprintf(format, args...))
}

// UsageError reports a usage problem of the command, says how to get its
// usage, and returns ExitUsage.
func (e *Env) UsageError(format string, args ...any) int {
	e.Errorf(format, args...)
	fmt.Fprintf(e.Stderr, "Run '%s %s -h' for usage.\n", e.Program, e.Cmd)
	return ExitUsage
}

// Environ is the environment a program's commands get: an *Env, or a
// pointer to a struct that embeds an Env and adds the program's own.
type Environ interface {
	// Base returns the Env of the environment.
	Base() *Env
}

// Command is one command of a program, run in environments of type E.
type Command[E Environ] struct {
	Name string
	Args string // the positional arguments, for the usage line
	// Summary is one line saying what the command does.
	Summary string
	// Setup declares the command's flags and returns the function that
	// runs it with the positional arguments and returns its exit status.
	Setup func(fs *flag.FlagSet, e E) func(ctx context.Context, args []string) int
}

// Program is a program of commands.
type Program[E Environ] struct {
	// Name is the program's name, as a user types it.
	Name string
	// Commands are its commands, in the order its usage lists them.
	Commands []*Command[E]
	// Usage writes what the program does and its commands, for help.
	Usage func(w io.Writer)
}

// Run runs the command args name with the rest of args and returns the
// exit status. help, -h and --help print the program's usage on Stdout;
// help CMD and CMD -h the command's. No command, an unknown one or bad
// flags are usage errors. The command's flags may come before, between or
// after its arguments.
func (p *Program[E]) Run(ctx context.Context, args []string, e E) int {
	b := e.Base()
	b.Program = p.Name
	if len(args) == 0 {
		p.Usage(b.Stderr)
		return ExitUsage
	}
	name := args[0]
	if isHelp(name) {
		// help CMD is CMD -h; help help, help -h and the like are help.
		if len(args) > 1 && !isHelp(args[1]) {
			return p.Run(ctx, []string{args[1], "-h"}, e)
		}
		p.Usage(b.Stdout)
		return ExitOK
	}
	for _, c := range p.Commands {
		if c.Name != name {
			continue
		}
		b.Cmd = c.Name
		fs := flag.NewFlagSet(p.Name+" "+c.Name, flag.ContinueOnError)
		// The flag package's own messages are left out: a bad flag is
		// reported in one line, and the usage only when asked for.
		fs.SetOutput(io.Discard)
		fs.Usage = func() {}
		exec := c.Setup(fs, e)
		pos, err := ParseInterspersed(fs, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			p.commandUsage(b.Stdout, c, fs)
			return ExitOK
		}
		if err != nil {
			return b.UsageError("%v", err)
		}
		return exec(ctx, pos)
	}
	if strings.HasPrefix(name, "-") {
		b.Errorf("unknown flag %s: a command comes first, its flags after it", name)
		fmt.Fprintf(b.Stderr, "Run '%s help' for usage.\n", p.Name)
		return ExitUsage
	}
	b.Errorf("unknown command %q", name)
	names := make([]string, 0, len(p.Commands))
	for _, c := range p.Commands {
		names = append(names, c.Name)
	}
	if s := lang.Closest(name, names); s != "" {
		fmt.Fprintf(b.Stderr, "Did you mean %q?\n", s)
	}
	fmt.Fprintf(b.Stderr, "Run '%s help' for usage.\n", p.Name)
	return ExitUsage
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
func (p *Program[E]) commandUsage(w io.Writer, c *Command[E], fs *flag.FlagSet) {
	args := " " + c.Args
	if hasFlags(fs) {
		args = " [flags]" + args
	}
	fmt.Fprintf(w, "usage: %s %s%s\n\n%s\n", p.Name, c.Name, strings.TrimRight(args, " "), c.Summary)
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

// ParseInterspersed parses flags that may come before, between or after
// the positional arguments, as in `obelisk dry-run plan.plan --input
// x.json`, and returns the positional arguments. "--" ends the flags.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
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
