package obtemporal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// startWaiting starts the refund example on a queue with a worker and
// returns its workflow ID once it waits for the approval of its refund.
func startWaiting(t *testing.T, queue string) (string, func() (*obtemporal.Outcome, error), func(string) error, func(obtemporal.Decision) error) {
	t.Helper()
	_, c := newServer(t)
	ctx := testCtx(t)
	reg, decls := builtins(t)
	text, input := readExample(t, "refund")
	mocksText, err := os.ReadFile(filepath.Join("..", "..", "examples", "refund.mocks.json"))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, c, queue, obtemporal.Config{Tools: toolkit.Chain{Mocks: mustMocks(t, mocksText), Registry: reg}, Check: checkConfig(decls)})
	id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: "refund.plan", Text: text}, Input: input}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, id, func(st *obtemporal.Status) bool { return st.Status == vm.RunWaiting })
	wait := func() (*obtemporal.Outcome, error) { return obtemporal.Wait(ctx, c, id) }
	terminate := func(reason string) error {
		if reason == "" {
			return obtemporal.Cancel(ctx, c, id)
		}
		return obtemporal.Terminate(ctx, c, id, reason)
	}
	approve := func(d obtemporal.Decision) error { _, err := obtemporal.Approve(ctx, c, id, d); return err }
	return id, wait, terminate, approve
}

// TestCancel: a run canceled while it waits for a decision ends canceled,
// with what it had done, and a decision sent afterwards is refused.
func TestCancel(t *testing.T) {
	_, wait, stop, approve := startWaiting(t, "cancel")
	if err := stop(""); err != nil {
		t.Fatal(err)
	}
	out, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != vm.RunCanceled || !strings.Contains(out.Error, "canceled") || out.Summary.Completed == 0 {
		t.Errorf("outcome %+v", out)
	}
	if err := approve(obtemporal.Decision{Approve: true, By: "test"}); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("a decision on a canceled run: %v", err)
	}
}

// TestTerminate: a terminated run's outcome says why, in the words given
// to Terminate.
func TestTerminate(t *testing.T) {
	_, wait, stop, _ := startWaiting(t, "terminate")
	if err := stop("the operator stopped it"); err != nil {
		t.Fatal(err)
	}
	out, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != vm.RunCanceled || !strings.Contains(out.Error, "terminated: the operator stopped it") {
		t.Errorf("outcome %+v", out)
	}
}

// TestApproveNoWorker: a decision for a run whose task queue no worker
// polls is not sent, and Approve says so at once, rather than waiting
// for a worker that may come back long after the caller gave up.
func TestApproveNoWorker(t *testing.T) {
	_, c := newServer(t)
	ctx := testCtx(t)
	text, input := readExample(t, "refund")
	id, err := obtemporal.StartRun(ctx, c, "nobody-polls", "", obtemporal.Start{Plan: obtemporal.Plan{Name: "refund.plan", Text: text}, Input: input}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = obtemporal.Approve(ctx, c, id, obtemporal.Decision{Approve: true, By: "test"})
	if !errors.Is(err, obtemporal.ErrNoWorker) || !strings.Contains(err.Error(), "nobody-polls") {
		t.Fatalf("approve with no worker: %v", err)
	}
	// The run is still there, untouched: a worker that comes now runs it
	// up to its gate, which no decision has passed.
	reg, decls := builtins(t)
	mocksText, err := os.ReadFile(filepath.Join("..", "..", "examples", "refund.mocks.json"))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, c, "nobody-polls", obtemporal.Config{Tools: toolkit.Chain{Mocks: mustMocks(t, mocksText), Registry: reg}, Check: checkConfig(decls)})
	st := waitFor(t, c, id, func(st *obtemporal.Status) bool { return st.Status == vm.RunWaiting })
	if len(st.Approvals) != 1 || st.Approvals[0].Decided {
		t.Errorf("approvals %+v", st.Approvals)
	}
	// Following a run asks the status query, which answers the status and
	// the approvals waited for, without the steps show lists.
	v, err := c.QueryWorkflow(ctx, id, "", obtemporal.StatusQuery)
	if err != nil {
		t.Fatal(err)
	}
	var brief obtemporal.Status
	if err := v.Get(&brief); err != nil {
		t.Fatal(err)
	}
	if brief.Status != vm.RunWaiting || len(brief.Steps) != 0 || len(brief.Approvals) != 1 || brief.Approvals[0].Step != "refund" || len(st.Steps) == 0 {
		t.Errorf("status query %+v, show %d steps", brief, len(st.Steps))
	}
}
