package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

// withEnv runs the command line with the given environment and returns
// the exit status, stdout and stderr.
func withEnv(t *testing.T, environ map[string]string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("OBELISK_STATE_DIR", t.TempDir()) // goals are journaled
	var stdout, stderr bytes.Buffer
	e := &env{Env: cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, getenv: func(k string) string { return environ[k] }}
	code := run(context.Background(), args, e)
	return code, stdout.String(), stderr.String()
}

// The tools of the command tests, as an MCP tools/list result.
const toolsJSON = `{"tools": [
  {"name": "lookup", "description": "Looks up a customer.",
   "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
   "outputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "orders": {"type": "integer"}}, "required": ["name", "orders"]},
   "annotations": {"readOnlyHint": true}},
  {"name": "score",
   "inputSchema": {"type": "object", "properties": {"orders": {"type": "integer"}}, "required": ["orders"]},
   "outputSchema": {"type": "number"}, "annotations": {"readOnlyHint": true}},
  {"name": "notify",
   "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "score": {"type": "number"}}, "required": ["name", "score"]},
   "outputSchema": {"type": "object", "properties": {"sent": {"type": "boolean"}}, "required": ["sent"]},
   "annotations": {"idempotentHint": true, "destructiveHint": false}}
]}`

const brokenAnswer = `a: lookup(id: †input.id) -> †state.customer
b: score(orders: †state.customer.name) -> †state.score
c: notify(name: †state.customer.name, score: †state.score) -> †state.sent
output {sent: †state.sent.sent}
`

const fixedAnswer = `a: lookup(id: †input.id) -> †state.customer
b: score(orders: †state.customer.orders) -> †state.score
c: notify(name: †state.customer.name, score: †state.score) -> †state.sent
output {sent: †state.sent.sent}
`

// TestGenerateCutAnswer: an answer the provider cut at its size limit is
// never written, even when what arrived checks; with no repair left, the
// command fails and says why.
func TestGenerateCutAnswer(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Reply{Pieces: []string{fixedAnswer}, Cut: llmtest.AtLimit, Usage: llm.Usage{Input: 700, Output: 50}}))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, toolsJSON)
	out := filepath.Join(dir, "score.plan")
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "generate",
		"--goal", "Score customer c-1 and tell them.", "--tools", tools, "--input", `{"id": "c-1"}`,
		"--base-url", srv.URL+"/v1", "--model", "planner", "--max-repairs", "0", "-o", out)
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "cut short") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the plan was written: %v", err)
	}
}

func TestGenerateWithoutProvider(t *testing.T) {
	code, stdout, stderr := withEnv(t, nil, "generate", "--goal", "Refund order 7.")
	if code != exitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"no model provider is configured", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--base-url URL --model NAME", "Ollama"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestGenerateCommand: the command asks the server given by --base-url,
// sends the diagnostics back, and writes the repaired plan, which checks.
func TestGenerateCommand(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text(brokenAnswer, llm.Usage{Input: 700, Output: 50}),
		llmtest.Text("```plan\n"+fixedAnswer+"```", llm.Usage{Input: 900, Output: 55}),
	))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, toolsJSON)
	out := filepath.Join(dir, "score.plan")
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "generate",
		"--goal", "Score customer c-1 and tell them.", "--tools", tools, "--input", `{"id": "c-1"}`,
		"--base-url", srv.URL+"/v1", "--model", "planner", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stdout != "" || !strings.Contains(stderr, "wrote "+out) || !strings.Contains(stderr, "2 rounds (1 repair, text answers); prompt 700 tokens; tokens: 1600 in, 105 out, 2 requests") {
		t.Errorf("stdout %q, stderr:\n%s", stdout, stderr)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[0].Model != "planner" {
		t.Fatalf("requests %+v", reqs)
	}
	code, _, stderr = withEnv(t, nil, "check", out)
	if code != exitOK {
		t.Errorf("the written plan does not check:\n%s", stderr)
	}
	plan, _ := os.ReadFile(out)
	if !strings.Contains(string(plan), "b: score(orders: †state.customer.orders) -> †state.score") {
		t.Errorf("plan:\n%s", plan)
	}
}

// TestGenerateNeverRepairs: the last diagnostics are printed, nothing is
// written, and the exit status says the input has errors.
func TestGenerateNeverRepairs(t *testing.T) {
	srv := llmtest.NewAnthropic(llmtest.Script(
		llmtest.Text(brokenAnswer, llm.Usage{Input: 10, Output: 5}),
		llmtest.Text(brokenAnswer, llm.Usage{Input: 10, Output: 5}),
	))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, toolsJSON)
	out := filepath.Join(dir, "score.plan")
	code, _, stderr := withEnv(t, map[string]string{"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": srv.URL}, "generate",
		"--goal", "Score c-1.", "--tools", tools, "--input", `{"id": "c-1"}`, "--max-repairs", "1", "-o", out)
	if code != exitInput {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written: %v", out, err)
	}
	for _, want := range []string{"plan.plan:2:18: error: argument orders of score wants int", "[type-mismatch]", "still has errors after 1 repair; nothing written"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestAgentCommand: the agent command runs the goal against the server
// named by the environment, with tools from a context .plan file answered
// by a mocks file, and prints the result with its goal execution summary.
func TestAgentCommand(t *testing.T) {
	srv := llmtest.NewAnthropic(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
		"planner": llmtest.Script(llmtest.Text("a: lookup(id: †input.id) -> †state.customer\n  expect \"a real customer\"\nb: score(orders: †state.customer.orders) -> †state.score\noutput {name: †state.customer.name, score: †state.score}\n", llm.Usage{Input: 500, Output: 40})),
		"judge":   llmtest.Script(llmtest.Text(`{"verdict": "pass", "note": "", "facts": {"customer_name": "Ada"}}`, llm.Usage{Input: 60, Output: 9})),
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctxPlan := filepath.Join(dir, "customer.plan")
	writeFile(t, ctxPlan, `tool lookup(id: string) -> {name: string, orders: int} pure
tool score(orders: int) -> number pure

input {
  id: string = "c-1"
}
`)
	mocks := filepath.Join(dir, "mocks.json")
	writeFile(t, mocks, `{"lookup": {"result": {"name": "Ada", "orders": 7}}, "score": {"result": 10.5}}`)
	events := filepath.Join(dir, "events.jsonl")
	code, stdout, stderr := withEnv(t, map[string]string{"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": srv.URL, "OBELISK_MODEL": "planner", "OBELISK_EVAL_MODEL": "judge", "MAX_GOAL_STEPS": "12"},
		"agent", "--goal", "Score customer c-1.", "--context", ctxPlan, "--mocks", mocks, "--events", events)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var got struct {
		Status        string         `json:"status"`
		Output        map[string]any `json:"output"`
		GoalExecution struct {
			StepsRun int `json:"stepsRun"`
			Facts    []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"facts"`
			Tokens map[string]struct{ Input, Output int } `json:"tokens"`
		} `json:"goalExecution"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not the result: %v\n%s", err, stdout)
	}
	g := got.GoalExecution
	if got.Status != "completed" || got.Output["score"] != 10.5 || g.StepsRun != 2 || len(g.Facts) != 1 || g.Facts[0].Key != "customer_name" ||
		g.Tokens["planner"].Input != 500 || g.Tokens["evaluator"].Output != 9 {
		t.Errorf("result %+v", got)
	}
	if !strings.Contains(stderr, "completed after 1 turn (eager mode, text answers): 2 steps run, 0 replans, 0 repairs, 1 fact") {
		t.Errorf("stderr:\n%s", stderr)
	}
	b, _ := os.ReadFile(events)
	for _, want := range []string{`"type":"turn-started"`, `"type":"step-verdict"`, `"type":"goal-finished"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the events lack %s", want)
		}
	}
	// Without an implementation for a tool, the command says so first.
	code, _, stderr = withEnv(t, map[string]string{"ANTHROPIC_API_KEY": "test"}, "agent", "--goal", "x", "--context", ctxPlan)
	if code != exitUsage || !strings.Contains(stderr, "no implementation for lookup, score") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// TestAgentRefundExample runs the agent on the refund example's context
// document and mocks, as the README shows: the model is given the
// example's tools, input and plan, follows the plan, and the approval
// gate is approved by --yes.
func TestAgentRefundExample(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory
refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund
  when †state.billingHistory.orders > 0
  approve "Issue this refund?"
output {confirmationId: †state.refund.confirmationId}
`, llm.Usage{Input: 1500, Output: 70})))
	defer srv.Close()
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OBELISK_MODEL": "local"},
		"agent", "--goal", "Refund the customer's last order if their billing history allows it.",
		"--context", "../../examples/refund.json", "--mocks", "../../examples/refund.mocks.json", "--yes", "--evaluate=false")
	if code != exitOK || !strings.Contains(stdout, `"confirmationId": "RF-2025-0611-48213"`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	prompt := srv.Requests()[0].Messages[0].Content
	for _, want := range []string{
		"# Refunds an amount to the customer's original payment method.\ntool issueRefund(customerId: string, amount: number)",
		`customerId: string = "cust_123"`,
		"[plan] The plan so far",
		"history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory  # not run yet",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// TestAgentHTTPTool: a tool whose definition in a tools file has an http
// block is called over HTTP by the agent's runs.
func TestAgentHTTPTool(t *testing.T) {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"city": %q, "high": 21.5}`, strings.TrimPrefix(r.URL.Path, "/forecast/"))
	}))
	defer api.Close()
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text("f: forecast(city: \"Lyon\") -> †state.f\noutput †state.f.high\n", llm.Usage{})))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, `{"tools": [{"name": "forecast",
  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
  "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "high": {"type": "number"}}, "required": ["city", "high"]},
  "annotations": {"readOnlyHint": true},
  "http": {"url": "`+api.URL+`/forecast/{city}"}}]}`)
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OBELISK_MODEL": "local"},
		"agent", "--goal", "How warm is Lyon?", "--tools", tools, "--allow-net="+api.Listener.Addr().String())
	if code != exitOK || !strings.Contains(stdout, `"output": 21.5`) || calls.Load() != 1 {
		t.Fatalf("exit %d, calls %d\nstdout %s\nstderr %s", code, calls.Load(), stdout, stderr)
	}
}
