package journal

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// The records of this file are what a run receives or keeps besides its
// steps, which a resumed run needs to go on where it was: the positions of
// its mocks' sequences, the texts it read as they arrived (a plan streamed
// in, a model's answers), and the facts of a goal. Each goes through the
// journal's group commit with the run's events (see writer), in the order
// it happens, and is synced to disk with the next step's outcome.

// MockCalls returns how many calls of each mocked tool the run's earlier
// processes had answered: where their sequences were.
func (r *Run) MockCalls() (map[string]int, error) {
	rows, err := r.d.db.Query(`SELECT tool, calls FROM mock_calls WHERE run = ?`, r.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tool string
		var n int
		if err := rows.Scan(&tool, &n); err != nil {
			return nil, err
		}
		out[tool] = n
	}
	return out, rows.Err()
}

// RecordMockCall records that calls calls of a mocked tool have been
// answered (see toolkit.Mocks.OnAnswer). Calls answered at once may be
// recorded out of order: the most is kept.
//
// It does not wait for the record to be written: it is committed with the
// next record the run waits for, at the latest with the outcome of the
// step whose call it answers, so that a resumed run finds the position of
// every answer a recorded outcome holds. An answer whose step's outcome
// was not recorded is given again when the run is resumed, as the step
// runs again.
func (r *Run) RecordMockCall(tool string, calls int) error {
	_, err := r.put(aMockCall, r.ID, tool, calls)
	return err
}

// put queues a record of kind k, other than an event, with the arguments
// of its statement, to be written after the records appended before it,
// and returns its position for Sync.
func (r *Run) put(k kind, args ...any) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	return r.d.w.add(record{run: r, kind: k, args: args}), nil
}

// write writes a record of kind k, other than an event, and returns once
// it is committed (synced to disk for a durable kind; otherwise in the
// operating system's hands, which survives the death of the process).
func (r *Run) write(k kind, args ...any) error {
	pos, err := r.put(k, args...)
	if err != nil {
		return err
	}
	return r.Sync(pos)
}

// AppendText records a piece of a text the run receives as it arrives,
// under the text's name: a plan read from a stream, a model's answer.
// The pieces are kept in order.
func (r *Run) AppendText(name string, piece []byte) error {
	if len(piece) == 0 {
		return nil
	}
	return r.write(aTextPiece, r.ID, name, piece, r.ID, name)
}

// EndText records that a text is whole, with meta, the caller's own
// record of it (a model's answer's usage, say).
func (r *Run) EndText(name string, meta json.RawMessage) error {
	return r.write(aTextEnd, r.ID, name, []byte(meta))
}

// Text returns a text as the run's earlier processes recorded it: its
// pieces joined, whether it ended (EndText), and its meta. found is false
// when nothing of it was recorded.
func (r *Run) Text(name string) (text []byte, ended bool, meta json.RawMessage, found bool, err error) {
	rows, err := r.d.db.Query(`SELECT text FROM texts WHERE run = ? AND name = ? ORDER BY seq`, r.ID, name)
	if err != nil {
		return nil, false, nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var piece []byte
		if err := rows.Scan(&piece); err != nil {
			return nil, false, nil, false, err
		}
		text = append(text, piece...)
		found = true
	}
	if err := rows.Err(); err != nil {
		return nil, false, nil, false, err
	}
	var m []byte
	err = r.d.db.QueryRow(`SELECT meta FROM text_ends WHERE run = ? AND name = ?`, r.ID, name).Scan(&m)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return text, false, nil, found, nil
	case err != nil:
		return nil, false, nil, false, err
	}
	return text, true, m, true, nil
}

// Fact is a fact a goal established, as recorded.
type Fact struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	Step  string `json:"step"`
}

// RecordFact records a fact of a goal; a key recorded already keeps its
// first value.
func (r *Run) RecordFact(f Fact) error {
	v, err := json.Marshal(f.Value)
	if err != nil {
		return fmt.Errorf("encoding the fact %s: %w", f.Key, err)
	}
	return r.write(aFact, r.ID, f.Key, v, f.Step, r.ID)
}

// Facts returns the facts recorded of a goal, in the order they were
// established.
func (r *Run) Facts() ([]Fact, error) {
	rows, err := r.d.db.Query(`SELECT key, value, step FROM facts WHERE run = ? ORDER BY seq`, r.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Fact
	for rows.Next() {
		var f Fact
		var v []byte
		if err := rows.Scan(&f.Key, &v, &f.Step); err != nil {
			return nil, err
		}
		if f.Value, err = toolkit.DecodeJSON(v); err != nil {
			return nil, fmt.Errorf("the recorded fact %s: %w", f.Key, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
