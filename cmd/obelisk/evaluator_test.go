package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

// judgedPlan has a criterion in words, which only an evaluator judges.
const judgedPlan = `tool lookup(id: string) -> {name: string} pure

a: lookup(id: "c-1") -> †state.customer
  expect "The customer is a real person."

output {
  name: †state.customer.name
}
`

// TestRunEvaluatorRules: run --evaluator RULES.json judges the criteria in
// words with the operator's verdicts: the unjudged warning is gone, a pass
// completes the run, a fail fails the step, a criterion the rules do not
// name fails it too (no default verdict), and a bad rules file is refused
// before the run, exit 2. Without the flag, the warning and the summary
// name it.
func TestRunEvaluatorRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"c.plan":       judgedPlan,
		"c.mocks.json": `{"lookup": {"result": {"name": "Ada"}}}`,
		"pass.json":    `{"The customer is a real person.": "pass"}`,
		"fail.json":    `{"The customer is a real person.": {"verdict": "fail", "note": "a test account"}}`,
		"other.json":   `{"Something else.": "pass"}`,
		"star.json":    `{"*": "partial"}`,
		"bad.json":     `{"The customer is a real person.": "maybe"}`,
	})
	t.Chdir(dir)
	code, stdout, stderr := runHere(t, "", "run", "--no-journal", "c.plan")
	if code != exitOK || !strings.Contains(stderr, "(run with --evaluator model or --evaluator RULES.json, or use obelisk agent)") ||
		!strings.Contains(stderr, "1 criterion was not judged: no evaluator is configured (--evaluator)") {
		t.Errorf("without --evaluator: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, rules := range []string{"pass.json", "star.json"} {
		code, stdout, stderr = runHere(t, "", "run", "--no-journal", "--evaluator", rules, "c.plan")
		if code != exitOK || !strings.Contains(stdout, `"name": "Ada"`) || strings.Contains(stderr, "unjudged") || strings.Contains(stderr, "not judged") {
			t.Errorf("--evaluator %s: exit %d\nstdout:\n%s\nstderr:\n%s", rules, code, stdout, stderr)
		}
	}
	code, stdout, stderr = runHere(t, "", "run", "--no-journal", "--evaluator", "fail.json", "c.plan")
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "a failed") || !strings.Contains(stderr, "a test account") {
		t.Errorf("--evaluator fail.json: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runHere(t, "", "run", "--no-journal", "--evaluator", "other.json", "c.plan")
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "the rules state no verdict for this criterion") {
		t.Errorf("--evaluator other.json: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, bad := range []string{"bad.json", "nosuch.json"} {
		code, stdout, stderr = runHere(t, "", "run", "--state-dir", "st", "--evaluator", bad, "c.plan")
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "obelisk run: --evaluator") {
			t.Errorf("--evaluator %s: exit %d\nstdout:\n%s\nstderr:\n%s", bad, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "st")); !os.IsNotExist(err) {
		t.Errorf("a refused evaluator started a run: %v", err)
	}
}

// TestRunEvaluatorModel: run --evaluator model asks the evaluator tier of
// the model flags (--eval-model) for each criterion's verdict, with the
// step's result in the request.
func TestRunEvaluatorModel(t *testing.T) {
	var asked []string
	srv := llmtest.NewOpenAI(llmtest.ByModel(map[string]func(*llmtest.Request) llmtest.Reply{
		"judge": func(r *llmtest.Request) llmtest.Reply {
			asked = append(asked, r.Messages[len(r.Messages)-1].Content)
			return llmtest.Text(`{"verdict": "fail", "note": "not a person"}`, llm.Usage{Input: 60, Output: 9})
		},
	}))
	defer srv.Close()
	dir := writeFiles(t, map[string]string{
		"c.plan":       judgedPlan,
		"c.mocks.json": `{"lookup": {"result": {"name": "Ada"}}}`,
	})
	t.Chdir(dir)
	code, stdout, stderr := withEnv(t, map[string]string{"OPENAI_API_KEY": "test"}, "run", "--no-journal", "--evaluator", "model",
		"--base-url", srv.URL+"/v1", "--eval-model", "judge", "c.plan")
	if code != exitInput || stdout != "" || !strings.Contains(stderr, "not a person") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "The customer is a real person.") || !strings.Contains(asked[0], `"Ada"`) {
		t.Errorf("the evaluator was asked %q", asked)
	}
	code, _, stderr = withEnv(t, map[string]string{}, "run", "--no-journal", "--evaluator", "model", "c.plan")
	if code != exitUsage || !strings.Contains(stderr, "obelisk run: --evaluator model: ") {
		t.Errorf("no provider: exit %d\n%s", code, stderr)
	}
}
