package journal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

const chain = `
tool inc(x: int) -> int idempotent
input {
  start: int
}
a: inc(x: †input.start) -> †state.a
b: inc(x: †state.a) -> †state.b
c: inc(x: †state.b) -> †state.c
output {
  c: †state.c
}
`

// tools calls Go functions by name and counts the calls.
type tools struct {
	mu    sync.Mutex
	fns   map[string]func(ctx context.Context, args map[string]any) (any, error)
	calls map[string]int
}

func newTools() *tools {
	t := &tools{fns: map[string]func(context.Context, map[string]any) (any, error){}, calls: map[string]int{}}
	t.fns["inc"] = func(ctx context.Context, args map[string]any) (any, error) { return args["x"].(int64) + 1, nil }
	return t
}

func (t *tools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	t.mu.Lock()
	t.calls[name]++
	fn := t.fns[name]
	t.mu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("no tool %s", name)
	}
	return fn(ctx, args)
}

func (t *tools) count(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[name]
}

func open(t testing.TB, opts Options) *DB {
	t.Helper()
	d, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// run runs a journaled run's plan in this process, as `obelisk run` or
// `obelisk resume` would, and returns its result and the events the
// observer heard.
func run(ctx context.Context, t *testing.T, r *Run, src *planfile.Source, input map[string]any, tl vm.Caller, o vm.Options) (*vm.Result, []string) {
	t.Helper()
	prog, diags, err := src.Compile()
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	var mu sync.Mutex
	var heard []string
	o.Tools, o.RunID, o.Journal, o.Restore = tl, r.ID, r, r.Restore
	o.Observer = func(e vm.Event) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, string(e.Type)+" "+e.Step)
	}
	res, err := vm.Run(ctx, prog, input, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(res); err != nil {
		t.Fatal(err)
	}
	return res, heard
}

func lines(t *testing.T, d *DB, run string) []string {
	t.Helper()
	evs, err := d.Events(run)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type) + " " + e.Step
	}
	return out
}

func TestRecordAndShow(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "chain.plan", Text: chain}
	input := map[string]any{"start": int64(1)}
	r, err := d.Create(NewRun{ID: "r1", Source: src, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	res, heard := run(context.Background(), t, r, src, input, newTools(), vm.Options{})
	if res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	// The journal holds every event the observer heard, in order.
	if diff := cmp.Diff(heard, lines(t, d, "r1")); diff != "" {
		t.Errorf("events (-heard +journal):\n%s", diff)
	}
	det, err := d.Show("r1")
	if err != nil {
		t.Fatal(err)
	}
	if det.Status != vm.RunCompleted || det.Processes != 1 || det.Finished.IsZero() {
		t.Errorf("run: %+v", det.Summary)
	}
	if diff := cmp.Diff(map[string]any{"c": int64(4)}, det.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	var got []string
	for _, s := range det.Steps {
		got = append(got, fmt.Sprintf("%s %s %v %d", s.ID, s.Status, s.Result, s.Attempts))
	}
	if diff := cmp.Diff([]string{"a completed 2 1", "b completed 3 1", "c completed 4 1"}, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if _, err := d.Create(NewRun{ID: "r1", Source: src}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second run r1: %v", err)
	}
	if _, _, err := d.Resume("r1", false); !errors.As(err, new(*FinishedError)) {
		t.Errorf("resuming a finished run: %v", err)
	}
	if id, err := d.Lookup("r"); err != nil || id != "r1" {
		t.Errorf("lookup by prefix: %q %v", id, err)
	}
	if _, err := d.Lookup("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lookup of nothing: %v", err)
	}
}

// TestResumeAfterCancel: a run stopped while b runs resumes without
// calling a again, and its journal has the events of both processes.
func TestResumeAfterCancel(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "chain.plan", Text: chain}
	input := map[string]any{"start": int64(1)}
	r, err := d.Create(NewRun{ID: "r1", Source: src, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	tl := newTools()
	ctx, cancel := context.WithCancel(context.Background())
	tl.fns["inc"] = func(c context.Context, args map[string]any) (any, error) {
		if args["x"].(int64) == 2 { // b: stop the process here
			cancel()
			<-c.Done()
			return nil, c.Err()
		}
		return args["x"].(int64) + 1, nil
	}
	res, heard1 := run(ctx, t, r, src, input, tl, vm.Options{})
	if res.Status != vm.RunCanceled {
		t.Fatalf("status %s", res.Status)
	}

	r2, st, err := d.Resume("r1", false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source.Text != chain || st.Input["start"] != int64(1) {
		t.Errorf("stored: %+v", st)
	}
	tl2 := newTools()
	res, heard2 := run(context.Background(), t, r2, st.Source, st.Input, tl2, vm.Options{})
	if res.Status != vm.RunCompleted || res.Output.(map[string]any)["c"] != int64(4) {
		t.Fatalf("resumed: %s %v %v", res.Status, res.Output, res.Err)
	}
	if tl2.count("inc") != 2 {
		t.Errorf("the resumed run called inc %d times, want 2 (b and c)", tl2.count("inc"))
	}
	if diff := cmp.Diff(append(heard1, heard2...), lines(t, d, "r1")); diff != "" {
		t.Errorf("events (-heard +journal):\n%s", diff)
	}
	if !strings.Contains(strings.Join(heard2, "\n"), "step-restored a") {
		t.Errorf("a was not restored: %v", heard2)
	}
	det, _ := d.Show("r1")
	if det.Processes != 2 {
		t.Errorf("processes %d", det.Processes)
	}
}

const gated = `
tool pay(amount: number) -> {id: string} irreversible
tool mail(id: string) -> string idempotent
pay(amount: 5.0) -> †state.receipt
  approve "Pay 5?"
mail(id: †state.receipt.id) -> †state.mail
output †state.mail
`

func payTools() *tools {
	tl := newTools()
	tl.fns["pay"] = func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"id": "p1"}, nil }
	tl.fns["mail"] = func(ctx context.Context, args map[string]any) (any, error) { return "sent " + args["id"].(string), nil }
	return tl
}

// TestApprovalAcrossProcesses: the gate waits, a decision is recorded,
// and the resumed run takes it.
func TestApprovalAcrossProcesses(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "pay.plan", Text: gated}
	r, _ := d.Create(NewRun{ID: "w", Source: src})
	tl := payTools()
	res, _ := run(context.Background(), t, r, src, nil, tl, vm.Options{Approver: r.Approver(nil, ApprovalPolicy{})})
	if res.Status != vm.RunWaiting || tl.count("pay") != 0 {
		t.Fatalf("status %s pay %d", res.Status, tl.count("pay"))
	}
	pending, err := d.Pending("w")
	if err != nil || len(pending) != 1 || pending[0].Step != "pay" || pending[0].Message != "Pay 5?" || pending[0].Args["amount"] != 5.0 {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	sum, _ := d.Runs()
	if len(sum) != 1 || sum[0].Status != vm.RunWaiting || sum[0].Steps[vm.StatusWaiting] != 1 {
		t.Errorf("runs: %+v", sum[0])
	}
	if err := d.Decide("w", 0, "pay", Decision{Approved: true, Note: "fine", By: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Decide("w", 0, "pay", Decision{Approved: false}); err == nil {
		t.Error("a second decision was taken")
	}
	r2, st, err := d.Resume("w", false)
	if err != nil {
		t.Fatal(err)
	}
	res, _ = run(context.Background(), t, r2, st.Source, st.Input, tl, vm.Options{Approver: r2.Approver(nil, ApprovalPolicy{})})
	if res.Status != vm.RunCompleted || res.Output != "sent p1" || tl.count("pay") != 1 {
		t.Errorf("resumed: %s %v pay %d", res.Status, res.Output, tl.count("pay"))
	}
}

// TestApprovalTimeout: a request nobody decides is decided by the policy
// once it is older than the timeout, on the journal's clock.
func TestApprovalTimeout(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := open(t, Options{Now: func() time.Time { return now }})
	src := &planfile.Source{Name: "pay.plan", Text: gated}
	policy := ApprovalPolicy{Timeout: time.Hour}
	r, _ := d.Create(NewRun{ID: "t", Source: src})
	tl := payTools()
	res, _ := run(context.Background(), t, r, src, nil, tl, vm.Options{Approver: r.Approver(nil, policy)})
	if res.Status != vm.RunWaiting {
		t.Fatalf("status %s", res.Status)
	}
	now = now.Add(59 * time.Minute)
	r, st, _ := d.Resume("t", false)
	res, _ = run(context.Background(), t, r, st.Source, nil, tl, vm.Options{Approver: r.Approver(nil, policy)})
	if res.Status != vm.RunWaiting {
		t.Fatalf("before the timeout: status %s", res.Status)
	}
	now = now.Add(time.Minute)
	r, st, _ = d.Resume("t", false)
	res, _ = run(context.Background(), t, r, st.Source, nil, tl, vm.Options{Approver: r.Approver(nil, policy)})
	if res.Status != vm.RunFailed || tl.count("pay") != 0 || !strings.Contains(res.Err.Error(), "rejected by default") {
		t.Errorf("after the timeout: status %s err %v", res.Status, res.Err)
	}
	aps, _ := d.Approvals("t")
	if len(aps) != 1 || aps[0].By != "timeout" || aps[0].Approved || aps[0].Note != "no decision within 1h0m0s: rejected by default" {
		t.Errorf("approvals: %+v", aps[0])
	}

	// Approve by default, with an approver that never answers: the
	// deadline is the request's time plus the timeout.
	policy.Approve = true
	r, _ = d.Create(NewRun{ID: "t2", Source: src})
	now = now.Add(-2 * time.Hour) // the request is older than the timeout when it is made
	res, _ = run(context.Background(), t, r, src, nil, tl, vm.Options{Approver: r.Approver(silent{}, policy)})
	if res.Status != vm.RunCompleted || tl.count("pay") != 1 {
		t.Errorf("approved by default: status %s (%v), pay %d", res.Status, res.Err, tl.count("pay"))
	}
}

// silent is an approver that waits until its context ends.
type silent struct{}

func (silent) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	<-ctx.Done()
	return vm.Decision{}, ctx.Err()
}

type fixedReplanner struct {
	calls int
	text  string
}

func (f *fixedReplanner) Replan(ctx context.Context, req *vm.ReplanRequest) (*lang.File, error) {
	f.calls++
	file, diags := lang.Parse("new.plan", []byte(f.text))
	if diags.HasErrors() {
		return nil, diags
	}
	return file, nil
}

// TestReplanRecorded: a resumed run takes the recorded new plan instead
// of asking the replanner again, and the changed steps' approval.
func TestReplanRecorded(t *testing.T) {
	d := open(t, Options{})
	text := `approve
on failure replan max 1
tool fetch() -> string pure
tool scrape(url: string) -> string idempotent
tool api(url: string) -> string idempotent
fetch() -> †state.url
scrape(url: †state.url) -> †state.page
output †state.page
`
	src := &planfile.Source{Name: "r.plan", Text: text}
	tl := newTools()
	tl.fns["fetch"] = func(ctx context.Context, args map[string]any) (any, error) { return "u", nil }
	tl.fns["scrape"] = func(ctx context.Context, args map[string]any) (any, error) { return nil, errors.New("blocked") }
	tl.fns["api"] = func(ctx context.Context, args map[string]any) (any, error) {
		return "page of " + args["url"].(string), nil
	}
	rp := &fixedReplanner{text: "api(url: †state.url) -> †state.page\n"}
	r, _ := d.Create(NewRun{ID: "rp", Source: src})
	// The plan is approved; the replan's changed step waits.
	if err := d.Decide("rp", 0, "", Decision{Approved: true}); err == nil {
		t.Fatal("a decision was taken before its request")
	}
	approvals := 0
	first := vm.ApproverFunc(func(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
		approvals++
		if req.Round == 0 {
			return vm.Decision{Approved: true}, nil
		}
		return vm.Decision{}, vm.ErrWaiting
	})
	res, _ := run(context.Background(), t, r, src, nil, tl, vm.Options{Approver: r.Approver(first, ApprovalPolicy{}), Replanner: r.Replanner(rp)})
	if res.Status != vm.RunWaiting || rp.calls != 1 || tl.count("api") != 0 {
		t.Fatalf("status %s (%v), replans %d, api %d", res.Status, res.Err, rp.calls, tl.count("api"))
	}
	pending, _ := d.Pending("rp")
	if len(pending) != 1 || pending[0].Round != 1 || !strings.Contains(pending[0].Diff, "+ api(url: †state.url) -> †state.page") {
		t.Fatalf("pending: %+v", pending)
	}
	if err := d.Decide("rp", 1, "", Decision{Approved: true}); err != nil {
		t.Fatal(err)
	}
	r2, st, _ := d.Resume("rp", false)
	res, _ = run(context.Background(), t, r2, st.Source, nil, tl, vm.Options{Approver: r2.Approver(nil, ApprovalPolicy{}), Replanner: r2.Replanner(nil)})
	if res.Status != vm.RunPartial && res.Status != vm.RunCompleted || res.Output != "page of u" {
		t.Fatalf("resumed: %s %v %v", res.Status, res.Output, res.Err)
	}
	if rp.calls != 1 || tl.count("fetch") != 1 || tl.count("scrape") != 1 || approvals != 2 {
		t.Errorf("replans %d fetch %d scrape %d approvals %d", rp.calls, tl.count("fetch"), tl.count("scrape"), approvals)
	}
}

// TestOpenExisting: where no journal is, OpenExisting says so and creates
// nothing, not even the state directory; where one is, it opens it.
func TestOpenExisting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := OpenExisting(dir, Options{}); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("OpenExisting without a journal: %v, want ErrNoJournal", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenExisting made the state directory: %v", err)
	}
	d, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(NewRun{ID: "r1", Source: &planfile.Source{Name: "p.plan", Text: chain}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d, err = OpenExisting(dir, Options{})
	if err != nil {
		t.Fatalf("OpenExisting with a journal: %v", err)
	}
	defer d.Close()
	if id, err := d.Lookup("r1"); err != nil || id != "r1" {
		t.Errorf("Lookup(r1) = %q, %v", id, err)
	}
}

// TestMigrate: a journal of the first layout, without the owner's start
// time, is brought up to date when it is opened and keeps its runs; one of
// a later layout is refused.
func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(NewRun{ID: "old", Source: &planfile.Source{Name: "p.plan", Text: chain}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE runs DROP COLUMN pid_start`, `PRAGMA user_version = 0`} {
		if _, err := d.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	if d, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var v int
	d.db.QueryRow(`PRAGMA user_version`).Scan(&v)
	if _, err := d.Lookup("old"); err != nil || v != schemaVersion {
		t.Fatalf("after the migration: layout %d, %v", v, err)
	}
	if _, err := d.Create(NewRun{ID: "new", Source: &planfile.Source{Name: "p.plan", Text: chain}}); err != nil {
		t.Fatal(err)
	}
	d.db.Exec(`PRAGMA user_version = 99`)
	d.Close()
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "written by a later version of obelisk (layout 99") {
		t.Errorf("a journal of a later layout: %v", err)
	}
}

// TestFinishUnencodable: a run whose output JSON cannot hold is recorded
// as failed, with why, rather than left running.
func TestFinishUnencodable(t *testing.T) {
	d := open(t, Options{})
	r, err := d.Create(NewRun{ID: "nan", Source: &planfile.Source{Name: "p.plan", Text: chain}})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Finish(&vm.Result{Status: vm.RunCompleted, Output: map[string]any{"x": math.NaN()}})
	if !errors.As(err, new(*OutputError)) {
		t.Fatalf("Finish: %v", err)
	}
	det, err := d.Show("nan")
	if err != nil {
		t.Fatal(err)
	}
	if det.Status != vm.RunFailed || det.Output != nil || !strings.Contains(det.Error, "the run's output cannot be recorded, so the run failed: json: unsupported value: NaN") {
		t.Errorf("recorded: %s %v %q", det.Status, det.Output, det.Error)
	}
	if _, _, err := d.Resume("nan", false); !errors.As(err, new(*FinishedError)) {
		t.Errorf("resume: %v", err)
	}
}
