package vm

import (
	"context"
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Filler completes what a plan leaves to a model when a step runs: the
// value of a hole (`amount: ? "the refundable amount from
// †state.history"`), and the choice of a task (`task "find a hotel" using
// [findHotel, bookHotel]`) with the arguments of the candidate it chooses.
// The run holds every answer to the types and schemas the plan's tools
// declare, asks again (up to Options.MaxFillAttempts) when it does not
// fit, and never passes on one that does not: the answer is untrusted, as
// the plan is. vm/fill implements it on top of a language model.
type Filler interface {
	Fill(ctx context.Context, req FillRequest) (any, error)
}

// FillerFunc adapts a function to Filler.
type FillerFunc func(ctx context.Context, req FillRequest) (any, error)

// Fill calls f.
func (f FillerFunc) Fill(ctx context.Context, req FillRequest) (any, error) { return f(ctx, req) }

// FillRequest is one thing a model is asked to complete: a hole (Argument
// is set) or a task (Candidates are set).
type FillRequest struct {
	// Step is the step's ID, with the sub-plan steps that called it
	// ("research#1/draft") and, for an element of a for each, its index
	// ("tag[2]").
	Step string
	// Tool is the tool or sub-plan a hole is an argument of; Argument is
	// the hole's parameter. Both are "" for a task.
	Tool     string
	Argument string
	// Instruction is the hole's instruction or the task's goal, as the
	// plan writes it.
	Instruction string
	// Values are the values the instruction reads, by the reference as
	// it is written in the instruction (†state.history); a reference to
	// what is missing reads null.
	Values map[string]any
	// Schema is the JSON Schema of the answer: the parameter's, for a
	// hole; for a task, an object {"candidate": NAME, "arguments": {…}}
	// with one alternative (anyOf) per candidate.
	Schema map[string]any
	// Candidates are a task's tools and sub-plans.
	Candidates []Candidate
	// Attempt counts the times the model is asked for this answer, from
	// 1. After a refused answer, Previous is that answer and Problem says
	// why it was refused, for the model to do better.
	Attempt  int
	Previous any
	Problem  string
}

// Candidate is a tool or sub-plan a task may choose.
type Candidate struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Effect is pure, idempotent or irreversible.
	Effect string `json:"effect"`
	// Schema is the JSON Schema of its arguments.
	Schema map[string]any `json:"schema"`
}

// The keys of a task's answer.
const (
	ChoiceCandidate = "candidate"
	ChoiceArguments = "arguments"
)

// The codes of the errors of a step whose hole or task could not be
// completed: no filler is configured, the filler failed, or its answers
// did not fit after every attempt.
const (
	CodeNoFiller   = "no-filler"
	CodeFillFailed = "fill-failed"
	CodeBadFill    = "invalid-fill"
)

// The verdicts of a StepFilled event: the answer was taken, or refused
// (and the model is asked again, or the step fails).
const (
	FillAccepted = "accepted"
	FillRejected = "rejected"
)

// defaultFillAttempts is the default of Options.MaxFillAttempts, and
// defaultMaxFills of Options.MaxFills.
const (
	defaultFillAttempts = 3
	defaultMaxFills     = 1000
)

// stepFiller completes the holes and tasks of an engine's steps: a run
// asks its Filler, a dry run invents nothing.
type stepFiller interface {
	// hole returns the value of argument a of step s, evaluated in sc;
	// id is the step's ID with its element's index, if any.
	hole(ctx context.Context, e *engine, s *compiler.Step, id string, a *compiler.Arg, sc *scope) (any, *StepError)
	// task returns the candidate a task chooses and its arguments.
	task(ctx context.Context, e *engine, s *compiler.Step, sc *scope) (*compiler.Tool, map[string]any, *StepError)
}

// textValues reads the values an instruction or a goal reads, by their
// text: a reference to what is missing reads null.
func textValues(refs []*compiler.RefPath, sc *scope) map[string]any {
	out := make(map[string]any, len(refs))
	lenient := *sc
	lenient.lenient = true
	for _, r := range refs {
		v, err := lenient.lookup(r)
		if err != nil {
			v = nil
		}
		out[r.String()] = toolkit.CopyJSON(v)
	}
	return out
}

// taskSchema is the JSON Schema of a task's answer: one alternative per
// candidate, its name and its arguments.
func taskSchema(cands []Candidate) map[string]any {
	alts := make([]any, len(cands))
	for i, c := range cands {
		alts[i] = map[string]any{
			"type": "object",
			"properties": map[string]any{
				ChoiceCandidate: map[string]any{"type": "string", "const": c.Name},
				ChoiceArguments: c.Schema,
			},
			"required":             []any{ChoiceCandidate, ChoiceArguments},
			"additionalProperties": false,
		}
	}
	return map[string]any{"anyOf": alts}
}

// candidates describes a task's candidates for a model.
func candidates(t *compiler.Task) []Candidate {
	out := make([]Candidate, len(t.Candidates))
	for i, c := range t.Candidates {
		out[i] = Candidate{Name: c.Name, Description: c.Doc, Effect: c.Effect.String(), Schema: c.ArgumentsSchema()}
	}
	return out
}

// checkChoice holds a task's answer to the task: it names one of the
// candidates, and its arguments fit that candidate.
func checkChoice(t *compiler.Task, v any) (*compiler.Tool, map[string]any, string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Sprintf("the answer is %s, not an object {\"candidate\": …, \"arguments\": {…}}", describe(v))
	}
	name, _ := m[ChoiceCandidate].(string)
	tool := t.Candidate(name)
	if tool == nil {
		names := make([]string, len(t.Candidates))
		for i, c := range t.Candidates {
			names[i] = c.Name
		}
		return nil, nil, fmt.Sprintf("candidate %s is not one of the task's: choose one of %s", describe(m[ChoiceCandidate]), strings.Join(names, ", "))
	}
	for k := range m {
		if k != ChoiceCandidate && k != ChoiceArguments {
			return nil, nil, fmt.Sprintf("the answer has a key %q: it has only \"candidate\" and \"arguments\"", k)
		}
	}
	args := map[string]any{}
	if raw, present := m[ChoiceArguments]; present {
		if args, ok = raw.(map[string]any); !ok {
			return nil, nil, fmt.Sprintf("the arguments are %s, not an object", describe(raw))
		}
	}
	cargs, msg := tool.CheckArguments(args)
	if msg != "" {
		return nil, nil, fmt.Sprintf("the arguments of %s: %s", tool.Name, msg)
	}
	return tool, toolkit.CopyJSON(cargs).(map[string]any), ""
}

// modelFiller is the stepFiller of a run: it asks the run's Filler, holds
// each answer to the plan's types, and records it in the journal, whose
// recorded answers a resumed run takes instead of asking again.
type modelFiller struct {
	r *runner
	// replay is set to prepare again a step that finished in an earlier
	// process, only to know its call (see History): it takes the answers
	// the journal recorded and never asks the Filler.
	replay bool
}

// codeUnrecorded is the code of a step prepared again with a replaying
// filler whose answer the journal did not record; it never reaches a
// result, since the step's outcome is the one recorded.
const codeUnrecorded = "unrecorded-fill"

func (f modelFiller) hole(ctx context.Context, e *engine, s *compiler.Step, id string, a *compiler.Arg, sc *scope) (any, *StepError) {
	tool := s.Tool
	fail := func(code, format string, args ...any) *StepError {
		return &StepError{Code: code, Message: fmt.Sprintf(format, args...), Tool: tool.Name, Step: s.ID, final: true}
	}
	fullID := e.prefix + id
	check := func(v any) (any, string) { return tool.CheckArgument(a.Name, v) }
	values := textValues(a.Value.Refs, sc)
	q := question(s, tool.Name, a.Name, a.Value.Text, values)
	if v, ok := f.restored(e, fullID, a.Name); ok {
		if cv, msg := check(v); msg == "" {
			e.answer(q, fullID, cv)
			return cv, nil
		}
	}
	if f.replay {
		return nil, fail(codeUnrecorded, "the journal has no answer for argument %s of %s", a.Name, tool.Name)
	}
	filled := Event{Type: StepFilled, Step: fullID, Tool: tool.Name, Message: a.Name, Verdict: FillAccepted}
	if v, from, ok := e.earlier(q); ok {
		if cv, msg := check(v); msg == "" {
			filled.Result, filled.Reason = cv, from.answered()
			if serr := f.record(filled, tool.Name, s.ID); serr != nil {
				return nil, serr
			}
			return cv, nil
		}
	}
	req := FillRequest{Step: fullID, Tool: tool.Name, Argument: a.Name, Instruction: a.Value.Text,
		Values: values, Schema: tool.ArgumentSchema(a.Name)}
	v, serr := f.ask(ctx, &req, fail, check)
	if serr != nil {
		return nil, serr
	}
	filled.Result, filled.Attempt = v, req.Attempt
	if serr := f.record(filled, tool.Name, s.ID); serr != nil {
		return nil, serr
	}
	e.answer(q, fullID, v)
	return v, nil
}

func (f modelFiller) task(ctx context.Context, e *engine, s *compiler.Step, sc *scope) (*compiler.Tool, map[string]any, *StepError) {
	fail := func(code, format string, args ...any) *StepError {
		return &StepError{Code: code, Message: fmt.Sprintf(format, args...), Tool: "task", Step: s.ID, final: true}
	}
	fullID := e.prefix + s.ID
	values := textValues(s.Task.Reads, sc)
	q := question(s, "", "", s.Task.Goal, values)
	if v, ok := f.restored(e, fullID, ""); ok {
		if tool, args, msg := checkChoice(s.Task, v); msg == "" {
			e.answer(q, fullID, v)
			return tool, args, nil
		}
	}
	if f.replay {
		return nil, nil, fail(codeUnrecorded, "the journal has no answer for the task")
	}
	if v, from, ok := e.earlier(q); ok {
		if tool, args, msg := checkChoice(s.Task, v); msg == "" {
			ev := Event{Type: StepFilled, Step: fullID, Tool: tool.Name, Result: v, Verdict: FillAccepted, Reason: from.answered()}
			if serr := f.record(ev, tool.Name, s.ID); serr != nil {
				return nil, nil, serr
			}
			return tool, args, nil
		}
	}
	cands := candidates(s.Task)
	req := FillRequest{Step: fullID, Instruction: s.Task.Goal, Values: values, Schema: taskSchema(cands), Candidates: cands}
	var tool *compiler.Tool
	var args map[string]any
	v, serr := f.ask(ctx, &req, fail, func(v any) (any, string) {
		t, a, msg := checkChoice(s.Task, v)
		if msg != "" {
			return nil, msg
		}
		tool, args = t, a
		return map[string]any{ChoiceCandidate: t.Name, ChoiceArguments: toolkit.CopyJSON(a)}, ""
	})
	if serr != nil {
		return nil, nil, serr
	}
	if serr := f.record(Event{Type: StepFilled, Step: fullID, Tool: tool.Name, Result: v, Attempt: req.Attempt, Verdict: FillAccepted}, tool.Name, s.ID); serr != nil {
		return nil, nil, serr
	}
	e.answer(q, fullID, v)
	return tool, args, nil
}

// ask asks the Filler until an answer passes check, up to the attempts
// allowed; req.Attempt ends as the number of asks.
func (f modelFiller) ask(ctx context.Context, req *FillRequest, fail func(code, format string, args ...any) *StepError, check func(any) (any, string)) (any, *StepError) {
	what := "the task"
	if req.Argument != "" {
		what = fmt.Sprintf("argument %s of %s", req.Argument, req.Tool)
	}
	if f.r.opts.Filler == nil {
		return nil, fail(CodeNoFiller, "%s is left for a model to fill, and the run has no model: give it one (vm.Options.Filler), or write the value in the plan", what)
	}
	attempts := f.r.opts.MaxFillAttempts
	if attempts <= 0 {
		attempts = defaultFillAttempts
	}
	for req.Attempt = 1; ; req.Attempt++ {
		if n := f.r.asked.Add(1); n > int64(f.r.opts.MaxFills) {
			return nil, fail(toolkit.CodeLimitExceeded, "filling %s would ask a model more than %d times in this run, the most allowed: leave fewer values to a model, or raise the limit (vm.Options.MaxFills)", what, f.r.opts.MaxFills)
		}
		v, err := f.r.opts.Filler.Fill(ctx, *req)
		if err != nil {
			if ctx.Err() != nil {
				why := stopped(ctx, "filling "+what)
				return nil, fail(errorCode(why, toolkit.CodeCanceled), "%v", why)
			}
			return nil, fail(CodeFillFailed, "the model could not fill %s: %v", what, err)
		}
		cv, msg := check(v)
		if msg == "" {
			return cv, nil
		}
		if req.Attempt >= attempts {
			return nil, fail(CodeBadFill, "the model's answer for %s does not fit, after %d tries: %s; it was not used", what, req.Attempt, msg)
		}
		f.r.event(Event{Type: StepFilled, Step: req.Step, Tool: req.Tool, Message: req.Argument, Attempt: req.Attempt, Verdict: FillRejected, Reason: fmt.Sprintf("the model's answer for %s does not fit: %s; asking again", what, msg)})
		req.Previous, req.Problem = v, msg
	}
}

// restored returns the answer an earlier process of the run recorded.
func (f modelFiller) restored(e *engine, step, hole string) (any, bool) {
	if f.r.opts.RestoreFill == nil {
		return nil, false
	}
	return f.r.opts.RestoreFill(e.round, step, hole)
}

// record journals an answer before it is used.
func (f modelFiller) record(ev Event, tool, step string) *StepError {
	f.r.event(ev)
	if err := f.r.journalFailed(); err != nil {
		return &StepError{Code: codeJournal, Message: err.Error(), Tool: tool, Step: step}
	}
	return nil
}

// simFiller is the stepFiller of a dry run: a hole's value is known only
// after the run, and a task's candidate is the model's to choose.
type simFiller struct{}

func (simFiller) hole(context.Context, *engine, *compiler.Step, string, *compiler.Arg, *scope) (any, *StepError) {
	return Unknown{}, nil
}

func (simFiller) task(context.Context, *engine, *compiler.Step, *scope) (*compiler.Tool, map[string]any, *StepError) {
	return nil, nil, nil
}

// fillHoles fills the holes of a step's call into args, by fills.
func (e *engine) fillHoles(ctx context.Context, fills stepFiller, s *compiler.Step, id string, args map[string]any, sc *scope) *StepError {
	for _, a := range s.Args {
		if a.Value.Kind != compiler.OpHole {
			continue
		}
		if fills == nil {
			return &StepError{Code: CodeNoFiller, Message: fmt.Sprintf("argument %s of %s is left for a model to fill, and the run has no model", a.Name, s.ToolName()), Tool: s.ToolName(), Step: s.ID}
		}
		bctx, cancel := bounded(ctx)
		v, serr := fills.hole(bctx, e, s, id, a, sc)
		cancel()
		if serr != nil {
			return serr
		}
		args[a.Name] = v
	}
	return nil
}

// NeedsFiller returns the steps of a program and its sub-plans that leave
// something to a model when they run (a hole, a task), by ID: a run of it
// needs Options.Filler.
func NeedsFiller(prog *compiler.Program) []string {
	var out []string
	for name, p := range prog.Programs() {
		prefix := ""
		if name != "" {
			prefix = name + ": "
		}
		for _, s := range p.Steps {
			if s.Task != nil || len(s.Holes()) > 0 {
				out = append(out, prefix+s.ID)
			}
		}
	}
	return out
}
