package vm

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// GroupJournal is a Journal that commits in groups: the events of steps
// that settle together are written in one transaction. Run appends each
// event as it happens, without waiting, and syncs where Record would
// have waited: a step's dependents start, and the observer hears of its
// events, only once Sync has returned for its outcome; an event that
// decides the run, a replan or a wait is synced before Run goes on. A
// step's StepStarted is appended before its tool is called and synced
// within GroupDelay, or with the step's outcome when that comes first,
// rather than before the call: a commit per start would let no two
// steps share one. Many goroutines may wait in Sync at once, and one
// commit serves them all.
type GroupJournal interface {
	Journal
	// Append queues an event, with the step it decides, to be written
	// after every event appended before it, and returns its position,
	// which grows with each event. It does not wait for the write.
	Append(ev Event, step *StepResult) (uint64, error)
	// Sync returns once every event appended up to pos is written as
	// Record would have written it, or with the error that kept one from
	// being written.
	Sync(pos uint64) error
}

// GroupDelay bounds the time an event a run does not wait for (a step's
// start) stays unwritten in a GroupJournal, and unheard by the observer.
const GroupDelay = 2 * time.Millisecond

// groupCommit is what a runner keeps of a group journal. The runner's
// emitMu guards appended, written, unheard, pending and closed.
type groupCommit struct {
	j GroupJournal
	// appended is the position of the last event appended, written the
	// position up to which the journal has written them.
	appended, written uint64
	// unheard are the events the observer has yet to hear, in order,
	// each with its position.
	unheard []heardEvent
	// hearMu lets one goroutine at a time hand events to the observer,
	// so that it hears them in order.
	hearMu sync.Mutex
	// timer syncs what was appended GroupDelay ago, when pending; timers
	// counts the syncs it started, so that the run can wait for them
	// before it returns; closed is set once it has.
	timer   *time.Timer
	pending bool
	closed  bool
	timers  sync.WaitGroup
}

type heardEvent struct {
	pos uint64
	ev  Event
}

// newGroupCommit returns the group commit of a run whose journal commits
// in groups, or nil.
func newGroupCommit(j Journal) *groupCommit {
	if gj, ok := j.(GroupJournal); ok {
		return &groupCommit{j: gj}
	}
	return nil
}

// appendEvent queues an event in a group journal; the observer hears of
// it once it is written (see sync).
func (r *runner) appendEvent(e Event, step *StepResult) {
	g := r.group
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.journalErr == nil {
		pos, err := g.j.Append(e, step)
		if err != nil {
			r.journalErr = fmt.Errorf("the journal cannot be written: %w", err)
		} else {
			g.appended = pos
		}
	}
	if r.opts.Observer != nil {
		g.unheard = append(g.unheard, heardEvent{g.appended, e})
	}
}

// appendSoon emits an event the run need not wait for: with a group
// journal, it is appended and synced within GroupDelay (or sooner, with
// the next sync).
func (r *runner) appendSoon(e Event) {
	if r.opts.Observer == nil && r.opts.Journal == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time, e.Elapsed = r.clock()
	}
	g := r.group
	if g == nil {
		r.emit(e, nil)
		return
	}
	r.appendEvent(e, nil)
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if g.pending || g.closed {
		return
	}
	g.pending = true
	g.timers.Add(1)
	if g.timer == nil {
		g.timer = time.AfterFunc(GroupDelay, func() {
			defer g.timers.Done()
			r.emitMu.Lock()
			g.pending = false
			r.emitMu.Unlock()
			r.sync()
		})
	} else {
		g.timer.Reset(GroupDelay)
	}
}

// flush ends a run's group commit: it waits for the sync its timer may
// have started, then syncs everything appended, so that the journal has
// written, and the observer heard, every event before the run returns.
func (r *runner) flush() {
	g := r.group
	if g == nil {
		return
	}
	r.emitMu.Lock()
	g.closed = true
	if g.pending && g.timer.Stop() {
		g.pending = false
		g.timers.Done()
	}
	r.emitMu.Unlock()
	g.timers.Wait()
	r.sync()
}

// sync waits until the journal has written every event appended so far,
// then hands them to the observer. Once the journal has failed, the
// observer hears every event at once, as it does without a group
// journal.
func (r *runner) sync() {
	g := r.group
	if g == nil {
		return
	}
	r.emitMu.Lock()
	pos, written, failed := g.appended, g.written, r.journalErr != nil
	r.emitMu.Unlock()
	if pos > written && !failed {
		err := g.j.Sync(pos)
		r.emitMu.Lock()
		if err != nil && r.journalErr == nil {
			r.journalErr = fmt.Errorf("the journal cannot be written: %w", err)
		} else if err == nil {
			g.written = max(g.written, pos)
		}
		r.emitMu.Unlock()
	}
	r.hear()
}

// hear hands the observer the events written so far (every event, once
// the journal has failed), in order.
func (r *runner) hear() {
	g := r.group
	if r.opts.Observer == nil {
		return
	}
	g.hearMu.Lock()
	defer g.hearMu.Unlock()
	r.emitMu.Lock()
	n := len(g.unheard)
	if r.journalErr == nil {
		n = 0
		for n < len(g.unheard) && g.unheard[n].pos <= g.written {
			n++
		}
	}
	batch := g.unheard[:n:n]
	g.unheard = g.unheard[n:]
	r.emitMu.Unlock()
	for _, h := range batch {
		r.opts.Observer(h.ev)
	}
}

// writtenUpTo returns the position up to which the journal has written
// the run's events; the position of the last one appended, once the
// journal has failed (nothing more will be written, and the run stops).
func (r *runner) writtenUpTo() uint64 {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.journalErr != nil {
		return r.group.appended
	}
	return r.group.written
}

// lastAppended returns the position of the last event appended.
func (r *runner) lastAppended() uint64 {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	return r.group.appended
}

// heldStep is a step made ready by an outcome the journal has not yet
// written: it may start once the journal has written up to pos.
type heldStep struct {
	pos uint64
	i   int
}

// hold keeps steps made ready until the journal has written what made
// them ready. d.mu is held.
func (d *dispatcher) hold(ready []int) {
	if len(ready) == 0 {
		return
	}
	pos := d.r.lastAppended()
	for _, i := range ready {
		d.held = append(d.held, heldStep{pos, i})
	}
}

// commit waits for the journal to write what the steps settled so far
// recorded, then makes ready the steps that waited for it. Meanwhile
// d.mu is released, the steps already ready are handed to other workers,
// and the dispatcher does not go idle. d.mu is held.
func (d *dispatcher) commit() {
	d.syncing++
	d.next(false)
	d.mu.Unlock()
	d.r.sync()
	d.mu.Lock()
	d.syncing--
	d.r.checkJournal(d.e)
	if d.e.stop != nil && d.e.replanAt == nil {
		d.cancel()
	}
	written := d.r.writtenUpTo()
	k := 0
	for k < len(d.held) && d.held[k].pos <= written {
		k++
	}
	if k == 0 {
		return
	}
	steps := d.moved[:0]
	for _, h := range d.held[:k] {
		steps = append(steps, h.i)
	}
	d.held = append(d.held[:0], d.held[k:]...)
	slices.Sort(steps)
	d.ready.add(steps)
	d.moved = steps
}
