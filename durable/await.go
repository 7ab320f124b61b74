package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// ErrNotReady is returned, wrapped, by Continue for a run that is not
// waiting, or waits for a decision nobody has made.
var ErrNotReady = journal.ErrNotReady

// Continue takes over run id, which waits, once its decisions are made
// (or are due to its approval policy), making this process its owner,
// as Resume does. Unlike Resume it refuses, with a *BusyError, a run
// that another live process owns (the one that waits for its decisions,
// another worker): of the processes that would continue a run exactly
// one does, and a decided gate's tool is called once. A run that is not
// ready is refused with an error wrapping ErrNotReady, one that has
// ended (a canceled run) with a *FinishedError.
func (s *Store) Continue(id string) (*Run, error) {
	set, err := s.settings(id)
	if err != nil {
		return nil, err
	}
	pending, err := s.db.Pending(id)
	if err != nil {
		return nil, err
	}
	jr, st, err := s.db.Continue(id, len(pending) > 0 && !due(pending, set.Approval, time.Now()).After(time.Now()))
	if err != nil {
		return nil, err
	}
	return s.taken(id, jr, st)
}

// Ready lists the runs that wait and whose decisions are all made (or
// due to their approval policy): the runs a worker continues (Continue),
// the oldest first. A run among them that another live process owns is
// that process's to continue.
func (s *Store) Ready() ([]string, error) {
	runs, err := s.db.Runs()
	if err != nil {
		return nil, err
	}
	var out []string
	now := time.Now()
	for _, sum := range slices.Backward(runs) {
		if sum.Status != vm.RunWaiting {
			continue
		}
		pending, err := s.db.Pending(sum.ID)
		if err != nil {
			return nil, err
		}
		if len(pending) > 0 {
			set, err := s.settings(sum.ID)
			if err != nil || due(pending, set.Approval, now).After(now) {
				continue
			}
		}
		out = append(out, sum.ID)
	}
	return out, nil
}

// due returns when the first of the pending approvals is decided by the
// policy; the zero time far in the future (a time after any) for a policy
// that never decides.
func due(pending []*Approval, policy ApprovalPolicy, now time.Time) time.Time {
	if policy.Timeout <= 0 || len(pending) == 0 {
		return now.Add(100 * 365 * 24 * time.Hour)
	}
	first := pending[0].Requested
	for _, p := range pending[1:] {
		if p.Requested.Before(first) {
			first = p.Requested
		}
	}
	return first.Add(policy.Timeout)
}

// Await waits, for a run that stopped to wait for decisions (Execute
// returned a result of status waiting), until every decision is recorded
// by any process (Store.Decide: obelisk approve, the console, an MCP
// client's elicitation), or is due to the run's approval policy; then it
// takes the run over again (Continue) and returns it, to be executed: its
// decided gates go on. It calls waiting with the approvals the run waits
// for, first and whenever they change.
//
// It reads the journal cheaply (SQLite's data_version), more often at
// first and up to once a second. It returns ctx's error when ctx is done
// first (the run stays waiting, for obelisk resume or a worker), a
// *CanceledError for a run canceled in the meantime, and a *BusyError
// when another process took the run over (obelisk resume).
func (r *Run) Await(ctx context.Context, waiting func([]*Approval)) (*Run, error) {
	if r.jr == nil {
		return nil, errors.New("a run without a journal cannot wait for decisions")
	}
	s := r.store
	p := newPoller(s.db)
	var shown string
	var until time.Time
	for {
		if err := p.next(ctx, until); err != nil {
			return nil, err
		}
		if req, err := s.db.CancelRequested(r.ID); err != nil {
			return nil, err
		} else if req != nil {
			return nil, &CanceledError{Run: r.ID, Request: req}
		}
		pending, err := s.db.Pending(r.ID)
		if err != nil {
			return nil, err
		}
		if key := pendingKey(pending); key != shown && len(pending) > 0 {
			shown = key
			if waiting != nil {
				waiting(pending)
			}
		}
		until = due(pending, r.settings.Approval, time.Now())
		if len(pending) > 0 && until.After(time.Now()) {
			continue
		}
		next, err := s.Continue(r.ID)
		if errors.Is(err, ErrNotReady) {
			// Another process took it over, and it waits again.
			if st, serr := s.db.Stored(r.ID); serr == nil && st.Status == vm.RunWaiting {
				continue
			}
		}
		return next, err
	}
}

func pendingKey(pending []*Approval) string {
	var b strings.Builder
	for _, p := range pending {
		fmt.Fprintf(&b, "%d/%s\n", p.Round, p.Step)
	}
	return b.String()
}
