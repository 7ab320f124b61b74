package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// asObelisk lets the tests run this test binary as the obelisk command,
// in processes of their own: with OBELISK_TEST_MAIN=1 it is obelisk.
// TestMain calls it first.
func asObelisk() {
	if os.Getenv("OBELISK_TEST_MAIN") == "1" {
		// The programs obelisk starts (an MCP server that is this test
		// binary too) are not obelisk.
		os.Unsetenv("OBELISK_TEST_MAIN")
		main()
	}
}

// obelisk returns the command that runs obelisk with args in dir, in a
// process of its own.
func obelisk(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OBELISK_TEST_MAIN=1", "OBELISK_LOG=error")
	return cmd
}

// result is how a process ended.
type result struct {
	code           int
	stdout, stderr string
}

func runObelisk(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := obelisk(t, dir, args...)
	var out, errb bytes.Buffer
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

// stepServer answers GET /NAME?from=X with {"value": "NAME(X)"}, counts
// the calls of each name and keeps their idempotency keys. A call of the
// step named by block is reported on blocked and never answered: it waits
// until the caller goes away.
type stepServer struct {
	*httptest.Server
	mu      sync.Mutex
	calls   map[string]int
	keys    map[string][]string
	block   string
	blocked chan string
}

func newStepServer(t *testing.T) *stepServer {
	s := &stepServer{calls: map[string]int{}, keys: map[string][]string{}, blocked: make(chan string, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		s.mu.Lock()
		s.calls[name]++
		s.keys[name] = append(s.keys[name], r.Header.Get("Idempotency-Key"))
		block := s.block == name
		s.mu.Unlock()
		if block {
			s.blocked <- name
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"value": %q}`, name+"("+r.URL.Query().Get("from")+")")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stepServer) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

func (s *stepServer) setBlock(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.block = name
}

// diamond: a, then b and c side by side, then d, then e.
const diamond = `input {
  base: string
}

a: http.get(url: †input.base + "/a") -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a.body.value) -> †state.b
c: http.get(url: †input.base + "/c?from=" + †state.a.body.value) -> †state.c
d: http.get(url: †input.base + "/d?from=" + †state.b.body.value + "," + †state.c.body.value) -> †state.d
e: http.get(url: †input.base + "/e?from=" + †state.d.body.value) -> †state.e

output {
  a: †state.a.body.value
  e: †state.e.body.value
}
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// eventLines reads a file of events (--events) as "type step" lines.
func eventLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev vm.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, string(ev.Type)+" "+ev.Step+" "+ev.Time.String())
	}
	return out
}

func journalLines(t *testing.T, stateDir, run string) ([]string, []vm.Event) {
	t.Helper()
	db, err := durable.Open(stateDir, durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.Events(run)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type) + " " + ev.Step + " " + ev.Time.String()
	}
	return out, evs
}

// TestKillAndResume kills a run's process with SIGKILL while a step's tool
// is being called, resumes the run in a new process, and checks that no
// step that had completed is called again, that the output is that of a
// run that was never interrupted, and that the journal holds every event
// of both processes.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "diamond.plan"), diamond)

	// The run nobody interrupts.
	ref := newStepServer(t)
	whole := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "ref", "--run-id", "whole", "--input", `{"base": "`+ref.URL+`"}`, "diamond.plan")
	if whole.code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", whole.code, whole.stderr)
	}
	if !strings.Contains(whole.stdout, `"e": "e(d(b(a()),c(a())))"`) {
		t.Fatalf("the uninterrupted run's output:\n%s", whole.stdout)
	}

	for _, killAt := range []string{"a", "b", "d", "e"} {
		t.Run("kill at "+killAt, func(t *testing.T) {
			srv := newStepServer(t)
			srv.setBlock(killAt)
			state := filepath.Join(dir, "state-"+killAt)
			input := `{"base": "` + srv.URL + `"}`
			ev1, ev2 := filepath.Join(dir, killAt+"-1.jsonl"), filepath.Join(dir, killAt+"-2.jsonl")

			first := obelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", state, "--run-id", "r", "--events", ev1, "--input", input, "diamond.plan")
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			if got := <-srv.blocked; got != killAt {
				t.Fatalf("blocked at %s", got)
			}
			if err := first.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			if err := first.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("the first process ended with %v, not killed", err)
			}
			beforeKill := srv.counts()

			// What the journal says completed before the kill.
			db, err := durable.Open(state, durable.Options{})
			if err != nil {
				t.Fatal(err)
			}
			det, err := db.Show("r")
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			completed := map[string]bool{}
			for _, s := range det.Steps {
				if s.Status == vm.StatusCompleted {
					completed[s.ID] = true
				}
			}
			if det.Status != "running" || completed[killAt] {
				t.Fatalf("after the kill the journal says %s, steps %v", det.Status, completed)
			}
			t.Logf("completed before the kill: %v; calls %v", completed, beforeKill)
			journal1, _ := journalLines(t, state, "r")
			heard1 := eventLines(t, ev1)

			srv.setBlock("")
			second := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", state, "--events", ev2, "r")
			if second.code != 0 {
				t.Fatalf("resume: exit %d\n%s", second.code, second.stderr)
			}
			if diff := cmp.Diff(whole.stdout, second.stdout); diff != "" {
				t.Errorf("output (-uninterrupted +resumed):\n%s", diff)
			}

			calls := srv.counts()
			for _, step := range []string{"a", "b", "c", "d", "e"} {
				switch {
				case completed[step] && calls[step] != 1:
					t.Errorf("%s completed before the kill and was called %d times", step, calls[step])
				case step == killAt && calls[step] != 2:
					t.Errorf("%s was running at the kill and was called %d times, want 2 (at least once)", step, calls[step])
				case calls[step] < 1 || calls[step] > beforeKill[step]+1:
					t.Errorf("%s called %d times (%d before the kill)", step, calls[step], beforeKill[step])
				}
			}
			srv.mu.Lock()
			keys := srv.keys[killAt]
			srv.mu.Unlock()
			if len(keys) != 2 || keys[0] != "r/"+killAt || keys[1] != keys[0] {
				t.Errorf("idempotency keys of %s: %q, want r/%s twice", killAt, keys, killAt)
			}

			// The journal holds every event: all the killed process
			// reported (it writes an event to the journal before it
			// reports it), then all the resumed one reported.
			all, evs := journalLines(t, state, "r")
			heard2 := eventLines(t, ev2)
			if len(heard1) > len(journal1) || !cmp.Equal(heard1, journal1[:len(heard1)]) {
				t.Errorf("events of the killed process (-reported +journal):\n%s", cmp.Diff(heard1, journal1))
			}
			if len(all) != len(journal1)+len(heard2) || !cmp.Equal(heard2, all[len(journal1):]) {
				t.Errorf("events of the resumed process (-reported +journal):\n%s", cmp.Diff(heard2, all[len(journal1):]))
			}
			finished := map[string]int{}
			for _, ev := range evs {
				if ev.Type == vm.StepCompleted {
					finished[ev.Step]++
				}
				if ev.Type == vm.StepRestored && !completed[ev.Step] {
					t.Errorf("%s was restored but had not completed", ev.Step)
				}
			}
			if diff := cmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, finished); diff != "" {
				t.Errorf("step-completed events in the journal (-want +got):\n%s", diff)
			}
			if last := evs[len(evs)-1]; last.Type != vm.PlanFinished || last.Verdict != "completed" {
				t.Errorf("the journal ends with %s %s", last.Type, last.Verdict)
			}
		})
	}
}

const gatedPlan = `input {
  base: string
}

check: http.get(url: †input.base + "/check") -> †state.check
charge: http.request(method: "POST", url: †input.base + "/charge?from=" + †state.check.body.value) -> †state.charge
  approve "Charge the card?"
mail: http.get(url: †input.base + "/mail?from=" + †state.charge.body.value) -> †state.mail

output †state.mail.body.value
`

// TestApprovalAcrossProcesses: one process stops at the gate, a second
// approves, a third resumes the run to its end.
func TestApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gated.plan"), gatedPlan)
	srv := newStepServer(t)
	input := `{"base": "` + srv.URL + `"}`

	first := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "pay-1", "--input", input, "gated.plan")
	if first.code != exitWaiting || first.stdout != "" {
		t.Fatalf("first: exit %d, stdout %q\n%s", first.code, first.stdout, first.stderr)
	}
	for _, want := range []string{`waiting for approval of step charge (http.request) "Charge the card?"`, "obelisk approve --state-dir st pay-1", "obelisk resume --state-dir st pay-1"} {
		if !strings.Contains(first.stderr, want) {
			t.Errorf("the first process does not say %q:\n%s", want, first.stderr)
		}
	}
	if diff := cmp.Diff(map[string]int{"check": 1}, srv.counts()); diff != "" {
		t.Errorf("calls before the decision (-want +got):\n%s", diff)
	}
	runs := runObelisk(t, dir, "runs", "--state-dir", "st")
	if !strings.Contains(runs.stdout, "pay-1") || !strings.Contains(runs.stdout, "waiting") {
		t.Errorf("runs:\n%s", runs.stdout)
	}

	second := runObelisk(t, dir, "approve", "--state-dir", "st", "--by", "ann", "--note", "looks right", "pay-1")
	if second.code != 0 || !strings.Contains(second.stdout, "approved step charge") {
		t.Fatalf("approve: exit %d\n%s%s", second.code, second.stdout, second.stderr)
	}
	if again := runObelisk(t, dir, "approve", "--state-dir", "st", "pay-1"); again.code != exitInput {
		t.Errorf("a second approval: exit %d\n%s", again.code, again.stderr)
	}

	third := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "pay-1")
	if third.code != 0 || strings.TrimSpace(third.stdout) != `"mail(charge(check()))"` {
		t.Fatalf("resume: exit %d, output %s\n%s", third.code, third.stdout, third.stderr)
	}
	if diff := cmp.Diff(map[string]int{"check": 1, "charge": 1, "mail": 1}, srv.counts()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "pay-1")
	for _, want := range []string{"run pay-1: completed", "processes: 2", `step charge (http.request) "Charge the card?": approved by ann: looks right`} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("show does not say %q:\n%s", want, show.stdout)
		}
	}
	if again := runObelisk(t, dir, "resume", "--state-dir", "st", "pay-1"); again.code != exitInput || !strings.Contains(again.stderr, "has ended (completed)") {
		t.Errorf("resuming a finished run: exit %d\n%s", again.code, again.stderr)
	}

	// Rejected: the gated step fails with code rejected and the run stops.
	srv2 := newStepServer(t)
	input2 := `{"base": "` + srv2.URL + `"}`
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "pay-2", "--input", input2, "gated.plan"); r.code != exitWaiting {
		t.Fatalf("pay-2: exit %d\n%s", r.code, r.stderr)
	}
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "--reject", "--note", "too much", "pay-2", "charge"); r.code != 0 {
		t.Fatalf("reject: exit %d\n%s", r.code, r.stderr)
	}
	r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "pay-2")
	if r.code != exitInput || !strings.Contains(r.stderr, "a person rejected charge: too much [rejected]") || srv2.counts()["charge"] != 0 {
		t.Errorf("rejected: exit %d, calls %v\n%s", r.code, srv2.counts(), r.stderr)
	}
}

// TestApprovalTimeoutDefault: a gate nobody decides within the timeout is
// decided by the configured default when the run resumes.
func TestApprovalTimeoutDefault(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gated.plan"), gatedPlan)
	srv := newStepServer(t)
	input := `{"base": "` + srv.URL + `"}`
	// A timeout of 1ns has passed by the time the run is resumed.
	r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "t", "--approval-timeout", "1ns", "--approval-default", "approve", "--input", input, "gated.plan")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	show := runObelisk(t, dir, "show", "--state-dir", "st", "t")
	if !strings.Contains(show.stdout, "approved by timeout: no decision within 1ns: approved by default") || srv.counts()["charge"] != 1 {
		t.Errorf("show:\n%s", show.stdout)
	}
}

const toolsV1 = `{"tools": [{"name": "lookup",
  "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "outputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
  "annotations": {"readOnlyHint": true}}]}`

// TestPlanApplyStale: apply runs a planfile as it was made, and refuses it
// once a tool's schema has changed.
func TestPlanApplyStale(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tools.json"), toolsV1)
	writeFile(t, filepath.Join(dir, "who.plan"), "input {\n  id: string\n}\n\nlookup(id: †input.id) -> †state.who\n\noutput †state.who.name\n")
	writeFile(t, filepath.Join(dir, "who.mocks.json"), `{"lookup": {"result": {"name": "Ada"}}}`)

	p := runObelisk(t, dir, "plan", "--tools", "tools.json", "--input", `{"id": "u1"}`, "-o", "who.planfile", "who.plan")
	if p.code != 0 || !strings.Contains(p.stdout, "lookup  (id: string) -> {name: string} pure") || !strings.Contains(p.stdout, "hash sha256:") {
		t.Fatalf("plan: exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	a := runObelisk(t, dir, "apply", "--state-dir", "st", "--run-id", "a1", "who.planfile")
	if a.code != 0 || strings.TrimSpace(a.stdout) != `"Ada"` {
		t.Fatalf("apply: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	// From another directory, the tools file and the mocks are still
	// found where the plan was made.
	elsewhere := t.TempDir()
	a = runObelisk(t, elsewhere, "apply", "--state-dir", "st", "--run-id", "a2", filepath.Join(dir, "who.planfile"))
	if a.code != 0 || strings.TrimSpace(a.stdout) != `"Ada"` {
		t.Fatalf("apply from another directory: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}

	// The tool's output changes: the plan is stale.
	writeFile(t, filepath.Join(dir, "tools.json"), strings.Replace(toolsV1, `"name": {"type": "string"}`, `"name": {"type": "string"}, "age": {"type": "integer"}`, 1))
	a = runObelisk(t, dir, "apply", "--state-dir", "st", "who.planfile")
	if a.code != exitInput || a.stdout != "" ||
		!strings.Contains(a.stderr, "the plan is stale: tool lookup changed from (id: string) -> {name: string} pure to (id: string) -> {name: string, age?: int} pure") {
		t.Errorf("stale apply: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	runs := runObelisk(t, dir, "runs", "--state-dir", "st", "--format", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(runs.stdout), &list); err != nil || len(list) != 1 {
		t.Errorf("a refused apply made a run: %v\n%s", err, runs.stdout)
	}

	// A planfile edited by hand is refused too.
	b, _ := os.ReadFile(filepath.Join(dir, "who.planfile"))
	writeFile(t, filepath.Join(dir, "who.planfile"), strings.Replace(string(b), `"id": "u1"`, `"id": "u2"`, 1))
	if a := runObelisk(t, dir, "apply", "--state-dir", "st", "who.planfile"); a.code != exitInput || !strings.Contains(a.stderr, "changed after it was written") {
		t.Errorf("edited planfile: exit %d\n%s", a.code, a.stderr)
	}
}

// TestRecordReplay: a recorded run replays to the same output without
// calling a tool; a call the recording cannot answer fails.
func TestRecordReplay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "diamond.plan"), diamond)
	srv := newStepServer(t)
	input := `{"base": "` + srv.URL + `"}`
	rec := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--no-journal", "--record", "calls.jsonl", "--input", input, "diamond.plan")
	if rec.code != 0 {
		t.Fatalf("record: exit %d\n%s", rec.code, rec.stderr)
	}
	recorded := srv.counts()
	srv.Close() // nothing answers any more

	rep := runObelisk(t, dir, "run", "--no-journal", "--replay", "calls.jsonl", "--input", input, "diamond.plan")
	if rep.code != 0 {
		t.Fatalf("replay: exit %d\n%s", rep.code, rep.stderr)
	}
	if diff := cmp.Diff(rec.stdout, rep.stdout); diff != "" {
		t.Errorf("output (-recorded +replayed):\n%s", diff)
	}
	if diff := cmp.Diff(recorded, srv.counts()); diff != "" {
		t.Errorf("the replay called tools (-recorded +after):\n%s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "calls.jsonl"))
	if n := strings.Count(string(b), "\n"); n != 5 || !strings.HasPrefix(string(b), `{"tool":"http.get","args":{"url":`) {
		t.Errorf("the recording has %d calls:\n%s", n, b)
	}

	// Another input makes calls the recording has no answer for.
	other := runObelisk(t, dir, "run", "--no-journal", "--replay", "calls.jsonl", "--input", `{"base": "http://127.0.0.1:1"}`, "diamond.plan")
	if other.code != exitInput || !strings.Contains(other.stderr, "the recording has no answer for http.get") {
		t.Errorf("unrecorded: exit %d\n%s", other.code, other.stderr)
	}
}

// TestApproveEdited: a plan that asks for approval as a whole waits; it is
// approved as edited, and the edited plan runs.
func TestApproveEdited(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "whole.plan"), "approve \"Run it?\"\n\n"+diamond)
	writeFile(t, filepath.Join(dir, "edited.plan"), "input {\n  base: string\n}\n\nhttp.get(url: †input.base + \"/only\") -> †state.only\n\noutput †state.only.body.value\n")
	writeFile(t, filepath.Join(dir, "broken.plan"), "nosuchtool() -> †state.x\n")
	srv := newStepServer(t)
	input := `{"base": "` + srv.URL + `"}`
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "w", "--input", input, "whole.plan"); r.code != exitWaiting || !strings.Contains(r.stderr, `waiting for approval of the plan "Run it?"`) {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "--edit", "broken.plan", "w"); r.code != exitInput || !strings.Contains(r.stderr, "unknown tool nosuchtool") {
		t.Errorf("a broken edit: exit %d\n%s", r.code, r.stderr)
	}
	// An edit is checked against the operator's tools as the plan was: it
	// cannot make the built-in http.request pure.
	writeFile(t, filepath.Join(dir, "weak.plan"), "tool http.request(url: string, method?: string) -> any pure\nhttp.request(url: \""+srv.URL+"/only\", method: \"POST\") -> †state.r\n")
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "--edit", "weak.plan", "w"); r.code != exitInput || !strings.Contains(r.stderr, "tool http.request is declared pure, but the operator's definition is irreversible") {
		t.Errorf("an edit that weakens an effect: exit %d\n%s", r.code, r.stderr)
	}
	if r := runObelisk(t, dir, "approve", "--state-dir", "st", "--edit", "edited.plan", "w", "plan"); r.code != 0 {
		t.Fatalf("approve --edit: exit %d\n%s", r.code, r.stderr)
	}
	r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "w")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"only()"` {
		t.Errorf("resume: exit %d, output %s\n%s", r.code, r.stdout, r.stderr)
	}
	if diff := cmp.Diff(map[string]int{"only": 1}, srv.counts()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
