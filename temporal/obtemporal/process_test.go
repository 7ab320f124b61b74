package obtemporal_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/vm"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds obelisk-temporal once for the tests that run it as
// processes.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "obelisk-temporal-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "obelisk-temporal")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/obelisk-temporal").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// process is a command run by a test, stopped when the test ends.
type process struct {
	cmd    *exec.Cmd
	stderr *logBuffer
	done   chan struct{}
}

func start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary(t), args...), stderr: new(logBuffer), done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// logBuffer keeps a process's log: the process writes it while a test
// may read it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.buf.Write(p)
	l.mu.Unlock()
	return n, err
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	s := l.buf.String()
	l.mu.Unlock()
	return s
}

// runCLI runs obelisk-temporal to its end and returns its output and
// exit status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(testCtx(t), binary(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); err != nil && !asExit(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

// TestApprovalFromAnotherProcess: a run started by `obelisk-temporal run
// --detach` on a worker process waits for its approval; `obelisk-temporal
// approve`, another process, decides it as an update, and the run
// completes with the output of a local run; `show` prints the decision.
func TestApprovalFromAnotherProcess(t *testing.T) {
	ts, c := newServer(t)
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "cli"}
	examples, _ := filepath.Abs(filepath.Join("..", "..", "examples"))
	start(t, append([]string{"worker", "--mocks", filepath.Join(examples, "refund.mocks.json")}, conn...)...)
	out, errs, code := runCLI(t, append([]string{"run", "--detach", filepath.Join(examples, "refund.plan")}, conn...)...)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	ctx := testCtx(t)
	st := waitFor(t, c, id, func(st *obtemporal.Status) bool { return st.Status == vm.RunWaiting })
	if len(st.Approvals) != 1 || st.Approvals[0].Step != "refund" || st.Approvals[0].Decided {
		t.Fatalf("approvals %+v", st.Approvals)
	}

	// A decision on a step the run does not wait for is refused.
	_, errs, code = runCLI(t, append([]string{"approve", id, "nosuch"}, conn...)...)
	if code != 1 || !strings.Contains(errs, "obelisk-temporal approve: ") || !strings.Contains(errs, "does not wait for an approval of nosuch: it waits for refund") {
		t.Errorf("approve nosuch: exit %d: %s", code, errs)
	}
	out, errs, code = runCLI(t, append([]string{"approve", "--wait", id}, conn...)...)
	if code != 0 || !strings.Contains(out, "approved step refund of workflow "+id) || !strings.Contains(out, `"confirmationId": "RF-2025-0611-48213"`) {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, errs)
	}
	res, err := obtemporal.Wait(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.RunCompleted {
		t.Fatalf("%s %s", res.Status, res.Error)
	}
	out, errs, code = runCLI(t, append([]string{"show", id}, conn...)...)
	if code != 0 || !strings.Contains(out, "step refund: approved by obelisk-temporal approve") || !strings.Contains(out, "completed") {
		t.Errorf("show: exit %d\n%s\n%s", code, out, errs)
	}
	// The history, with its update, replays; the worker's configuration
	// is the command's defaults.
	_, decls := builtins(t)
	replay(t, c, id, obtemporal.Config{Tools: toolFunc(nil), Check: compiler.Config{Tools: decls}})
	// A run that waits exits with status 3 and says how to decide.
	_, errs, code = runCLI(t, append([]string{"run", filepath.Join(examples, "refund.plan")}, conn...)...)
	if code != 3 || !strings.Contains(errs, "waits for approval of refund") || !strings.Contains(errs, "obelisk-temporal approve") {
		t.Errorf("run: exit %d: %s", code, errs)
	}
}

// waitFor polls a run's state until cond holds.
func waitFor(t *testing.T, c client.Client, id string, cond func(*obtemporal.Status) bool) *obtemporal.Status {
	t.Helper()
	ctx := testCtx(t)
	for {
		st, err := obtemporal.Show(ctx, c, id)
		if err == nil && cond(st) {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last %+v)", id, ctx.Err(), st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestWorkerKilled: a worker process is killed (SIGKILL) in the middle
// of a run, with calls running; the run completes on another worker
// process of the same queue, and
// no call whose activity completed was made again: a call made twice is
// one whose activity was running on the killed worker and started again.
// The calls are http.request calls to a loopback server, which records
// each one's Idempotency-Key.
func TestWorkerKilled(t *testing.T) {
	ts, c := newServer(t)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { killOne(t, ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), c, round) })
	}
}

func killOne(t *testing.T, hostPort, namespace string, c client.Client, round int) {
	var mu sync.Mutex
	keys := map[string]int{}
	requests := make(chan struct{}, 1000)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		requests <- struct{}{}
		time.Sleep(100 * time.Millisecond) // a call takes a while, so that a kill finds some running
		fmt.Fprint(w, `{"ok": true}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	queue := fmt.Sprintf("kill-%d", round)
	conn := []string{"--temporal", hostPort, "--namespace", namespace, "--task-queue", queue}
	workerArgs := append([]string{"worker", "--allow-net=" + ln.Addr().String(), "--heartbeat", "1s", "--max-parallel", "8"}, conn...)
	// The victim runs alone until it has made some calls, so that it is
	// killed with calls running; the other worker starts after.
	victim := start(t, workerArgs...)

	const n = 40
	plan := fmt.Sprintf(`input {
  xs: [int]
}
each: for each i in †input.xs max %d: http.request(url: "http://%s/item/" + string(†i), method: "POST") -> †state.out
output size(†state.out)
`, n, ln.Addr())
	ctx := testCtx(t)
	id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: "kill.plan", Text: plan}, Input: []byte(fmt.Sprintf(`{"xs": [%s]}`, seq(n)))}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		select {
		case <-requests:
		case <-ctx.Done():
			t.Fatalf("no calls: %s", victim.stderr)
		}
	}
	victim.cmd.Process.Kill()
	<-victim.done
	start(t, workerArgs...)
	out, err := obtemporal.Wait(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != vm.RunCompleted || string(out.Output) != fmt.Sprint(n) {
		t.Fatalf("%s %s %s", out.Status, out.Error, out.Output)
	}

	// The attempts of each call's activity, from the run's history.
	attempts := map[string]int32{}
	scheduled := map[int64]string{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			var call obtemporal.Call
			if err := dc.FromPayloads(a.GetInput(), &call); err != nil {
				t.Fatal(err)
			}
			scheduled[ev.GetEventId()] = call.Key
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts[scheduled[a.GetScheduledEventId()]] = a.GetAttempt()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for i := range n {
		key := fmt.Sprintf("%s/each[%d]", id, i)
		switch got := keys[key]; {
		case got == 0:
			t.Errorf("%s was never called", key)
		case int32(got) > attempts[key]:
			t.Errorf("%s was called %d times, though its activity completed on attempt %d", key, got, attempts[key])
		case got > 1:
			again++
		}
	}
	if len(keys) != n {
		t.Errorf("%d keys called, want %d", len(keys), n)
	}
	if again == 0 {
		t.Error("no call was running on the killed worker, or none was started again")
	}
	t.Logf("%d calls started again after the kill", again)
}

// seq returns "0, 1, …, n-1".
func seq(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprint(i)
	}
	return strings.Join(xs, ", ")
}
