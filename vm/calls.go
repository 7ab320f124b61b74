package vm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// The context of a tool call is a callCtx: it carries the call's identity
// for the tool, ends at the call's deadline or when the context its group
// of calls runs under ends, and lets a run leave a plain step whose tool
// does not return when its context ends. The calls of a run share one
// timer, their watcher's, instead of a context, a timer and a watchdog
// each: those cost a dozen allocations a call and a lock shared by every
// call of a dispatcher.

// The states of a call.
const (
	callRunning  int32 = iota
	callReturned       // the tool returned (or the run stopped waiting for it) before the context ended
	callExpired        // the context ended first
)

// callCtx is the context of one call of a tool.
type callCtx struct {
	group *callGroup
	// info is the call's identity; its Key is made when a tool first
	// asks for it (callInfo), of info's Run and Step, and "fallback"
	// when set.
	info     toolkit.CallInfo
	fallback bool
	deadline time.Time
	timeout  time.Duration
	state    atomic.Int32
	// mu guards the making of done; err is stored once, before done is
	// closed.
	mu   sync.Mutex
	done atomic.Pointer[chan struct{}]
	err  atomic.Value
	// For a plain step, whose tool is called on its worker's goroutine:
	// when the context ends before the tool returns, abandon settles the
	// step as failed on a goroutine of its own, and the worker leaves the
	// step alone once the tool returns.
	d     *dispatcher
	spec  *callSpec
	start time.Duration
}

// Deadline returns the call's deadline, or its group's if that is
// earlier.
func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.group.ctx.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done returns a channel closed when the call's context ends.
func (c *callCtx) Done() <-chan struct{} {
	if d := c.done.Load(); d != nil {
		return *d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.done.Load(); d != nil {
		return *d
	}
	d := make(chan struct{})
	if c.err.Load() != nil {
		close(d)
	}
	c.done.Store(&d)
	return d
}

// Err returns why the call's context ended, or nil.
func (c *callCtx) Err() error {
	if err, ok := c.err.Load().(error); ok {
		return err
	}
	return nil
}

// Value returns the call's identity for toolkit.CallInfoKey, else the
// value of the group's context.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(toolkit.CallInfoKey); ok {
		return c.callInfo()
	}
	return c.group.ctx.Value(key)
}

// callInfo returns the call's identity, with its idempotency key.
func (c *callCtx) callInfo() toolkit.CallInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info.Key == "" {
		c.info.Key = c.info.Run + "/" + c.info.Step
		if c.fallback {
			c.info.Key += "/fallback"
		}
	}
	return c.info
}

// end ends the context with err, unless it has ended already.
func (c *callCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err.Load() != nil {
		return
	}
	c.err.Store(err)
	if d := c.done.Load(); d != nil {
		close(*d)
	}
}

// expire ends the context with err; for a plain step whose tool has not
// returned, the step is then given up.
func (c *callCtx) expire(err error) {
	c.end(err)
	if c.state.CompareAndSwap(callRunning, callExpired) && c.d != nil {
		go c.d.abandon(c)
	}
}

// returned records that the tool returned, and reports whether it did so
// before the context ended; then the caller owns the outcome.
func (c *callCtx) returned() bool {
	return c.state.CompareAndSwap(callRunning, callReturned)
}

// release ends the context of a call that is over, as the cancel function
// of context.WithTimeout does.
func (c *callCtx) release() {
	c.state.CompareAndSwap(callRunning, callReturned)
	c.end(context.Canceled)
}

func (c *callCtx) live() bool { return c.state.Load() == callRunning }

// callGroup is the calls made under one context (a dispatcher's, a for
// each's): when it ends, they end with its error.
type callGroup struct {
	w        *watcher
	ctx      context.Context
	canceled atomic.Bool
	stop     func() bool
}

// group starts a group of calls under ctx. Its stop must be called once no
// call of the group is made any more, before ctx is canceled.
func (w *watcher) group(ctx context.Context) *callGroup {
	g := &callGroup{w: w, ctx: ctx}
	g.stop = context.AfterFunc(ctx, func() {
		g.canceled.Store(true)
		w.cancel(g)
	})
	return g
}

// watcher ends the calls of a run at their deadlines, with one timer. The
// calls of one timeout start in the order of their deadlines: each
// timeout has a queue, a call is added at its tail and taken off at its
// head once it is over, and the timer is set for the earliest deadline
// at a head.
type watcher struct {
	mu     sync.Mutex
	queues []*callQueue
	timer  *time.Timer
	// at is when the timer fires; zero when it is not set.
	at time.Time
}

// callQueue holds the calls of one timeout, in the order of their
// deadlines, from head; calls over may stay behind the head until it goes.
type callQueue struct {
	timeout time.Duration
	calls   []*callCtx
	head    int
}

// watch sets the deadline of a call, its timeout from now, and watches
// it. The caller must release it, or see that the tool returned, once the
// call is over.
func (w *watcher) watch(c *callCtx, now time.Time) {
	c.deadline = now.Add(c.timeout)
	g := c.group
	w.mu.Lock()
	q := w.queue(c.timeout)
	q.drop()
	if n := len(q.calls); n > q.head && c.deadline.Before(q.calls[n-1].deadline) {
		// The call before this one read the clock later: its deadline
		// is this one's, a few microseconds later, to keep the queue in order.
		c.deadline = q.calls[n-1].deadline
	}
	q.push(c)
	if w.at.IsZero() || c.deadline.Before(w.at) {
		w.set(c.deadline, now)
	}
	w.mu.Unlock()
	if g.canceled.Load() {
		c.expire(g.ctx.Err())
	}
}

// queue returns the queue of a timeout. w.mu is held.
func (w *watcher) queue(timeout time.Duration) *callQueue {
	for _, q := range w.queues {
		if q.timeout == timeout {
			return q
		}
	}
	q := &callQueue{timeout: timeout}
	w.queues = append(w.queues, q)
	return q
}

// set sets the timer to fire at t. w.mu is held.
func (w *watcher) set(t, now time.Time) {
	w.at = t
	if w.timer == nil {
		w.timer = time.AfterFunc(t.Sub(now), w.fire)
		return
	}
	w.timer.Reset(t.Sub(now))
}

// fire ends the calls whose deadline has passed and sets the timer for the
// next.
func (w *watcher) fire() {
	now := time.Now()
	var expired []*callCtx
	w.mu.Lock()
	w.at = time.Time{}
	var next time.Time
	for _, q := range w.queues {
		for q.drop(); q.head < len(q.calls); q.drop() {
			c := q.calls[q.head]
			if c.deadline.After(now) {
				if next.IsZero() || c.deadline.Before(next) {
					next = c.deadline
				}
				break
			}
			expired = append(expired, c)
			q.pop()
		}
	}
	if !next.IsZero() {
		w.set(next, now)
	}
	w.mu.Unlock()
	for _, c := range expired {
		c.expire(context.DeadlineExceeded)
	}
}

// cancel ends the calls of a group whose context ended.
func (w *watcher) cancel(g *callGroup) {
	var ended []*callCtx
	w.mu.Lock()
	for _, q := range w.queues {
		for _, c := range q.calls[q.head:] {
			if c.group == g && c.live() {
				ended = append(ended, c)
			}
		}
	}
	w.mu.Unlock()
	err := g.ctx.Err()
	for _, c := range ended {
		c.expire(err)
	}
}

// stop stops the timer once the run is over.
func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.queues, w.at = nil, time.Time{}
}

// drop takes the calls that are over off the head.
func (q *callQueue) drop() {
	for q.head < len(q.calls) && !q.calls[q.head].live() {
		q.pop()
	}
}

func (q *callQueue) pop() {
	q.calls[q.head] = nil
	q.head++
	if q.head == len(q.calls) {
		q.calls, q.head = q.calls[:0], 0
	}
}

// push adds a call at the tail. When the queue is full, the calls over
// that wait behind a live head are dropped first, so that it holds at
// most about twice the calls that run.
func (q *callQueue) push(c *callCtx) {
	if len(q.calls) == cap(q.calls) && len(q.calls) > 0 {
		kept := q.calls[:0]
		for _, x := range q.calls[q.head:] {
			if x.live() {
				kept = append(kept, x)
			}
		}
		clear(q.calls[len(kept):])
		q.calls, q.head = kept, 0
	}
	q.calls = append(q.calls, c)
}
