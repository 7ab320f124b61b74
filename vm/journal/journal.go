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
// Events are committed in groups: a run appends them without waiting,
// and the first goroutine that needs one written commits everything
// appended so far (up to 1024 events, of all the runs of the process) in
// one transaction, while the events appended meanwhile wait for the next;
// so steps that settle together share one transaction and one sync to
// disk, and a step waits for at most the commit under way and its own. A
// step's start is written within vm.GroupDelay of its tool's call, or
// with its outcome when that comes first.
//
// A run resumed from the journal gives each step that finished its
// recorded outcome (Run.Restore) and runs the others, so a step that
// started but did not finish runs again: a run calls each tool at least
// once, and a tool makes its retries safe with the idempotency key of
// runtime.CallInfo.
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
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/runtime"
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
  processes INTEGER NOT NULL DEFAULT 1
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
CREATE TABLE IF NOT EXISTS replans (
  run     TEXT NOT NULL,
  round   INTEGER NOT NULL,
  plan    TEXT NOT NULL,
  created INTEGER NOT NULL,
  PRIMARY KEY (run, round)
);
`

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
	// w commits the events of the runs in groups, with the statements
	// stmts, prepared when first needed; stmtMu guards stmts.
	w      *writer
	stmtMu sync.Mutex
	stmts  *statements
	// committed, when set (by tests), is called with each batch of
	// records once it is committed, before anyone waiting for it goes
	// on.
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
		return nil, fmt.Errorf("%w in %s: no run has been journaled there (--state-dir or OBELISK_STATE_DIR names another directory)", ErrNoJournal, dir)
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
	// One transaction, one sync, rather than one for each table of a new
	// journal.
	if _, err := db.Exec("BEGIN;\n" + schema + "COMMIT;"); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the journal %s: %w", path, err)
	}
	d := &DB{db: db, path: path, now: opts.Now, w: newWriter()}
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
	return d.db.Exec(query, args...)
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
	host, _ := os.Hostname()
	_, err = d.exec(`INSERT INTO runs (id, plan, status, source, input, settings, hash, created, updated, pid, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, nr.Source.Name, "running", src, in, []byte(settings), nr.Hash, now, now, os.Getpid(), host)
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE") {
			return nil, fmt.Errorf("a run named %s already exists", id)
		}
		return nil, fmt.Errorf("recording the run: %w", err)
	}
	return &Run{d: d, ID: id, restore: map[string]*vm.StepResult{}}, nil
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
	ID       string
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
}

// Error says which process runs it.
func (e *BusyError) Error() string {
	return fmt.Sprintf("run %s is being run by process %d; if that process is gone, resume with --force", e.Run, e.PID)
}

// FinishedError is returned by Resume for a run that has ended.
type FinishedError struct {
	Run    string
	Status vm.RunStatus
}

// Error says how it ended.
func (e *FinishedError) Error() string {
	return fmt.Sprintf("run %s has ended (%s): there is nothing to resume", e.Run, e.Status)
}

// Resume takes over a run that stopped (it waits, was canceled, or its
// process died) and returns its journal and what it was started from.
// A run another live process holds is refused unless force is set.
func (d *DB) Resume(id string, force bool) (*Run, *Stored, error) {
	st, err := d.load(id)
	if err != nil {
		return nil, nil, err
	}
	switch st.Status {
	case vm.RunWaiting, vm.RunCanceled:
	case "running":
		var pid int
		var host string
		if err := d.db.QueryRow(`SELECT pid, host FROM runs WHERE id = ?`, id).Scan(&pid, &host); err != nil {
			return nil, nil, err
		}
		me, _ := os.Hostname()
		if !force && host == me && pid != os.Getpid() && alive(pid) {
			return nil, nil, &BusyError{Run: id, PID: pid}
		}
	default:
		return nil, nil, &FinishedError{Run: id, Status: st.Status}
	}
	host, _ := os.Hostname()
	if _, err := d.exec(`UPDATE runs SET status = 'running', pid = ?, host = ?, processes = processes + 1, updated = ? WHERE id = ?`,
		os.Getpid(), host, d.now().UnixNano(), id); err != nil {
		return nil, nil, err
	}
	r := &Run{d: d, ID: id, restore: map[string]*vm.StepResult{}}
	if err := d.db.QueryRow(`SELECT coalesce(max(seq), 0) FROM events WHERE run = ?`, id).Scan(&r.seq); err != nil {
		return nil, nil, err
	}
	steps, err := d.steps(id)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range steps {
		if s.Status == vm.StatusCompleted || s.Status == vm.StatusFailed {
			r.restore[restoreKey(s.Round, s.ID)] = s
		}
	}
	return r, st, nil
}

// alive reports whether a process exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
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
	v, err := runtime.DecodeJSON(in)
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
	// err is the error of the first event that could not be written;
	// nothing is written after it.
	err error
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
	rec := record{run: r, seq: r.seq, round: r.round, now: r.d.now().UnixNano(), ev: ev}
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

// Restore returns the recorded outcome of a step that finished before the
// run was resumed. It is vm.Options.Restore.
func (r *Run) Restore(round int, step string) (*vm.StepResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.restore[restoreKey(round, step)]
	return s, ok
}

// Finish records the run's output and status once vm.Run has returned.
func (r *Run) Finish(res *vm.Result) error {
	out, err := json.Marshal(res.Output)
	if err != nil {
		return fmt.Errorf("recording the output: %w", err)
	}
	_, err = r.d.exec(`UPDATE runs SET status = ?, output = ?, error = ?, updated = ? WHERE id = ?`,
		string(res.Status), out, res.Error(), r.d.now().UnixNano(), r.ID)
	return err
}

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
