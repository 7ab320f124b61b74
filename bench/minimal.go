package bench

import (
	"context"
	"sync"
	"time"
)

// MinimalCall is a call as the minimal executor runs it: its latency and
// the calls it waits for.
type MinimalCall struct {
	Ms    time.Duration
	Preds []int
}

// MinimalCalls returns the plan's calls for RunMinimal.
func (p *Plan) MinimalCalls() []MinimalCall {
	calls := make([]MinimalCall, len(p.Preds))
	for i := range calls {
		calls[i] = MinimalCall{Ms: time.Duration(p.Ms[i]) * time.Millisecond, Preds: p.Preds[i]}
	}
	return calls
}

// RunMinimal is the floor of the benchmark comparison, the least a Go
// program can do to run a plan (go-minimal): one goroutine per call,
// which waits for the done channels of the calls it reads, calls the
// work tool (1 + the largest of its inputs, after Ms) and closes its own.
// No checking, no state store, no events, no retries. It returns each
// call's result. bench/peers/gominimal runs it in a process of its own;
// the benchmarks of package vm run it beside vm.Run in the same process.
func RunMinimal(ctx context.Context, calls []MinimalCall) ([]int, error) {
	done := make([]chan struct{}, len(calls))
	for i := range done {
		done[i] = make(chan struct{})
	}
	results := make([]int, len(calls))
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			best := 0
			for _, p := range calls[i].Preds {
				<-done[p]
				best = max(best, results[p])
			}
			if err := sleep(ctx, calls[i].Ms); err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			results[i] = best + 1 // the work tool: 1 + the largest input
		}()
	}
	wg.Wait()
	return results, firstErr
}
