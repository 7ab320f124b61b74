package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/obelisk-plan/obelisk/console/consoletest"
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

// waitLine waits for a line of the process's stderr that holds want, and
// returns it.
func (p *started) waitLine(t *testing.T, want string) string {
	t.Helper()
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, want) {
				return l
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

// decideSetup starts a test that runs processes (it runs in parallel,
// and not with -short): a directory with the gated plan (gate.plan) and
// the chain (chain.plan), the loopback tool server their steps call, and
// the input that names it.
func decideSetup(t *testing.T) (dir string, srv *gateServer, input string) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "gate.plan"), decidePlan)
	writeFile(t, filepath.Join(dir, "chain.plan"), chainPlan)
	srv = newGateServer(t)
	return dir, srv, `{"base": "` + srv.URL + `"}`
}

// TestWaitApprovedElsewhere: a run started with --wait stops at its gate
// and waits in its own process, saying so on stderr; approved from
// another process (obelisk approve), it goes on with no other command,
// calls the gated tool once and ends; the decision names who made it.
func TestWaitApprovedElsewhere(t *testing.T) {
	dir, srv, input := decideSetup(t)
	p := start(t, dir, "run", "--wait", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", input, "gate.plan")
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
	dir, _, input := decideSetup(t)
	r := runObelisk(t, dir, "run", "--wait", "--wait-timeout", "300ms", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", input, "gate.plan")
	if r.code != exitWaiting || !strings.Contains(r.stderr, "no decision within --wait-timeout 300ms") || !strings.Contains(r.stderr, "obelisk resume --state-dir st w") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if bad := runObelisk(t, dir, "run", "--wait", "--wait-timeout", "0s", "--allow-net=127.0.0.1", "--state-dir", "st2", "--input", input, "gate.plan"); bad.code != exitUsage || !strings.Contains(bad.stderr, "--wait-timeout must be positive") {
		t.Errorf("--wait-timeout 0: exit %d\n%s", bad.code, bad.stderr)
	}
}

// TestWorkerContinues: a run that stopped at its gate, its process gone,
// is continued by a worker once the gate is approved, with the worker's
// grants; a run that a live --wait process waits for is left to it, and
// of three workers and the waiting process racing for decided runs, each
// run is continued by one: the gated tool is called once.
func TestWorkerContinues(t *testing.T) {
	dir, srv, input := decideSetup(t)
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "alone", "--input", input, "gate.plan"); r.code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	waiter := start(t, dir, "run", "--wait", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "waited", "--input", input, "gate.plan")
	waiter.waitLine(t, "waiting for a decision on b")
	var workers []*started
	for range 3 {
		w := start(t, dir, "worker", "--allow-net=127.0.0.1", "--state-dir", "st")
		w.waitLine(t, "worker: continuing the runs of")
		workers = append(workers, w)
	}
	gate := srv.hold("b")
	for _, run := range []string{"alone", "waited"} {
		if r := runObelisk(t, dir, "approve", "--state-dir", "st", run); r.code != 0 {
			t.Fatalf("approve %s: exit %d\n%s", run, r.code, r.stderr)
		}
	}
	// Both b calls held: no other process may take either run now.
	<-srv.arrived
	<-srv.arrived
	for _, run := range []string{"alone", "waited"} {
		if r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", run); r.code != exitInput || !strings.Contains(r.stderr, "is being run by process") {
			t.Errorf("resume %s while it runs: exit %d\n%s", run, r.code, r.stderr)
		}
	}
	close(gate)
	if r := waiter.end(); r.code != 0 || strings.TrimSpace(r.stdout) != `"c(b(a()))"` {
		t.Fatalf("the waiting process: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	waitStatus(t, dir, "st", "alone", "completed")
	if diff := cmp.Diff(map[string]int{"b": 2, "c": 2}, srv.counts()); diff != "" {
		t.Errorf("calls once the gates were approved (-want +got):\n%s", diff)
	}
	continued := 0
	for _, w := range workers {
		w.cmd.Process.Kill()
		r := w.end()
		if strings.Contains(r.stderr, "run waited") {
			t.Errorf("a worker took the run a live process waits for:\n%s", r.stderr)
		}
		continued += strings.Count(r.stderr, "worker: run alone: its decisions are made; continuing it")
	}
	if continued != 1 {
		t.Errorf("%d workers continued run alone", continued)
	}
}

// TestCancel: obelisk cancel stops a run a process runs (a plain run, in
// the middle of a step: the tools after it are not called), one a --wait
// process waits for, and one no process runs, at once; each is recorded
// as aborted, by whom and why, and is not resumed.
func TestCancel(t *testing.T) {
	dir, srv, input := decideSetup(t)

	// A run in the middle of step b.
	cancelMidStep(t, dir, srv, input, "run busy was canceled by ann: wrong input", func() {
		c := runObelisk(t, dir, "cancel", "--state-dir", "st", "--by", "ann", "--reason", "wrong input", "busy")
		if c.code != 0 || !strings.Contains(c.stdout, "asked run busy to stop") {
			t.Fatalf("cancel: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
	})
	show := runObelisk(t, dir, "show", "--state-dir", "st", "busy")
	if !strings.Contains(show.stdout, "run busy: aborted") || !strings.Contains(show.stdout, "canceled by ann: wrong input") {
		t.Errorf("show:\n%s", show.stdout)
	}
	if runs := runObelisk(t, dir, "runs", "--state-dir", "st"); !strings.Contains(runs.stdout, "aborted") {
		t.Errorf("runs:\n%s", runs.stdout)
	}
	res := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "busy")
	if res.code != exitInput || !strings.Contains(res.stderr, "run busy was canceled at a person's request (aborted): it cannot be resumed") {
		t.Errorf("resume of a canceled run: exit %d\n%s", res.code, res.stderr)
	}
	if again := runObelisk(t, dir, "cancel", "--state-dir", "st", "busy"); again.code != exitInput || !strings.Contains(again.stderr, "has ended (aborted): there is nothing to cancel") {
		t.Errorf("cancel again: exit %d\n%s", again.code, again.stderr)
	}

	// A run a --wait process waits for.
	srv.hold("none")
	waiter := start(t, dir, "run", "--wait", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "waited", "--input", input, "gate.plan")
	waiter.waitLine(t, "waiting for a decision on b")
	if c := runObelisk(t, dir, "cancel", "--state-dir", "st", "waited"); c.code != 0 || !strings.Contains(c.stdout, "canceled run waited: it is aborted") {
		t.Fatalf("cancel: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if r := waiter.end(); r.code != exitInput || !strings.Contains(r.stderr, "run waited was canceled by ") {
		t.Fatalf("the waiting process: exit %d\n%s", r.code, r.stderr)
	}

	// A run no process runs: canceled at once; approving it then is refused.
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "left", "--input", input, "gate.plan"); r.code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if c := runObelisk(t, dir, "cancel", "--state-dir", "st", "--reason", "not needed", "left"); c.code != 0 || !strings.Contains(c.stdout, "canceled run left: it is aborted") {
		t.Fatalf("cancel: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if s := runStatus(t, dir, "st", "left"); s != "aborted" {
		t.Errorf("the run left is %s", s)
	}
	if calls := srv.counts(); calls["b"] != 0 || calls["c"] != 0 {
		t.Errorf("the gated steps were called: %v", calls)
	}
}

// TestDecidedGateOnce: once a gate is approved, four processes (two
// obelisk resume, two workers) race to continue its run: exactly one
// does, and the gated tool is called once. The winner's call is held
// until the two resume processes have ended (or a second call arrives,
// which fails the test).
func TestDecidedGateOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, srv := stoppedAtGate(t, "g")
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "g"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s", r.code, r.stderr)
	}
	gate := srv.hold("b")
	var procs []*started
	for i := range 4 {
		args := []string{"resume", "--allow-net=127.0.0.1", "--state-dir", "st", "g"}
		if i%2 == 1 {
			args = []string{"worker", "--allow-net=127.0.0.1", "--state-dir", "st"}
		}
		procs = append(procs, start(t, dir, args...))
	}
	// Once b is held, the gate opens when both resume processes have
	// ended, or after a while when one of them is the winner.
	ended := map[int]result{}
	held := 0
	var settle <-chan time.Time
wait:
	for {
		select {
		case r := <-procs[0].done:
			ended[0] = r
		case r := <-procs[2].done:
			ended[2] = r
		case <-srv.arrived:
			held++
			settle = time.After(2 * time.Second)
		case <-settle:
			break wait
		}
		if held > 1 || held == 1 && len(ended) == 2 {
			break
		}
	}
	close(gate)
	waitStatus(t, dir, "st", "g", "completed")
	for i, p := range procs {
		if i%2 == 1 {
			p.cmd.Process.Kill()
		}
		if _, ok := ended[i]; !ok {
			ended[i] = p.end()
		}
	}
	if diff := cmp.Diff(map[string]int{"b": 1, "c": 1}, srv.counts()); diff != "" {
		t.Errorf("calls once the gate was approved (-want +got):\n%s", diff)
	}
	won := 0
	for i, r := range ended {
		switch {
		case i%2 == 0 && r.code == 0:
			won++
		case i%2 == 0 && r.code == exitInput && (strings.Contains(r.stderr, "is being run by process") || strings.Contains(r.stderr, "has ended (completed)")):
		case i%2 == 1:
			won += strings.Count(r.stderr, "continuing it")
		default:
			t.Errorf("process %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if won != 1 {
		t.Errorf("%d processes continued the run", won)
	}
}

// TestConsoleDecidesAndCancels: with obelisk serve in a process of its
// own on the same state directory, a gate approved in the console (by a
// person who gives a name) lets the --wait process that waits for it go
// on with no other command; the run page says the truth after the
// decision; and the console's Cancel button, once confirmed, stops a run
// another process runs: the tools after the cancel point are not called.
func TestConsoleDecidesAndCancels(t *testing.T) {
	dir, srv, input := decideSetup(t)
	// A run that waits, decided by nobody yet, so that the journal exists
	// for the console.
	waiter := start(t, dir, "run", "--wait", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", input, "gate.plan")
	waiter.waitLine(t, "waiting for a decision on b")
	c := consoletest.Open(t, startServe(t, dir, "--state-dir", "st"))

	code, body := c.Submit("/runs/w", "/runs/w/decide", url.Values{"round": {"0"}, "step": {"b"}, "decision": {"approve"}, "by": {"Ann Lee"}})
	if code != http.StatusSeeOther {
		t.Fatalf("decide: %d\n%s", code, body)
	}
	r := waiter.end()
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"c(b(a()))"` {
		t.Fatalf("the waiting process: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := srv.counts(); calls["b"] != 1 || calls["c"] != 1 {
		t.Errorf("calls: %v", calls)
	}
	if _, page := c.Get("/runs/w"); !strings.Contains(page, "by Ann Lee (console)") {
		t.Errorf("the run page does not name who decided:\n%s", page)
	}

	// A decided run no process continues: the page says it waits to be
	// continued, not for a decision.
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "d", "--input", input, "gate.plan"); r.code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	c.Submit("/runs/d", "/runs/d/decide", url.Values{"round": {"0"}, "step": {"b"}, "decision": {"approve"}, "by": {"Ann"}})
	if _, page := c.Get("/runs/d"); !strings.Contains(page, "approved by Ann (console): approved in the console, waiting for the run to continue (obelisk resume --state-dir st d, or a worker)") {
		t.Errorf("the page of a decided run:\n%s", page)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "d")
	if !strings.Contains(show.stdout, "waiting for the run to continue (obelisk resume --state-dir st d, or a worker)") || strings.Contains(show.stdout, "decide with obelisk approve") {
		t.Errorf("show of a decided run:\n%s", show.stdout)
	}

	// Cancel, in the middle of step b of a run another process runs.
	cancelMidStep(t, dir, srv, input, "run busy was canceled by Ann (console): wrong input", func() {
		form := url.Values{"reason": {"wrong input"}, "by": {"Ann"}}
		code, body := c.Submit("/runs/busy", "/runs/busy/cancel", form)
		if code != http.StatusOK || !strings.Contains(body, "Yes, cancel run busy") {
			t.Fatalf("cancel, first step: %d\n%s", code, body)
		}
		if s := runStatus(t, dir, "st", "busy"); s != "running" {
			t.Fatalf("the run is %s before the cancel is confirmed", s)
		}
		form.Set("confirm", "yes")
		if code, body = c.Submit("/runs/busy", "/runs/busy/cancel", form); code != http.StatusSeeOther {
			t.Fatalf("cancel, confirmed: %d\n%s", code, body)
		}
	})
	if _, page := c.Get("/runs/busy"); !strings.Contains(page, "aborted") || strings.Contains(page, "Cancel this run") {
		t.Errorf("the page of the canceled run:\n%s", page)
	}
	if code, body = c.Submit("/runs/d", "/runs/w/cancel", url.Values{"confirm": {"yes"}}); code != http.StatusConflict || !strings.Contains(body, "has ended (completed)") {
		t.Errorf("cancel of an ended run: %d\n%s", code, body)
	}
}

// TestServeWorker: obelisk serve --worker, started with the grants the
// runs need, is the console and the worker at once: a run that stopped at
// its gate, its process gone, is approved in the console and continued by
// the console's own process, with no other command; the gated tool is
// called once. Without --worker, serve takes none of the worker's flags.
func TestServeWorker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, srv := stoppedAtGate(t, "g")
	for _, flag := range []string{"--allow-net=127.0.0.1", "--run-timeout=1m", "--model=m"} {
		if r := runObelisk(t, dir, "serve", "--state-dir", "st", "--addr", "127.0.0.1:0", flag); r.code != exitUsage || !strings.Contains(r.stderr, " is for --worker: without it the console continues no run and runs no tool") {
			t.Errorf("serve %s without --worker: exit %d\n%s", flag, r.code, r.stderr)
		}
	}
	serve := start(t, dir, "serve", "--worker", "--allow-net=127.0.0.1", "--state-dir", "st", "--addr", "127.0.0.1:0")
	line := serve.waitLine(t, "obelisk serve: the console of ")
	c := consoletest.Open(t, line[strings.LastIndex(line, " ")+1:])
	serve.waitLine(t, "obelisk serve: it also continues the runs of ")
	if calls := srv.counts(); calls["b"] != 0 {
		t.Fatalf("b was called before the decision: %v", calls)
	}
	code, body := c.Submit("/runs/g", "/runs/g/decide", url.Values{"round": {"0"}, "step": {"b"}, "decision": {"approve"}, "by": {"Ann"}})
	if code != http.StatusSeeOther {
		t.Fatalf("decide: %d\n%s", code, body)
	}
	serve.waitLine(t, "obelisk serve: run g: its decisions are made; continuing it")
	waitStatus(t, dir, "st", "g", "completed")
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1}, srv.counts()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if show := runObelisk(t, dir, "show", "--state-dir", "st", "g"); !strings.Contains(show.stdout, `step b (http.get) "Send b?": approved by Ann (console)`) {
		t.Errorf("show does not name who decided:\n%s", show.stdout)
	}
	serve.cmd.Process.Signal(os.Interrupt)
	if r := serve.end(); r.code != 0 || !strings.Contains(r.stdout, `"c(b(a()))"`) {
		t.Errorf("obelisk serve --worker: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}

// stoppedAtGate runs gate.plan, in a new directory, as run id of state
// st, in a process that ends when the run stops at its gate; it returns
// the directory and the gate server.
func stoppedAtGate(t *testing.T, id string) (string, *gateServer) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gate.plan"), decidePlan)
	srv := newGateServer(t)
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", id, "--input", `{"base": "`+srv.URL+`"}`, "gate.plan"); r.code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	return dir, srv
}

// cancelMidStep runs chain.plan as run busy in state st, in a process of
// its own, and calls cancel while the server holds step b; the process
// must then stop the run, saying want, and c must not be called.
func cancelMidStep(t *testing.T, dir string, srv *gateServer, input, want string, cancel func()) {
	t.Helper()
	srv.hold("b")
	running := start(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "busy", "--input", input, "chain.plan")
	<-srv.arrived
	cancel()
	r := running.end()
	if r.code != exitInput || r.stdout != "" || !strings.Contains(r.stderr, "run busy aborted") || !strings.Contains(r.stderr, want) {
		t.Fatalf("the running process: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := srv.counts(); calls["c"] != 0 {
		t.Errorf("a tool after the cancel point was called: %v", calls)
	}
}
