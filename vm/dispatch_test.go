package vm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAbortLeavesHungTool: when the run aborts, a step whose tool ignores
// its context is settled as canceled at once, not when its timeout
// (minutes away) ends, and the steps after it are skipped.
func TestAbortLeavesHungTool(t *testing.T) {
	prog := compile(t, `
tool fail() -> int pure
tool hang() -> int pure
tool after(x: int) -> int pure
fail() -> †state.f
hang() -> †state.h
  timeout 10m
after(x: †state.h) -> †state.a
`)
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	tools := newFakeTools().
		on("fail", func(ctx context.Context, args map[string]any) (any, error) {
			<-started // fail once hang is running
			return nil, errors.New("no")
		}).
		on("hang", func(ctx context.Context, args map[string]any) (any, error) {
			close(started)
			<-release // ignores its context
			return int64(1), nil
		}).
		on("after", echoTool)
	o := opts(tools, nil)
	o.MaxParallel = 4
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	got := statuses(res)
	if res.Status != RunFailed || got["fail"] != "failed" || got["hang"] != "failed" || got["after"] != "skipped" {
		t.Errorf("status %s, steps %v", res.Status, got)
	}
	for _, s := range res.Steps {
		if s.ID == "hang" && (s.Error == nil || s.Error.Code != "canceled") {
			t.Errorf("hang: %+v", s.Error)
		}
	}
}

// TestReadyQueue: steps come out of a ready queue in index order, however
// the sorted lists they were added in interleave with the steps taken.
func TestReadyQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  [][]int // a list to add, or nil to take a step
		want []int   // the steps taken, in order
	}{
		{"appended", [][]int{{1, 2}, nil, {3, 5}, nil, nil, nil}, []int{1, 2, 3, 5}},
		{"merged", [][]int{{2, 6, 9}, {1, 7}, nil, nil, {3, 4}, nil, nil, nil, nil, nil}, []int{1, 2, 3, 4, 6, 7, 9}},
		{"emptied and refilled", [][]int{{4}, nil, {2}, {1, 8}, nil, {5}, nil, nil}, []int{4, 1, 2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q readyQueue
			var got []int
			for _, op := range tc.ops {
				if op != nil {
					q.add(op)
					continue
				}
				got = append(got, q.pop())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("steps taken (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunParallelReads: steps of a wide layered graph evaluate their
// arguments (references, CEL, expectations on their own results) while
// other steps finish and write their slots; every step reads the values
// its predecessors wrote. Run it with -race: the reads of a step's
// arguments take no lock.
func TestRunParallelReads(t *testing.T) {
	const width, depth = 8, 6
	var b strings.Builder
	b.WriteString("tool add(a: int, b: int) -> int pure\n")
	want := map[string]any{}
	val := func(l, k int) int64 { return want[fmt.Sprintf("s%d_%d", l, k)].(int64) }
	for l := range depth {
		for k := range width {
			name := fmt.Sprintf("s%d_%d", l, k)
			switch {
			case l == 0:
				fmt.Fprintf(&b, "add(a: %d, b: 1) -> †state.%s\n", k, name)
				want[name] = int64(k + 1)
			case k%2 == 0:
				x, y := k, (k+3)%width
				fmt.Fprintf(&b, "add(a: †state.s%d_%d, b: †state.s%d_%d) -> †state.%s\n  expect †state.%s > 0\n", l-1, x, l-1, y, name, name)
				want[name] = val(l-1, x) + val(l-1, y)
			default:
				x := (k + 1) % width
				fmt.Fprintf(&b, "add(a: †state.s%d_%d * 2, b: 1) -> †state.%s\n", l-1, x, name)
				want[name] = 2*val(l-1, x) + 1
			}
		}
	}
	prog := compile(t, b.String())
	tools := newFakeTools().on("add", func(ctx context.Context, args map[string]any) (any, error) {
		runtime.Gosched() // let the other steps go on meanwhile
		return args["a"].(int64) + args["b"].(int64), nil
	})
	o := opts(tools, nil)
	o.MaxParallel = width
	res, err := Run(context.Background(), prog, nil, o)
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("%v %s %v", err, res.Status, res.Err)
	}
	if diff := cmp.Diff(want, res.State); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}
