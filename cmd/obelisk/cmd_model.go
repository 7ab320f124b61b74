package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// modelFlags choose the model provider and the models of both tiers.
type modelFlags struct {
	settings llm.Settings
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&mf.settings.Provider, "provider", "", "the model provider: openai (also any OpenAI-compatible server) or anthropic (default: OBELISK_PROVIDER, else the one whose API key is set)")
	fs.StringVar(&mf.settings.BaseURL, "base-url", "", "the provider's base URL, such as http://localhost:11434/v1 for Ollama (default: OPENAI_BASE_URL or ANTHROPIC_BASE_URL)")
	fs.StringVar(&mf.settings.Model, "model", "", fmt.Sprintf("the planning model (default: OBELISK_MODEL, else %s or %s)", llm.DefaultOpenAIModel, llm.DefaultAnthropicModel))
	fs.StringVar(&mf.settings.EvalModel, "eval-model", "", fmt.Sprintf("the cheaper model that judges steps (default: OBELISK_EVAL_MODEL, else %s or %s)", llm.DefaultOpenAIEvalModel, llm.DefaultAnthropicEvalModel))
	fs.IntVar(&mf.settings.MaxTokens, "max-tokens", 0, "the most tokens an answer may have (default: the provider's)")
	fs.DurationVar(&mf.settings.Timeout, "request-timeout", 5*time.Minute, "the longest one model request may take, answer included")
}

// models resolves the settings and opens the planning and evaluator
// models. The API keys come from the environment only.
func (mf *modelFlags) models(e *env) (planner, evaluator llm.Model, s llm.Settings, err error) {
	s, err = llm.Resolve(mf.settings, e.getenv)
	if err != nil {
		return nil, nil, s, err
	}
	return fill.OpenModel(s), fill.OpenModel(s.ForEvaluator()), s, nil
}

// goalFlags describe the goal and what the model is told: the tools, the
// input, a context document.
type goalFlags struct {
	checkFlags
	goal     string
	input    string
	context  string
	builtins bool
	form     string
}

func (gf *goalFlags) register(fs *flag.FlagSet) {
	gf.checkFlags.register(fs)
	fs.StringVar(&gf.goal, "goal", "", "what the plan must achieve, in words (required)")
	fs.StringVar(&gf.input, "input", "", "the plan's input: a JSON object, or @FILE")
	fs.StringVar(&gf.context, "context", "", "a context document (the JSON form: tool, input, state and plan messages) or a .plan file: its tools, input, state and steps are given to the model")
	fs.BoolVar(&gf.builtins, "builtins", false, "also offer the built-in tools (echo, json.select, text.format, http.get, …) to the model; they are offered anyway when no tools are given")
	fs.StringVar(&gf.form, "answer-form", agent.FormText, "how the model answers: text (.plan text) or json (the JSON form, held to a JSON Schema of a plan of the offered tools where the provider has constrained output; text again, with a warning, where the server refuses the schema)")
}

// load starts the MCP servers and builds the context and the checker's
// configuration. It prints problems on stderr and returns the exit status
// when it cannot go on; otherwise the caller stops the servers with stop.
func (gf *goalFlags) load(ctx context.Context, e *env, cmd string) (c agent.Context, cfg compiler.Config, stop func(), status int) {
	stop = func() {}
	if strings.TrimSpace(gf.goal) == "" {
		return c, cfg, stop, usageError(e, cmd, "no goal: give --goal \"what the plan must achieve\"")
	}
	servers, st := gf.connect(ctx, e, cmd)
	if st != exitOK {
		return c, cfg, stop, st
	}
	c, cfg, status = gf.goalContext(e, cmd)
	if status != exitOK {
		servers()
		return c, cfg, stop, status
	}
	return c, cfg, servers, exitOK
}

// goalContext builds the context and the checker's configuration.
func (gf *goalFlags) goalContext(e *env, cmd string) (agent.Context, compiler.Config, int) {
	ps, srcs, diags, err := gf.goalSource(e)
	if err != nil {
		fmt.Fprintf(e.Stderr, "obelisk %s: %v\n", cmd, err)
		return agent.Context{}, compiler.Config{}, exitUsage
	}
	var input map[string]any
	if gf.input != "" {
		if input, err = readJSONObject(gf.input); err != nil {
			fmt.Fprintf(e.Stderr, "obelisk %s: the input: %v\n", cmd, err)
			return agent.Context{}, compiler.Config{}, exitUsage
		}
	}
	c, cfg, cd := contextOf(ps, durable.GoalContext{ToolFiles: gf.tf.Tools, Builtins: gf.builtins, Input: input}, gf.set)
	if diags = append(diags, cd...); diags.HasErrors() {
		lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
		return c, cfg, exitInput
	}
	return c, cfg, exitOK
}

// readJSONObject reads a JSON object given as text or as @FILE.
func readJSONObject(arg string) (map[string]any, error) {
	raw := []byte(arg)
	if strings.HasPrefix(arg, "@") {
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return toolkit.DecodeObject(raw)
}

func generateCommand() *command {
	return &command{
		Name:    "generate",
		Args:    "--goal GOAL",
		Summary: "ask a model for a plan that reaches a goal, check it, and send the diagnostics back until it checks",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var gf goalFlags
			gf.register(fs)
			var mf modelFlags
			mf.register(fs)
			out := fs.String("o", "", "write the plan to this file (default: standard output); nothing is written unless the plan checks")
			maxRepairs := fs.Int("max-repairs", agent.DefaultMaxRepairs, "how many times the diagnostics are sent back for a repair")
			minSteps := fs.Int("min-steps", agent.DefaultMinSteps, "the fewest steps a plan may have")
			maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "the most steps a plan may have")
			return func(ctx context.Context, args []string) int {
				if len(args) > 0 {
					return usageError(e, "generate", "unexpected arguments %q: the goal goes in --goal", args)
				}
				c, cfg, stop, status := gf.load(ctx, e, "generate")
				defer stop()
				if status != exitOK {
					return status
				}
				planner, _, settings, err := mf.models(e)
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk generate: %v\n", err)
					return exitUsage
				}
				repairs := *maxRepairs
				if repairs <= 0 {
					repairs = -1 // none: Generate reads 0 as its default
				}
				e.log.Info("asking for a plan", "model", planner.Name(), "provider", settings.String(), "form", gf.form)
				g, err := agent.Generate(ctx, agent.GenerateOptions{Goal: gf.goal, Context: c, Model: planner, Check: cfg,
					MaxRepairs: repairs, MinSteps: *minSteps, MaxSteps: *maxSteps, Form: gf.form,
					Round: func(r agent.Round) {
						if r.Fallback != "" {
							fmt.Fprintf(e.Stderr, "obelisk generate: warning: %s\n", r.Fallback)
						}
						if r.Cut != "" {
							fmt.Fprintf(e.Stderr, "obelisk generate: round %d: %s; the plan is asked for again\n", r.N, r.Cut)
						}
						e.log.Info("round", "n", r.N, "form", r.Form, "errors", r.Diagnostics.Count(lang.SeverityError), "prompt_tokens", r.Usage.Input)
					}})
				if err != nil {
					fmt.Fprintf(e.Stderr, "obelisk generate: %v\n", err)
					if g != nil && g.Rounds > 0 {
						fmt.Fprintf(e.Stderr, "%s\n", roundsLine(g))
					}
					if errors.Is(err, llm.ErrTruncated) {
						return exitInput // the model answered, but never whole
					}
					return exitUsage
				}
				srcs := lang.Sources{g.Name: []byte(g.Answer)}
				if !g.OK {
					lang.WriteText(e.Stderr, srcs, g.Diagnostics, e.textOptions())
					fmt.Fprintf(e.Stderr, "obelisk generate: the plan still has errors after %s; nothing written\n%s\n", plural(g.Rounds-1, "repair"), roundsLine(g))
					return exitInput
				}
				if len(g.Diagnostics) > 0 {
					lang.WriteText(e.Stderr, srcs, g.Diagnostics, e.textOptions())
				}
				if *out == "" {
					// Shown to be read: a comment of the model's
					// cannot act on the terminal. Its string
					// literals are escaped already; -o writes the
					// plan as it is.
					escapingWriter{e.Stdout}.Write(g.Plan)
				} else if err := writeFileAtomic(*out, g.Plan); err != nil {
					fmt.Fprintf(e.Stderr, "obelisk generate: %v\n", err)
					return exitUsage
				} else {
					fmt.Fprintf(e.Stderr, "wrote %s\n", *out)
				}
				fmt.Fprintf(e.Stderr, "%s\n", roundsLine(g))
				return exitOK
			}
		},
	}
}

func roundsLine(g *agent.Generated) string {
	return fmt.Sprintf("%s (%s, %s answers); prompt %d tokens; tokens: %s", plural(g.Rounds, "round"), plural(g.Rounds-1, "repair"), g.Form,
		g.PromptTokens, usageText(g.Usage))
}

func usageText(u llm.Usage) string {
	return fmt.Sprintf("%d in, %d out, %s", u.Input, u.Output, plural(u.Requests, "request"))
}

// plural writes a count with its noun: 1 step, 2 steps, 3 retries.
func plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ey"):
		return strconv.Itoa(n) + " " + word[:len(word)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// writeFileAtomic writes a file through a temporary file and a rename, so
// that a reader never sees half of it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func agentCommand() *command {
	return &command{
		Name:    "agent",
		Args:    "--goal GOAL",
		Summary: "pursue a goal: a model writes plans turn by turn, they run, and the model sees the results, until it gives the output",
		Setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) int {
			registerMaxDiagnostics(fs, e)
			var gf goalFlags
			gf.register(fs)
			var mf modelFlags
			mf.register(fs)
			mode := fs.String("mode", agent.Eager, "eager: each step runs as soon as the model has written it; lazy: the whole plan is checked, then run")
			fs.StringVar(&gf.mocksFile, "mocks", "", "a mocks file answering tool calls")
			gf.tf.RegisterRun(fs)
			approve := fs.Bool("approve", false, "ask on the terminal at each approval gate and each step the evaluator cannot judge")
			yes := fs.Bool("yes", false, "approve every approval gate and hitl verdict without asking")
			evaluate := fs.Bool("evaluate", true, "have the evaluator model judge the criteria stated in words (expect \"…\") and extract facts")
			maxGoalSteps := fs.Int("max-goal-steps", 0, fmt.Sprintf("the most steps run for the goal (default: MAX_GOAL_STEPS, else %d)", agent.DefaultMaxGoalSteps))
			maxReplans := fs.Int("max-replans", 0, fmt.Sprintf("the most replans after failed steps (default: MAX_REPLAN_ATTEMPTS, else %d)", agent.DefaultMaxReplanAttempts))
			maxRepairs := fs.Int("max-repairs", agent.DefaultMaxRepairs, "the most answers in a row that run nothing; in lazy mode, the repairs of one plan")
			maxParallel := fs.Int("max-parallel", 8, "how many steps may run at once")
			stepTimeout := fs.Duration("step-timeout", 60*time.Second, "the longest a step's tool call (each attempt) or the evaluation of its arguments may take; a step's own timeout may only lower it")
			runTimeout := fs.Duration("run-timeout", 0, "the longest the goal may take (e.g. 30m), its model calls, runs and approvals included: then its running steps are canceled and it stops (canceled, limit-exceeded); 0 sets no limit")
			events := fs.String("events", "", "write the events (turns, steps, verdicts) to this file, one JSON object per line")
			var xf execFlags
			xf.registerJournal(fs)
			return func(ctx context.Context, args []string) int {
				if len(args) > 0 {
					return usageError(e, "agent", "unexpected arguments %q: the goal goes in --goal", args)
				}
				if *mode != agent.Eager && *mode != agent.Lazy {
					return usageError(e, "agent", "unknown mode %q: use eager or lazy", *mode)
				}
				if strings.TrimSpace(gf.goal) == "" {
					return usageError(e, "agent", "no goal: give --goal \"what the plan must achieve\"")
				}
				policy, err := xf.policy()
				if err != nil {
					return usageError(e, "agent", "%v", err)
				}
				limits, err := goalLimits(e, *maxGoalSteps, *maxReplans)
				if err != nil {
					return usageError(e, "agent", "%v", err)
				}
				stop, status := gf.connect(ctx, e, "agent")
				if status != exitOK {
					return status
				}
				defer stop()
				ps, srcs, diags, err := gf.goalSource(e)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				var input map[string]any
				if gf.input != "" {
					if input, err = readJSONObject(gf.input); err != nil {
						e.Errorf("the input: %v", err)
						return exitUsage
					}
				}
				c, cfg, cd := contextOf(ps, durable.GoalContext{ToolFiles: gf.tf.Tools, Builtins: gf.builtins, Input: input}, gf.set)
				if diags = append(diags, cd...); diags.HasErrors() {
					lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
					return exitInput
				}
				ts := &toolSettings{Config: gf.set.Config()}
				tools, err := gf.set.CallerOf(c.Tools)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				planner, evaluator, settings, err := mf.models(e)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				if !*evaluate {
					evaluator = nil
				}
				set, err := ts.record(vm.Options{MaxParallel: *maxParallel, StepTimeout: *stepTimeout, RunTimeout: max(*runTimeout, 0)}, policy)
				if err != nil {
					e.Errorf("%v", err)
					return exitUsage
				}
				set.Goal = &durable.GoalSpec{Goal: gf.goal, Mode: *mode, Form: gf.form, MaxGoalSteps: limits[0], MaxReplanAttempts: limits[1], MaxRepairs: *maxRepairs,
					GoalContext: durable.GoalContext{ToolFiles: gf.tf.Tools, Builtins: gf.builtins, Input: input, Evaluate: *evaluate, Models: durable.ModelsOf(settings)}}
				r, store, status := xf.create(e, &durable.Plan{Source: ps, Input: c.Input}, set)
				if r == nil {
					return status
				}
				if store != nil {
					defer store.Close()
				}
				e.log.Info("pursuing the goal", "provider", settings.String(), "mode", *mode, "run", r.ID)
				gx := &goalExec{planner: planner, evaluator: evaluator, events: *events, runTimeout: *runTimeout, also: xf.also()}
				switch {
				case *yes:
					gx.approver = approveAll{}
				case *approve:
					gx.approver = &terminalApprover{in: bufio.NewReader(e.Stdin), out: e.Stderr}
				}
				return gx.pursue(ctx, e, r, c, cfg, tools)
			}
		},
	}
}

// goalLimits reads MAX_GOAL_STEPS and MAX_REPLAN_ATTEMPTS when the flags
// do not set them.
func goalLimits(e *env, steps, replans int) ([2]int, error) {
	out := [2]int{steps, replans}
	for i, name := range []string{"MAX_GOAL_STEPS", "MAX_REPLAN_ATTEMPTS"} {
		if out[i] > 0 {
			continue
		}
		if v := e.getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return out, fmt.Errorf("%s=%q is not a positive number", name, v)
			}
			out[i] = n
		}
	}
	return out, nil
}

// turnLines prints a line on stderr when a turn ends and when a step
// fails, so that a person sees the goal progress.
func turnLines(e *env) vm.Observer {
	return func(ev vm.Event) {
		switch ev.Type {
		case agent.TurnFinished:
			fmt.Fprintf(e.Stderr, "%s\n", ev.Message)
		case agent.FormFallback:
			fmt.Fprintf(e.Stderr, "obelisk agent: warning: %s\n", ev.Message)
		case agent.AnswerCut:
			fmt.Fprintf(e.Stderr, "%s\n", ev.Message)
		case vm.StepFailed:
			if ev.Error != nil {
				fmt.Fprintf(e.Stderr, "  %s failed: %s [%s]\n", ev.Step, ev.Error.Message, ev.Error.Code)
			}
		}
	}
}

func goalSummary(res *agent.Result) string {
	s := res.GoalExecution
	var b strings.Builder
	fmt.Fprintf(&b, "%s after %s (%s mode, %s answers): %s run, %s, %s, %s; ", s.Status, plural(s.Turns, "turn"), s.Mode, s.Form, plural(s.StepsRun, "step"),
		plural(s.Replans, "replan"), plural(s.Repairs, "repair"), plural(len(s.Facts), "fact"))
	fmt.Fprintf(&b, "tokens: %s (planner %s", usageText(s.Tokens["total"]), usageText(s.Tokens["planner"]))
	for _, use := range []string{"filler", "evaluator"} {
		if u, ok := s.Tokens[use]; ok {
			fmt.Fprintf(&b, ", %s %s", use, usageText(u))
		}
	}
	b.WriteString(")")
	fmt.Fprintf(&b, "; %s", round(s.Elapsed))
	if res.Err != nil {
		fmt.Fprintf(&b, "\n  %v", res.Err)
	}
	return b.String()
}
