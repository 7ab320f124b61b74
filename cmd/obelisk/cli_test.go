package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
)

// TestHelpOnStdout: help asked for (obelisk -h, obelisk help, obelisk
// help CMD, obelisk CMD -h) goes to stdout and exits 0, for every
// command.
func TestHelpOnStdout(t *testing.T) {
	// help of help (which once recursed until the stack overflowed) is
	// the usage too.
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "help"}, {"help", "-h"}, {"-h", "--help"}, {"help", "help", "help"}} {
		code, stdout, stderr := runHere(t, "", args...)
		if code != exitOK || !strings.HasPrefix(stdout, "Obelisk checks") || stderr != "" {
			t.Errorf("obelisk %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, c := range commands() {
		for _, args := range [][]string{{c.Name, "-h"}, {c.Name, "--help"}, {"help", c.Name}} {
			code, stdout, stderr := runHere(t, "", args...)
			if code != exitOK || !strings.HasPrefix(stdout, "usage: obelisk "+c.Name) || stderr != "" {
				t.Errorf("obelisk %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
}

// TestBadFlagOneLine: a flag a command does not have, or a flag's bad
// value, is one line prefixed with the command, then a pointer to -h;
// exit 2, nothing on stdout.
func TestBadFlagOneLine(t *testing.T) {
	for _, c := range commands() {
		code, stdout, stderr := runHere(t, "", c.Name, "--no-such-flag", "x")
		want := fmt.Sprintf("obelisk %s: flag provided but not defined: -no-such-flag\nRun 'obelisk %s -h' for usage.\n", c.Name, c.Name)
		if code != exitUsage || stdout != "" || stderr != want {
			t.Errorf("obelisk %s --no-such-flag: exit %d\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", c.Name, code, stdout, stderr, want)
		}
	}
	code, _, stderr := runHere(t, "", "check", "--max-steps", "many", "x.plan")
	want := "obelisk check: invalid value \"many\" for flag -max-steps: parse error\nRun 'obelisk check -h' for usage.\n"
	if code != exitUsage || stderr != want {
		t.Errorf("a bad value: exit %d\n%s\nwant:\n%s", code, stderr, want)
	}
	code, _, stderr = runHere(t, "", "--bogus")
	if code != exitUsage || !strings.HasPrefix(stderr, "obelisk: unknown flag --bogus: a command comes first") {
		t.Errorf("a flag before any command: exit %d\n%s", code, stderr)
	}
}

// TestOneErrorPrefix: every command reports an error as "obelisk CMD:
// message" on stderr, never through the logger, with nothing on stdout;
// "obelisk: message" only before a command is known.
func TestOneErrorPrefix(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("OBELISK_STATE_DIR", filepath.Join(dir, "state"))
	missing := "nothing-here.plan"
	cases := []struct {
		args []string
		exit int
	}{
		{[]string{"parse", missing}, exitUsage},
		{[]string{"fmt", missing}, exitUsage},
		{[]string{"check", missing}, exitUsage},
		{[]string{"check", "--format", "json", missing}, exitUsage},
		{[]string{"compile", missing}, exitUsage},
		{[]string{"graph", missing}, exitUsage},
		{[]string{"dry-run", missing}, exitUsage},
		{[]string{"run", missing}, exitUsage},
		{[]string{"run", "--mode", "eager", missing}, exitUsage},
		{[]string{"plan", missing}, exitUsage},
		{[]string{"apply", "nothing-here.planfile"}, exitUsage},
		{[]string{"explain", "no-such-code"}, exitUsage},
		{[]string{"generate", "--goal", "x"}, exitUsage},
		{[]string{"agent", "--goal", "x"}, exitUsage},
		{[]string{"version", "extra"}, exitUsage},
		{[]string{"runs", "extra"}, exitUsage},
		{[]string{"show", "r1"}, exitInput},
		{[]string{"resume", "r1"}, exitInput},
		{[]string{"approve", "r1"}, exitInput},
	}
	for _, c := range cases {
		code, stdout, stderr := runHere(t, "", c.args...)
		prefix := "obelisk " + c.args[0] + ": "
		if code != c.exit || stdout != "" || !strings.HasPrefix(stderr, prefix) || strings.Contains(stderr, "[ERROR]") {
			t.Errorf("obelisk %s: exit %d (want %d), want an error that starts %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.exit, prefix, stdout, stderr)
		}
	}
	// A mocks file that does not read is an error of the command that
	// reads it.
	writeFile(t, "p.plan", "tool f() -> int pure\nf() -> †state.a\noutput †state.a\n")
	writeFile(t, "bad.mocks.json", `{"f": {"sequnce": []}}`)
	for _, cmd := range []string{"run", "dry-run", "plan"} {
		code, _, stderr := runHere(t, "", cmd, "--mocks", "bad.mocks.json", "p.plan")
		want := `obelisk ` + cmd + `: bad.mocks.json: mock of f: unknown key "sequnce": a mock has the keys result, results, sequence, cases, error, latency`
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("obelisk %s with a bad mocks file: exit %d\n%s\nwant %s", cmd, code, stderr, want)
		}
	}
	code, _, stderr := runHere(t, "", "nosuch")
	if code != exitUsage || !strings.HasPrefix(stderr, "obelisk: unknown command \"nosuch\"\n") {
		t.Errorf("an unknown command: exit %d\n%s", code, stderr)
	}
}

// TestCheckStreams: check's text diagnostics go to stderr, as go vet's
// do, with nothing on stdout; --format json is a result, on stdout.
func TestCheckStreams(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "p.plan")
	writeFile(t, plan, "issueRefnd(amount: 5) -> †state.receipt\n")
	code, stdout, stderr := runHere(t, "", "check", plan)
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "error: unknown tool issueRefnd") {
		t.Errorf("check: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runHere(t, "", "check", "--format", "json", plan)
	var report struct {
		OK          bool
		Diagnostics []struct{ Code string }
	}
	if err := json.Unmarshal([]byte(stdout), &report); code != exitInput || err != nil || stderr != "" || report.OK || len(report.Diagnostics) != 1 || report.Diagnostics[0].Code != "unknown-tool" {
		t.Errorf("check --format json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
}

// TestVersion: version prints the module and Go versions on stdout, and
// the source revision when the build recorded one.
func TestVersion(t *testing.T) {
	code, stdout, stderr := runHere(t, "", "version")
	if code != exitOK || !strings.HasPrefix(stdout, "obelisk ") || !strings.Contains(stdout, "(go1.") || stderr != "" {
		t.Errorf("version: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}}, "obelisk v0.4.0 (go1.26.8)\n"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "72958d5f"}, {Key: "vcs.time", Value: "2026-11-24T08:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "obelisk (devel) (go1.26.8)\nrevision 72958d5f (2026-11-24T08:00:00Z, modified)\n"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "72958d5f"}, {Key: "vcs.modified", Value: "false"}}},
			"obelisk (devel) (go1.26.8)\nrevision 72958d5f\n"},
		// Neither a version nor a revision: said plainly.
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "-buildvcs", Value: "false"}}},
			"obelisk (devel) (go1.26.8)\nthis build recorded no module version and no source revision\n"},
		{debug.BuildInfo{GoVersion: "go1.26.8"}, "obelisk (devel) (go1.26.8)\nthis build recorded no module version and no source revision\n"},
	} {
		var b strings.Builder
		writeVersion(&b, &c.info)
		if b.String() != c.want {
			t.Errorf("writeVersion:\n got %q\nwant %q", b.String(), c.want)
		}
	}
}

// TestReadOnlyCommandsCreateNothing: runs, show, approve and resume, in
// a directory where no run was journaled, say so and create nothing: no
// state directory, no journal.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("OBELISK_STATE_DIR", "") // the default, .obelisk
	code, stdout, stderr := runHere(t, "", "runs")
	if code != exitOK || stdout != "" || stderr != "no runs are journaled in .obelisk\n" {
		t.Errorf("runs: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runHere(t, "", "runs", "--format", "json")
	if code != exitOK || stdout != "[]\n" {
		t.Errorf("runs --format json: exit %d\n%s", code, stdout)
	}
	for _, cmd := range []string{"show", "approve", "resume"} {
		code, stdout, stderr := runHere(t, "", cmd, "r1")
		want := "obelisk " + cmd + ": no run r1: no journal in .obelisk: no run has been journaled there (--state-dir or OBELISK_STATE_DIR names another directory)\n"
		if code != exitInput || stdout != "" || stderr != want {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant:\n%s", cmd, code, stdout, stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".obelisk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a command that only reads made the state directory: %v", err)
	}
}

// TestServeNeedsAJournal: serve with a --state-dir that holds no journal
// (a typo, the wrong directory) is an error naming the directory, exit 2,
// and creates nothing; --create starts it on a new, empty journal.
func TestServeNeedsAJournal(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sd := range []string{"nosuch", filepath.Join("nosuch", "deeper"), "empty"} {
		code, stdout, stderr := runHere(t, "", "serve", "--addr", "127.0.0.1:0", "--state-dir", sd)
		want := "obelisk serve: no journal in " + sd + ": no run has been journaled there (--state-dir or OBELISK_STATE_DIR names another directory); give --create to start the console on an empty journal there\n"
		if code != exitUsage || stdout != "" || stderr != want {
			t.Errorf("serve --state-dir %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant:\n%s", sd, code, stdout, stderr, want)
		}
	}
	if _, err := os.Stat("nosuch"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve made the state directory: %v", err)
	}
	if entries, err := os.ReadDir("empty"); err != nil || len(entries) != 0 {
		t.Errorf("serve wrote into an empty state directory: %v %v", entries, err)
	}
	if testing.Short() {
		return
	}
	startServe(t, dir, "--state-dir", "new", "--create")
	if _, err := os.Stat(filepath.Join(dir, "new", "journal.db")); err != nil {
		t.Errorf("serve --create made no journal: %v", err)
	}
}

// TestApplyWaits: apply, with nobody to ask at a step's approval gate,
// saves the run as waiting and exits 3 with what to run next, as run
// does; approve and resume then finish it. With --no-journal the gate
// rejects its step, as run's does.
func TestApplyWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(dir, "refund.planfile")
	if p := runObelisk(t, dir, "plan", "-o", pf, filepath.Join(examples, "refund.plan")); p.code != exitOK {
		t.Fatalf("plan: exit %d\n%s", p.code, p.stderr)
	}
	a := runObelisk(t, dir, "apply", "--state-dir", "st", "--run-id", "a1", pf)
	if a.code != exitWaiting || a.stdout != "" || !strings.Contains(a.stderr, "run a1 is saved, waiting for a decision") ||
		!strings.Contains(a.stderr, "obelisk approve --state-dir st a1") || !strings.Contains(a.stderr, "obelisk resume --state-dir st a1") {
		t.Fatalf("apply: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", a.code, a.stdout, a.stderr)
	}
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "a1"); r.code != exitOK {
		t.Fatalf("approve: exit %d\n%s", r.code, r.stderr)
	}
	r := runObelisk(t, dir, "resume", "--state-dir", "st", "a1")
	if r.code != exitOK || !strings.Contains(r.stdout, `"confirmationId": "RF-2025-0611-48213"`) {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s := runObelisk(t, dir, "show", "--state-dir", "st", "a1")
	if !strings.Contains(s.stdout, "planfile:  sha256:") || !strings.Contains(s.stdout, "approved by "+defaultDecider()) {
		t.Errorf("show: the run is not recorded as applied and approved:\n%s", s.stdout)
	}
	n := runObelisk(t, dir, "apply", "--no-journal", pf)
	if n.code != exitInput || !strings.Contains(n.stderr, "no approver is configured") || !strings.Contains(n.stderr, "[rejected]") {
		t.Errorf("apply --no-journal: exit %d, want 1 and the gate rejected\n%s", n.code, n.stderr)
	}
}

// TestPlanApplyMCP: plan starts the MCP servers it is given, so a
// planfile can be made for a plan whose tools come from a server, and
// apply, given the same server, runs it.
func TestPlanApplyMCP(t *testing.T) {
	t.Setenv(mcptest.EnvServer, "1")
	dir := writeFiles(t, map[string]string{"p.plan": "greet(name: \"Ada\") -> †state.hello\noutput †state.hello\n"})
	server := fmt.Sprintf("calc='%s' calc", os.Args[0])
	pf := filepath.Join(dir, "p.planfile")
	code, stdout, stderr := runCLI(t, "plan", "--mcp", server, "-o", pf, filepath.Join(dir, "p.plan"))
	if code != exitOK || !strings.Contains(stdout, "greet") {
		t.Fatalf("plan --mcp: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "apply", "--no-journal", "--mcp", server, pf)
	if code != exitOK || strings.TrimSpace(stdout) != `"Hello, Ada!"` {
		t.Errorf("apply --mcp: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "apply", "--no-journal", pf)
	if code != exitInput || !strings.Contains(stderr, "give it with --mcp") {
		t.Errorf("apply without the server: exit %d, want 1\n%s", code, stderr)
	}
}

// TestFailedRunNoOutput: a run that did not complete has no output, so
// nothing is written on stdout (once, the output's fields were written
// as nulls, read as a result by whatever took stdout); the summary on
// stderr says what failed, and the exit status is 1.
func TestFailedRunNoOutput(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "f.plan")
	mocks := filepath.Join(dir, "f.mocks.json")
	writeFile(t, plan, "tool boom(x: string) -> {y: string} pure\nboom(x: \"a\") -> †state.r\noutput { y: †state.r.y }\n")
	writeFile(t, mocks, `{"boom": {"error": {"code": "bad", "message": "it broke"}}}`)
	code, stdout, stderr := runHere(t, "", "run", "--no-journal", "--mocks", mocks, plan)
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "boom failed: it broke [bad]") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestPartialRunStdout: stdout carries a run's output only when the run
// completed (exit 0). A run that ended partial (on failure continue) exits
// 1 with nothing on stdout, where a script would take its nulls for a
// result; the summary says where its partial output is (obelisk show
// RUN, with the flag that names the journal) or, for a run not journaled,
// prints it on stderr.
func TestPartialRunStdout(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"p.plan": `on failure continue

tool fetch(id: string) -> string

a: fetch(id: "x") -> †state.a

output {
  summary: †state.a,
  other: "x"
}
`,
		"p.mocks.json": `{"fetch": {"error": {"code": "down", "message": "the service is down"}}}`,
	})
	t.Chdir(dir)
	code, stdout, stderr := runHere(t, "", "run", "--state-dir", "st", "--run-id", "r1", "p.plan")
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "run r1 partial in ") ||
		!strings.Contains(stderr, "its partial output (null for what failed) is not printed on stdout; read it with obelisk show --state-dir st r1\n") {
		t.Errorf("a partial run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runHere(t, "", "show", "--state-dir", "st", "r1")
	if code != exitOK || !strings.Contains(stdout, `"summary": null`) {
		t.Errorf("show of a partial run: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = runHere(t, "", "run", "--no-journal", "p.plan")
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "its partial output (null for what failed), not printed on stdout:\n  {\n    \"other\": \"x\",\n    \"summary\": null\n  }\n") {
		t.Errorf("a partial run, not journaled: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
