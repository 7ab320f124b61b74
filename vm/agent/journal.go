package agent

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
)

// Journal makes a goal durable (package durable keeps one in a run's
// journal): the planner's answers, the facts and each turn's run are
// recorded as they happen. A goal run again with the journal of one whose
// process stopped or died replays what was recorded: the planner is not
// asked again for an answer it gave (an answer cut short, by the
// provider or by the death of its process, is given again as cut short:
// llm.ErrTruncated), a step that finished is not
// run again, and a decision recorded since (an approval, a person's
// judgment of a result) is taken; then the goal goes on.
type Journal interface {
	// Answer returns what was recorded of the planner's answer to request
	// k of turn n (k counts the requests of a turn from 0: a lazy turn
	// asks again for each repair): its text, whether it was whole, and
	// the tokens it took. found is false when nothing was.
	Answer(turn, k int) (text string, whole bool, usage llm.Usage, found bool, err error)
	// AppendAnswer records a piece of an answer as it arrives, before
	// anything reads it; EndAnswer records that the answer is whole.
	AppendAnswer(turn, k int, piece string) error
	EndAnswer(turn, k int, usage llm.Usage) error
	// Facts returns the facts recorded, in order; RecordFact records a
	// new one.
	Facts() ([]Fact, error)
	RecordFact(f Fact) error
	// Record records an event of the goal loop's own (TurnStarted,
	// TurnFinished, GoalFinished), before the observer hears of it.
	Record(ev vm.Event) error
	// Turn returns the options of the run of turn n's plan, journaled:
	// its events and steps are recorded as the turn's, its steps are
	// restored from what the turn recorded before, and its approvals are
	// the turn's.
	Turn(n int, opts vm.Options) vm.Options
}

// answers is the planner as a journaled goal asks it: an answer recorded
// before is given again without asking the model, and a new one is
// recorded as it arrives. The goal loop sets at to the turn and the
// request before each request, one at a time.
type answers struct {
	model   llm.Model
	journal Journal
	turn, k int
}

func (a *answers) at(turn, k int) { a.turn, a.k = turn, k }

func (a *answers) Name() string { return a.model.Name() }

func (a *answers) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	turn, k := a.turn, a.k
	text, whole, usage, found, err := a.journal.Answer(turn, k)
	if err != nil {
		return nil, err
	}
	if found {
		// An answer recorded but not whole was cut short, by the
		// provider or by the death of its process: it is given again as
		// cut short, so that its unfinished last statement never runs.
		return &recordedAnswer{text: text, usage: usage, cut: !whole}, nil
	}
	s, err := a.model.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &recordingAnswer{Stream: s, journal: a.journal, turn: turn, k: k}, nil
}

// recordedAnswer gives a recorded answer again; one that was cut short
// ends with llm.ErrTruncated.
type recordedAnswer struct {
	text  string
	usage llm.Usage
	done  bool
	cut   bool
}

func (r *recordedAnswer) Next() (string, error) {
	if r.done {
		if r.cut {
			return "", fmt.Errorf("%w: so it was recorded", llm.ErrTruncated)
		}
		return "", io.EOF
	}
	r.done = true
	return r.text, nil
}

func (r *recordedAnswer) Usage() llm.Usage { return r.usage }
func (r *recordedAnswer) Close() error     { return nil }

// recordingAnswer records each piece of an answer before it gives it, and
// the answer's end; an answer cut short is never recorded whole.
type recordingAnswer struct {
	llm.Stream
	journal Journal
	turn, k int
}

func (r *recordingAnswer) Next() (string, error) {
	piece, err := r.Stream.Next()
	if piece != "" {
		if jerr := r.journal.AppendAnswer(r.turn, r.k, piece); jerr != nil {
			return "", jerr
		}
	}
	if errors.Is(err, io.EOF) {
		if jerr := r.journal.EndAnswer(r.turn, r.k, r.Stream.Usage()); jerr != nil {
			return piece, jerr
		}
	}
	return piece, err
}
