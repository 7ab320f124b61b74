package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// testProgram has one command, echo, whose -n flag may come anywhere.
func testProgram() *Program[*Env] {
	echo := &Command[*Env]{
		Name:    "echo",
		Args:    "WORDS",
		Summary: "print the words",
		Setup: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) int {
			n := fs.Bool("n", false, "print no newline")
			return func(_ context.Context, args []string) int {
				if len(args) == 0 {
					return e.UsageError("no words")
				}
				fmt.Fprint(e.Stdout, strings.Join(args, " "))
				if !*n {
					fmt.Fprintln(e.Stdout)
				}
				return ExitOK
			}
		},
	}
	return &Program[*Env]{Name: "prog", Commands: []*Command[*Env]{echo}, Usage: func(w io.Writer) { fmt.Fprintln(w, "prog echoes.") }}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"echo", "a", "b"}, ExitOK, "a b\n", ""},
		{[]string{"echo", "a", "-n", "b"}, ExitOK, "a b", ""},
		{[]string{"echo", "--", "-n", "b"}, ExitOK, "-n b\n", ""},
		{nil, ExitUsage, "", "prog echoes.\n"},
		{[]string{"help"}, ExitOK, "prog echoes.\n", ""},
		{[]string{"--help"}, ExitOK, "prog echoes.\n", ""},
		{[]string{"echo", "-h"}, ExitOK, "usage: prog echo [flags] WORDS\n\nprint the words\n\nFlags:\n  -n\tprint no newline\n", ""},
		// Help of help is the program's usage, never a recursion.
		{[]string{"help", "help"}, ExitOK, "prog echoes.\n", ""},
		{[]string{"help", "-h"}, ExitOK, "prog echoes.\n", ""},
		{[]string{"-h", "help", "--help"}, ExitOK, "prog echoes.\n", ""},
		{[]string{"help", "ecko"}, ExitUsage, "", "prog: unknown command \"ecko\"\nDid you mean \"echo\"?\nRun 'prog help' for usage.\n"},
		{[]string{"help", "echo"}, ExitOK, "usage: prog echo [flags] WORDS\n\nprint the words\n\nFlags:\n  -n\tprint no newline\n", ""},
		{[]string{"echo"}, ExitUsage, "", "prog echo: no words\nRun 'prog echo -h' for usage.\n"},
		{[]string{"echo", "-x"}, ExitUsage, "", "prog echo: flag provided but not defined: -x\nRun 'prog echo -h' for usage.\n"},
		{[]string{"ecko"}, ExitUsage, "", "prog: unknown command \"ecko\"\nDid you mean \"echo\"?\nRun 'prog help' for usage.\n"},
		{[]string{"zzzzzz"}, ExitUsage, "", "prog: unknown command \"zzzzzz\"\nRun 'prog help' for usage.\n"},
		{[]string{"-n", "echo"}, ExitUsage, "", "prog: unknown flag -n: a command comes first, its flags after it\nRun 'prog help' for usage.\n"},
	} {
		var stdout, stderr strings.Builder
		code := testProgram().Run(context.Background(), tc.args, &Env{Stdout: &stdout, Stderr: &stderr})
		if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
			t.Errorf("prog %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// A program's own environment embeds an Env; its commands get it whole.
func TestEmbeddedEnv(t *testing.T) {
	type progEnv struct {
		Env
		greeting string
	}
	var got string
	p := &Program[*progEnv]{Name: "prog", Commands: []*Command[*progEnv]{{
		Name: "greet",
		Setup: func(_ *flag.FlagSet, e *progEnv) func(context.Context, []string) int {
			return func(context.Context, []string) int {
				got = e.greeting + " from " + e.Program + " " + e.Cmd
				e.Errorf("done")
				return ExitWaiting
			}
		},
	}}}
	var stderr strings.Builder
	e := &progEnv{Env: Env{Stderr: &stderr}, greeting: "hello"}
	if code := p.Run(context.Background(), []string{"greet"}, e); code != ExitWaiting {
		t.Errorf("exit %d, want %d", code, ExitWaiting)
	}
	if got != "hello from prog greet" || stderr.String() != "prog greet: done\n" {
		t.Errorf("got %q, stderr %q", got, stderr.String())
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	v := fs.String("v", "", "")
	pos, err := ParseInterspersed(fs, []string{"a", "-v", "1", "b", "--", "-c", "d"})
	if err != nil || *v != "1" || strings.Join(pos, ",") != "a,b,-c,d" {
		t.Errorf("got %q, -v %q, %v", pos, *v, err)
	}
}
