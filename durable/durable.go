// Package durable runs plans as durable objects. A run is started from a
// plan's source, a compiled program or a planfile; it is journaled as it
// goes (package vm/journal, a SQLite database in a state directory), so
// that after its process stops or dies another process resumes it without
// running again a step that finished; it waits for decisions (approvals)
// that any process records; and the runs of a journal are listed and
// shown, as data (Summary, Detail) or as text for people (Detail.WriteText,
// EventText). The journal is this package's own: the programs above it
// use this package's names for what it records.
//
// The obelisk command is a thin layer over this package: `obelisk run`,
// `apply`, `agent`, `resume`, `approve`, `runs` and `show` each call one
// or two of its functions (Start, Store.Resume, Store.Decide, Store.Runs,
// Store.Show), and a Go program that embeds Obelisk calls the same ones.
// What the package does not do is choose the tools: the caller gives a run
// its tools (a vm.Caller), and records with the run, in Settings.Caller,
// what it needs to build them again when the run is resumed. The grants
// of a resumed run's tools (network, environment, programs) are the
// resuming program's, never the journal's.
//
// A run has one owner at a time: the process that created or resumed it.
// Resume takes the ownership in one transaction, so that of several
// processes resuming a run at once exactly one runs it (see Store.Resume).
package durable

import (
	"fmt"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// FileName is the name of the journal in a state directory.
const FileName = journal.FileName

// ErrNoJournal is returned, wrapped, by OpenExisting for a state directory
// that holds no journal.
var ErrNoJournal = journal.ErrNoJournal

// ErrNotFound is returned, wrapped, for a run the journal does not hold.
var ErrNotFound = journal.ErrNotFound

// Store is the journal of runs in a state directory. Its methods are safe
// for concurrent use, and several processes may open the same directory.
type Store struct {
	db  *journal.DB
	dir string
}

// Options configure Open and OpenExisting.
type Options struct {
	// Now gives the time records are stamped with and approval timeouts
	// are measured by (default time.Now).
	Now func() time.Time
}

// Open opens the journal of a state directory, creating the directory and
// the journal if needed: for a run to start.
func Open(dir string, opts Options) (*Store, error) {
	db, err := journal.Open(dir, journal.Options{Now: opts.Now})
	if err != nil {
		return nil, err
	}
	return &Store{db: db, dir: dir}, nil
}

// OpenExisting opens the journal of a state directory only if there is
// one, and creates nothing: for what reads runs or decides on one. Without
// a journal it returns an error that wraps ErrNoJournal.
func OpenExisting(dir string, opts Options) (*Store, error) {
	db, err := journal.OpenExisting(dir, journal.Options{Now: opts.Now})
	if err != nil {
		return nil, err
	}
	return &Store{db: db, dir: dir}, nil
}

// Close closes the journal.
func (s *Store) Close() error { return s.db.Close() }

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the journal's file name.
func (s *Store) Path() string { return s.db.Path() }

// Lookup returns the ID of the run named id, or of the only run whose ID
// starts with id.
func (s *Store) Lookup(id string) (string, error) { return s.db.Lookup(id) }

// Runs lists the runs, the newest first.
func (s *Store) Runs() ([]*Summary, error) { return s.db.Runs() }

// Detail is everything the journal holds of a run, and its goal when it
// is the run of a goal.
type Detail struct {
	*journal.Detail
	// Goal is the goal a model pursues, or nil for the run of a plan.
	// The steps' rounds are then the goal's turns.
	Goal *GoalSpec `json:"goal,omitempty"`
	// Origin says who made the run; nil for a run recorded before runs
	// recorded it.
	Origin *Origin `json:"origin,omitempty"`
}

// Show returns everything the journal holds of a run: its status, steps,
// approvals, replans and output, and its goal.
func (s *Store) Show(id string) (*Detail, error) {
	det, err := s.db.Show(id)
	if err != nil {
		return nil, err
	}
	st, err := s.db.Stored(id)
	if err != nil {
		return nil, err
	}
	set, err := decodeSettings(st.Settings)
	if err != nil {
		return nil, fmt.Errorf("run %s: the recorded settings: %w", id, err)
	}
	return &Detail{Detail: det, Goal: set.Goal, Origin: set.Origin}, nil
}

// Events returns a run's event log, in order.
func (s *Store) Events(id string) ([]vm.Event, error) { return s.db.Events(id) }

// Stored returns what the journal recorded of run id when it was created:
// its source, input, settings and planfile hash. It changes nothing, and
// takes no ownership of the run.
func (s *Store) Stored(id string) (*Stored, error) { return s.db.Stored(id) }

// Origin returns who made run id (the run named id exactly), or nil for
// a run that recorded no origin.
func (s *Store) Origin(id string) (*Origin, error) {
	set, err := s.settings(id)
	if err != nil {
		return nil, err
	}
	return set.Origin, nil
}

// settings returns the settings run id recorded.
func (s *Store) settings(id string) (Settings, error) {
	st, err := s.db.Stored(id)
	if err != nil {
		return Settings{}, err
	}
	set, err := decodeSettings(st.Settings)
	if err != nil {
		return set, fmt.Errorf("run %s: the recorded settings: %w", id, err)
	}
	return set, nil
}

// Mark returns a token that changes whenever something of run id is
// recorded, by any process; with id "", of any run (see journal.DB.Mark).
func (s *Store) Mark(id string) (string, error) { return s.db.Mark(id) }

// Pending returns the approvals a run waits for.
func (s *Store) Pending(id string) ([]*Approval, error) { return s.db.Pending(id) }

// StepCounts says how many of a run's steps are in each status, for
// people: "2 completed, 1 waiting"; "" when none has a status it names.
func StepCounts(m map[vm.Status]int) string {
	var parts []string
	for _, st := range []vm.Status{vm.StatusCompleted, vm.StatusFailed, vm.StatusSkipped, vm.StatusWaiting, vm.StatusRunning} {
		if m[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[st], st))
		}
	}
	return strings.Join(parts, ", ")
}

// Describe says what an approval is about, for people: the plan, a step
// and its tool, or a replan's changes, with the request's message.
func Describe(a *Approval) string {
	var what string
	switch {
	case a.Step == "" && a.Round > 0 && a.Diff != "":
		what = fmt.Sprintf("the steps replan %d changes", a.Round)
	case a.Step == "":
		what = "the plan"
	default:
		what = fmt.Sprintf("step %s (%s)", a.Step, a.Tool)
	}
	if a.Message != "" {
		what += fmt.Sprintf(" %q", a.Message)
	}
	return what
}

// errNoApprover is the error of an approval nobody can give: a run
// without a journal, and nobody to ask (vm.ErrNoApprover, which
// errors.Is finds).
var errNoApprover = vm.ErrNoApprover
