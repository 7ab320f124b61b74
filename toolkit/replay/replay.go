// Package replay records the tool calls of a run and answers them again,
// so that a plan can be regression-tested without touching the systems
// its tools reach.
//
// A Recorder sits in front of the real tools and writes each call, with
// its arguments and its result or error, to a recording: JSON, one call
// per line. A Replayer answers from a recording: a call is matched by its
// tool and its arguments, and calls that match the same recorded call get
// its answers in the order they were recorded (a failure, then the
// retry's success). A call the recording has no answer for fails, with
// an error that is not retried.
package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// Caller calls tools by name; *toolkit.Registry and toolkit.Chain are
// callers.
type Caller interface {
	Call(ctx context.Context, name string, args map[string]any) (any, error)
}

// Call is one recorded tool call, or one recorded filling: what a model
// answered for a hole or a task of a step (Fill is set).
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
	// Fill is set for a filling: the hole's argument, or "task" for a
	// task's choice.
	Fill string `json:"fill,omitempty"`
	// Step and Attempt identify the call in its run (toolkit.CallInfo).
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Result is the call's result, or Error its failure.
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// Error is a recorded failure.
type Error struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	NotRetryable bool   `json:"notRetryable,omitempty"`
}

// CodeNotRecorded is the error code of a call a replay has no answer for.
const CodeNotRecorded = "not-recorded"

// Recorder calls the tools and records each call.
type Recorder struct {
	next Caller
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	path string
	all  []Call
	err  error
}

// NewRecorder records the calls made through it to the file at path,
// one line per call as each returns.
func NewRecorder(next Caller, path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("recording tool calls: %w", err)
	}
	return &Recorder{next: next, f: f, w: bufio.NewWriter(f), path: path}, nil
}

// Call calls the tool and records the call.
func (r *Recorder) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	v, err := r.next.Call(ctx, name, args)
	c := Call{Tool: name, Args: args}
	if info, ok := toolkit.CallInfoFrom(ctx); ok {
		c.Step, c.Attempt = info.Step, info.Attempt
	}
	if err != nil {
		c.Error = recordedError(ctx, err)
	} else {
		c.Result = v
	}
	r.add(c)
	return v, err
}

// add records c, and writes it out unless writing failed before; it
// returns the first error of writing.
func (r *Recorder) add(c Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, c)
	if r.err == nil {
		r.err = writeCall(r.w, c)
		if r.err == nil {
			r.err = r.w.Flush()
		}
	}
	return r.err
}

// RecordFill records what a model answered for a hole (argument names
// it) or a task (argument is "") of a step, on its attempt-th ask.
func (r *Recorder) RecordFill(step, tool, argument string, attempt int, value any) error {
	if argument == "" {
		argument = taskFill
	}
	return r.add(Call{Tool: tool, Step: step, Attempt: attempt, Fill: argument, Result: value})
}

// taskFill is the Fill of a task's recorded choice.
const taskFill = "task"

func recordedError(ctx context.Context, err error) *Error {
	var re *toolkit.Error
	switch {
	case errors.As(err, &re):
		return &Error{Code: re.Code, Message: re.Message, NotRetryable: re.NotRetryable}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: toolkit.CodeTimeout, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &Error{Code: toolkit.CodeCanceled, Message: err.Error()}
	}
	return &Error{Code: toolkit.CodeToolError, Message: err.Error()}
}

func writeCall(w io.Writer, c Call) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("recording a call of %s: %w", c.Tool, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Close writes the recording again in a stable order (by step, attempt
// and tool), so that two runs that make the same calls give the same
// file, and closes it.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		r.f.Close()
		return fmt.Errorf("recording tool calls to %s: %w", r.path, r.err)
	}
	sort.SliceStable(r.all, func(i, j int) bool {
		a, b := r.all[i], r.all[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		if a.Attempt != b.Attempt {
			return a.Attempt < b.Attempt
		}
		return a.Tool < b.Tool
	})
	var buf bytes.Buffer
	for _, c := range r.all {
		if err := writeCall(&buf, c); err != nil {
			r.f.Close()
			return err
		}
	}
	if err := r.f.Truncate(0); err != nil {
		r.f.Close()
		return err
	}
	if _, err := r.f.WriteAt(buf.Bytes(), 0); err != nil {
		r.f.Close()
		return err
	}
	return r.f.Close()
}

// Replayer answers tool calls from a recording, and calls no tool.
type Replayer struct {
	mu      sync.Mutex
	answers map[string][]answer
	order   []string
	// fills are the recorded fillings, by step and argument.
	fills map[string][]answer
}

// answer is a recorded call, its result kept as JSON text so that each
// answer decodes a value of its own.
type answer struct {
	call   Call
	result json.RawMessage
}

// Load reads a recording.
func Load(path string) (*Replayer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the recording: %w", err)
	}
	p := &Replayer{answers: map[string][]answer{}, fills: map[string][]answer{}}
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var raw struct {
			Call
			Args   json.RawMessage `json:"args"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(line, &raw); err != nil {
			return nil, fmt.Errorf("%s:%d: not a recorded call: %w", path, n+1, err)
		}
		a := answer{call: raw.Call, result: raw.Result}
		if a.call.Fill != "" {
			k := fillKey(a.call.Step, a.call.Fill)
			p.fills[k] = append(p.fills[k], a)
			continue
		}
		if a.call.Tool == "" {
			return nil, fmt.Errorf("%s:%d: a recorded call names no tool", path, n+1)
		}
		if len(raw.Args) > 0 {
			v, err := toolkit.DecodeJSON(raw.Args)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: arguments: %w", path, n+1, err)
			}
			a.call.Args, _ = v.(map[string]any)
		}
		k, err := key(a.call.Tool, a.call.Args)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		if _, seen := p.answers[k]; !seen {
			p.order = append(p.order, k)
		}
		p.answers[k] = append(p.answers[k], a)
	}
	return p, nil
}

func key(tool string, args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args) // map keys sorted: a canonical form
	if err != nil {
		return "", fmt.Errorf("arguments of %s: %w", tool, err)
	}
	return tool + "\x00" + string(b), nil
}

// Call answers a call from the recording.
func (p *Replayer) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	k, err := key(name, args)
	if err != nil {
		return nil, &toolkit.Error{Code: CodeNotRecorded, Message: err.Error(), NotRetryable: true}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.answers[k]
	if len(list) == 0 {
		b, _ := json.Marshal(args)
		return nil, &toolkit.Error{Code: CodeNotRecorded, NotRetryable: true,
			Message: fmt.Sprintf("the recording has no answer for %s with arguments %s", name, b)}
	}
	a := list[0]
	p.answers[k] = list[1:]
	if e := a.call.Error; e != nil {
		return nil, &toolkit.Error{Code: e.Code, Message: e.Message, NotRetryable: e.NotRetryable}
	}
	if len(a.result) == 0 {
		return nil, nil
	}
	return toolkit.DecodeJSON(a.result)
}

func fillKey(step, argument string) string { return step + "\x00" + argument }

// Fill answers a filling from the recording: the answers recorded for the
// hole (argument names it) or the task (argument is "") of a step, in the
// order they were recorded. A filling the recording has no answer for
// fails.
func (p *Replayer) Fill(step, argument string) (any, error) {
	if argument == "" {
		argument = taskFill
	}
	k := fillKey(step, argument)
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.fills[k]
	if len(list) == 0 {
		what := "argument " + argument
		if argument == taskFill {
			what = "the task"
		}
		return nil, &toolkit.Error{Code: CodeNotRecorded, NotRetryable: true,
			Message: fmt.Sprintf("the recording has no answer of a model for %s of step %s", what, step)}
	}
	a := list[0]
	p.fills[k] = list[1:]
	if len(a.result) == 0 {
		return nil, nil
	}
	return toolkit.DecodeJSON(a.result)
}

// Unused returns the recorded calls no call has asked for, in the order
// of the recording.
func (p *Replayer) Unused() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, k := range p.order {
		for _, a := range p.answers[k] {
			out = append(out, a.call)
		}
	}
	return out
}
