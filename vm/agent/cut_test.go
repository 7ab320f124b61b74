package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/obelisk-plan/obelisk/internal/testsize"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// journalingApprover approves every request and journals it as
// "approve STEP".
type journalingApprover struct{ j *journal }

func (a journalingApprover) Approve(_ context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	a.j.add("approve %s", req.Step)
	return vm.Decision{Approved: true}, nil
}

// cutKind alternates the ways an answer is cut short: at the size limit,
// and by a stream that ends before the answer's last events.
func cutKind(k int) llmtest.Cut {
	if k%2 == 0 {
		return llmtest.AtLimit
	}
	return llmtest.Abort
}

// TestScenarioCutAtEveryByte: the refund plan, cut short at every byte
// offset (by default, every byte near a line's start and the marks below,
// every fifth elsewhere), by both providers, in eager mode. Nothing unfinished runs: the
// billing history is looked up only once the next statement has begun,
// and the irreversible refund, whose when and approve lines follow its
// call line, only once the output line has begun, and then with its
// approval. The model is asked to go on, and the cut is an event of the
// goal.
func TestScenarioCutAtEveryByte(t *testing.T) {
	plan := refundPlan
	refundAt := strings.Index(plan, "refund:")
	outputAt := strings.Index(plan, "output ")
	// By default the cuts near where what may run changes (a line's
	// start, the refund's and the output's) are every byte, and every
	// fifth elsewhere; every byte in the full run.
	stride := testsize.Pick(t, 5, 1)
	marks := []int{refundAt + len("refund:"), outputAt + len("output {")}
	for i := range plan {
		if i == 0 || plan[i-1] == '\n' {
			marks = append(marks, i)
		}
	}
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for k := 0; k <= len(plan); k++ {
				if k%stride != 0 && !slices.ContainsFunc(marks, func(m int) bool { return k >= m-3 && k <= m+3 }) {
					continue
				}
				j := &journal{}
				var cuts []string
				var mu sync.Mutex
				srv := p.start(llmtest.Script(
					llmtest.Reply{Pieces: []string{plan[:k]}, Cut: cutKind(k)},
					llmtest.Text("output \"asked again\"\n", llm.Usage{})))
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer's last order if their billing history allows it.",
					Context: c, Check: cfg, Tools: refundToolbox(j), Approver: journalingApprover{j},
					Observer: func(e vm.Event) {
						if e.Type == AnswerCut {
							mu.Lock()
							cuts = append(cuts, e.Message)
							mu.Unlock()
						}
					},
					Planner: p.open(srv.Settings("planner", "judge"))})
				reqs := srv.Requests()
				srv.Close()
				if err != nil {
					t.Fatal(err)
				}
				at := fmt.Sprintf("cut at %d (%q, %v)", k, plan[max(0, k-20):k], cutKind(k))
				history, refunds, approvals := j.count("call checkBillingHistory"), j.count("call issueRefund"), j.count("approve refund")
				switch {
				case k <= refundAt && history > 0:
					t.Errorf("%s: the billing history was looked up before its statement was known to be whole", at)
				case k >= refundAt+len("refund:") && history != 1:
					t.Errorf("%s: the billing history was looked up %d times, want 1", at, history)
				case k <= outputAt && refunds > 0:
					t.Errorf("%s: the refund ran before its statement was known to be whole (approvals %d)", at, approvals)
				case refunds > approvals:
					t.Errorf("%s: the refund ran without its approval", at)
				case k >= outputAt+len("output {") && refunds != 1:
					t.Errorf("%s: the refund ran %d times, want 1", at, refunds)
				}
				if len(res.Turns) == 0 || res.Turns[0].Cut == "" || len(cuts) == 0 {
					t.Errorf("%s: the answer was not taken as cut (status %s, %v)", at, res.Status, res.Err)
				} else if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "was cut short") {
					t.Errorf("%s: the model was not asked to go on: %d requests", at, len(reqs))
				}
			}
		})
	}
}

// TestScenarioCutJSON: an answer in the JSON form cut short inside its
// second call runs the first call, whose JSON is whole, and not the
// second.
func TestScenarioCutJSON(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			answer := `{"calls": [` + call("lookup", "customer", `"id": "†input.id"`) + `, ` + call("notify", "sent", `"name": "†state.customer.name", "score": 1`) + `], "output": null}`
			cut := strings.Index(answer, `"_approve"`)
			cut = strings.Index(answer[cut+1:], `"_approve"`) + cut + 1 // in the second call
			srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{answer[:cut]}, Cut: llmtest.AtLimit},
				llmtest.Text("output \"asked again\"\n", llm.Usage{})))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			res, err := Run(context.Background(), Options{Goal: "Notify c-1.", Form: FormJSON, Context: c, Check: cfg, Tools: customerToolbox(j),
				Planner: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if j.count("call lookup") != 1 || j.count("call notify") != 0 {
				t.Errorf("calls %v", j.all())
			}
			if res.Turns[0].Cut == "" || len(res.Turns[0].Rejected) > 0 {
				t.Errorf("turn 1: cut %q, rejected %v", res.Turns[0].Cut, res.Turns[0].Rejected)
			}
		})
	}
}

// TestScenarioCutLazy: in lazy mode an answer cut short runs nothing, even
// when what arrived checks; the model is asked for the plan again.
func TestScenarioCutLazy(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			cut := strings.Index(refundPlan, "  approve")
			srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{refundPlan[:cut]}, Cut: llmtest.Abort},
				llmtest.Text(refundPlan, llm.Usage{})))
			defer srv.Close()
			c, cfg := refundContext(t)
			res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Mode: Lazy, Context: c, Check: cfg,
				Tools: refundToolbox(j), Approver: journalingApprover{j}, Planner: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted || j.count("call issueRefund") != 1 || j.count("approve refund") != 1 || res.Turns[0].Repairs != 1 {
				t.Errorf("status %s (%v), repairs %d, journal %v", res.Status, res.Err, res.Turns[0].Repairs, j.all())
			}
			if reqs := srv.Requests(); len(reqs) != 2 || len(reqs[1].Messages) != 3 || !strings.Contains(reqs[1].Messages[2].Content, "cut short") {
				t.Errorf("the model was not asked again")
			}
		})
	}
}

// TestGenerateCut: a plan cut short is never written: it is asked for
// again, and when no repair is left, Generate fails with ErrTruncated.
func TestGenerateCut(t *testing.T) {
	// The plan cut before its approve line checks: only the stop reason
	// tells that it is not whole.
	cut := refundPlan[:strings.Index(refundPlan, "  approve")] + "output {confirmationId: †state.refund.confirmationId}\n"
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{cut}, Cut: llmtest.AtLimit}, llmtest.Text(refundPlan, llm.Usage{})))
			defer srv.Close()
			c, cfg := refundContext(t)
			var rounds []Round
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 1,
				Model: p.open(srv.Settings("planner", "judge")), Round: func(r Round) { rounds = append(rounds, r) }})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 2 || !strings.Contains(string(g.Plan), "approve") || len(rounds) != 2 || rounds[0].Cut == "" {
				t.Fatalf("ok %v after %d rounds, plan:\n%s", g.OK, g.Rounds, g.Plan)
			}

			srv2 := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{cut}, Cut: llmtest.Abort}))
			defer srv2.Close()
			g, err = Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 1, MaxRepairs: -1,
				Model: p.open(srv2.Settings("planner", "judge"))})
			if !errors.Is(err, llm.ErrTruncated) || g.OK || g.Plan != nil {
				t.Fatalf("err %v, ok %v, plan %q", err, g.OK, g.Plan)
			}
		})
	}
}

// TestAnswerCutReplaysCut: an answer recorded but not whole (cut short by
// the provider, or by the death of its process) is given again as cut.
func TestAnswerCutReplaysCut(t *testing.T) {
	a := &answers{journal: &memJournal{texts: map[string]string{"1.0": "a: f()\n  retr"}}}
	a.at(1, 0)
	text, _, err := llm.Collect(context.Background(), a, &llm.Request{})
	if text != "a: f()\n  retr" || !errors.Is(err, llm.ErrTruncated) {
		t.Errorf("text %q, err %v", text, err)
	}
}

// memJournal is a Journal of recorded answers, none whole.
type memJournal struct {
	Journal
	texts map[string]string
}

func (m *memJournal) Answer(turn, k int) (string, bool, llm.Usage, bool, error) {
	s, ok := m.texts[fmt.Sprintf("%d.%d", turn, k)]
	return s, false, llm.Usage{}, ok, nil
}

func (m *memJournal) EndAnswer(int, int, llm.Usage) error { return nil }

// TestTokensCountEveryRequest: the goal's token totals are the sum of
// every request it made: the planner's answer in the JSON form (whose
// usage comes after its JSON), the filler's answer for a hole, and the
// evaluator's judgment.
func TestTokensCountEveryRequest(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			lookup := strings.Replace(call("lookup", "customer", `"id": "†input.id"`), `"_criterion": null`, `"_criterion": "the customer exists"`, 1)
			score := call("score", "score", `"orders": {"_hole": "the number of orders of †state.customer"}`)
			answer := `{"calls": [` + lookup + `, ` + score + `], "output": {"_expr": "{score: †state.score}"}}`
			planner := llm.Usage{Input: 2100, Output: 310}
			filler := llm.Usage{Input: 400, Output: 9}
			judge := llm.Usage{Input: 150, Output: 20}
			srv := p.start(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
				"planner": llmtest.Script(llmtest.Reply{Pieces: []string{answer[:100], answer[100:]}, Usage: planner}),
				"filler":  llmtest.Script(llmtest.Text(`{"value": 7}`, filler)),
				"judge":   llmtest.Script(llmtest.Text(`{"verdict": "pass", "facts": {}}`, judge)),
			}))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			settings := srv.Settings("planner", "judge")
			fs := settings
			fs.Model = "filler"
			res, err := Run(context.Background(), Options{Goal: "Score c-1.", Form: FormJSON, Context: c, Check: cfg, Tools: customerToolbox(j),
				Planner: p.open(settings), Evaluator: p.open(settings.ForEvaluator()), Filler: &fill.Model{Model: p.open(fs)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted {
				t.Fatalf("status %s (%v)", res.Status, res.Err)
			}
			tokens := res.GoalExecution.Tokens
			want := map[string]llm.Usage{"planner": planner, "filler": filler, "evaluator": judge}
			var total llm.Usage
			for k, u := range want {
				u.Requests = 1
				want[k] = u
				total = total.Add(u)
				if tokens[k] != u {
					t.Errorf("%s tokens %+v, want %+v", k, tokens[k], u)
				}
			}
			if tokens["total"] != total {
				t.Errorf("total %+v, want %+v", tokens["total"], total)
			}
		})
	}
}

// TestScenarioCutJSONAtEveryByte: the refund plan in the JSON form, cut
// short at every byte offset of the refund's call (by default, right
// after its punctuation, near its end and every fifth byte) and every
// eighth elsewhere: the refund, whose call carries its
// condition and its approval, runs only once its call's JSON has closed,
// and then with its approval.
func TestScenarioCutJSONAtEveryByte(t *testing.T) {
	history := call("checkBillingHistory", "billingHistory", `"customerId": "†input.customerId"`)
	refund := strings.NewReplacer(`"_when": null`, `"_when": "†state.billingHistory.orders > 0"`, `"_approve": null`, `"_approve": "Issue this refund?"`).
		Replace(call("issueRefund", "refund", `"customerId": "†input.customerId", "amount": "†input.amount"`))
	answer := `{"calls": [` + history + `, ` + refund + `], "output": {"_expr": "{confirmationId: †state.refund.confirmationId}"}}`
	refundStart := strings.Index(answer, refund)
	refundEnd := refundStart + len(refund)
	// By default the call is cut right after each of its JSON's
	// punctuation (where a prefix could look whole) and near its end, and
	// at every fifth byte elsewhere; at every byte in the full run.
	stride := testsize.Pick(t, 5, 1)
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for k := 0; k <= len(answer); k++ {
				if (k < refundStart || k > refundEnd+2) && k%8 != 0 {
					continue // every byte of the refund's call, every eighth elsewhere
				}
				if k%stride != 0 && k > 0 && !strings.ContainsRune(`{}[]:,"`, rune(answer[k-1])) && k < refundEnd-2 {
					continue // by default: in the call, right after its syntax and near its end, else every fifth
				}
				j := &journal{}
				// One answer: the goal fails when it asks for the next (the
				// text form's test follows the goal on).
				srv := p.start(llmtest.Script(llmtest.Reply{Pieces: []string{answer[:k]}, Cut: cutKind(k)}))
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer's last order if their billing history allows it.", Form: FormJSON,
					Context: c, Check: cfg, Tools: refundToolbox(j), Approver: journalingApprover{j}, Planner: p.open(srv.Settings("planner", "judge"))})
				srv.Close()
				if err != nil {
					t.Fatal(err)
				}
				refunds, approvals := j.count("call issueRefund"), j.count("approve refund")
				switch {
				case k < refundEnd && refunds > 0:
					t.Errorf("cut at %d (%q): the refund ran before its call was whole (approvals %d)", k, answer[max(0, k-30):k], approvals)
				case refunds > approvals:
					t.Errorf("cut at %d: the refund ran without its approval", k)
				case k >= refundEnd && refunds != 1:
					t.Errorf("cut at %d: the refund ran %d times, want 1", k, refunds)
				}
				if res.Turns[0].Cut == "" && k < refundEnd {
					t.Errorf("cut at %d: the answer was not taken as cut", k)
				}
			}
		})
	}
}
