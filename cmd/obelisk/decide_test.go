package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// decidePlan gates b, between a and c, on the gate server of the tests.
const decidePlan = `input {
  base: string
}

a: http.get(url: †input.base + "/a") -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a.body.value) -> †state.b
  approve "Send b?"
c: http.get(url: †input.base + "/c?from=" + †state.b.body.value) -> †state.c

output †state.c.body.value
`

// started is a process started in the background, its stderr read line by
// line.
type started struct {
	cmd    *exec.Cmd
	lines  chan string
	stdout *strings.Builder
	stderr *lockedText
	done   chan result
}

// lockedText is text a goroutine appends to while the test reads it.
type lockedText struct {
	ch chan struct{}
	b  strings.Builder
}

func (l *lockedText) String() string {
	l.ch <- struct{}{}
	defer func() { <-l.ch }()
	return l.b.String()
}

// start starts obelisk with args in dir; its stderr lines arrive on lines
// and are kept, and its end on done.
func start(t *testing.T, dir string, args ...string) *started {
	t.Helper()
	cmd := obelisk(t, dir, args...)
	p := &started{cmd: cmd, lines: make(chan string, 256), stdout: &strings.Builder{}, stderr: &lockedText{ch: make(chan struct{}, 1)}, done: make(chan result, 1)}
	cmd.Stdout = p.stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.stderr.ch <- struct{}{}
			p.stderr.b.WriteString(sc.Text() + "\n")
			<-p.stderr.ch
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, errPipe)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		p.done <- result{code, p.stdout.String(), p.stderr.String()}
	}()
	return p
}

// waitLine waits for a line of the process's stderr that holds want.
func (p *started) waitLine(t *testing.T, want string) {
	t.Helper()
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, want) {
				return
			}
		case r := <-p.done:
			p.done <- r
			t.Fatalf("the process ended (exit %d) before it said %q:\n%s", r.code, want, r.stderr)
		}
	}
}

// end waits for the process to end.
func (p *started) end() result { return <-p.done }

// runStatus returns the status of a run, as obelisk show says it.
func runStatus(t *testing.T, dir, state, run string) string {
	t.Helper()
	r := runObelisk(t, dir, "show", "--state-dir", state, "--format", "json", run)
	var det struct{ Status string }
	if err := json.Unmarshal([]byte(r.stdout), &det); err != nil {
		t.Fatalf("show: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	return det.Status
}

// waitStatus waits until the run has the status want.
func waitStatus(t *testing.T, dir, state, run, want string) {
	t.Helper()
	for runStatus(t, dir, state, run) != want {
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWaitApprovedElsewhere: a run started with --wait stops at its gate
// and waits in its own process, saying so on stderr; approved from
// another process (obelisk approve), it goes on with no other command,
// calls the gated tool once and ends; the decision names who made it.
func TestWaitApprovedElsewhere(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gate.plan"), decidePlan)
	srv := newGateServer(t)
	p := start(t, dir, "run", "--wait", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", `{"base": "`+srv.URL+`"}`, "gate.plan")
	p.waitLine(t, "waiting for a decision on b: obelisk approve --state-dir st w b, or the console")
	if diff := cmp.Diff(map[string]int{"a": 1}, srv.counts()); diff != "" {
		t.Errorf("calls before the decision (-want +got):\n%s", diff)
	}
	if s := runStatus(t, dir, "st", "w"); s != "waiting" {
		t.Errorf("the run is %s while it waits", s)
	}
	ap := runObelisk(t, dir, "approve", "--state-dir", "st", "--by", "ann", "w", "b")
	if ap.code != 0 || !strings.Contains(ap.stderr, "the run goes on by itself if its process waits") {
		t.Fatalf("approve: exit %d\n%s", ap.code, ap.stderr)
	}
	r := p.end()
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"c(b(a()))"` || !strings.Contains(r.stderr, "the decisions are made: run w goes on") {
		t.Fatalf("the waiting process: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1}, srv.counts()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "w")
	if !strings.Contains(show.stdout, `step b (http.get) "Send b?": approved by ann`) || !strings.Contains(show.stdout, "run w: completed") {
		t.Errorf("show:\n%s", show.stdout)
	}
}

// TestWaitTimeout: without a decision within --wait-timeout, the process
// leaves the run waiting and says what continues it.
func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gate.plan"), decidePlan)
	srv := newGateServer(t)
	r := runObelisk(t, dir, "run", "--wait", "--wait-timeout", "300ms", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", `{"base": "`+srv.URL+`"}`, "gate.plan")
	if r.code != exitWaiting || !strings.Contains(r.stderr, "no decision within --wait-timeout 300ms") || !strings.Contains(r.stderr, "obelisk resume --state-dir st w") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if bad := runObelisk(t, dir, "run", "--wait", "--wait-timeout", "0s", "--allow-net=127.0.0.1", "--state-dir", "st2", "--input", `{"base": "`+srv.URL+`"}`, "gate.plan"); bad.code != exitUsage || !strings.Contains(bad.stderr, "--wait-timeout must be positive") {
		t.Errorf("--wait-timeout 0: exit %d\n%s", bad.code, bad.stderr)
	}
}
