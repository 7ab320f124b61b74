package obtemporal_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// BenchmarkPlainActivities measures a workflow of 20 activities one after
// another, written directly against the SDK: what Temporal itself costs
// a step on the same server, beside BenchmarkPerStep.
func BenchmarkPlainActivities(b *testing.B) {
	_, c := newServer(b)
	w := worker.New(c, "plain", worker.Options{})
	w.RegisterActivityWithOptions(func(_ context.Context, x int) (int, error) { return x + 1, nil }, activity.RegisterOptions{Name: "inc"})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, n int) (int, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		x := 0
		for range n {
			if err := workflow.ExecuteActivity(ctx, "inc", x).Get(ctx, &x); err != nil {
				return 0, err
			}
		}
		return x, nil
	}, workflow.RegisterOptions{Name: "chain"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	ctx := context.Background()
	const n = 20
	var total time.Duration
	runs := 0
	for b.Loop() {
		t0 := time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "plain"}, "chain", n)
		if err != nil {
			b.Fatal(err)
		}
		var x int
		if err := run.Get(ctx, &x); err != nil || x != n {
			b.Fatal(err, x)
		}
		total += time.Since(t0)
		runs++
	}
	b.ReportMetric(float64(total.Microseconds())/float64(runs*n), "sdk-µs/step")
}
