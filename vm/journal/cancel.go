package journal

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/obelisk-plan/obelisk/vm"
)

// RunAborted is the status of a run stopped for good at a person's
// request (Cancel): unlike a canceled run, whose process was interrupted,
// it is not resumed.
const RunAborted vm.RunStatus = "aborted"

// CancelRequest is a request to stop a run for good.
type CancelRequest struct {
	Requested time.Time `json:"requested"`
	By        string    `json:"by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// Text says who asked and why, for people: "canceled by ann: too late".
func (c *CancelRequest) Text() string {
	s := "canceled"
	if c.By != "" {
		s += " by " + c.By
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// Cancel records a request to stop run id for good. A run that no
// process runs (it waits, was interrupted, or its owner died) is recorded
// as aborted at once, and Cancel reports stopped; a run a live process
// runs is left to it, which watches for the request (CancelRequested)
// and stops the run. A run that has ended is refused with a
// *FinishedError. A second request keeps the first one's name and reason.
func (d *DB) Cancel(id, by, reason string) (stopped bool, err error) {
	err = d.tx(func(tx *sql.Tx) error {
		status, o, err := d.owner(tx, id)
		if err != nil {
			return err
		}
		switch vm.RunStatus(status) {
		case vm.RunWaiting, vm.RunCanceled:
			stopped = true
		case "running":
			stopped = !o.alive(d.me)
		default:
			return &FinishedError{Run: id, Status: vm.RunStatus(status)}
		}
		now := d.now().UnixNano()
		if _, err := tx.Exec(`INSERT INTO cancels (run, requested, by, reason) VALUES (?, ?, ?, ?) ON CONFLICT (run) DO NOTHING`, id, now, by, reason); err != nil {
			return err
		}
		if !stopped {
			return nil
		}
		req, err := cancelRequest(tx, id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE runs SET status = ?, error = ?, updated = ?, finished = ? WHERE id = ?`, string(RunAborted), req.Text(), now, now, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("canceling run %s: %w", id, err)
	}
	return stopped, nil
}

// owner reads, in a transaction, the status and owner of run id.
func (d *DB) owner(tx *sql.Tx, id string) (string, owner, error) {
	var status string
	var o owner
	err := tx.QueryRow(`SELECT status, pid, host, pid_start FROM runs WHERE id = ?`, id).Scan(&status, &o.pid, &o.host, &o.start)
	if errors.Is(err, sql.ErrNoRows) {
		return "", o, fmt.Errorf("%w %s in %s", ErrNotFound, id, d.path)
	}
	return status, o, err
}

// CancelRequested returns the request to stop run id, or nil for none.
func (d *DB) CancelRequested(id string) (*CancelRequest, error) {
	return cancelRequest(d.db, id)
}

func cancelRequest(q interface {
	QueryRow(string, ...any) *sql.Row
}, id string) (*CancelRequest, error) {
	var req CancelRequest
	var at int64
	err := q.QueryRow(`SELECT requested, by, reason FROM cancels WHERE run = ?`, id).Scan(&at, &req.By, &req.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	req.Requested = time.Unix(0, at).UTC()
	return &req, nil
}

// Abort records run id as aborted, as req asked: for the process that
// runs it, once it has stopped it.
func (r *Run) Abort(req *CancelRequest) error {
	now := r.d.now().UnixNano()
	_, err := r.d.exec(`UPDATE runs SET status = ?, error = ?, updated = ?, finished = ? WHERE id = ?`, string(RunAborted), req.Text(), now, now, r.ID)
	return err
}

// Changes returns a number that changes whenever another process (or
// another connection) commits a change to the journal: SQLite's
// data_version, which costs no read of any table. A process that waits
// for another's decision reads it often, and the tables only when it
// changed.
func (d *DB) Changes() (int64, error) {
	var v int64
	if err := d.db.QueryRow(`PRAGMA data_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the journal: %w", err)
	}
	return v, nil
}

// ErrNotReady is returned, wrapped, by Continue for a run that is not
// waiting, or waits for a decision nobody has made.
var ErrNotReady = errors.New("not ready to continue")

// Continue takes over run id to go on with it once its decisions are
// made: it must be waiting, with every approval decided (unless
// undecided is set: a policy decides them), and owned by this process or
// by none alive. A run a live process owns is refused with a *BusyError,
// so that of the processes that would continue it (the one that waits
// for its decisions, a worker) exactly one does; one that has ended with
// a *FinishedError; one that is not ready with an error wrapping
// ErrNotReady.
func (d *DB) Continue(id string, undecided bool) (*Run, *Stored, error) {
	return d.resume(id, false, func(tx *sql.Tx, was vm.RunStatus, o owner) error {
		if was != vm.RunWaiting {
			return fmt.Errorf("run %s is %s, not waiting: %w", id, was, ErrNotReady)
		}
		if o.alive(d.me) && o != d.me {
			be := &BusyError{Run: id, PID: o.pid}
			if o.host != d.me.host {
				be.Host = o.host
			}
			return be
		}
		if undecided {
			return nil
		}
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM approvals WHERE run = ? AND decided = 0`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("run %s waits for %d decision(s): %w", id, n, ErrNotReady)
		}
		return nil
	})
}
