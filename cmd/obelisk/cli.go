package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"

	"github.com/obelisk-plan/obelisk/internal/cli"
	"github.com/obelisk-plan/obelisk/lang"
)

// The exit statuses (cli).
const (
	exitOK      = cli.ExitOK
	exitInput   = cli.ExitInput
	exitUsage   = cli.ExitUsage
	exitWaiting = cli.ExitWaiting // obelisk approve, then obelisk resume
)

// env is what a command may touch: the standard streams and the command's
// name (cli.Env), the logger, and the terminal state of stdout.
type env struct {
	cli.Env
	// status, when standard output and standard error are terminals, is
	// stderr itself, able to keep a live status line under what is logged
	// (the progress of a run); nil otherwise.
	status *statusWriter
	log    hclog.Logger
	// getenv reads the environment (os.Getenv when nil).
	getenv func(string) string
	// maxDiagnostics is --max-diagnostics: the most diagnostics of each
	// severity the command prints (0: all).
	maxDiagnostics int
}

// command is one subcommand.
type command = cli.Command[*env]

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
		lspCommand(),
		versionCommand(),
		workerCommand(),
		cancelCommand(),
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Obelisk checks, compiles, simulates and runs plans of tool calls.\n\n")
	fmt.Fprintf(w, "Usage:\n\n\tobelisk <command> [flags] [files]\n\nCommands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-10s %s\n", c.Name, c.Summary)
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
	if _, ok := e.Stderr.(advisingWriter); !ok {
		e.Stderr = advisingWriter{escapingWriter{e.Stderr}}
	}
	if e.log == nil {
		level := hclog.LevelFromString(e.getenv("OBELISK_LOG"))
		if level == hclog.NoLevel {
			level = hclog.Warn
		}
		e.log = hclog.New(&hclog.LoggerOptions{Name: "obelisk", Output: e.Stderr, Level: level, IndependentLevels: true})
	}
	p := cli.Program[*env]{Name: "obelisk", Commands: commands(), Usage: usage}
	return p.Run(ctx, args, e)
}

// usageError prints a usage problem of the command cmd and returns the
// usage exit status.
func usageError(e *env, cmd, format string, args ...any) int {
	c := e.Env
	c.Program, c.Cmd = "obelisk", cmd
	return c.UsageError(format, args...)
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

// formatFlag registers --format of the commands that print runs: text or
// json.
func formatFlag(fs *flag.FlagSet) *string { return fs.String("format", "text", "text or json") }

// badFormat reports a --format other than text or json, and returns the
// exit status: exitOK for those two.
func badFormat(e *env, format string) int {
	if format == "text" || format == "json" {
		return exitOK
	}
	return usageError(e, e.Cmd, "unknown format %q: use text or json", format)
}

func jsonIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf("%q", err.Error()))
	}
	return lang.EscapeControlJSON(b)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)} }

// row writes a row. Its cells are escaped (lang.EscapeControl) before
// they are aligned, so that escapes do not shift the columns.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = lang.EscapeControl(c)
	}
	fmt.Fprintln(t.tw, strings.TrimRight(strings.Join(cells, "\t"), "\t"))
}

func (t *table) flush() { t.tw.Flush() }
