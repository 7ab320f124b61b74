package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// Summary is a run as `obelisk runs` lists it.
type Summary struct {
	ID     string       `json:"id"`
	Plan   string       `json:"plan"`
	Status vm.RunStatus `json:"status"`
	// Steps counts the steps recorded by status.
	Steps     map[vm.Status]int `json:"steps"`
	Created   time.Time         `json:"created"`
	Updated   time.Time         `json:"updated"`
	Finished  time.Time         `json:"finished,omitzero"`
	Error     string            `json:"error,omitempty"`
	Processes int               `json:"processes"`
	Hash      string            `json:"hash,omitempty"`
}

// Runs lists the runs, the newest first.
func (d *DB) Runs() ([]*Summary, error) {
	rows, err := d.db.Query(`SELECT id, plan, status, created, updated, finished, error, processes, hash FROM runs ORDER BY created DESC, id`)
	if err != nil {
		return nil, err
	}
	var out []*Summary
	byID := map[string]*Summary{}
	for rows.Next() {
		s, err := scanSummary(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, s)
		byID[s.ID] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	counts, err := d.db.Query(`SELECT run, status, count(*) FROM steps WHERE instr(id, '/') = 0 AND instr(id, '[') = 0 GROUP BY run, status`)
	if err != nil {
		return nil, err
	}
	defer counts.Close()
	for counts.Next() {
		var run, status string
		var n int
		if err := counts.Scan(&run, &status, &n); err != nil {
			return nil, err
		}
		if s := byID[run]; s != nil {
			s.Steps[vm.Status(status)] += n
		}
	}
	return out, counts.Err()
}

func scanSummary(row interface{ Scan(...any) error }) (*Summary, error) {
	s := &Summary{Steps: map[vm.Status]int{}}
	var status string
	var created, updated, finished int64
	if err := row.Scan(&s.ID, &s.Plan, &status, &created, &updated, &finished, &s.Error, &s.Processes, &s.Hash); err != nil {
		return nil, err
	}
	s.Status = vm.RunStatus(status)
	s.Created, s.Updated = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if finished != 0 {
		s.Finished = time.Unix(0, finished).UTC()
	}
	return s, nil
}

// Step is a step as recorded.
type Step struct {
	vm.StepResult
	// StartedAt and FinishedAt are wall-clock times; zero when unknown.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// Detail is everything the journal holds of a run.
type Detail struct {
	Summary
	Input     map[string]any `json:"input"`
	Output    any            `json:"output,omitempty"`
	Steps     []*Step        `json:"steps"`
	Approvals []*Approval    `json:"approvals,omitempty"`
	// Replans are the plans of the run's replans, by round.
	Replans map[int]string `json:"replans,omitempty"`
}

// Show returns a run with its steps, approvals and replans.
func (d *DB) Show(id string) (*Detail, error) {
	s, err := scanSummary(d.db.QueryRow(`SELECT id, plan, status, created, updated, finished, error, processes, hash FROM runs WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("%w %s", ErrNotFound, id)
	}
	det := &Detail{Summary: *s}
	st, err := d.load(id)
	if err != nil {
		return nil, err
	}
	det.Input = st.Input
	var out []byte
	if err := d.db.QueryRow(`SELECT output FROM runs WHERE id = ?`, id).Scan(&out); err != nil {
		return nil, err
	}
	if len(out) > 0 {
		if det.Output, err = toolkit.DecodeJSON(out); err != nil {
			return nil, err
		}
	}
	steps, err := d.stepRows(id)
	if err != nil {
		return nil, err
	}
	det.Steps = steps
	for _, s := range steps {
		if !strings.ContainsAny(s.ID, "/[") {
			det.Summary.Steps[s.Status]++
		}
	}
	if det.Approvals, err = d.Approvals(id); err != nil {
		return nil, err
	}
	rows, err := d.db.Query(`SELECT round, plan FROM replans WHERE run = ? ORDER BY round`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var round int
		var plan string
		if err := rows.Scan(&round, &plan); err != nil {
			return nil, err
		}
		if det.Replans == nil {
			det.Replans = map[int]string{}
		}
		det.Replans[round] = plan
	}
	return det, rows.Err()
}

// steps returns the recorded steps as the interpreter's results.
func (d *DB) steps(run string) ([]*vm.StepResult, error) {
	rows, err := d.stepRows(run)
	if err != nil {
		return nil, err
	}
	out := make([]*vm.StepResult, len(rows))
	for i, s := range rows {
		sr := s.StepResult
		out[i] = &sr
	}
	return out, nil
}

func (d *DB) stepRows(run string) ([]*Step, error) {
	rows, err := d.db.Query(`SELECT round, id, tool, status, attempts, retries, result, error, handled, reason, verdicts, start_ns, dur_ns, started, finished
		FROM steps WHERE run = ?
		ORDER BY round, (SELECT min(seq) FROM events WHERE events.run = steps.run AND events.step = steps.id), rowid`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Step
	for rows.Next() {
		s := &Step{}
		var status string
		var result, serr, verdicts []byte
		var start, dur, started, finished int64
		if err := rows.Scan(&s.Round, &s.ID, &s.Tool, &status, &s.Attempts, &s.Retries, &result, &serr, &s.Handled, &s.Reason, &verdicts, &start, &dur, &started, &finished); err != nil {
			return nil, err
		}
		s.Status = vm.Status(status)
		s.Start, s.Duration = time.Duration(start), time.Duration(dur)
		if started != 0 {
			s.StartedAt = time.Unix(0, started).UTC()
		}
		if finished != 0 {
			s.FinishedAt = time.Unix(0, finished).UTC()
		}
		if len(result) > 0 {
			if s.Result, err = toolkit.DecodeJSON(result); err != nil {
				return nil, fmt.Errorf("step %s: the recorded result: %w", s.ID, err)
			}
		}
		if len(serr) > 0 {
			s.Error = &vm.StepError{}
			if err := json.Unmarshal(serr, s.Error); err != nil {
				return nil, fmt.Errorf("step %s: the recorded error: %w", s.ID, err)
			}
		}
		if len(verdicts) > 0 {
			if err := json.Unmarshal(verdicts, &s.Verdicts); err != nil {
				return nil, fmt.Errorf("step %s: the recorded verdicts: %w", s.ID, err)
			}
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Events returns a run's event log, in order.
func (d *DB) Events(run string) ([]vm.Event, error) {
	rows, err := d.db.Query(`SELECT body FROM events WHERE run = ? ORDER BY seq`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vm.Event
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		var ev vm.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			return nil, fmt.Errorf("run %s: a recorded event: %w", run, err)
		}
		if ev.Result != nil {
			// Numbers as the interpreter has them: int64 or float64.
			b, _ := json.Marshal(ev.Result)
			ev.Result, _ = toolkit.DecodeJSON(b)
		}
		if ev.Args != nil {
			// Every digit of an integer, as the interpreter had it.
			var raw struct {
				Args json.RawMessage `json:"args"`
			}
			if json.Unmarshal(body, &raw) == nil {
				if v, err := toolkit.DecodeJSON(raw.Args); err == nil {
					ev.Args, _ = v.(map[string]any)
				}
			}
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// Mark returns a token that changes whenever something of run id is
// recorded, by this process or another: an event, a step, a decision,
// its status. With id "", the token covers every run of the journal, new
// ones included. It is opaque, to be compared with an earlier one by a
// reader that watches runs (a console, say), and costs a few index
// look-ups.
func (d *DB) Mark(id string) (string, error) {
	var events, updated, asked, decided, runs int64
	var err error
	if id == "" {
		err = d.db.QueryRow(`SELECT (SELECT coalesce(max(rowid), 0) FROM events), (SELECT coalesce(max(updated), 0) FROM runs),
			(SELECT count(*) FROM approvals), (SELECT coalesce(max(decided), 0) FROM approvals), (SELECT count(*) FROM runs)`).
			Scan(&events, &updated, &asked, &decided, &runs)
	} else {
		err = d.db.QueryRow(`SELECT (SELECT coalesce(max(seq), 0) FROM events WHERE run = ?1), (SELECT coalesce(max(updated), 0) FROM runs WHERE id = ?1),
			(SELECT count(*) FROM approvals WHERE run = ?1), (SELECT coalesce(max(decided), 0) FROM approvals WHERE run = ?1), (SELECT count(*) FROM runs WHERE id = ?1)`, id).
			Scan(&events, &updated, &asked, &decided, &runs)
	}
	if err != nil {
		return "", fmt.Errorf("reading the journal: %w", err)
	}
	return fmt.Sprintf("%d.%d.%d.%d.%d", events, updated, asked, decided, runs), nil
}
