// Package fill completes what a plan leaves to a model when a step runs,
// the second stage of two-stage planning (seed 002): the value of a hole
// (`amount: ? "the refundable amount from †state.history"`) and the
// choice of a task (`task "find a hotel" using [findHotel, bookHotel]`)
// with the arguments of the candidate chosen. Each implements vm.Filler:
//
//   - Model asks a language model (toolkit/llm), holding its answer to
//     the JSON Schema of what it fills with constrained output where the
//     provider has it (OpenAI's strict Structured Outputs, Anthropic's
//     tool use);
//   - Script answers from a fills file, as a mocks file answers tools, so
//     that a plan with holes and tasks runs offline;
//   - Recorded and Replayed keep the answers in a recording of a run
//     (toolkit/replay) and give them back.
//
// None of them is trusted: the run holds every answer to the plan's types
// and the tools' schemas, and asks again or fails the step when it does
// not fit (see vm.Filler).
package fill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
)

// Model is a vm.Filler that asks a language model.
type Model struct {
	// Model answers. Usage counts the tokens of the requests made
	// through the filler.
	Model llm.Model
	// MaxValueBytes bounds the JSON of each value the model is shown
	// (default 16 KiB); a longer one is cut, and says how long it was.
	MaxValueBytes int
	// noSchema is set once the server refused an answer's schema: it
	// has no constrained output, so none is asked for again.
	noSchema atomic.Bool
	mu       sync.Mutex
	usage    llm.Usage
}

// Usage returns the tokens of the requests the filler has made.
func (m *Model) Usage() llm.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// collect asks the model and counts the request's tokens.
func (m *Model) collect(ctx context.Context, r *llm.Request) (string, error) {
	text, u, err := llm.Collect(ctx, m.Model, r)
	u.Requests = 1
	m.mu.Lock()
	m.usage = m.usage.Add(u)
	m.mu.Unlock()
	return text, err
}

// defaultMaxValue is the default of Model.MaxValueBytes.
const defaultMaxValue = 16 << 10

const system = `You complete one part of a plan while it runs. The plan was written before some values were known; now they are. You are given either

- a hole: one argument of a tool call, with an instruction that says what it must hold, or
- a task: a goal, and the tools and sub-plans (the candidates) that may reach it; you choose exactly one candidate and give its arguments.

Work only from the instruction or goal and the values you are given: do not invent identifiers, amounts or facts that are not in them. The answer must match the JSON Schema given. Answer with one JSON object and nothing else: {"value": …}, where the value is the argument's value, or for a task {"candidate": "NAME", "arguments": {…}}.`

// Fill asks the model and returns its answer, decoded. An answer that is
// not JSON is an error; whether it fits is the run's to check.
func (m *Model) Fill(ctx context.Context, req vm.FillRequest) (any, error) {
	if m.Model == nil {
		return nil, errors.New("no model is configured")
	}
	r := &llm.Request{System: system, Messages: []llm.Message{{Role: llm.User, Content: m.prompt(req)}}}
	if !m.noSchema.Load() {
		if s, ok := strictSchema(req.Schema); ok {
			r.Schema = &llm.Schema{Name: "obelisk_fill", Description: "the value the plan leaves to the model", JSON: wrap(s)}
		}
	}
	text, err := m.collect(ctx, r)
	if errors.Is(err, llm.ErrSchemaRejected) {
		// The server has no constrained output (or not for this
		// schema): the prompt says what to answer, and the run checks.
		m.noSchema.Store(true)
		r.Schema = nil
		text, err = m.collect(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	v, err := answer(text)
	if err != nil {
		return nil, err
	}
	return dropNullOptionals(v, req.Schema, 0), nil
}

// prompt writes what the model is asked.
func (m *Model) prompt(req vm.FillRequest) string {
	limit := m.MaxValueBytes
	if limit <= 0 {
		limit = defaultMaxValue
	}
	var b strings.Builder
	if len(req.Candidates) > 0 {
		fmt.Fprintf(&b, "Step %s is a task. Goal: %s\n", req.Step, req.Instruction)
	} else {
		fmt.Fprintf(&b, "Step %s calls %s. Fill in its argument %s.\nInstruction: %s\n", req.Step, req.Tool, req.Argument, req.Instruction)
	}
	if len(req.Values) > 0 {
		b.WriteString("\nThe values it reads:\n")
		keys := make([]string, 0, len(req.Values))
		for k := range req.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", k, shown(req.Values[k], limit))
		}
	}
	if len(req.Candidates) > 0 {
		b.WriteString("\nChoose exactly one of these candidates and give its arguments:\n")
		for _, c := range req.Candidates {
			fmt.Fprintf(&b, "- %s (%s)", c.Name, c.Effect)
			if c.Description != "" {
				fmt.Fprintf(&b, ": %s", strings.ReplaceAll(c.Description, "\n", " "))
			}
			fmt.Fprintf(&b, "\n  arguments: %s\n", shown(c.Schema, limit))
		}
		b.WriteString("\nAnswer with {\"value\": {\"candidate\": \"NAME\", \"arguments\": {…}}}.\n")
	} else {
		fmt.Fprintf(&b, "\nThe value must match this JSON Schema:\n%s\n\nAnswer with {\"value\": …}.\n", shown(req.Schema, limit))
	}
	if req.Problem != "" {
		fmt.Fprintf(&b, "\nYour answer before, %s, was refused: %s. Answer again.\n", shown(req.Previous, limit), req.Problem)
	}
	return b.String()
}

// shown is the JSON of a value for a prompt, cut after limit bytes.
func shown(v any, limit int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > limit {
		return string(b[:limit]) + fmt.Sprintf("… (%d bytes in all)", len(b))
	}
	return string(b)
}

// wrap puts an answer's schema under "value": OpenAI's strict mode and
// Anthropic's tool input both want an object at the root.
func wrap(s map[string]any) map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"value": s},
		"required":             []any{"value"},
		"additionalProperties": false,
	}
}

// fenced and thought are compiled when a model's answer is first read,
// not at start-up.
var (
	fenced  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```[a-zA-Z]*\\s*\n(.*?)```") })
	thought = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)<(think|thinking|reasoning)>.*?</(think|thinking|reasoning)>`)
	})
)

// answer reads the value of a model's answer: the JSON object in it
// (fenced or not, after any reasoning), and its "value".
func answer(text string) (any, error) {
	s := thought().ReplaceAllString(text, "")
	if m := fenced().FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "{["); i > 0 {
		s = s[i:]
	}
	if i := strings.LastIndexAny(s, "}]"); i >= 0 {
		s = s[:i+1]
	}
	v, err := toolkit.DecodeJSON([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("the model's answer is not the JSON asked for: %v: %.200q", err, text)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if inner, ok := m["value"]; ok {
			return inner, nil
		}
	}
	return nil, fmt.Errorf("the model's answer is not {\"value\": …}: %.200q", text)
}
