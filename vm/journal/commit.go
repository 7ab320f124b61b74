package journal

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/vm"
)

// maxBatch bounds the records one transaction writes, so that a run that
// settles many steps at once (the thousands of steps a failure skips)
// commits them in several transactions and the first waiters need not
// wait for the last.
const maxBatch = 1024

// record is what a run writes, waiting to be written: an event, with the
// state of the step it decides, or (kind) another of its records.
type record struct {
	run *Run
	// kind is what the record writes: an event, or a row of another
	// table, with args the arguments of its statement.
	kind  kind
	args  []any
	seq   int64
	round int
	now   int64
	ev    vm.Event
	step  vm.StepResult
	// hasStep is set when the event comes with its step's result.
	hasStep bool
	// goal is set for the run of a goal, whose turns' plans end without
	// ending the run.
	goal bool
}

// kind is what a record writes.
type kind uint8

const (
	// anEvent is an event of the run, and what it changes of its step
	// and of the run.
	anEvent kind = iota
	// aMockCall is how many calls of a mocked tool were answered (run,
	// tool, calls).
	aMockCall
	// aTextPiece is a piece of a text the run receives (run, name,
	// piece, run, name).
	aTextPiece
	// aTextEnd is the end of a text (run, name, meta).
	aTextEnd
	// aFact is a fact of a goal (run, key, value, step, run).
	aFact
	// anApproval is an approval asked (run, round, step, tool, message,
	// args, plan, diff, requested).
	anApproval
	// aReplan is a plan a replan gave (run, round, plan, created).
	aReplan
	kinds
)

// kindQueries are the statements that write the records of each kind but
// events.
var kindQueries = [kinds]string{
	aMockCall: `INSERT INTO mock_calls (run, tool, calls) VALUES (?, ?, ?)
		ON CONFLICT (run, tool) DO UPDATE SET calls = max(calls, excluded.calls)`,
	aTextPiece: `INSERT INTO texts (run, name, seq, text)
		SELECT ?, ?, coalesce(max(seq), 0) + 1, ? FROM texts WHERE run = ? AND name = ?`,
	aTextEnd: `INSERT INTO text_ends (run, name, meta) VALUES (?, ?, ?)
		ON CONFLICT (run, name) DO UPDATE SET meta = excluded.meta`,
	aFact: `INSERT INTO facts (run, key, value, step, seq)
		SELECT ?, ?, ?, ?, coalesce(max(seq), 0) + 1 FROM facts WHERE run = ?
		ON CONFLICT (run, key) DO NOTHING`,
	anApproval: `INSERT INTO approvals (run, round, step, tool, message, args, plan, diff, requested) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	aReplan:    `INSERT INTO replans (run, round, plan, created) VALUES (?, ?, ?, ?)`,
}

// durable reports whether the record decides a step, the run or a wait,
// and is synced to disk before the run goes on; the rest survives a
// crash of the process and is synced with the next.
func (rec *record) durable() bool {
	switch rec.kind {
	case anEvent:
	case anApproval, aReplan:
		// A gate's request and a new plan are acted on (a person asked,
		// the plan run) once kept.
		return true
	default:
		return false
	}
	switch rec.ev.Type {
	case vm.StepCompleted, vm.StepFailed, vm.StepSkipped, vm.StepWaiting, vm.PlanFinished, vm.ApprovalDecided, vm.Replanned:
		return true
	case vm.StepFilled:
		// A model's answer is used (shown at an approval, passed to a
		// tool) only once it is kept.
		return rec.ev.Verdict == vm.FillAccepted
	}
	return false
}

// decides reports whether the record writes a step's outcome.
func (rec *record) decides() bool {
	if rec.kind != anEvent {
		return false
	}
	switch rec.ev.Type {
	case vm.StepCompleted, vm.StepFailed, vm.StepSkipped:
		return rec.hasStep
	}
	return false
}

// stepKey names a step's row in a batch.
type stepKey struct {
	run   *Run
	round int
	step  string
}

// mockKey names a mocked tool of a run in a batch.
type mockKey struct {
	run  *Run
	tool string
}

// writer commits the records of a database's runs in groups: the first
// goroutine that waits for a record not yet written commits everything
// queued (up to maxBatch records) in one transaction, while those that
// come meanwhile queue theirs for the next; each waits for at most the
// commit under way and its own.
type writer struct {
	mu   sync.Mutex
	cond *sync.Cond
	// queue holds the records appended and not yet taken by a commit;
	// appended is the position of the last, done the position up to
	// which records are committed (or failed, see Run.err).
	queue          []record
	spare          []record
	appended, done uint64
	// busy is set while a goroutine commits.
	busy bool
	// the commit's own lists, reused from one to the next.
	decided map[stepKey]int
	started map[stepKey]int64
	// mocks is the record of the most calls of each mocked tool of a
	// run, the only one of its kind the batch writes.
	mocks   map[mockKey]int
	buf     []byte
	ends    []int
	bodies  [][]byte
	results [][]byte
	args    []any
}

func newWriter() *writer {
	w := &writer{decided: map[stepKey]int{}, started: map[stepKey]int64{}, mocks: map[mockKey]int{}}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// add queues a record and returns its position.
func (w *writer) add(rec record) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, rec)
	w.appended++
	return w.appended
}

// sync returns once the records up to pos are committed or have failed,
// committing them itself when no other goroutine does.
func (w *writer) sync(d *DB, pos uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.done < pos {
		if w.busy {
			w.cond.Wait()
			continue
		}
		w.busy = true
		n := min(len(w.queue), maxBatch)
		batch := w.queue[:n:n]
		rest := w.queue[n:]
		w.queue = append(w.spare[:0], rest...)
		w.mu.Unlock()
		d.commitBatch(w, batch)
		clear(batch)
		w.mu.Lock()
		w.spare = batch[:0]
		w.done += uint64(n)
		w.busy = false
		w.cond.Broadcast()
	}
}

// commitBatch writes a batch in one transaction. Should that fail, it
// writes the records of each run in a transaction of their own, so that
// one run's failure is not another's, and records the error of each run
// whose records could not be written.
func (d *DB) commitBatch(w *writer, batch []record) {
	err := d.writeBatch(w, batch)
	if err == nil {
		return
	}
	var runs []*Run
	for i := range batch {
		if r := batch[i].run; !containsRun(runs, r) {
			runs = append(runs, r)
		}
	}
	if len(runs) == 1 {
		runs[0].fail(err)
		return
	}
	for _, r := range runs {
		var mine []record
		for i := range batch {
			if batch[i].run == r {
				mine = append(mine, batch[i])
			}
		}
		if err := d.writeBatch(w, mine); err != nil {
			r.fail(err)
		}
	}
}

func containsRun(runs []*Run, r *Run) bool {
	for _, x := range runs {
		if x == r {
			return true
		}
	}
	return false
}

// statements are the prepared statements of the write path.
type statements struct {
	start, retry, waiting, finish, fill, element, normal, full *sql.Stmt
	// kinds write the records of each kind but events.
	kinds [kinds]*sql.Stmt
	// events and steps insert rows of events and of steps' outcomes,
	// chunk[k] rows at once.
	events, steps [len(chunk)]*sql.Stmt
}

// chunk are the numbers of rows the statements that insert several at
// once take: a batch of n rows is written in at most n/64+6 statements.
var chunk = [...]int{64, 16, 4, 1}

const (
	eventColumns = 6
	eventInsert  = `INSERT INTO events (run, seq, time, type, step, body) VALUES `
	stepColumns  = 16
	stepInsert   = `INSERT INTO steps (run, round, id, tool, status, attempts, retries, result, error, handled, reason, verdicts, start_ns, dur_ns, started, finished) VALUES `
	// started is the step's start when it was in the same batch (its
	// own row not written), else 0: the row keeps its own.
	stepUpsert = ` ON CONFLICT (run, round, id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, retries = excluded.retries,
	  result = excluded.result, error = excluded.error, handled = excluded.handled, reason = excluded.reason, verdicts = excluded.verdicts,
	  start_ns = excluded.start_ns, dur_ns = excluded.dur_ns, finished = excluded.finished,
	  started = CASE WHEN excluded.started != 0 THEN excluded.started ELSE steps.started END`
)

// rows returns the VALUES of n rows of k columns: (?, ?), (?, ?).
func rows(n, k int) string {
	row := "(?" + strings.Repeat(", ?", k-1) + ")"
	return row + strings.Repeat(", "+row, n-1)
}

// prepare prepares the statements of the write path, the first time it
// is called, or again after it failed.
func (d *DB) prepare() (*statements, error) {
	d.stmtMu.Lock()
	defer d.stmtMu.Unlock()
	if d.stmts != nil {
		return d.stmts, nil
	}
	s := &statements{}
	var made []*sql.Stmt
	prep := func(stmt **sql.Stmt, query string) error {
		st, err := d.db.Prepare(query)
		if err != nil {
			return fmt.Errorf("preparing the journal's statements: %w", err)
		}
		*stmt, made = st, append(made, st)
		return nil
	}
	err := errors.Join(
		prep(&s.start, `INSERT INTO steps (run, round, id, tool, status, attempts, started) VALUES (?, ?, ?, ?, 'running', 0, ?)
			ON CONFLICT (run, round, id) DO UPDATE SET status = 'running', started = excluded.started`),
		prep(&s.retry, `UPDATE steps SET attempts = ? WHERE run = ? AND round = ? AND id = ?`),
		prep(&s.waiting, `INSERT INTO steps (run, round, id, tool, status) VALUES (?, ?, ?, ?, 'waiting')
			ON CONFLICT (run, round, id) DO UPDATE SET status = 'waiting'`),
		prep(&s.finish, `UPDATE runs SET status = ?, error = ?, updated = ?, finished = ? WHERE id = ?`),
		prep(&s.fill, `INSERT INTO fills (run, round, step, argument, value) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run, round, step, argument) DO UPDATE SET value = excluded.value`),
		prep(&s.element, `INSERT INTO steps (run, round, id, tool, status, attempts, result, finished) VALUES (?, ?, ?, ?, 'completed', ?, ?, ?)
			ON CONFLICT (run, round, id) DO UPDATE SET status = 'completed', attempts = excluded.attempts, result = excluded.result, finished = excluded.finished`),
		prep(&s.normal, `PRAGMA synchronous = NORMAL`),
		prep(&s.full, `PRAGMA synchronous = FULL`),
	)
	for k := aMockCall; k < kinds; k++ {
		err = errors.Join(err, prep(&s.kinds[k], kindQueries[k]))
	}
	for k, n := range chunk {
		err = errors.Join(err,
			prep(&s.events[k], eventInsert+rows(n, eventColumns)),
			prep(&s.steps[k], stepInsert+rows(n, stepColumns)+stepUpsert))
	}
	if err != nil {
		for _, st := range made {
			st.Close()
		}
		return nil, err
	}
	d.stmts = s
	return s, nil
}

// close closes the statements.
func (s *statements) close() {
	all := []*sql.Stmt{s.start, s.retry, s.waiting, s.finish, s.fill, s.element, s.normal, s.full}
	all = append(all, s.kinds[aMockCall:]...)
	for _, st := range append(all, append(s.events[:], s.steps[:]...)...) {
		st.Close()
	}
}

// writeBatch writes records in one transaction. It is synced to disk
// before it returns when a record is durable; otherwise it is not synced
// itself (synchronous=NORMAL): it survives the death of the process,
// since the operating system has it, and is synced with the next durable
// commit.
func (d *DB) writeBatch(w *writer, batch []record) error {
	st, err := d.prepare()
	if err != nil {
		return err
	}
	// The events, encoded one after the other in one buffer; a result is
	// encoded once, for its event and its step's row.
	durable := false
	buf, ends, results := w.buf[:0], w.ends[:0], w.results[:0]
	for i := range batch {
		rec := &batch[i]
		durable = durable || rec.durable()
		if rec.kind != anEvent {
			ends, results = append(ends, len(buf)), append(results, nil)
			continue
		}
		var result []byte
		if rec.ev.Result != nil {
			if result, err = json.Marshal(rec.ev.Result); err != nil {
				return fmt.Errorf("encoding the event: %w", err)
			}
		}
		if buf, err = appendEvent(buf, &rec.ev, result); err != nil {
			return fmt.Errorf("encoding the event: %w", err)
		}
		ends, results = append(ends, len(buf)), append(results, result)
	}
	bodies := w.bodies[:0]
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		bodies = append(bodies, buf[start:end:end])
	}
	defer func() {
		clear(bodies)
		clear(results)
		w.buf, w.ends, w.results, w.bodies = buf[:0], ends[:0], results[:0], bodies[:0]
	}()
	// A step started and decided in the same batch gets one row, its
	// last: the start and the retries before the outcome are not
	// written apart.
	// Of the calls of a mocked tool answered in the batch, the most is
	// written (the row keeps the most).
	clear(w.decided)
	clear(w.started)
	clear(w.mocks)
	for i := range batch {
		rec := &batch[i]
		switch {
		case rec.decides():
			w.decided[stepKey{rec.run, rec.round, rec.ev.Step}] = i
		case rec.kind == aMockCall:
			key := mockKey{rec.run, rec.args[1].(string)}
			if j, ok := w.mocks[key]; !ok || rec.args[2].(int) >= batch[j].args[2].(int) {
				w.mocks[key] = i
			}
		}
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if !durable {
		if _, err := st.normal.Exec(); err != nil {
			return err
		}
		defer st.full.Exec()
	}
	tx, err := d.db.Begin()
	if err != nil {
		return err
	}
	if err := writeRecords(tx, st, w, batch, bodies, results); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if d.committed != nil {
		d.committed(batch)
	}
	return nil
}

// writeRecords writes a batch's records within tx: the events, several
// rows a statement; then the rows of the steps each starts, retries or
// puts to wait, in order; then the outcomes of the steps, several rows a
// statement. A step's row is changed by one record of the batch at
// most, but for a wait or a start followed by its outcome (which comes
// last), so the order is kept.
func writeRecords(tx *sql.Tx, st *statements, w *writer, batch []record, bodies, results [][]byte) error {
	ts := txStatements{tx: tx}
	defer ts.close()
	args := w.args[:0]
	defer func() { clear(args); w.args = args[:0] }()
	for i := range batch {
		if rec := &batch[i]; rec.kind == anEvent {
			args = append(args, rec.run.ID, rec.seq, rec.ev.Time.UnixNano(), string(rec.ev.Type), rec.ev.Step, bodies[i])
		}
	}
	if err := insertRows(&ts, &st.events, args, eventColumns); err != nil {
		return err
	}
	args = args[:0]
	for i := range batch {
		rec := &batch[i]
		r := rec.run
		if rec.kind != anEvent {
			if rec.kind == aMockCall && w.mocks[mockKey{r, rec.args[1].(string)}] != i {
				continue
			}
			if _, err := ts.get(st.kinds[rec.kind]).Exec(rec.args...); err != nil {
				return err
			}
			continue
		}
		ev := &rec.ev
		key := stepKey{r, rec.round, ev.Step}
		var err error
		switch ev.Type {
		case vm.StepStarted:
			if j, ok := w.decided[key]; ok && j > i {
				w.started[key] = rec.now
				continue
			}
			_, err = ts.get(st.start).Exec(r.ID, rec.round, ev.Step, ev.Tool, rec.now)
		case vm.StepRetried:
			if j, ok := w.decided[key]; ok && j > i {
				continue
			}
			_, err = ts.get(st.retry).Exec(ev.Attempt, r.ID, rec.round, ev.Step)
		case vm.StepWaiting:
			if ev.Step == "" {
				continue
			}
			if rec.hasStep {
				// It waits with its result, for a person's judgment.
				args, err = appendStep(args, r.ID, ev.Step, &rec.step, nil, w.started[key], rec.now)
				break
			}
			_, err = ts.get(st.waiting).Exec(r.ID, rec.round, ev.Step, ev.Tool)
		case vm.ElementCompleted:
			err = writeElement(ts.get(st.element), r.ID, rec.round, ev, rec.now)
		case vm.StepFilled:
			err = writeFill(ts.get(st.fill), r.ID, rec.round, ev)
		case vm.StepCompleted, vm.StepFailed, vm.StepSkipped:
			if !rec.hasStep {
				continue
			}
			var result []byte
			if sameValue(ev.Result, rec.step.Result) {
				result = results[i]
			}
			args, err = appendStep(args, r.ID, ev.Step, &rec.step, result, w.started[key], rec.now)
		case vm.PlanFinished:
			if rec.goal {
				continue // a turn's plan: the goal goes on
			}
			finished := rec.now
			if ev.Verdict == string(vm.RunWaiting) {
				finished = 0
			}
			_, err = ts.get(st.finish).Exec(ev.Verdict, ev.Reason, rec.now, finished, r.ID)
		}
		if err != nil {
			return err
		}
	}
	return insertRows(&ts, &st.steps, args, stepColumns)
}

// insertRows inserts the rows of args, k columns each, with the
// statements that insert chunk[i] rows.
func insertRows(ts *txStatements, stmts *[len(chunk)]*sql.Stmt, args []any, k int) error {
	for c, n := range chunk {
		for len(args) >= n*k {
			if _, err := ts.get(stmts[c]).Exec(args[:n*k]...); err != nil {
				return err
			}
			args = args[n*k:]
		}
	}
	return nil
}

// txStatements are prepared statements made specific to a transaction,
// each once.
type txStatements struct {
	tx   *sql.Tx
	from []*sql.Stmt
	to   []*sql.Stmt
}

func (t *txStatements) get(s *sql.Stmt) *sql.Stmt {
	for k, f := range t.from {
		if f == s {
			return t.to[k]
		}
	}
	ts := t.tx.Stmt(s)
	t.from, t.to = append(t.from, s), append(t.to, ts)
	return ts
}

func (t *txStatements) close() {
	for _, s := range t.to {
		s.Close()
	}
}

// appendStep appends the columns of a step's outcome to args; result is
// the encoding of its result, when its event's is.
func appendStep(args []any, run, id string, s *vm.StepResult, result []byte, started, now int64) ([]any, error) {
	var serr, verdicts []byte
	var err error
	if (s.Status == vm.StatusCompleted || s.Status == vm.StatusWaiting) && result == nil {
		if result, err = json.Marshal(s.Result); err != nil {
			return args, fmt.Errorf("encoding the result of %s: %w", id, err)
		}
	}
	if s.Error != nil {
		if serr, err = json.Marshal(s.Error); err != nil {
			return args, err
		}
	}
	if len(s.Verdicts) > 0 {
		if verdicts, err = json.Marshal(s.Verdicts); err != nil {
			return args, err
		}
	}
	return append(args, run, s.Round, id, s.Tool, string(s.Status), s.Attempts, s.Retries, result, serr, s.Handled, s.Reason, verdicts,
		int64(s.Start), int64(s.Duration), started, now), nil
}

// sameValue reports whether a and b are the same JSON-shaped value, the
// one the engine gives an event and its step: equal scalars, or the same
// map or list. It may say no for values that are only equal.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool, int64, float64, string:
		return a == b
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	}
	return false
}
