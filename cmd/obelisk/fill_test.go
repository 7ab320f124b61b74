package main

import (
	"github.com/obelisk-plan/obelisk/internal/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/vm"
)

const holePlan = `tool checkBillingHistory(customerId: string) -> {orders: int, refundable: number} pure
tool issueRefund(customerId: string, amount: number) -> {confirmationId: string} irreversible

input {
  customerId: string
}

history: checkBillingHistory(customerId: †input.customerId) -> †state.history
refund: issueRefund(customerId: †input.customerId, amount: ? "the refundable amount from †state.history") -> †state.receipt
  approve "Refund the customer?"

output {confirmationId: †state.receipt.confirmationId}
`

const holeMocks = `{
  "checkBillingHistory": {"result": {"orders": 3, "refundable": 42.5}},
  "issueRefund": {"cases": [{"args": {"amount": 42.5}, "result": {"confirmationId": "RF-42"}}], "error": {"code": "wrong-amount", "message": "not the refundable amount"}}
}`

func writeHolePlan(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "refund.plan"), holePlan)
	writeFile(t, filepath.Join(dir, "refund.mocks.json"), holeMocks)
	writeFile(t, filepath.Join(dir, "refund.input.json"), `{"customerId": "c1"}`)
	return dir
}

// TestRunFillsHoleFromModel: obelisk run asks the model given by
// --base-url for the hole's value, the person sees it at the approval gate
// as filled in by a model, and the run passes it to the tool.
func TestRunFillsHoleFromModel(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`{"value": 42.5}`, llm.Usage{Input: 320, Output: 7})))
	defer srv.Close()
	dir := writeHolePlan(t)
	var stdout, stderr strings.Builder
	e := &env{Env: cli.Env{Stdin: strings.NewReader("y\n"), Stdout: &stdout, Stderr: &stderr}, getenv: func(string) string { return "" }}
	code := run(t.Context(), []string{"run", "--no-journal", "--approve", "--base-url", srv.URL + "/v1", "--model", "local", filepath.Join(dir, "refund.plan")}, e)
	if code != exitOK || !strings.Contains(stdout.String(), `"confirmationId": "RF-42"`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), `"amount": 42.5`) || !strings.Contains(stderr.String(), "filled in by a model: amount") {
		t.Errorf("the approval does not show the filled value:\n%s", stderr.String())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
	if !strings.Contains(stderr.String(), "fills: tokens: 320 in, 7 out, 1 request") {
		t.Errorf("the fill's tokens are not reported:\n%s", stderr.String())
	}
}

// TestRunWithoutModel: a plan with a hole, and no model or fills file, is
// refused before anything runs, with what to give.
func TestRunWithoutModel(t *testing.T) {
	dir := writeHolePlan(t)
	code, stdout, stderr := withEnv(t, nil, "run", "--no-journal", "--yes", filepath.Join(dir, "refund.plan"))
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "step refund has something left for a model to complete when it runs, and no model is configured: give a fills file (--fills, or NAME.fills.json beside the plan), or a model") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestRunFillsFile: NAME.fills.json beside the plan answers its holes, so
// that it runs offline; a wrong answer in it is refused like a model's,
// and the tool is not called with it.
func TestRunFillsFile(t *testing.T) {
	dir := writeHolePlan(t)
	writeFile(t, filepath.Join(dir, "refund.fills.json"), `{"refund": {"amount": 42.5}}`)
	code, stdout, stderr := withEnv(t, nil, "run", "--no-journal", "--yes", filepath.Join(dir, "refund.plan"))
	if code != exitOK || !strings.Contains(stdout, `"confirmationId": "RF-42"`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	writeFile(t, filepath.Join(dir, "refund.fills.json"), `{"refund": {"amount": "all of it"}}`)
	code, stdout, stderr = withEnv(t, nil, "run", "--no-journal", "--yes", filepath.Join(dir, "refund.plan"))
	if code != exitInput || !strings.Contains(stderr, `refund failed: the model's answer for argument amount of issueRefund does not fit, after 3 tries: amount: the string "all of it" is not a number; it was not used [invalid-fill]`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestDryRunShowsHolesAndTasks: a dry run says which arguments are known
// only after the run and which candidates each task chooses among.
func TestDryRunShowsHolesAndTasks(t *testing.T) {
	dir := writeHolePlan(t)
	plan := filepath.Join(dir, "refund.plan")
	writeFile(t, plan, strings.Replace(holePlan, "output {confirmationId: †state.receipt.confirmationId}\n", "", 1)+`
state {
  note: {sent: bool}
}

note: task "tell †input.customerId about †state.receipt" using [sendSms, sendEmail] -> †state.note
output †state.note
tool sendSms(text: string) -> {sent: bool} idempotent
tool sendEmail(to: string, body: string) -> {sent: bool} idempotent
`)
	code, stdout, stderr := withEnv(t, nil, "dry-run", "--symbolic", "--no-mocks", plan)
	for _, want := range []string{
		"left to a model when the step runs:",
		`refund: argument amount of issueRefund, of type number: "the refundable amount from †state.history", known after the run`,
		`note: task "tell †input.customerId about †state.receipt": a model chooses one of sendSms, sendEmail; its result is of type {sent: bool}`,
		"problems:\n  none found",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the dry run lacks %q\nexit %d\n%s\n%s", want, code, stdout, stderr)
		}
	}
}

// TestCheckHints: a hints file declares the valid hints; a near miss is
// taken as the closest with a warning, and an unknown one is dropped with
// a warning; neither is an error.
func TestCheckHints(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hints.json"), `{"researcher": {"tools": ["webSearch"], "aliases": ["analyst"]}, "coder": {"tools": ["runCode"]}}`)
	writeFile(t, filepath.Join(dir, "p.plan"), `tool webSearch(query: string) -> {text: string} pure
tool runCode(code: string) -> {text: string} pure

state {
  a: {text: string}
  b: {text: string}
}

a: task "look it up" -> †state.a
  hint reseacher
b: task "work it out" using [runCode, webSearch] -> †state.b
  hint wizard
output [†state.a, †state.b]
`)
	code, _, stderr := withEnv(t, nil, "check", "--hints", filepath.Join(dir, "hints.json"), filepath.Join(dir, "p.plan"))
	for _, want := range []string{
		"p.plan:10:8: warning: hint reseacher is taken as researcher, the closest hint the operator declares [routing-hint]",
		"p.plan:12:8: warning: hint wizard is not one the operator declares (coder, researcher), so it is dropped and routes nothing [routing-hint]",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check lacks %q:\n%s", want, stderr)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d: a hint is never an error", code)
	}
	writeFile(t, filepath.Join(dir, "bad.json"), `{"researcher": {"tool": ["webSearch"]}}`)
	code, _, stderr = withEnv(t, nil, "check", "--hints", filepath.Join(dir, "bad.json"), filepath.Join(dir, "p.plan"))
	if code != exitUsage || !strings.Contains(stderr, `hint researcher: json: unknown field "tool"`) {
		t.Errorf("a wrong hints file: exit %d\n%s", code, stderr)
	}
}

// holedDiamond fills the address of its first call: a model's answer.
const holedDiamond = `input {
  base: string
}

a: http.get(url: ? "the address of page a: †input.base followed by /a") -> †state.a
b: http.get(url: †input.base + "/b?from=" + †state.a.body.value) -> †state.b

output †state.b.body.value
`

// TestKillAfterFillAndResume kills a run's process with SIGKILL after the
// model filled a hole, while the step's tool is called with it; the
// resumed run calls the tool again with the same value, from the
// journal, and does not ask the model again.
func TestKillAfterFillAndResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "holed.plan"), holedDiamond)
	srv := newStepServer(t)
	srv.setBlock("a")
	model := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`{"value": "`+srv.URL+`/a"}`, llm.Usage{})))
	defer model.Close()
	input := `{"base": "` + srv.URL + `"}`
	state := filepath.Join(dir, "state")

	first := obelisk(t, dir, "run", "--allow-net=127.0.0.1", "--state-dir", state, "--run-id", "r", "--base-url", model.URL+"/v1", "--model", "local", "--input", input, "holed.plan")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if got := <-srv.blocked; got != "a" {
		t.Fatalf("blocked at %s", got)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if err := first.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first process ended with %v, not killed", err)
	}
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("%d requests before the kill", n)
	}
	_, evs := journalLines(t, state, "r")
	filled := 0
	for _, ev := range evs {
		if ev.Type == vm.StepFilled && ev.Verdict == vm.FillAccepted {
			filled++
		}
	}
	if filled != 1 {
		t.Fatalf("%d step-filled events in the journal", filled)
	}

	srv.setBlock("")
	second := runObelisk(t, dir, "resume", "--allow-net=127.0.0.1", "--state-dir", state, "r")
	if second.code != 0 || strings.TrimSpace(second.stdout) != `"b(a())"` {
		t.Fatalf("resume: exit %d\nstdout %s\nstderr %s", second.code, second.stdout, second.stderr)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once: the resumed run asked again", n)
	}
	srv.mu.Lock()
	keys := srv.keys["a"]
	srv.mu.Unlock()
	if len(keys) != 2 || keys[0] != "r/a" || keys[1] != keys[0] {
		t.Errorf("idempotency keys of a: %q, want r/a twice", keys)
	}
	db, err := durable.Open(state, durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	det, err := db.Show("r")
	if err != nil || det.Status != vm.RunCompleted {
		t.Fatalf("the journal says %v %v", det, err)
	}
	if _, err := os.Stat(filepath.Join(state, durable.FileName)); err != nil {
		t.Fatal(err)
	}
}

// TestAgentFillsHole: a plan the agent's model writes may leave an
// argument to be filled when it runs; the planner fills it, and the value
// is checked and passed to the tool.
func TestAgentFillsHole(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text(`history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory
refund: issueRefund(customerId: †input.customerId, amount: ? "half the amount of †input.amount, since the history shows †state.billingHistory.lastChargeback") -> †state.refund
  approve "Issue this refund?"
output {confirmationId: †state.refund.confirmationId}
`, llm.Usage{Input: 900, Output: 80}),
		llmtest.Text(`{"value": 25}`, llm.Usage{Input: 300, Output: 5}),
	))
	defer srv.Close()
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OBELISK_MODEL": "local"},
		"agent", "--goal", "Refund half of the last order.", "--events", filepath.Join(t.TempDir(), "ev.jsonl"),
		"--context", "../../examples/refund.json", "--mocks", "../../examples/refund.mocks.json", "--yes", "--evaluate=false")
	if code != exitOK || !strings.Contains(stdout, `"confirmationId": "RF-2025-0611-48213"`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[0].Content, `†state.billingHistory.lastChargeback = "2024-03-18"`) {
		t.Fatalf("%d requests; the last:\n%s", len(reqs), reqs[len(reqs)-1].Messages[0].Content)
	}
	// The fill's tokens count in the totals.
	if !strings.Contains(stderr, "tokens: 1200 in, 85 out, 2 requests (planner 900 in, 80 out, 1 request, filler 300 in, 5 out, 1 request)") ||
		!strings.Contains(stdout, `"total": {`+"\n"+`        "input": 1200,`) {
		t.Errorf("the totals lack the fill's tokens:\nstdout %s\nstderr %s", stdout, stderr)
	}
}

// TestGenerateHolesAndTasks: generate takes a plan that leaves a value
// and a choice to a model when it runs, and the model is told the
// operator's hints; the plan written runs with a fills file.
func TestGenerateHolesAndTasks(t *testing.T) {
	answer := `a: lookup(id: †input.id) -> †state.customer
b: task "score †state.customer" using [score] -> †state.score
c: notify(name: †state.customer.name, score: ? "the score of †state.customer as a number from †state.score") -> †state.sent
  hint communicator
output {sent: †state.sent.sent}
`
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(answer, llm.Usage{})))
	defer srv.Close()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, toolsJSON)
	hints := filepath.Join(dir, "hints.json")
	writeFile(t, hints, `{"communicator": {"tools": ["notify"]}}`)
	out := filepath.Join(dir, "score.plan")
	code, _, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "generate",
		"--goal", "Score customer c-1 and tell them.", "--tools", tools, "--hints", hints, "--input", `{"id": "c-1"}`,
		"--base-url", srv.URL+"/v1", "--model", "planner", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if prompt := srv.Requests()[0].Messages[0].Content; !strings.Contains(prompt, "hint communicator: notify") {
		t.Errorf("the prompt lacks the hints:\n%s", prompt)
	}
	writeFile(t, filepath.Join(dir, "score.input.json"), `{"id": "c-1"}`)
	writeFile(t, filepath.Join(dir, "score.mocks.json"), `{"lookup": {"result": {"name": "Ada", "orders": 3}}, "score": {"result": 0.5}, "notify": {"result": {"sent": true}}}`)
	writeFile(t, filepath.Join(dir, "score.fills.json"), `{"b": {"candidate": "score", "arguments": {"orders": 3}}, "c": {"score": 0.5}}`)
	code, stdout, stderr := withEnv(t, nil, "run", "--no-journal", "--tools", tools, "--hints", hints, out)
	if code != exitOK || !strings.Contains(stdout, `"sent": true`) {
		t.Fatalf("run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
