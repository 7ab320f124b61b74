package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// slowPlan sleeps for an hour, then echoes.
const slowPlan = `slow: sleep(duration: "1h") -> †state.slept
  timeout 87600h
after: echo(value: 1) -> †state.after
  when †state.slept == null
output †state.after
`

// TestRunTimeoutJournaled: --run-timeout stops a run that takes longer,
// whatever the plan's own timeouts say; the journal records it canceled,
// with the limit-exceeded error, and a resumed run is bounded by the limit
// it was started with, or by the one it is given.
func TestRunTimeoutJournaled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "slow.plan"), slowPlan)
	status := func(want string) {
		t.Helper()
		db, err := durable.Open(filepath.Join(dir, "st"), durable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		det, err := db.Show("slow")
		if err != nil {
			t.Fatal(err)
		}
		if det.Status != vm.RunCanceled || !strings.Contains(det.Error, want) {
			t.Errorf("the journal: %s, %q; want canceled, %q", det.Status, det.Error, want)
		}
	}

	r := runObelisk(t, dir, "run", "--state-dir", "st", "--run-id", "slow", "--run-timeout", "100ms", "slow.plan")
	if r.code == 0 || !strings.Contains(r.stderr, "time limit of 100ms") || !strings.Contains(r.stderr, "[limit-exceeded]") {
		t.Errorf("the run: exit %d\n%s", r.code, r.stderr)
	}
	status("time limit of 100ms")

	r = runObelisk(t, dir, "resume", "--state-dir", "st", "slow")
	if r.code == 0 || !strings.Contains(r.stderr, "time limit of 100ms") {
		t.Errorf("the resumed run: exit %d\n%s", r.code, r.stderr)
	}
	status("time limit of 100ms")

	r = runObelisk(t, dir, "resume", "--state-dir", "st", "--run-timeout", "150ms", "slow")
	if r.code == 0 || !strings.Contains(r.stderr, "time limit of 150ms") {
		t.Errorf("the run resumed with a limit: exit %d\n%s", r.code, r.stderr)
	}
	status("time limit of 150ms")

	r = runObelisk(t, dir, "run", "--no-journal", "--run-timeout", "-1s", "slow.plan")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--run-timeout must not be negative") {
		t.Errorf("a negative limit: exit %d\n%s", r.code, r.stderr)
	}
}

// TestStepTimeoutFlagCaps: a step's timeout cannot raise --step-timeout.
func TestStepTimeoutFlagCaps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "slow.plan"), slowPlan)
	r := runObelisk(t, dir, "run", "--no-journal", "--step-timeout", "100ms", "slow.plan")
	if r.code == 0 || !strings.Contains(r.stderr, "sleep did not return within 100ms [timeout]") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}
