package durable

import (
	"context"
	"fmt"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// TestGoalRepeatedPlanAfterResume: a goal's process dies while it asks
// for its second turn; resumed (taken over, as from a process that is
// gone), the model writes the whole plan again.
// The repeated steps are the steps the journal recorded: each tool is
// called once in all (the payment was made twice), and the model is told
// they already ran.
func TestGoalRepeatedPlanAfterResume(t *testing.T) {
	providers := []struct {
		name  string
		start func(func(*llmtest.Request) llmtest.Reply) *llmtest.Server
		open  func(llm.Settings) llm.Model
	}{
		{"openai", llmtest.NewOpenAI, func(s llm.Settings) llm.Model { return openai.New(s, nil) }},
		{"anthropic", llmtest.NewAnthropic, func(s llm.Settings) llm.Model { return anthropic.New(s, nil) }},
	}
	const steps = "a: lookup(id: \"c-1\") -> †state.who\nb: pay(name: †state.who) -> †state.paid\n  approve \"Pay?\"\n"
	tools := "tool lookup(id: string) -> string pure\ntool pay(name: string) -> string irreversible\n"
	for _, p := range providers {
		for _, mode := range []string{agent.Eager, agent.Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				src := &planfile.Source{Name: "tools.plan", Text: tools}
				f, diags := lang.Parse(src.Name, []byte(tools))
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				c := agent.ContextOf(f)
				calls := map[string]int{}
				caller := callerFunc(func(_ context.Context, name string, args map[string]any) (any, error) {
					calls[name]++
					if name == "lookup" {
						return "Ada", nil
					}
					return "paid " + args["name"].(string), nil
				})
				yes := vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
					return vm.Decision{Approved: true}, nil
				})
				opts := agent.Options{Context: c, Check: compiler.Config{Tools: c.Tools}, Tools: caller, Approver: yes}
				st := openStore(t)
				r, err := st.Create(&Plan{Source: src}, "g", Settings{Goal: &GoalSpec{Goal: "Pay c-1.", Mode: mode}})
				if err != nil {
					t.Fatal(err)
				}

				// The first process dies while it asks for turn 2.
				ctx, die := context.WithCancel(context.Background())
				defer die()
				first := llmtest.Script(llmtest.Text(steps, llm.Usage{}))
				n := 0
				srv := p.start(func(req *llmtest.Request) llmtest.Reply {
					n++
					if n == 1 {
						return first(req)
					}
					die()
					return llmtest.Reply{Pieces: []string{"output †state.paid\n"}, Before: map[int]<-chan struct{}{0: ctx.Done()}}
				})
				defer srv.Close()
				opts.Planner = p.open(srv.Settings("planner", "judge"))
				// As Pursue, but the process dies before it records the
				// goal's end: the run stays running, its owner gone.
				o := opts
				o.Goal, o.Mode, o.Journal = "Pay c-1.", mode, &goalJournal{run: r}
				if res, err := agent.Run(ctx, o); err != nil || res.Status == agent.GoalCompleted {
					t.Fatalf("the first process: %v %v", res, err)
				}
				if calls["lookup"] != 1 || calls["pay"] != 1 {
					t.Fatalf("the first process made the calls %v", calls)
				}

				// Resumed, the model writes the whole plan again.
				srv2 := p.start(llmtest.Script(llmtest.Text(steps+"output †state.paid\n", llm.Usage{})))
				defer srv2.Close()
				if r, err = st.Resume("g", true); err != nil {
					t.Fatal(err)
				}
				opts.Planner = p.open(srv2.Settings("planner", "judge"))
				res, err := r.Pursue(context.Background(), opts, nil)
				if err != nil || res.Status != agent.GoalCompleted || res.Output != "paid Ada" {
					t.Fatalf("resumed: %v %v", res, err)
				}
				if calls["lookup"] != 1 || calls["pay"] != 1 {
					t.Errorf("the calls in all: %v", calls)
				}
				last := res.Turns[len(res.Turns)-1]
				for _, s := range last.Steps {
					if s.Status != vm.StatusCompleted || s.Repeats == nil || s.Repeats.Turn != 1 {
						t.Errorf("turn %d, step %s: %s, repeats %+v", last.N, s.ID, s.Status, s.Repeats)
					}
				}
			})
		}
	}
}

// TestGoalRepeatedFilledPlanAfterResume: as TestGoalRepeatedPlanAfterResume,
// but a model fills the irreversible step's call: a hole of its arguments,
// or a task's choice of the candidate and its arguments. Resumed, the run
// rebuilds that step's call from the answer the journal recorded, without
// asking the model again; the step the model repeats asks the same
// question, takes that answer (the model is not asked again either), and
// is that step: the payment is made once in all.
func TestGoalRepeatedFilledPlanAfterResume(t *testing.T) {
	providers := []struct {
		name  string
		start func(func(*llmtest.Request) llmtest.Reply) *llmtest.Server
		open  func(llm.Settings) llm.Model
	}{
		{"openai", llmtest.NewOpenAI, func(s llm.Settings) llm.Model { return openai.New(s, nil) }},
		{"anthropic", llmtest.NewAnthropic, func(s llm.Settings) llm.Model { return anthropic.New(s, nil) }},
	}
	variants := []struct {
		name, step, answer string
	}{
		{"hole", "b: pay(name: †state.who, cents: ? \"the amount owed by †state.who\") -> †state.paid\n  approve \"Pay?\"\n", `{"value": 500}`},
		{"task", "b: task \"settle what †state.who owes\" using [pay, remind] -> †state.paid\n  approve \"Pay?\"\n", `{"value": {"candidate": "pay", "arguments": {"name": "Ada", "cents": 500}}}`},
	}
	tools := "tool lookup(id: string) -> string pure\ntool pay(name: string, cents: int) -> string irreversible\ntool remind(name: string) -> string irreversible\n"
	for _, p := range providers {
		for _, v := range variants {
			for _, mode := range []string{agent.Eager, agent.Lazy} {
				t.Run(p.name+"/"+v.name+"/"+mode, func(t *testing.T) {
					steps := "a: lookup(id: \"c-1\") -> †state.who\n" + v.step
					src := &planfile.Source{Name: "tools.plan", Text: tools}
					f, diags := lang.Parse(src.Name, []byte(tools))
					if diags.HasErrors() {
						t.Fatal(diags)
					}
					c := agent.ContextOf(f)
					calls := map[string]int{}
					caller := callerFunc(func(_ context.Context, name string, args map[string]any) (any, error) {
						calls[name]++
						if name == "lookup" {
							return "Ada", nil
						}
						return fmt.Sprintf("%s %v for %s", name, args["cents"], args["name"]), nil
					})
					yes := vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
						return vm.Decision{Approved: true}, nil
					})
					opts := agent.Options{Context: c, Check: compiler.Config{Tools: c.Tools}, Tools: caller, Approver: yes}
					st := openStore(t)
					r, err := st.Create(&Plan{Source: src}, "g", Settings{Goal: &GoalSpec{Goal: "Settle c-1.", Mode: mode}})
					if err != nil {
						t.Fatal(err)
					}
					filled := func() (*llmtest.Server, *fill.Model) {
						srv := p.start(func(*llmtest.Request) llmtest.Reply { return llmtest.Text(v.answer, llm.Usage{}) })
						return srv, &fill.Model{Model: p.open(srv.Settings("filler", "filler"))}
					}

					// The first process dies while it asks for turn 2.
					ctx, die := context.WithCancel(context.Background())
					defer die()
					first := llmtest.Script(llmtest.Text(steps, llm.Usage{}))
					n := 0
					srv := p.start(func(req *llmtest.Request) llmtest.Reply {
						n++
						if n == 1 {
							return first(req)
						}
						die()
						return llmtest.Reply{Pieces: []string{"output †state.paid\n"}, Before: map[int]<-chan struct{}{0: ctx.Done()}}
					})
					defer srv.Close()
					fsrv, filler := filled()
					defer fsrv.Close()
					o := opts
					o.Planner, o.Filler = p.open(srv.Settings("planner", "judge")), filler
					o.Goal, o.Mode, o.Journal = "Settle c-1.", mode, &goalJournal{run: r}
					if res, err := agent.Run(ctx, o); err != nil || res.Status == agent.GoalCompleted {
						t.Fatalf("the first process: %v %v", res, err)
					}
					if calls["lookup"] != 1 || calls["pay"] != 1 || len(fsrv.Requests()) != 1 {
						t.Fatalf("the first process made the calls %v, and asked the filler %d times", calls, len(fsrv.Requests()))
					}

					// Resumed, the model writes the whole plan again.
					srv2 := p.start(llmtest.Script(llmtest.Text(steps+"output †state.paid\n", llm.Usage{})))
					defer srv2.Close()
					fsrv2, filler2 := filled()
					defer fsrv2.Close()
					if r, err = st.Resume("g", true); err != nil {
						t.Fatal(err)
					}
					opts.Planner, opts.Filler = p.open(srv2.Settings("planner", "judge")), filler2
					res, err := r.Pursue(context.Background(), opts, nil)
					if err != nil || res.Status != agent.GoalCompleted || res.Output != "pay 500 for Ada" {
						t.Fatalf("resumed: %v %v", res, err)
					}
					if calls["lookup"] != 1 || calls["pay"] != 1 || calls["remind"] != 0 {
						t.Errorf("the calls in all: %v", calls)
					}
					last := res.Turns[len(res.Turns)-1]
					for _, s := range last.Steps {
						if s.Status != vm.StatusCompleted || s.Repeats == nil || s.Repeats.Turn != 1 {
							t.Errorf("turn %d, step %s: %s, repeats %+v", last.N, s.ID, s.Status, s.Repeats)
						}
					}
					if k := len(fsrv2.Requests()); k != 0 {
						t.Errorf("the resumed process asked the filler %d times", k)
					}
				})
			}
		}
	}
}
