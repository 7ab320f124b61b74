package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/obelisk-plan/obelisk/console"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/internal/browsertest"
	"github.com/obelisk-plan/obelisk/vm"
)

// startServe starts `obelisk serve` in a process of its own on a free
// loopback port and returns the address it prints.
func startServe(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := obelisk(t, dir, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("obelisk serve printed no address: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// liveNode is the JavaScript test that a step's node has a status.
func liveNode(step, status string) string {
	return fmt.Sprintf(`!!document.querySelector('svg.graph a.node[data-step=%q].s-%s')`, step, status)
}

const gatedChain = `input {
  base: string
}

a: http.get(url: †input.base + "/a") -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a.body.value) -> †state.b
c: http.get(url: †input.base + "/c?from=" + †state.b.body.value) -> †state.c
  approve "Fetch c?"

output †state.c.body.value
`

// TestServeBrowser runs the console as a person would, in headless
// Chromium, against runs of the command line in other processes: a run
// started by obelisk run shows up and turns green step by step; its gate
// is approved in the page, with a note, and obelisk resume completes the
// run, which the page shows; another run's gate is rejected in the page,
// and the run, resumed, shows the note. Screenshots of the run and
// approval pages are saved.
func TestServeBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "chain.plan"), gatedChain)
	srv := newGateServer(t)
	input := `{"base": "` + srv.URL + `"}`
	base := strings.TrimSuffix(startServe(t, dir, "--state-dir", "st", "--create"), "/")
	b := browsertest.New(t, 1280, 900)
	b.Open(base + "/")
	b.WaitFor("the list watches the journal", `document.getElementById('live').getAttribute('data-state') === 'on'`)

	gate := srv.hold("b")
	run := obelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "live", "--input", input, "chain.plan")
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("the run shows up in the list", `!!document.querySelector('tr[data-run="live"]')`)
	b.Do("opening the run", chromedp.Click(`tr[data-run="live"] a[href="/runs/live"]`))
	if got := <-srv.arrived; got != "b" {
		t.Fatalf("held at %s", got)
	}
	b.WaitFor("a is green while b runs", liveNode("a", "completed")+" && "+liveNode("b", "running")+" && "+liveNode("c", "pending"))
	b.Screenshot("run-live")
	close(gate)
	b.WaitFor("b is green and c waits for its approval", liveNode("b", "completed")+" && "+liveNode("c", "waiting")+
		` && !!document.querySelector('#approvals form.decide button[value="approve"]')`)
	if err := run.Wait(); err == nil || run.ProcessState.ExitCode() != exitWaiting {
		t.Fatalf("obelisk run: %v\n%s", err, runErr.String())
	}
	b.Screenshot("run-waiting")
	b.Open(base + "/approvals")
	b.WaitFor("the approval shows what c will fetch", `document.querySelector('pre.args').textContent.includes('/c?from=b(a())')`)
	b.Screenshot("approvals")
	b.Do("approving with a note",
		chromedp.SendKeys(`textarea[name="note"]`, "the right page"),
		chromedp.Click(`form.decide button[value="approve"]`))
	b.WaitFor("the decision is recorded", `location.search.includes('decided=1') && !!document.querySelector('.flash')`)
	b.Open(base + "/runs/live")
	b.WaitFor("the run's page watches", `document.getElementById('live').getAttribute('data-state') === 'on'`)
	res := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "live")
	if res.code != 0 || !strings.Contains(res.stdout, `"c(b(a()))"`) {
		t.Fatalf("obelisk resume: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	b.WaitFor("the run is green, with its output", liveNode("c", "completed")+` && !!document.querySelector('#summary .status.s-completed')`+
		` && document.querySelector('#output pre').textContent.includes('c(b(a()))')`)
	if text := browsertest.Eval[string](b, `document.getElementById('history').innerText`); !strings.Contains(text, "by someone at the console (no name given)") || !strings.Contains(text, "the right page") {
		t.Errorf("the decision is not shown: %s", text)
	}
	b.Screenshot("run-completed")

	srv.hold("")
	if r := runObelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", "st", "--run-id", "rej", "--input", input, "chain.plan"); r.code != exitWaiting {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	b.Open(base + "/approvals")
	b.Do("rejecting with a note",
		chromedp.SendKeys(`textarea[name="note"]`, "not this time"),
		chromedp.Click(`form.decide button[value="reject"]`))
	b.WaitFor("the decision is recorded", `location.search.includes('decided=1')`)
	if r := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", "st", "rej"); r.code != exitInput || !strings.Contains(r.stderr, "a person rejected c: not this time") {
		t.Fatalf("resuming the rejected run: exit %d\n%s", r.code, r.stderr)
	}
	b.Open(base + "/runs/rej")
	b.WaitFor("the rejected step shows the note", liveNode("c", "failed")+` && document.getElementById('steps').textContent.includes('a person rejected c: not this time')`)
	b.Screenshot("run-rejected")
	if calls := srv.counts(); calls["c"] != 0 {
		t.Errorf("the rejected step was called: %v", calls)
	}
}

// TestServeExamples runs every example as its README says (obelisk run
// --yes), and two that wait for a decision, into one journal, and checks
// that the console shows each run as the journal has it: its status, and
// each of its steps with its status and, for one that completed, its
// result.
func TestServeExamples(t *testing.T) {
	root, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	plans, err := filepath.Glob(filepath.Join(root, "*.plan"))
	if err != nil || len(plans) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	t.Chdir(t.TempDir())
	for _, plan := range plans {
		name := strings.TrimSuffix(filepath.Base(plan), ".plan")
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"run", "--yes", "--state-dir", state, "--run-id", name, plan}, &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}}); code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, errOut.String())
		}
	}
	for _, name := range []string{"refund", "travel-pet"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"run", "--state-dir", state, "--run-id", name + "-waiting", filepath.Join(root, name+".plan")}, &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}}); code != exitWaiting {
			t.Fatalf("%s: exit %d\n%s", name, code, errOut.String())
		}
	}
	st, c := consoleOf(t, state)
	get := func(path string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		c.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	runs, err := st.Runs()
	if err != nil {
		t.Fatal(err)
	}
	list := get("/")
	if len(runs) != len(plans)+2 {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		if !strings.Contains(list, `data-run="`+r.ID+`"`) {
			t.Errorf("the list has no run %s", r.ID)
		}
		page := get("/runs/" + r.ID)
		if !strings.Contains(page, `<span class="status s-`+string(r.Status)+`">`) {
			t.Errorf("%s: the page does not show its status %s", r.ID, r.Status)
		}
		if strings.Contains(page, "does not compile here") {
			t.Errorf("%s: the page cannot draw its plan", r.ID)
		}
		det, err := st.Show(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range det.Steps {
			if strings.ContainsAny(s.ID, "/[") {
				continue
			}
			if !strings.Contains(page, fmt.Sprintf(`data-step="%s" data-status="%s"`, s.ID, s.Status)) {
				t.Errorf("%s: the graph does not show step %s %s", r.ID, s.ID, s.Status)
			}
			if s.Status == vm.StatusCompleted && !strings.Contains(page, `<pre class="json result">`) {
				t.Errorf("%s: no result is shown", r.ID)
			}
		}
		if r.Status == vm.RunCompleted && !strings.Contains(page, `<h2 id="h-output">Output</h2>`+"\n"+`<pre class="json">`) {
			t.Errorf("%s: the output is not shown", r.ID)
		}
	}
	approvals := get("/approvals")
	for _, want := range []string{`/runs/refund-waiting`, `/runs/travel-pet-waiting`, "irreversible", "The exact arguments that will be sent", "Edit the plan, then approve it"} {
		if !strings.Contains(approvals, want) {
			t.Errorf("the approvals page has no %q", want)
		}
	}
}

// consoleOf opens the journal in state and the console over it, as
// obelisk serve does; the test serves the console's handler itself.
func consoleOf(t *testing.T, state string) (*durable.Store, *console.Server) {
	t.Helper()
	st, err := durable.OpenExisting(state, durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := console.New(st, ln, console.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}
