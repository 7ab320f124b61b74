package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/runtime/llm"
)

// The planner's limits, as in seed 000: a plan has 3 to 10 steps, and a
// plan that does not check is sent back for repair a few times.
const (
	DefaultMinSteps   = 3
	DefaultMaxSteps   = 10
	DefaultMaxRepairs = 3
)

// GenerateOptions configure Generate.
type GenerateOptions struct {
	Goal    string
	Context Context
	// Model writes the plan.
	Model llm.Model
	// Check configures the checker. It knows only the context's tools,
	// as Options.Check says.
	Check compiler.Config
	// MaxRepairs bounds the rounds that send diagnostics back (default
	// DefaultMaxRepairs; -1 for none).
	MaxRepairs int
	// MinSteps and MaxSteps bound the plan's steps (defaults
	// DefaultMinSteps and DefaultMaxSteps).
	MinSteps, MaxSteps int
	// Round, if set, is told about each round: its number, the answer,
	// and its diagnostics.
	Round func(n int, answer string, diags lang.Diagnostics)
}

// Generated is the outcome of Generate.
type Generated struct {
	// OK reports that the last answer checks; Plan is then the plan's
	// text, complete (the context's tools, input and state declared) and
	// in canonical layout.
	OK   bool
	Plan []byte
	// Rounds is the number of answers asked for; Usage their tokens.
	Rounds int
	Usage  llm.Usage
	// Answer is the last answer, Name its file name in Diagnostics, and
	// Diagnostics the checker's findings on it (warnings when OK).
	Answer      string
	Name        string
	Diagnostics lang.Diagnostics
}

// Generate asks the model for a plan that reaches the goal, checks it,
// and sends the diagnostics back for a repair until the plan checks or
// the repairs run out. A plan that does not check is never returned as
// one: OK is false and the last diagnostics say why. The error is for a
// model that cannot be asked.
func Generate(ctx context.Context, opts GenerateOptions) (*Generated, error) {
	if strings.TrimSpace(opts.Goal) == "" {
		return nil, errors.New("no goal given")
	}
	if opts.MaxRepairs == 0 {
		opts.MaxRepairs = DefaultMaxRepairs
	}
	if opts.MinSteps <= 0 {
		opts.MinSteps = DefaultMinSteps
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MinSteps > opts.MaxSteps {
		return nil, fmt.Errorf("at least %d steps and at most %d cannot both hold", opts.MinSteps, opts.MaxSteps)
	}
	opts.Check = offeredConfig(opts.Check, &opts.Context)
	meter := llm.Metered(opts.Model)
	out := &Generated{}
	c := &opts.Context
	prelude := c.prelude(nil, nil)
	info := &turnInfo{goal: opts.Goal, facts: &truthStore{}}
	if len(c.Plan) > 0 {
		info.plan = annotate(c.Plan, nil)
	}
	req := &llm.Request{System: systemPrompt(whole, opts.MinSteps, opts.MaxSteps),
		Messages: []llm.Message{{Role: llm.User, Content: contextMessage(c, info)}}}
	rules := checkRules{settings: true, approve: true, minSteps: opts.MinSteps, maxSteps: opts.MaxSteps}
	for round := 1; ; round++ {
		text, _, err := llm.Collect(ctx, meter, req)
		out.Rounds, out.Usage = round, meter.Usage()
		if err != nil {
			return out, err
		}
		answer := readAnswer(text)
		ch := checkAnswer("plan", answer, prelude, c, opts.Check, rules)
		out.Answer, out.Name, out.Diagnostics = answer, ch.answer.Name, ch.diags
		if opts.Round != nil {
			opts.Round(round, answer, ch.diags)
		}
		if !ch.diags.HasErrors() {
			plan, err := completePlan(c, prelude, ch, opts.Check)
			if err != nil {
				return out, err
			}
			out.OK, out.Plan = true, plan
			return out, nil
		}
		if round > opts.MaxRepairs {
			return out, nil
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.Assistant, Content: text},
			llm.Message{Role: llm.User, Content: repairMessage(ch.answer.Name, answer, ch.diags)})
	}
}

// completePlan writes a checked answer as a plan file of its own: the
// context's tools, declarations, input and state, then the answer, in
// canonical layout. The text is checked again, so that what is written is
// what was checked.
func completePlan(c *Context, prelude string, ch *checked, cfg compiler.Config) ([]byte, error) {
	var b strings.Builder
	if tools := c.toolsText(); tools != "" {
		b.WriteString(tools + "\n")
	}
	if prelude != "" {
		b.WriteString(prelude + "\n")
	}
	b.Write(lang.Format(ch.answer))
	text := []byte(b.String())
	f, diags := lang.Parse("plan.plan", text)
	if !diags.HasErrors() {
		// The file's own tool declarations take precedence over cfg's.
		_, diags = compiler.Check(f, cfg)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("the plan checked, but its complete text does not:\n%s", diags)
	}
	return lang.Format(f), nil
}
