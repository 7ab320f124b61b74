package vm

import (
	"context"
	"errors"
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
