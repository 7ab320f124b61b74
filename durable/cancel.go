package durable

import (
	"context"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// RunAborted is the status of a run canceled at a person's request
// (Store.Cancel): it has ended, and is not resumed. A run whose process
// was interrupted is vm.RunCanceled instead, and can be resumed.
const RunAborted = journal.RunAborted

// CancelRequest is a request to stop a run for good: when, by whom, why.
type CancelRequest = journal.CancelRequest

// Cancel records a request to stop run id for good, by whom and why. A
// run no process runs (it waits for a decision, its process was
// interrupted or died) is recorded as aborted at once, and Cancel reports
// stopped. A run a live process runs is stopped by that process, which
// watches for the request while it runs or waits: within about a second
// it cancels the run's steps and records the run as aborted. A run that
// has ended is refused with a *FinishedError.
func (s *Store) Cancel(id, by, reason string) (stopped bool, err error) {
	return s.db.Cancel(id, by, reason)
}

// CancelRequested returns the request to cancel run id, or nil for none.
func (s *Store) CancelRequested(id string) (*CancelRequest, error) {
	return s.db.CancelRequested(id)
}

// The intervals at which a process polls the journal for what another
// process records (a decision, a request to cancel): from pollMin,
// doubled while nothing changes, up to pollMax.
const (
	pollMin = 20 * time.Millisecond
	pollMax = time.Second
)

// poller waits for changes of a journal that other processes write:
// SQLite's data_version says, at the cost of no table read, whether
// anything was committed since it last looked.
type poller struct {
	db       *journal.DB
	version  int64
	interval time.Duration
}

func newPoller(db *journal.DB) *poller {
	return &poller{db: db, version: -1, interval: pollMin}
}

// next waits until something may have changed (at once the first time),
// or until, if before it, the time until; it returns ctx's error when ctx
// is done first.
func (p *poller) next(ctx context.Context, until time.Time) error {
	for {
		v, err := p.db.Changes()
		if err != nil {
			return err
		}
		if v != p.version {
			p.version, p.interval = v, pollMin
			return nil
		}
		wait := p.interval
		if !until.IsZero() {
			if left := time.Until(until); left <= 0 {
				return nil
			} else if left < wait {
				wait = left
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		p.interval = min(2*p.interval, pollMax)
	}
}

// watch returns a context canceled once a request to cancel the run is
// recorded, by any process, and the function that stops watching and
// returns the request if there was one. A run without a journal is not
// watched.
func (r *Run) watch(ctx context.Context) (context.Context, func() *CancelRequest) {
	if r.jr == nil {
		return ctx, func() *CancelRequest { return nil }
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var (
		mu  sync.Mutex
		req *CancelRequest
	)
	go func() {
		defer close(done)
		p := newPoller(r.store.db)
		for p.next(wctx, time.Time{}) == nil {
			got, err := r.store.db.CancelRequested(r.ID)
			if err == nil && got != nil {
				mu.Lock()
				req = got
				mu.Unlock()
				cancel()
				return
			}
		}
	}()
	return wctx, func() *CancelRequest {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return req
	}
}

// aborted records the run as aborted when a request to cancel it stopped
// it (req), or came once it stopped to wait: the result then says so. It
// is called once the run's end is recorded.
func (r *Run) aborted(res *vm.Result, req *CancelRequest) error {
	if r.jr == nil || res == nil {
		return nil
	}
	switch res.Status {
	case vm.RunCanceled:
		if req == nil {
			return nil // interrupted: it may be resumed
		}
	case vm.RunWaiting:
		if req == nil {
			// A request recorded while the run stopped to wait: the
			// process that made it saw the run running.
			var err error
			if req, err = r.store.db.CancelRequested(r.ID); err != nil || req == nil {
				return err
			}
		}
	default:
		return nil // it ended before the request was seen
	}
	res.Status, res.Err = RunAborted, &CanceledError{Run: r.ID, Request: req}
	return r.jr.Abort(req)
}

// CanceledError is the error of a run stopped at a person's request.
type CanceledError struct {
	Run     string
	Request *CancelRequest
}

// Error says by whom and why.
func (e *CanceledError) Error() string { return "run " + e.Run + " was " + e.Request.Text() }

// Changes waits for what other processes record in a journal (see
// Store.Changes).
type Changes struct{ p *poller }

// Changes returns a watch of what other processes record in the journal:
// its Next returns once something may have changed, at the cost of no
// table read while nothing did.
func (s *Store) Changes() *Changes { return &Changes{p: newPoller(s.db)} }

// Next returns at once the first time, then once another process has
// recorded something, looking more often at first and up to once a
// second; or ctx's error once ctx is done.
func (c *Changes) Next(ctx context.Context) error { return c.p.next(ctx, time.Time{}) }
