// Package journal keeps runs in a SQLite database, so that a run survives
// its process: a crash, a restart, or a wait of hours for a person.
//
// The database (journal.db in a state directory, .obelisk/ by default) is
// opened with write-ahead logging and synchronous=FULL through one
// connection, so a transaction is on disk when its commit returns. It
// holds, for each run, the plan's source and everything its compilation
// reads (so that the same program can be built again), the input, the
// settings the run was started with, every step's status, attempts,
// result or error and times, the approvals asked and decided, the plans
// of its replans, and the log of its events.
//
// A run records itself through a *Run, which implements vm.Journal and
// vm.GroupJournal: every event is written before the run's observer hears
// of it, and a step's outcome is committed, with its event, before the
// step counts as finished and before any step that reads it starts.
// Events, and every other record of a run (the answers of mocks, texts,
// facts, approvals asked, replans), are committed in groups: a run
// appends them without waiting, and the first goroutine that needs one
// written commits everything appended so far (up to 1024 records, of all
// the runs of the process) in one transaction of prepared statements,
// while the records appended meanwhile wait for the next;
// so steps that settle together share one transaction and one sync to
// disk, and a step waits for at most the commit under way and its own. A
// step's start is written within vm.GroupDelay of its tool's call, or
// with its outcome when that comes first.
//
// A run resumed from the journal gives each step that finished its
// recorded outcome (Run.Restore) and runs the others, so a step that
// started but did not finish runs again: a run calls each tool at least
// once, and a tool makes its retries safe with the idempotency key of
// toolkit.CallInfo.
package journal

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// FileName is the name of the database in the state directory.
const FileName = "journal.db"

const schema = `
CREATE TABLE IF NOT EXISTS runs (
  id        TEXT PRIMARY KEY,
  plan      TEXT NOT NULL,
  status    TEXT NOT NULL,
  source    BLOB NOT NULL,
  input     BLOB NOT NULL,
  settings  BLOB NOT NULL,
  hash      TEXT NOT NULL DEFAULT '',
  created   INTEGER NOT NULL,
  updated   INTEGER NOT NULL,
  finished  INTEGER NOT NULL DEFAULT 0,
  output    BLOB,
  error     TEXT NOT NULL DEFAULT '',
  pid       INTEGER NOT NULL DEFAULT 0,
  host      TEXT NOT NULL DEFAULT '',
  processes INTEGER NOT NULL DEFAULT 1,
  pid_start TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS steps (
  run       TEXT NOT NULL,
  round     INTEGER NOT NULL,
  id        TEXT NOT NULL,
  tool      TEXT NOT NULL,
  status    TEXT NOT NULL,
  attempts  INTEGER NOT NULL DEFAULT 0,
  retries   INTEGER NOT NULL DEFAULT 0,
  result    BLOB,
  error     BLOB,
  handled   INTEGER NOT NULL DEFAULT 0,
  reason    TEXT NOT NULL DEFAULT '',
  verdicts  BLOB,
  start_ns  INTEGER NOT NULL DEFAULT 0,
  dur_ns    INTEGER NOT NULL DEFAULT 0,
  started   INTEGER NOT NULL DEFAULT 0,
  finished  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run, round, id)
);
CREATE TABLE IF NOT EXISTS events (
  run   TEXT NOT NULL,
  seq   INTEGER NOT NULL,
  time  INTEGER NOT NULL,
  type  TEXT NOT NULL,
  step  TEXT NOT NULL,
  body  BLOB NOT NULL,
  PRIMARY KEY (run, seq)
);
CREATE INDEX IF NOT EXISTS events_by_step ON events (run, step, seq);
CREATE TABLE IF NOT EXISTS approvals (
  run       TEXT NOT NULL,
  round     INTEGER NOT NULL,
  step      TEXT NOT NULL,
  tool      TEXT NOT NULL DEFAULT '',
  message   TEXT NOT NULL DEFAULT '',
  args      BLOB,
  plan      TEXT NOT NULL DEFAULT '',
  diff      TEXT NOT NULL DEFAULT '',
  requested INTEGER NOT NULL,
  decided   INTEGER NOT NULL DEFAULT 0,
  approved  INTEGER NOT NULL DEFAULT 0,
  note      TEXT NOT NULL DEFAULT '',
  edit      TEXT NOT NULL DEFAULT '',
  by        TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run, round, step)
);
CREATE TABLE IF NOT EXISTS fills (
  run      TEXT NOT NULL,
  round    INTEGER NOT NULL,
  step     TEXT NOT NULL,
  argument TEXT NOT NULL,
  value    BLOB,
  PRIMARY KEY (run, round, step, argument)
);
CREATE TABLE IF NOT EXISTS replans (
  run     TEXT NOT NULL,
  round   INTEGER NOT NULL,
  plan    TEXT NOT NULL,
  created INTEGER NOT NULL,
  PRIMARY KEY (run, round)
);
CREATE TABLE IF NOT EXISTS mock_calls (
  run   TEXT NOT NULL,
  tool  TEXT NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY (run, tool)
);
CREATE TABLE IF NOT EXISTS texts (
  run  TEXT NOT NULL,
  name TEXT NOT NULL,
  seq  INTEGER NOT NULL,
  text BLOB NOT NULL,
  PRIMARY KEY (run, name, seq)
);
CREATE TABLE IF NOT EXISTS text_ends (
  run  TEXT NOT NULL,
  name TEXT NOT NULL,
  meta BLOB,
  PRIMARY KEY (run, name)
);
CREATE TABLE IF NOT EXISTS facts (
  run   TEXT NOT NULL,
  key   TEXT NOT NULL,
  value BLOB NOT NULL,
  step  TEXT NOT NULL,
  seq   INTEGER NOT NULL,
  PRIMARY KEY (run, key)
);
CREATE TABLE IF NOT EXISTS cancels (
  run       TEXT PRIMARY KEY,
  requested INTEGER NOT NULL,
  by        TEXT NOT NULL DEFAULT '',
  reason    TEXT NOT NULL DEFAULT ''
);
`

// CorruptError is returned when a journal is opened that is damaged (a
// disk fault, a copy made while it was written, bytes overwritten): it
// is not opened, so that nothing is written into it.
type CorruptError struct {
	Path string
	// Problems are what SQLite found, the first few.
	Problems []string
}

// Error says what is damaged and how to go on.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("the journal %s is damaged (%s), and nothing was written to it: keep a copy, then recover what it holds "+
		"(sqlite3 %s .recover | sqlite3 recovered.db, and move recovered.db in its place), or move it aside to start a new journal "+
		"(mv %s %s.damaged)",
		e.Path, strings.Join(e.Problems, "; "), e.Path, e.Path, e.Path)
}

// check checks the journal's integrity before anything is written to it:
// SQLite's quick_check reads every page and checks that each is well
// formed and the tables' records are sound (it skips the cross-check of
// indexes against their tables, which integrity_check adds at many times
// the cost). A damaged journal is a *CorruptError.
func check(db *sql.DB, path string) error {
	rows, err := db.Query(`PRAGMA quick_check(8)`)
	if err != nil {
		if damaged(err) {
			return &CorruptError{Path: path, Problems: []string{err.Error()}}
		}
		return fmt.Errorf("opening the journal %s: %w", path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return &CorruptError{Path: path, Problems: []string{err.Error()}}
		}
		for _, l := range strings.Split(line, "\n") {
			if l != "ok" && l != "*** in database main ***" && l != "" {
				problems = append(problems, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		if damaged(err) {
			return &CorruptError{Path: path, Problems: []string{err.Error()}}
		}
		return fmt.Errorf("opening the journal %s: %w", path, err)
	}
	if len(problems) > 0 {
		return &CorruptError{Path: path, Problems: problems}
	}
	return nil
}

// damaged reports whether an error of SQLite says the database is damaged
// or is not a database.
func damaged(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// schemaVersion is the layout of the journal, kept in SQLite's
// user_version: 1 records when a run's owner started (runs.pid_start); 2
// adds the positions of mocks (mock_calls), texts received as they
// arrive (texts, text_ends) and a goal's facts (facts); 3 the answers a
// model gave for holes and tasks (fills); 4 the requests to cancel a run
// (cancels).
const schemaVersion = 4

// migrate makes the tables a journal needs, or brings those of an
// earlier layout up to date, in one transaction. A journal of a later
// layout is refused: this program cannot know what it holds.
func migrate(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return nil
	}
	if v > schemaVersion {
		return fmt.Errorf("it was written by a later version of obelisk (layout %d, this one knows up to %d): use that version", v, schemaVersion)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Read again under the write lock: another process may have done it.
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return nil
	}
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'pid_start'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := tx.Exec(`ALTER TABLE runs ADD COLUMN pid_start TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// DB is a journal database. Its methods are safe for concurrent use;
// several processes may open the same database.
type DB struct {
	db   *sql.DB
	path string
	// wmu orders this process's writes, and keeps a commit that need not
	// be synced from lending its setting to another.
	wmu sync.Mutex
	// now gives the time of records; tests set it.
	now func() time.Time
	// me is this process, the owner of the runs it creates or resumes.
	me owner
	// w commits the events of the runs in groups, with the statements
	// stmts, prepared when first needed; stmtMu guards stmts.
	w      *writer
	stmtMu sync.Mutex
	stmts  *statements
	// committed, when set (by tests), is called with each batch of
	// records once it is committed, before anyone waiting for it goes
	// on, and with nil for each other transaction.
	committed func([]record)
}

// Options configure Open.
type Options struct {
	// Now gives the time records are stamped with, and approval timeouts
	// are measured by (default time.Now).
	Now func() time.Time
}

// Open opens (creating it if needed) the journal in a state directory.
func Open(dir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	return openMode(dir, opts, "rwc")
}

// ErrNoJournal is returned by OpenExisting for a state directory that holds
// no journal.
var ErrNoJournal = errors.New("no journal")

// OpenExisting opens the journal in a state directory only if it exists,
// and creates nothing: for a command that reads runs, or decides on one,
// where no run has been journaled. Without a journal it returns an error
// that wraps ErrNoJournal.
func OpenExisting(dir string, opts Options) (*DB, error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s: no run has been journaled there (the runs may be in another state directory)", ErrNoJournal, dir)
	} else if err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	// mode=rw: should the file go in the meantime, SQLite does not make
	// another.
	return openMode(dir, opts, "rw")
}

// openMode opens the database of a state directory with SQLite's open mode
// (rwc creates the file, rw does not).
func openMode(dir string, opts Options, mode string) (*DB, error) {
	path := filepath.Join(dir, FileName)
	dsn := "file:" + filepath.ToSlash(path) + "?mode=" + mode +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the journal %s: %w", path, err)
	}
	// One connection: every write of this process goes through it, in
	// order.
	db.SetMaxOpenConns(1)
	if err := check(db, path); err != nil {
		db.Close()
		return nil, err
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the journal %s: %w", path, err)
	}
	d := &DB{db: db, path: path, now: opts.Now, me: self(), w: newWriter()}
	if d.now == nil {
		d.now = time.Now
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.stmtMu.Lock()
	if d.stmts != nil {
		d.stmts.close()
		d.stmts = nil
	}
	d.stmtMu.Unlock()
	return d.db.Close()
}

// Path returns the database's file name.
func (d *DB) Path() string { return d.path }

// exec runs a statement that writes, synced to disk when it returns.
func (d *DB) exec(query string, args ...any) (sql.Result, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	res, err := d.db.Exec(query, args...)
	if err == nil && d.committed != nil {
		d.committed(nil)
	}
	return res, err
}

// tx runs fn in a transaction and commits it, synced to disk when it
// returns.
func (d *DB) tx(fn func(tx *sql.Tx) error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	tx, err := d.db.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if d.committed != nil {
		d.committed(nil)
	}
	return nil
}

// NewRun is what a run starts from.
type NewRun struct {
	// ID names the run; "" makes a random one.
	ID     string
	Source *planfile.Source
	Input  map[string]any
	// Settings are the caller's, to resume the run with (its tools, its
	// approval policy); the journal keeps them as they are.
	Settings json.RawMessage
	// Hash is the content hash of the planfile the run applies, if any.
	Hash string
}

// ErrNotFound is returned for a run the journal does not hold.
var ErrNotFound = errors.New("no such run")

// Create records a new run and returns its journal.
func (d *DB) Create(nr NewRun) (*Run, error) {
	id := nr.ID
	if id == "" {
		id = vm.NewRunID()
	} else if err := checkID(id); err != nil {
		return nil, err
	}
	src, err := json.Marshal(nr.Source)
	if err != nil {
		return nil, fmt.Errorf("recording the plan: %w", err)
	}
	input := nr.Input
	if input == nil {
		input = map[string]any{}
	}
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("recording the input: %w", err)
	}
	settings := nr.Settings
	if len(settings) == 0 {
		settings = json.RawMessage("{}")
	}
	now := d.now().UnixNano()
	_, err = d.exec(`INSERT INTO runs (id, plan, status, source, input, settings, hash, created, updated, pid, host, pid_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, nr.Source.Name, "running", src, in, []byte(settings), nr.Hash, now, now, d.me.pid, d.me.host, d.me.start)
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE") {
			return nil, fmt.Errorf("a run named %s already exists", id)
		}
		return nil, fmt.Errorf("recording the run: %w", err)
	}
	return &Run{d: d, ID: id, restore: map[string]*vm.StepResult{}, fills: map[string][]byte{}}, nil
}

func checkID(id string) error {
	if id == "" || len(id) > 100 {
		return fmt.Errorf("invalid run name %q: give 1 to 100 letters, digits, '-', '_' or '.'", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("invalid run name %q: give 1 to 100 letters, digits, '-', '_' or '.'", id)
		}
	}
	return nil
}

// Lookup returns the ID of the run named id, or of the only run whose ID
// starts with it.
func (d *DB) Lookup(id string) (string, error) {
	var n int
	if err := d.db.QueryRow(`SELECT count(*) FROM runs WHERE id = ?`, id).Scan(&n); err != nil {
		return "", err
	}
	if n == 1 {
		return id, nil
	}
	rows, err := d.db.Query(`SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6`, len(id), id)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		ids = append(ids, s)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w %s in %s (obelisk runs lists them)", ErrNotFound, id, d.path)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%s names several runs (%s…): give more of the ID", id, strings.Join(ids[:min(5, len(ids))], ", "))
}

// Stored is a run as recorded: what Resume needs to build it again.
type Stored struct {
	ID string
	// Status is the run's status; Resume gives the one it had before it
	// was resumed.
	Status   vm.RunStatus
	Source   *planfile.Source
	Input    map[string]any
	Settings json.RawMessage
	Hash     string
}

// BusyError is returned by Resume for a run another live process is
// running.
type BusyError struct {
	Run string
	PID int
	// Host is the owner's host, when it is not this process's.
	Host string
}

// Error says which process runs it.
func (e *BusyError) Error() string {
	who := fmt.Sprintf("process %d", e.PID)
	if e.Host != "" {
		who += " on " + e.Host
	}
	return fmt.Sprintf("run %s is being run by %s; if that process is gone, resume it with force (the force argument of Resume)", e.Run, who)
}

// FinishedError is returned by Resume for a run that has ended.
type FinishedError struct {
	Run    string
	Status vm.RunStatus
}

// Error says how it ended.
func (e *FinishedError) Error() string {
	if e.Status == RunAborted {
		return fmt.Sprintf("run %s was canceled at a person's request (%s): it cannot be resumed", e.Run, e.Status)
	}
	return fmt.Sprintf("run %s has ended (%s): there is nothing to resume", e.Run, e.Status)
}

// Resume takes over a run that stopped (it waits, was canceled, or its
// process died), making this process its owner, and returns its journal
// and what it was started from. The owner is read and replaced in one
// transaction, under SQLite's write lock, so that of the processes that
// resume a run at once exactly one takes it: a run another live process
// owns (see owner.alive) is refused with a *BusyError unless force is
// set.
func (d *DB) Resume(id string, force bool) (*Run, *Stored, error) {
	return d.resume(id, force, nil)
}

// resume is Resume, with ready, when set, asked in the transaction whether
// the run, of status was and owner o, may be taken over.
func (d *DB) resume(id string, force bool, ready func(tx *sql.Tx, was vm.RunStatus, o owner) error) (*Run, *Stored, error) {
	var was vm.RunStatus
	err := d.tx(func(tx *sql.Tx) error {
		status, o, err := d.owner(tx, id)
		if err != nil {
			return err
		}
		was = vm.RunStatus(status)
		switch was {
		case vm.RunWaiting, vm.RunCanceled:
		case "running":
			if !force && o.alive(d.me) {
				be := &BusyError{Run: id, PID: o.pid}
				if o.host != d.me.host {
					be.Host = o.host
				}
				return be
			}
		default:
			return &FinishedError{Run: id, Status: vm.RunStatus(status)}
		}
		if ready != nil {
			if err := ready(tx, was, o); err != nil {
				return err
			}
		}
		_, err = tx.Exec(`UPDATE runs SET status = 'running', pid = ?, host = ?, pid_start = ?, processes = processes + 1, updated = ? WHERE id = ?`,
			d.me.pid, d.me.host, d.me.start, d.now().UnixNano(), id)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	st, err := d.load(id)
	if err != nil {
		return nil, nil, err
	}
	st.Status = was
	r := &Run{d: d, ID: id, restore: map[string]*vm.StepResult{}}
	if err := d.db.QueryRow(`SELECT coalesce(max(seq), 0) FROM events WHERE run = ?`, id).Scan(&r.seq); err != nil {
		return nil, nil, err
	}
	if r.fills, err = d.fills(id); err != nil {
		return nil, nil, err
	}
	steps, err := d.steps(id)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range steps {
		if s.Status == vm.StatusCompleted || s.Status == vm.StatusFailed || s.Status == vm.StatusWaiting && judging(s.Verdicts) {
			r.restore[restoreKey(s.Round, s.ID)] = s
		}
	}
	return r, st, nil
}

// judging reports whether a waiting step waits for a person's judgment of
// its result (a hitl verdict): it is restored with its result.
func judging(verdicts []vm.Verdict) bool {
	for _, v := range verdicts {
		if v.Verdict == vm.VerdictHITL {
			return true
		}
	}
	return false
}

// Stored returns what a run was started from.
func (d *DB) Stored(id string) (*Stored, error) { return d.load(id) }

func (d *DB) load(id string) (*Stored, error) {
	var src, in, settings []byte
	st := &Stored{ID: id}
	var status string
	err := d.db.QueryRow(`SELECT status, source, input, settings, hash FROM runs WHERE id = ?`, id).Scan(&status, &src, &in, &settings, &st.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %s in %s", ErrNotFound, id, d.path)
	}
	if err != nil {
		return nil, err
	}
	st.Status = vm.RunStatus(status)
	st.Source = &planfile.Source{}
	if err := json.Unmarshal(src, st.Source); err != nil {
		return nil, fmt.Errorf("run %s: the recorded plan: %w", id, err)
	}
	v, err := toolkit.DecodeJSON(in)
	if err != nil {
		return nil, fmt.Errorf("run %s: the recorded input: %w", id, err)
	}
	st.Input, _ = v.(map[string]any)
	st.Settings = settings
	return st, nil
}

func restoreKey(round int, step string) string { return fmt.Sprintf("%d/%s", round, step) }

// Run is the journal of one run. It implements vm.Journal and
// vm.GroupJournal; give its Restore, Approver and Replanner to vm.Run
// too.
type Run struct {
	d  *DB
	ID string

	mu      sync.Mutex
	seq     int64
	round   int
	restore map[string]*vm.StepResult
	// fills are the answers a model gave for holes and tasks, by
	// fillKey, as JSON.
	fills map[string][]byte
	// goal is set for the run of a goal, whose turns each run a plan:
	// the end of a turn's plan is not the end of the run.
	goal bool
	// err is the error of the first event that could not be written;
	// nothing is written after it.
	err error
}

// Turn makes what is recorded from now on that of turn n of a goal (see
// package vm/agent): its steps are recorded under round n, and the end of
// the turn's plan does not end the run, which Finish ends.
func (r *Run) Turn(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.round, r.goal = n, true
}

// Record writes an event, and the state of the step it decides, and
// returns once they are committed (synced to disk for an event that
// decides a step, the run or a wait; see Append).
func (r *Run) Record(ev vm.Event, step *vm.StepResult) error {
	pos, err := r.Append(ev, step)
	if err != nil {
		return err
	}
	return r.Sync(pos)
}

// Append queues an event, and the state of the step it decides, to be
// written after the events appended before it, and returns its position
// for Sync. Events are committed in groups: those of steps that settle
// together, of this run and of others in this process, in one
// transaction.
func (r *Run) Append(ev vm.Event, step *vm.StepResult) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	r.seq++
	if ev.Type == vm.Replanned {
		r.round++
	}
	if ev.Type == vm.StepFilled && ev.Verdict == vm.FillAccepted {
		value, err := json.Marshal(ev.Result)
		if err != nil {
			r.seq--
			return 0, fmt.Errorf("encoding the filling of %s: %w", ev.Step, err)
		}
		if r.fills == nil {
			r.fills = map[string][]byte{}
		}
		r.fills[fillKey(r.round, ev.Step, ev.Message)] = value
	}
	rec := record{run: r, seq: r.seq, round: r.round, now: r.d.now().UnixNano(), ev: ev, goal: r.goal}
	if step != nil {
		rec.step, rec.hasStep = *step, true
	}
	return r.d.w.add(rec), nil
}

// Sync returns once the events appended up to pos are committed: synced
// to disk when one decides a step (its outcome), the run or a wait;
// otherwise in the operating system's hands, which survives the death of
// the process, and synced with the next. It returns the error of the
// first event of the run that could not be written.
func (r *Run) Sync(pos uint64) error {
	r.d.w.sync(r.d, pos)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// fail records that an event of the run could not be written.
func (r *Run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func fillKey(round int, step, argument string) string {
	return fmt.Sprintf("%d/%s\x00%s", round, step, argument)
}

// writeFill keeps an answer a model gave for a hole or a task, which a
// resumed run takes instead of asking again.
func writeFill(stmt *sql.Stmt, run string, round int, ev *vm.Event) error {
	if ev.Verdict != vm.FillAccepted {
		return nil
	}
	value, err := json.Marshal(ev.Result)
	if err != nil {
		return fmt.Errorf("encoding the filling of %s: %w", ev.Step, err)
	}
	_, err = stmt.Exec(run, round, ev.Step, ev.Message, value)
	return err
}

// fills reads the answers kept for a run's holes and tasks.
func (d *DB) fills(id string) (map[string][]byte, error) {
	rows, err := d.db.Query(`SELECT round, step, argument, value FROM fills WHERE run = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var round int
		var step, arg string
		var value []byte
		if err := rows.Scan(&round, &step, &arg, &value); err != nil {
			return nil, err
		}
		out[fillKey(round, step, arg)] = value
	}
	return out, rows.Err()
}

// RestoreFill returns the answer a model gave, in an earlier process of
// the run, for a hole of a step (argument names it) or for its task
// (argument ""). It is vm.Options.RestoreFill.
func (r *Run) RestoreFill(round int, step, argument string) (any, bool) {
	r.mu.Lock()
	b, ok := r.fills[fillKey(round, step, argument)]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	v, err := toolkit.DecodeJSON(b)
	if err != nil {
		return nil, false
	}
	return v, true
}

// writeElement records an element of a for each that returned, as a step
// of its own ("fetch[2]"), for Restore to give it back.
func writeElement(stmt *sql.Stmt, run string, round int, ev *vm.Event, now int64) error {
	result, err := json.Marshal(ev.Result)
	if err != nil {
		return fmt.Errorf("encoding the result of %s: %w", ev.Step, err)
	}
	_, err = stmt.Exec(run, round, ev.Step, ev.Tool, ev.Attempt, result, now)
	return err
}

// Restore returns the recorded outcome of a step that finished before the
// run was resumed. It is vm.Options.Restore.
func (r *Run) Restore(round int, step string) (*vm.StepResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.restore[restoreKey(round, step)]
	return s, ok
}

// Finish records the run's output and status once vm.Run has returned.
// An output that cannot be encoded (a number JSON cannot hold) is not
// recorded: the run is recorded as failed, with why, so that it does not
// stay running for ever, and Finish returns an *OutputError.
func (r *Run) Finish(res *vm.Result) error {
	status, why := string(res.Status), res.Error()
	out, err := json.Marshal(res.Output)
	var oerr error
	if err != nil {
		oerr = &OutputError{Err: err}
		status, why, out = string(vm.RunFailed), oerr.Error(), nil
	}
	_, err = r.d.exec(`UPDATE runs SET status = ?, output = ?, error = ?, updated = ? WHERE id = ?`,
		status, out, why, r.d.now().UnixNano(), r.ID)
	if err != nil {
		return err
	}
	return oerr
}

// OutputError is returned by Finish for a run whose output cannot be
// encoded as JSON: the run is recorded as failed.
type OutputError struct{ Err error }

// Error says why.
func (e *OutputError) Error() string {
	return fmt.Sprintf("the run's output cannot be recorded, so the run failed: %v", e.Err)
}

// Unwrap returns the encoder's error.
func (e *OutputError) Unwrap() error { return e.Err }

// Replanner returns a replanner that gives the plans the run's earlier
// processes recorded, and asks next (recording its plans) for the
// others. It returns nil when next is nil and nothing is recorded.
func (r *Run) Replanner(next vm.Replanner) vm.Replanner {
	var n int
	r.d.db.QueryRow(`SELECT count(*) FROM replans WHERE run = ?`, r.ID).Scan(&n)
	if next == nil && n == 0 {
		return nil
	}
	return &replanner{r: r, next: next}
}
