package main

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/internal/testsize"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

// gateServer answers GET /NAME?from=X with {"value": "NAME(X)"} and counts
// the calls of each name. A call of the name held holds its answer until
// the gate is opened, and is reported on arrived first.
type gateServer struct {
	*httptest.Server
	mu      sync.Mutex
	calls   map[string]int
	held    string
	gate    chan struct{}
	arrived chan string
}

func newGateServer(t *testing.T) *gateServer {
	s := &gateServer{calls: map[string]int{}, arrived: make(chan string, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		s.mu.Lock()
		s.calls[name]++
		gate := s.gate
		held := s.held == name
		s.mu.Unlock()
		if held {
			s.arrived <- name
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"value": %q}`, name+"("+r.URL.Query().Get("from")+")")
	}))
	t.Cleanup(s.Close)
	return s
}

// hold makes the calls of name wait for a new gate, which it returns with
// the counts reset.
func (s *gateServer) hold(name string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held, s.gate, s.calls = name, make(chan struct{}), map[string]int{}
	return s.gate
}

func (s *gateServer) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

const chainPlan = `input {
  base: string
}

a: http.get(url: †input.base + "/a") -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a.body.value) -> †state.b
c: http.get(url: †input.base + "/c?from=" + †state.b.body.value) -> †state.c

output †state.c.body.value
`

// copyState copies a state directory's journal (and its write-ahead log,
// which a killed process leaves) into a new directory.
func copyState(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"journal.db", "journal.db-wal"} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(to, name), string(b))
	}
}

// killAt runs plan as run r in state, and kills its process with SIGKILL
// once the server holds the call of step.
func killAt(t *testing.T, dir, state, plan string, srv *gateServer, step string, args ...string) {
	t.Helper()
	srv.hold(step)
	first := obelisk(t, dir, append([]string{"run", "--allow-net=127.0.0.1", "--state-dir", state, "--run-id", "r", "--input", `{"base": "` + srv.URL + `"}`}, append(args, plan)...)...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if got := <-srv.arrived; got != step {
		t.Fatalf("held at %s", got)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if err := first.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first process ended with %v, not killed", err)
	}
}

// TestResumeExclusive starts 8 processes at once that resume the same run,
// whose process was killed while step b ran, and checks that exactly one
// of them runs it: b is called once, and the others are refused because
// the run is being run. The winner's call of b is held until the 7 others
// have exited (or a second call of b arrives, which fails the test), so
// that they all try while the run has a live owner. It is repeated 3
// times, each on a copy of the killed run's journal; 20 in the full run
// (internal/testsize).
func TestResumeExclusive(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs = 8
	trials := testsize.Pick(t, 3, 20)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "chain.plan"), chainPlan)
	srv := newGateServer(t)
	killed := filepath.Join(dir, "killed")
	killAt(t, dir, killed, "chain.plan", srv, "b")

	for trial := range trials {
		state := filepath.Join(dir, fmt.Sprintf("trial-%d", trial))
		copyState(t, killed, state)
		gate := srv.hold("b")
		type exit struct {
			code   int
			stderr string
		}
		exits := make(chan exit, procs)
		for range procs {
			cmd := obelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", state, "r")
			var stderr strings.Builder
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				err := cmd.Wait()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					code = -1
				}
				exits <- exit{code, stderr.String()}
			}()
		}
		var got []exit
		held, opened := 0, false
		for len(got) < procs {
			select {
			case x := <-exits:
				got = append(got, x)
			case <-srv.arrived:
				held++
			}
			if !opened && (len(got) == procs-1 || held > 1) {
				close(gate)
				opened = true
			}
		}
		ran, refused := 0, 0
		for _, x := range got {
			switch {
			case x.code == 0:
				ran++
			case x.code == exitInput && strings.Contains(x.stderr, "obelisk resume: run r is being run by process"):
				refused++
			default:
				t.Errorf("trial %d: a process ended with exit %d:\n%s", trial, x.code, x.stderr)
			}
		}
		calls := srv.counts()
		if ran != 1 || refused != procs-1 || calls["b"] != 1 || calls["a"] != 0 || calls["c"] != 1 {
			t.Fatalf("trial %d: %d processes ran the run and %d were refused; calls %v", trial, ran, refused, calls)
		}
	}
	t.Logf("%d trials of %d processes: each time exactly one ran, and b was called once", trials, procs)
}

// TestDamagedJournalRefused flips bytes in a journal, in its header and
// in its tables' pages, and checks that every command that opens it
// refuses it with a message that says how to recover, and writes nothing
// to it.
func TestDamagedJournalRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gate.plan"), "a: echo(value: 1) -> †state.a\n  approve \"go on?\"\n\noutput †state.a\n")
	good := filepath.Join(dir, "good")
	if r := runObelisk(t, dir, "run", "--state-dir", good, "--run-id", "done", "--yes", "gate.plan"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if r := runObelisk(t, dir, "run", "--state-dir", good, "--run-id", "w", "gate.plan"); r.code != exitWaiting {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	clean, err := os.ReadFile(filepath.Join(good, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	flips := map[string]int{"the header": 0, "the runs table": page, "an index": 2 * page}
	for what, at := range flips {
		t.Run(what, func(t *testing.T) {
			t.Parallel() // each on a copy of its own
			state := filepath.Join(dir, strings.ReplaceAll(what, " ", "-"))
			b := append([]byte(nil), clean...)
			for i := at; i < at+16; i++ {
				b[i] ^= 0xff
			}
			if err := os.MkdirAll(state, 0o755); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(state, "journal.db")
			writeFile(t, db, string(b))
			for _, args := range [][]string{
				{"runs"}, {"show", "done"}, {"resume", "w"}, {"approve", "w"}, {"run", "--yes", "gate.plan"},
			} {
				r := runObelisk(t, dir, append([]string{args[0], "--state-dir", state}, args[1:]...)...)
				if r.code != exitUsage || !strings.Contains(r.stderr, "obelisk "+args[0]+": the journal "+db+" is damaged (") ||
					!strings.Contains(r.stderr, "nothing was written to it: keep a copy, then recover what it holds (sqlite3 "+db+" .recover") {
					t.Errorf("%s: exit %d\n%s", args[0], r.code, r.stderr)
				}
				if after, _ := os.ReadFile(db); string(after) != string(b) {
					t.Fatalf("%s wrote into the damaged journal", args[0])
				}
				if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
					t.Fatalf("%s wrote %d bytes to the journal's log", args[0], fi.Size())
				}
			}
		})
	}
}

// TestOutputNotEncodable: a run whose output JSON cannot hold (1.0/0.0)
// does not stay running: it is recorded as failed, with why.
func TestOutputNotEncodable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "inf.plan"), "a: echo(value: 1.0) -> †state.a\n\noutput {\n  ratio: †state.a / 0.0\n}\n")
	r := runObelisk(t, dir, "run", "--state-dir", "st", "--run-id", "inf", "inf.plan")
	if r.code != exitInput || !strings.Contains(r.stderr, "run inf failed") || !strings.Contains(r.stderr, "evaluating the output:") || !strings.Contains(r.stderr, "JSON cannot hold") {
		t.Errorf("run: exit %d\n%s", r.code, r.stderr)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "inf")
	if !strings.Contains(show.stdout, "run inf: failed") || !strings.Contains(show.stdout, "error:     evaluating the output:") {
		t.Errorf("show:\n%s", show.stdout)
	}
	if again := runObelisk(t, dir, "resume", "--state-dir", "st", "inf"); again.code != exitInput || !strings.Contains(again.stderr, "has ended (failed)") {
		t.Errorf("resume: exit %d\n%s", again.code, again.stderr)
	}
}

const forEachPlan = `input {
  base: string
}

a: http.get(url: †input.base + "/a") -> †state.a
fetch: for each n in ["0", "1", "2", "3"]: http.get(url: †input.base + "/e" + †n + "?from=" + †state.a.body.value) -> †state.pages

output †state.pages.map(p, p.body.value)
`

// TestKillForEach kills a run with SIGKILL while the third element of a
// for each runs, the first two having returned, and resumes it: the
// elements that returned are restored, not called again.
func TestKillForEach(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "each.plan"), forEachPlan)
	srv := newGateServer(t)
	input := `{"base": "` + srv.URL + `"}`
	srv.hold("")
	whole := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--no-journal", "--max-parallel", "1", "--input", input, "each.plan")
	if whole.code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", whole.code, whole.stderr)
	}

	killAt(t, dir, "st", "each.plan", srv, "e2", "--max-parallel", "1")
	if calls := srv.counts(); calls["a"] != 1 || calls["e0"] != 1 || calls["e1"] != 1 || calls["e2"] != 1 || calls["e3"] != 0 {
		t.Fatalf("calls before the kill: %v", calls)
	}
	srv.hold("")
	r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "r")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if r.stdout != whole.stdout {
		t.Errorf("output: %s, want %s", r.stdout, whole.stdout)
	}
	if diff := cmp.Diff(map[string]int{"e2": 1, "e3": 1}, srv.counts()); diff != "" {
		t.Errorf("calls of the resumed run (-want +got):\n%s", diff)
	}
	_, evs := journalLines(t, filepath.Join(dir, "st"), "r")
	restored := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == vm.StepRestored {
			restored[ev.Step] = true
		}
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "fetch[0]": true, "fetch[1]": true}, restored); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
}

const sequencePlan = `tool book(n: int) -> string idempotent

input {
  base: string
}

a: book(n: 1) -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a) -> †state.b
c: book(n: size(†state.b.body.value)) -> †state.c

output [†state.a, †state.c]
`

// TestKillMockSequence: a mock's sequence goes on where it was when a run
// killed with SIGKILL is resumed, instead of starting again.
func TestKillMockSequence(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "seq.plan"), sequencePlan)
	writeFile(t, filepath.Join(dir, "seq.mocks.json"), `{"book": {"sequence": [{"result": "first"}, {"result": "second"}, {"result": "third"}]}}`)
	srv := newGateServer(t)
	killAt(t, dir, "st", "seq.plan", srv, "b")
	srv.hold("")
	r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "r")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if got := strings.Join(strings.Fields(r.stdout), ""); got != `["first","second"]` {
		t.Errorf("output %s, want the sequence's first and second answers", r.stdout)
	}
}

// TestKillEagerStream kills, with SIGKILL, a run whose plan is streamed
// on standard input in eager mode, while its second step runs and before
// the rest of the plan has arrived, and resumes it: the journal holds the
// text that arrived, the first step is restored, the second runs again,
// and the plan ends where its text did.
func TestKillEagerStream(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	srv := newGateServer(t)
	srv.hold("b")
	first := obelisk(t, dir, "run", "--mode", "eager", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "r", "--input", `{"base": "`+srv.URL+`"}`, "-")
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(stdin, "input {\n  base: string\n}\n\na: http.get(url: †input.base + \"/a\") -> †state.a\n")
	// The output's line ends b's statement, and the stream stays open:
	// the output may go on, and more may come.
	fmt.Fprint(stdin, "b: http.get(url: †input.base + \"/b?from=\" + †state.a.body.value) -> †state.b\n\noutput †state.b.body.value\n")
	if got := <-srv.arrived; got != "b" {
		t.Fatalf("held at %s", got)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	if calls := srv.counts(); calls["a"] != 1 || calls["b"] != 1 {
		t.Fatalf("calls before the kill: %v", calls)
	}

	srv.hold("")
	r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "r")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if diff := cmp.Diff(map[string]int{"b": 1}, srv.counts()); diff != "" {
		t.Errorf("calls of the resumed run (-want +got):\n%s", diff)
	}
	if strings.TrimSpace(r.stdout) != `"b(a())"` || !strings.Contains(r.stderr, "run r completed") {
		t.Errorf("resume:\n%s\n%s", r.stdout, r.stderr)
	}
	_, evs := journalLines(t, filepath.Join(dir, "st"), "r")
	var restored []string
	for _, ev := range evs {
		if ev.Type == vm.StepRestored {
			restored = append(restored, ev.Step)
		}
	}
	if diff := cmp.Diff([]string{"a"}, restored); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
	if again := runObelisk(t, dir, "resume", "--state-dir", "st", "r"); again.code != exitInput || !strings.Contains(again.stderr, "has ended (completed)") {
		t.Errorf("resuming again: exit %d\n%s", again.code, again.stderr)
	}
}

// modelEnv points a process of obelisk at a fake model server.
func modelEnv(cmd *exec.Cmd, srv *llmtest.Server) *exec.Cmd {
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY=test", "OPENAI_BASE_URL="+srv.URL+"/v1", "OBELISK_MODEL=planner", "OBELISK_EVAL_MODEL=judge")
	return cmd
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// TestKillAgentGoal kills, with SIGKILL, a goal's process while a step of
// its second turn runs, and resumes the goal in another process: the
// model is not asked again for either turn's answer, the step that had
// completed is not run again, and the goal completes.
func TestKillAgentGoal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	srv := newGateServer(t)
	model := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text("a: http.get(url: \""+srv.URL+"/a\") -> †state.a\n", llm.Usage{Input: 100, Output: 10}),
		llmtest.Text("b: http.get(url: \""+srv.URL+"/b?from=\" + †state.a.body.value) -> †state.b\noutput †state.b.body.value\n", llm.Usage{Input: 200, Output: 20}),
	))
	defer model.Close()
	srv.hold("b")
	first := modelEnv(obelisk(t, dir, "agent", "--goal", "Fetch a, then b.", "--evaluate=false", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "g"), model)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if got := <-srv.arrived; got != "b" {
		t.Fatalf("held at %s", got)
	}
	// Step b runs as soon as its statement is read; the answer's end may
	// come a moment later. Killed before it, the answer is (rightly)
	// replayed as cut and the model asked to go on: this test is of a
	// whole answer, so it waits for its end to be journaled.
	waitTextEnd(t, filepath.Join(dir, "st"), "g", "answer 2.0")
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	if n := len(model.Requests()); n != 2 {
		t.Fatalf("%d model requests before the kill", n)
	}

	srv.hold("")
	r := runCmd(t, modelEnv(obelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "g"), model))
	if r.code != 0 || !strings.Contains(r.stdout, `"status": "completed"`) || !strings.Contains(r.stdout, `"output": "b(a())"`) {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the model was asked %d times in all, want 2: the resumed goal asked again", n)
	}
	if diff := cmp.Diff(map[string]int{"b": 1}, srv.counts()); diff != "" {
		t.Errorf("calls of the resumed goal (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.stderr, "completed after 2 turns (eager mode, text answers): 2 steps run") {
		t.Errorf("summary:\n%s", r.stderr)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "g")
	if !strings.Contains(show.stdout, "run g: completed") || !strings.Contains(show.stdout, "processes: 2") ||
		!strings.Contains(show.stdout, "goal:      Fetch a, then b. (eager mode)") || !strings.Contains(show.stdout, "  b (turn 2)") {
		t.Errorf("show:\n%s", show.stdout)
	}
}

// waitTextEnd waits until the journal in state records the end of a
// run's text, read as another process writes it.
func waitTextEnd(t *testing.T, state, run, name string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, durable.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM text_ends WHERE run = ? AND name = ?`, run, name).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the end of %s of run %s was not journaled (%v)", name, run, err)
		}
	}
}

// TestAgentHITLAcrossProcesses: the evaluator cannot judge a step's
// result and says hitl; with nobody to ask, the goal waits and its process
// exits; a person's decision is recorded by another process, and a third
// resumes the goal: the step is not run again, the evaluator and the
// planner are not asked again, and the goal completes.
func TestAgentHITLAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	srv := newGateServer(t)
	srv.hold("")
	model := llmtest.NewOpenAI(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
		"planner": llmtest.Script(llmtest.Text("fetch: http.get(url: \""+srv.URL+"/a\") -> †state.a\n  expect \"a real answer\"\nnext: http.get(url: \""+srv.URL+"/b?from=\" + †state.a.body.value) -> †state.b\noutput †state.b.body.value\n", llm.Usage{Input: 100, Output: 10})),
		"judge":   llmtest.Script(llmtest.Text(`{"verdict": "hitl", "note": "a may be a placeholder", "facts": {"first": "a()"}}`, llm.Usage{Input: 50, Output: 5})),
	}))
	defer model.Close()
	first := runCmd(t, modelEnv(obelisk(t, dir, "agent", "--goal", "Fetch a, then b.", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "h"), model))
	if first.code != exitWaiting || !strings.Contains(first.stdout, `"status": "waiting"`) ||
		!strings.Contains(first.stderr, "waiting for approval of step fetch (http.get) \"a person must judge whether the result meets: a real answer (a may be a placeholder)\"") ||
		!strings.Contains(first.stderr, "obelisk approve --state-dir st h") {
		t.Fatalf("agent: exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	if diff := cmp.Diff(map[string]int{"a": 1}, srv.counts()); diff != "" {
		t.Errorf("calls before the decision (-want +got):\n%s", diff)
	}
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "--note", "it is real", "h", "fetch"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s", r.code, r.stderr)
	}
	r := runCmd(t, modelEnv(obelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "h"), model))
	if r.code != 0 || !strings.Contains(r.stdout, `"output": "b(a())"`) || !strings.Contains(r.stdout, `"key": "first"`) {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1}, srv.counts()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the models were asked %d times, want 2 (the planner once, the evaluator once)", n)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "h")
	if !strings.Contains(show.stdout, "run h: completed") || !strings.Contains(show.stdout, "approved by "+defaultDecider()+": it is real") {
		t.Errorf("show:\n%s", show.stdout)
	}
}
