package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
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
	// Form is how the model answers: FormText (.plan text, the default)
	// or FormJSON (the JSON form, held to PlanSchema where the provider
	// has constrained output; where the server refuses the schema, the
	// rounds go on in text).
	Form string
	// Round, if set, is told about each round.
	Round func(Round)
}

// Round is one answer of Generate and what the checker made of it.
type Round struct {
	// N counts the rounds from 1.
	N int
	// Form is the form the answer was asked in: FormText or FormJSON.
	Form string
	// Answer is the plan read out of the answer; Diagnostics the
	// checker's findings on it.
	Answer      string
	Diagnostics lang.Diagnostics
	// Usage is the tokens of the round's requests. Usage.Input is the
	// prompt's size, as the provider counts it.
	Usage llm.Usage
	// Fallback, when set, says why the answer was asked in text rather
	// than in the JSON form: the server refused the schema.
	Fallback string
	// Cut, when set, says why the answer was cut short (see
	// llm.ErrTruncated): it was not checked, and is asked for again.
	Cut string
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
	// Form is the form the last answer was asked in; Fallback says why it
	// is text when FormJSON was asked for.
	Form, Fallback string
	// PromptTokens is the first prompt's size in tokens, as the provider
	// counted it, or estimated (promptTokens) when it did not.
	PromptTokens int64
}

// Generate asks the model for a plan that reaches the goal, checks it,
// and sends the diagnostics back for a repair until the plan checks or
// the repairs run out. A plan that does not check is never returned as
// one: OK is false and the last diagnostics say why. An answer cut short
// (llm.ErrTruncated) is never checked nor returned: the model is asked
// for the whole plan again, more briefly, as a repair, and when the
// repairs run out the error wraps llm.ErrTruncated. The error is also
// for a model that cannot be asked.
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
	form, err := newAnswerForm(opts.Form, c, opts.Check)
	if err != nil {
		return nil, err
	}
	req := &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: contextMessage(c, info)}}}
	rules := checkRules{settings: true, approve: true, minSteps: opts.MinSteps, maxSteps: opts.MaxSteps}
	fallback := form.fallback
	for round := 1; ; round++ {
		req.System = systemPrompt(whole, opts.MinSteps, opts.MaxSteps, form.form, opts.Check)
		before := meter.Usage()
		text, usage, err := llm.Collect(ctx, meter, form.request(req))
		if form.refused(err) {
			fallback = form.fallback
			req.System = systemPrompt(whole, opts.MinSteps, opts.MaxSteps, form.form, opts.Check)
			text, usage, err = llm.Collect(ctx, meter, form.request(req))
		}
		out.Rounds, out.Usage, out.Form, out.Fallback = round, meter.Usage(), form.form, form.fallback
		if round == 1 {
			out.PromptTokens = promptTokens(usage.Input, req)
		}
		if errors.Is(err, llm.ErrTruncated) {
			out.Answer, _ = form.read(text)
			out.Name, out.Diagnostics = "plan", nil
			if opts.Round != nil {
				u := meter.Usage()
				opts.Round(Round{N: round, Form: form.form, Answer: out.Answer, Fallback: fallback, Cut: err.Error(),
					Usage: llm.Usage{Input: u.Input - before.Input, Output: u.Output - before.Output, Requests: u.Requests - before.Requests}})
			}
			fallback = ""
			if round > opts.MaxRepairs {
				return out, fmt.Errorf("the model's answer was cut short, and nothing was written: %w", err)
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.Assistant, Content: text}, llm.Message{Role: llm.User, Content: cutMessage(err.Error())})
			continue
		}
		if err != nil {
			return out, err
		}
		answer, missed := form.read(text)
		ch := checkAnswer("plan", answer, prelude, c, opts.Check, rules)
		ch.noPlan(missed, form.form)
		out.Answer, out.Name, out.Diagnostics = answer, ch.answer.Name, ch.diags
		if opts.Round != nil {
			u := meter.Usage()
			opts.Round(Round{N: round, Form: form.form, Answer: answer, Diagnostics: ch.diags, Fallback: fallback,
				Usage: llm.Usage{Input: u.Input - before.Input, Output: u.Output - before.Output, Requests: u.Requests - before.Requests}})
		}
		fallback = ""
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
			llm.Message{Role: llm.User, Content: repairMessage(ch.answer.Name, answer, ch.diags, form.form)})
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
