package journal

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// commits keeps what the journal has committed, as the hook on each
// commit reports it: "type step" lines of the events, in order.
type commits struct {
	mu      sync.Mutex
	lines   []string
	has     map[string]bool
	batches int
	// written is signalled with each line committed.
	written chan string
}

func watchCommits(d *DB) *commits {
	c := &commits{has: map[string]bool{}, written: make(chan string, 1<<16)}
	d.committed = func(batch []record) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.batches++
		for i := range batch {
			l := string(batch[i].ev.Type) + " " + batch[i].ev.Step
			c.lines = append(c.lines, l)
			c.has[l] = true
			select {
			case c.written <- l:
			default:
			}
		}
	}
	return c
}

func (c *commits) committed(line string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.has[line]
}

// TestGroupCommitOrder runs layered DAGs with a journal that commits in
// groups, and checks at each tool call that the outcomes of the steps it
// reads are committed, and at each event the observer hears that it is
// committed: a dependent that started before its inputs' transaction
// committed, or an observer told of an outcome not yet on disk, fails it.
func TestGroupCommitOrder(t *testing.T) {
	for _, par := range []int{1, 4, 64} {
		t.Run(fmt.Sprintf("parallel-%d", par), func(t *testing.T) {
			p := bench.Layered(10, 10, 0, bench.LayeredSeed(10, 10))
			src := &planfile.Source{Name: p.Name + ".plan", Text: string(p.Text())}
			prog, _, err := src.Compile()
			if err != nil {
				t.Fatal(err)
			}
			index := map[string]int{}
			for i, s := range prog.Steps {
				index[s.ID] = i
			}
			d := open(t, Options{})
			c := watchCommits(d)
			var mu sync.Mutex
			var problems []string
			problem := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				problems = append(problems, fmt.Sprintf(format, args...))
			}
			tl := toolFunc(func(ctx context.Context, args map[string]any) (any, error) {
				info, _ := toolkit.CallInfoFrom(ctx)
				for _, q := range prog.Pred[index[info.Step]] {
					if pred := prog.Steps[q].ID; !c.committed("step-completed " + pred) {
						problem("%s started before the outcome of %s, which it reads, was committed", info.Step, pred)
					}
				}
				return bench.Work(ctx, args)
			})
			heard := 0
			o := vm.Options{Tools: tl, MaxParallel: par, Observer: func(e vm.Event) {
				heard++
				if l := string(e.Type) + " " + e.Step; !c.committed(l) {
					problem("the observer heard %q before it was committed", l)
				}
			}}
			r, err := d.Create(NewRun{ID: "r", Source: src})
			if err != nil {
				t.Fatal(err)
			}
			o.Journal, o.RunID = r, r.ID
			res, err := vm.Run(context.Background(), prog, map[string]any{"seed": int64(0)}, o)
			if err != nil || res.Status != vm.RunCompleted {
				t.Fatalf("%v %v", err, res.Err)
			}
			for _, p := range problems {
				t.Error(p)
			}
			// Everything is committed once the run returns, and the
			// journal holds every event, in order.
			got := lines(t, d, "r")
			if len(got) != heard || len(got) != 2*len(prog.Steps)+2 {
				t.Errorf("journal holds %d events, the observer heard %d, want %d", len(got), heard, 2*len(prog.Steps)+2)
			}
			if strings.Join(got, "\n") != strings.Join(c.lines, "\n") {
				t.Errorf("the journal's events are not in the order they were committed")
			}
			if got[len(got)-1] != "plan-finished " {
				t.Errorf("last event %q", got[len(got)-1])
			}
			t.Logf("%d events in %d commits", len(c.lines), c.batches)
		})
	}
}

// TestStartWrittenDuringCall: a step's start is committed while its tool
// runs, without waiting for its outcome.
func TestStartWrittenDuringCall(t *testing.T) {
	d := open(t, Options{})
	c := watchCommits(d)
	src := &planfile.Source{Name: "chain.plan", Text: chain}
	tl := toolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		info, _ := toolkit.CallInfoFrom(ctx)
		want := "step-started " + info.Step
		for !c.committed(want) {
			select {
			case <-c.written:
			case <-ctx.Done():
				return nil, fmt.Errorf("%s was not committed while the tool ran", want)
			}
		}
		return args["x"].(int64) + 1, nil
	})
	r, err := d.Create(NewRun{ID: "r", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := run(context.Background(), t, r, src, map[string]any{"start": int64(1)}, tl, vm.Options{StepTimeout: time.Minute})
	if res.Status != vm.RunCompleted {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
}

// TestGroupCommitTwoRuns: the runs of one process share commits, and one
// run's failure to write is not the other's.
func TestGroupCommitTwoRuns(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "chain.plan", Text: chain}
	a, err := d.Create(NewRun{ID: "a", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Create(NewRun{ID: "b", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	// b's next event takes a sequence number an event of b already has:
	// its insert fails, and so would the batch it shares with a.
	pa, err := a.Append(vm.Event{Type: vm.PlanStarted, Time: time.Now()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(vm.Event{Type: vm.PlanStarted, Time: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.seq--
	b.mu.Unlock()
	pb, err := b.Append(vm.Event{Type: vm.StepStarted, Step: "x", Time: time.Now()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pa2, err := a.Append(vm.Event{Type: vm.StepStarted, Step: "y", Time: time.Now()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pa >= pb || pb >= pa2 {
		t.Fatalf("positions %d %d %d do not grow", pa, pb, pa2)
	}
	if err := a.Sync(pa2); err != nil {
		t.Errorf("run a: %v", err)
	}
	if err := b.Sync(pb); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("run b: %v, want a failed insert", err)
	}
	if _, err := b.Append(vm.Event{Type: vm.StepStarted, Step: "z", Time: time.Now()}, nil); err == nil {
		t.Errorf("run b appended after its journal failed")
	}
	if got := lines(t, d, "a"); strings.Join(got, ",") != "plan-started ,step-started y" {
		t.Errorf("run a holds %q", got)
	}
}

type toolFunc func(ctx context.Context, args map[string]any) (any, error)

func (f toolFunc) Call(ctx context.Context, _ string, args map[string]any) (any, error) {
	return f(ctx, args)
}
