package vm

import (
	"context"
	"errors"
	"testing"
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
