package obtemporal

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// TestRetrying: Wait and Follow wait out a server that cannot be reached
// (a restart) and give up at once on any other error.
func TestRetrying(t *testing.T) {
	calls := 0
	err := retrying(context.Background(), func() error {
		calls++
		if calls < 3 {
			return serviceerror.NewUnavailable("connection refused")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("after two refusals: %v, %d calls", err, calls)
	}
	calls = 0
	notFound := serviceerror.NewNotFound("no such workflow")
	err = retrying(context.Background(), func() error { calls++; return notFound })
	if !errors.Is(err, notFound) || calls != 1 {
		t.Errorf("not found: %v, %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = retrying(ctx, func() error {
		calls++
		cancel()
		return serviceerror.NewUnavailable("connection refused")
	})
	if err == nil || calls != 1 {
		t.Errorf("canceled: %v, %d calls", err, calls)
	}
}
