package vm

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// History is the record of the calls a run made: the one place that says
// whether a call already ran. A step that calls a tool (or a sub-plan) is
// recorded once it has finished, completed or failed, with its identity:
// its tool, its arguments as they were resolved, and its slot. A step of
// a later part of the same work (a later round of replanning, or a later
// turn of an agent, which shares the history among its turns' runs) that
// is the same call is that step: it takes the recorded outcome and its
// tool is not called again (StepResult.Repeats says which step it is);
// but the same call as one that failed is made again when its tool is
// pure or idempotent, as a retry would be, since that is safe (a failed
// irreversible call may have acted, and is not). A step that would
// change a step whose tool is irreversible and which completed (it
// writes the same slot, or has the same label and tool, but is another
// call) is refused: it fails with the code lang.ChangedIrreversible and
// its tool is not called. A step may change a step whose tool is pure or
// idempotent: it is a new call. The answers a model gave for a step's
// holes and task are recorded too: a step of a later part of the work
// that asks the same question (see question) takes the answer given, and
// the model is not asked again.
//
// Within one round of one run nothing is compared: two steps of one plan
// are two calls. A run resumed from its journal records its restored
// steps again as it replays them, so the history is rebuilt from what the
// journal recorded: a step's arguments are resolved again, its holes and
// its task's choice taken from the answers the journal recorded (a model
// is not asked again). When a step's call cannot be rebuilt so (the
// journal lacks an answer), a later step that writes its slot, or has its
// label and tool, is refused if its tool is irreversible: it might be the
// same call. A History is safe for concurrent use.
type History struct {
	book *callBook
	turn int
}

// NewHistory returns an empty history.
func NewHistory() *History { return &History{book: &callBook{byKey: map[string]*Call{}}} }

// Turn returns the history as the run of turn n of an agent uses it: the
// calls of that run are recorded as turn n's, and the run finds those of
// the other turns.
func (h *History) Turn(n int) *History { return &History{book: h.book, turn: n} }

// Calls returns the calls recorded, in the order they finished.
func (h *History) Calls() []*Call {
	h.book.mu.Lock()
	defer h.book.mu.Unlock()
	return append([]*Call(nil), h.book.calls...)
}

// Call is a step that called its tool and finished.
type Call struct {
	// Turn is the agent's turn that made it (0 outside an agent), Round
	// the round of replanning, Step the step's ID.
	Turn  int    `json:"turn,omitempty"`
	Round int    `json:"round,omitempty"`
	Step  string `json:"step"`
	// Tool is the tool called (the candidate a task chose), Effect its
	// effect, Slot the slot the step writes ("" for none).
	Tool   string          `json:"tool"`
	Effect compiler.Effect `json:"-"`
	Slot   string          `json:"slot,omitempty"`
	// Result is the step's outcome.
	Result *StepResult `json:"-"`
	key    string
}

// where names the part of the work a call was made in.
func (c *Call) where() string { return where(c.Turn, c.Round) }

func where(turn, round int) string {
	switch {
	case turn > 0 && round > 0:
		return fmt.Sprintf("turn %d, replanning round %d", turn, round)
	case turn > 0:
		return fmt.Sprintf("turn %d", turn)
	case round > 0:
		return fmt.Sprintf("replanning round %d", round)
	}
	return "the plan as it started"
}

// String names the step and where it ran: "step refund of turn 1".
func (r *StepRef) String() string {
	return fmt.Sprintf("step %s of %s", r.Step, where(r.Turn, r.Round))
}

// repeated says, for the outcome of a step that repeats a call, which.
func (o *outcome) repeated() string {
	if o.repeats == nil {
		return ""
	}
	return "the same call as " + o.repeats.String() + ", which already ran: not called again"
}

// answered says, for the filling of a hole or a task whose question a
// model answered for this step, that its answer is taken.
func (r *StepRef) answered() string {
	return "the same question as " + r.String() + " asked: its answer is taken, and the model is not asked again"
}

// StepRef names a step of an earlier part of the work: its turn (0
// outside an agent), its round of replanning and its ID.
type StepRef struct {
	Turn  int    `json:"turn,omitempty"`
	Round int    `json:"round,omitempty"`
	Step  string `json:"step"`
}

type callBook struct {
	mu    sync.Mutex
	calls []*Call
	// irreversible are the calls of irreversible tools, in calls' order:
	// the only ones a step may be refused for changing.
	irreversible []*Call
	// byKey is the call of each identity that a later one is: the first
	// that completed, else the first.
	byKey map[string]*Call
	// answers are the first answers a model gave, by the question (see
	// question).
	answers map[string]*answered
}

// answered is an answer a model gave for a step's hole or task.
type answered struct {
	turn, round int
	step        string
	value       any
}

// question is the key of what a model is asked for a step (a hole of
// tool's argument, or a task among its candidates): the instruction or
// goal, the values it reads, and the slot the step writes. A step of a
// later part of the work that asks the same question takes the answer
// given, as its call is then the same as the one the answer made: the
// model is not asked again, and a repeated step with holes or a task is
// the step that ran, whatever the model would answer now.
func question(s *compiler.Step, tool, argument, text string, values map[string]any) string {
	q := struct {
		Tool     string         `json:"tool,omitempty"`
		Argument string         `json:"argument,omitempty"`
		Text     string         `json:"text"`
		Values   map[string]any `json:"values,omitempty"`
		Slot     string         `json:"slot,omitempty"`
	}{tool, argument, text, values, s.Out}
	if s.Task != nil {
		names := make([]string, len(s.Task.Candidates))
		for i, c := range s.Task.Candidates {
			names[i] = c.Name
		}
		q.Tool = strings.Join(names, ",")
	}
	b, err := json.Marshal(q)
	if err != nil {
		return ""
	}
	return string(b)
}

// earlier returns the answer a model gave to the same question for a
// step of another part of the work, and where.
func (e *engine) earlier(q string) (any, *StepRef, bool) {
	h := e.history
	if h == nil || q == "" {
		return nil, nil, false
	}
	h.book.mu.Lock()
	defer h.book.mu.Unlock()
	a := h.book.answers[q]
	if a == nil || (a.turn == h.turn && a.round == e.round) {
		return nil, nil, false
	}
	return toolkit.CopyJSON(a.value), &StepRef{Turn: a.turn, Round: a.round, Step: a.step}, true
}

// answer records a model's answer to a question, unless one is.
func (e *engine) answer(q, step string, v any) {
	h := e.history
	if h == nil || q == "" {
		return
	}
	h.book.mu.Lock()
	defer h.book.mu.Unlock()
	if h.book.answers == nil {
		h.book.answers = map[string]*answered{}
	}
	if h.book.answers[q] == nil {
		h.book.answers[q] = &answered{turn: h.turn, round: e.round, step: step, value: toolkit.CopyJSON(v)}
	}
}

// callID is the identity of a step's call: key is its tool, its
// arguments (of each element, for a for each) and its slot as canonical
// JSON; tool is the tool it calls (the candidate a task chose).
type callID struct {
	key  string
	tool *compiler.Tool
}

// identity is the identity of a prepared step's call; nil for a step that
// calls nothing (a given result) or whose arguments JSON cannot hold.
func identity(spec *callSpec) *callID {
	if spec == nil || spec.hasKnown || spec.tool == nil {
		return nil
	}
	id := struct {
		Tool  string           `json:"tool"`
		Args  map[string]any   `json:"args,omitempty"`
		Elems []map[string]any `json:"each,omitempty"`
		Each  bool             `json:"forEach,omitempty"`
		Slot  string           `json:"slot,omitempty"`
	}{Tool: spec.tool.Name, Args: spec.args, Elems: spec.elems, Each: spec.step.Each != nil, Slot: spec.step.Out}
	b, err := json.Marshal(id)
	if err != nil {
		return nil
	}
	return &callID{key: string(b), tool: spec.tool}
}

// unidentified is the identity of a step that called its tool in an
// earlier process of the run and whose call cannot be known again (an
// answer a model gave for it is not in the journal, or no longer fits its
// tool; or its arguments cannot be evaluated again): it has no key, so no
// later step is the same call, and, its tool being irreversible, a later
// step that writes its slot or has its label and tool is refused. chosen
// is the candidate a task chose; nil when it is not known either.
func unidentified(s *compiler.Step, chosen *compiler.Tool) *callID {
	t := s.Tool
	if s.Task != nil {
		t = chosen
	}
	if t == nil {
		return nil
	}
	return &callID{tool: t}
}

// recall decides a prepared step by the history, before its tool is
// called: the outcome of the call it is the same as, or its refusal for
// changing an irreversible step that ran. ok is false when the step is a
// new call; id is its identity, to record it under once it finishes.
func (e *engine) recall(spec *callSpec) (out outcome, id *callID, ok bool) {
	h := e.history
	if h == nil {
		return outcome{}, nil, false
	}
	if id = identity(spec); id == nil {
		return outcome{}, nil, false
	}
	s := spec.step
	h.book.mu.Lock()
	defer h.book.mu.Unlock()
	mine := func(c *Call) bool { return c.Turn == h.turn && c.Round == e.round }
	if c := h.book.byKey[id.key]; c != nil && !mine(c) && (c.Result.Status == StatusCompleted || c.Effect == compiler.Irreversible) {
		out = outcome{restored: true, verdicts: c.Result.Verdicts, attempts: c.Result.Attempts, retries: c.Result.Retries,
			repeats: &StepRef{Turn: c.Turn, Round: c.Round, Step: c.Step}}
		if c.Result.Status == StatusCompleted {
			out.value = c.Result.Result
		} else {
			se := *c.Result.Error
			out.err = &se
		}
		return out, id, true
	}
	for _, c := range h.book.irreversible {
		// A call that cannot be known again (no key) may have acted even
		// when it failed: it is kept as it is.
		if mine(c) || (c.Result.Status != StatusCompleted && c.key != "") {
			continue
		}
		sameSlot := s.Out != "" && c.Slot == s.Out
		if !sameSlot && (c.Step != s.ID || c.Tool != spec.tool.Name) {
			continue
		}
		what := "another call of " + c.Tool
		if c.Tool != spec.tool.Name {
			what = "a call of " + spec.tool.Name + ", not " + c.Tool
		}
		takes := "†state." + c.Slot
		if !sameSlot {
			takes = "its label"
		}
		msg := fmt.Sprintf("%s would change step %s of %s, which already ran and is irreversible: it takes %s and is %s, so it is refused and not called. Step %s is kept and its result is in the state; repeat it exactly (it is not called again), leave it out, or, to make another call on purpose, give it a label and a slot of its own",
			s.ID, c.Step, c.where(), takes, what, c.Step)
		if c.key == "" {
			msg = fmt.Sprintf("%s may repeat or change step %s of %s, which already ran and is irreversible: it takes %s, and the call step %s made cannot be known again after the run was resumed (what a model filled in for it is not in the journal), so it is refused and not called. Step %s is kept and its outcome is in the state; leave it out, or, to make another call on purpose, give it a label and a slot of its own",
				s.ID, c.Step, c.where(), takes, c.Step, c.Step)
		}
		return outcome{err: &StepError{Code: string(lang.ChangedIrreversible), Message: msg, Tool: spec.tool.Name, Step: s.ID, final: true}}, nil, true
	}
	return outcome{}, id, false
}

// remember records a step that finished after calling its tool (or whose
// outcome an earlier process recorded), under its identity.
func (e *engine) remember(i int, id *callID) {
	r := e.res[i]
	if e.history == nil || id == nil || r.Repeats != nil {
		return
	}
	key, tool := id.key, id.tool
	switch {
	case r.Status == StatusCompleted:
	case r.Status == StatusFailed && r.Error != nil && finished(r.Error.Code):
	default:
		return
	}
	s := e.prog.Steps[i]
	eff := tool.Effect
	if f := s.Fallback; f != nil && f.Tool != nil {
		eff = min(eff, f.Tool.Effect)
	}
	c := &Call{Turn: e.history.turn, Round: e.round, Step: s.ID, Tool: tool.Name, Effect: eff, Slot: s.Out, Result: r, key: key}
	b := e.history.book
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, c)
	if eff == compiler.Irreversible {
		b.irreversible = append(b.irreversible, c)
	}
	if key == "" {
		return
	}
	if old := b.byKey[key]; old == nil || old.Result.Status != StatusCompleted {
		b.byKey[key] = c
	}
}

// finished reports whether a step that failed with an error of this code
// finished: one canceled, stopped by the journal or refused did not call
// its tool to the end.
func finished(code string) bool {
	switch code {
	case codeJournal, codeWaiting, string(lang.ChangedIrreversible), toolkit.CodeCanceled:
		return false
	}
	return true
}
