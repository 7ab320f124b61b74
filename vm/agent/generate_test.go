package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
)

const customerTools = `
# Looks up a customer.
tool lookup(id: string) -> {name: string, orders: int} pure
tool score(orders: int) -> number pure
tool notify(name: string, score: number) -> {sent: bool} idempotent
`

// testContext returns a context with the given tools and input, and the
// checker configuration that knows the tools.
func testContext(t testing.TB, tools string, input map[string]any) (Context, compiler.Config) {
	t.Helper()
	f, diags := lang.Parse("tools.plan", []byte(tools))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := ContextOf(f)
	c.Input = input
	return c, compiler.Config{Tools: c.Tools}
}

// servers starts a fake server of each kind, answering with the replies
// of script, and returns the models that talk to them.
type fakeProvider struct {
	name  string
	start func(func(*llmtest.Request) llmtest.Reply) *llmtest.Server
	open  func(llm.Settings) llm.Model
}

var fakeProviders = []fakeProvider{
	{"openai", llmtest.NewOpenAI, func(s llm.Settings) llm.Model { return openai.New(s, nil) }},
	{"anthropic", llmtest.NewAnthropic, func(s llm.Settings) llm.Model { return anthropic.New(s, nil) }},
}

const brokenPlan = `a: lookup(id: †input.id) -> †state.customer
b: score(orders: †state.customer.name) -> †state.score
c: notify(name: †state.customer.name, score: †state.score) -> †state.sent
output {sent: †state.sent.sent}
`

const fixedPlan = "```plan\n" + `a: lookup(id: †input.id) -> †state.customer
b: score(orders: †state.customer.orders) -> †state.score
c: notify(name: †state.customer.name, score: †state.score) -> †state.sent
output {sent: †state.sent.sent}
` + "```\n"

func TestGenerateRepairs(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(llmtest.Script(
				llmtest.Text(brokenPlan, llm.Usage{Input: 1000, Output: 80}),
				llmtest.Text(fixedPlan, llm.Usage{Input: 1400, Output: 85}),
			))
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			got, err := Generate(context.Background(), GenerateOptions{Goal: "Score customer c-1 and tell them.", Context: c, Check: cfg,
				Model: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if !got.OK || got.Rounds != 2 {
				t.Fatalf("ok %v after %d rounds, diagnostics:\n%s", got.OK, got.Rounds, got.Diagnostics)
			}
			if got.Usage != (llm.Usage{Input: 2400, Output: 165, Requests: 2}) {
				t.Errorf("usage %+v", got.Usage)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			first := reqs[0].Messages[0].Content
			for _, want := range []string{"tool lookup(id: string) -> {name: string, orders: int} pure", "input {\n  id: string = \"c-1\"\n}", "Goal: Score customer c-1 and tell them."} {
				if !strings.Contains(first, want) {
					t.Errorf("the first prompt lacks %q:\n%s", want, first)
				}
			}
			if !strings.Contains(reqs[0].System, "## Output paths") || !strings.Contains(reqs[0].System, "between 3 and 10 steps") {
				t.Errorf("the system prompt lacks the primer or the limits")
			}
			// The repair request carries the broken answer and the report.
			msgs := reqs[1].Messages
			if len(msgs) != 3 || msgs[1].Role != llm.Assistant || msgs[1].Content != brokenPlan {
				t.Fatalf("repair conversation %+v", msgs)
			}
			rep := msgs[2].Content
			start, end := strings.Index(rep, "{"), strings.LastIndex(rep, "}")
			var doc struct {
				OK          bool `json:"ok"`
				Diagnostics []struct {
					Code    string `json:"code"`
					Excerpt string `json:"excerpt"`
					Range   struct {
						Start struct{ Line int } `json:"start"`
					} `json:"range"`
				} `json:"diagnostics"`
			}
			if err := json.Unmarshal([]byte(rep[start:end+1]), &doc); err != nil {
				t.Fatalf("the repair message has no JSON report: %v\n%s", err, rep)
			}
			if doc.OK || len(doc.Diagnostics) == 0 || doc.Diagnostics[0].Code != "type-mismatch" ||
				doc.Diagnostics[0].Excerpt != "b: score(orders: †state.customer.name) -> †state.score" || doc.Diagnostics[0].Range.Start.Line != 2 {
				t.Errorf("report %+v", doc)
			}
			// The plan is complete: it declares its tools and input, and checks alone.
			f, diags := lang.Parse("out.plan", got.Plan)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if _, cd := compiler.Check(f, compiler.Config{}); cd.HasErrors() {
				t.Errorf("the written plan does not check alone:\n%s\n%s", got.Plan, cd)
			}
			if string(lang.Format(f)) != string(got.Plan) {
				t.Errorf("the plan is not in canonical layout")
			}
			if !strings.Contains(string(got.Plan), "# Looks up a customer.\ntool lookup") {
				t.Errorf("the plan lost the tools' descriptions:\n%s", got.Plan)
			}
		})
	}
}

func TestGenerateNeverRepairs(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text(brokenPlan, llm.Usage{Input: 10, Output: 1}),
		llmtest.Text(brokenPlan, llm.Usage{Input: 10, Output: 1}),
		llmtest.Text("a: lookup(id: †input.id) -> †state.customer\noutput †state.customer\n", llm.Usage{Input: 10, Output: 1}),
	))
	defer srv.Close()
	c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
	var rounds []int
	got, err := Generate(context.Background(), GenerateOptions{Goal: "Score c-1.", Context: c, Check: cfg, MaxRepairs: 2,
		Model: openai.New(srv.Settings("planner", "judge"), nil),
		Round: func(r Round) { rounds = append(rounds, r.N) }})
	if err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Plan != nil || got.Rounds != 3 || len(srv.Requests()) != 3 || len(rounds) != 3 {
		t.Fatalf("ok %v, plan %q, rounds %d, requests %d", got.OK, got.Plan, got.Rounds, len(srv.Requests()))
	}
	// The last diagnostics are the last answer's: too few steps.
	if len(got.Diagnostics) != 1 || got.Diagnostics[0].Code != lang.LimitExceeded || !strings.Contains(got.Diagnostics[0].Message, "fewer than 3") {
		t.Errorf("diagnostics:\n%s", got.Diagnostics)
	}
}

// TestGenerateRepairReportBounded: an answer of 2,000 calls on one line,
// each warned about, with errors, gets a repair report of the errors
// first and then 20 warnings, each with an excerpt of its call rather
// than the whole line, and the count of those left out.
func TestGenerateRepairReportBounded(t *testing.T) {
	var answer strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&answer, "pay(amount: %d) -> †state.r%d; ", i, i)
	}
	answer.WriteString("score(orders: \"many\") -> †state.s\n")
	srv := llmtest.NewOpenAI(llmtest.Script(
		llmtest.Text(answer.String(), llm.Usage{}),
		llmtest.Text(fixedPlan, llm.Usage{}),
	))
	defer srv.Close()
	c, cfg := testContext(t, customerTools+"tool pay(amount: number) -> object irreversible\n", map[string]any{"id": "c-1"})
	if _, err := Generate(context.Background(), GenerateOptions{Goal: "Pay.", Context: c, Check: cfg,
		Model: openai.New(srv.Settings("planner", "judge"), nil)}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	rep := reqs[1].Messages[2].Content
	if len(rep) > 32<<10 {
		t.Errorf("the repair message has %d bytes", len(rep))
	}
	var doc struct {
		Diagnostics []struct {
			Severity string `json:"severity"`
			Code     string `json:"code"`
			Excerpt  string `json:"excerpt"`
		} `json:"diagnostics"`
		Counts  map[string]int `json:"counts"`
		Omitted map[string]int `json:"omitted"`
	}
	if err := json.Unmarshal([]byte(rep[strings.Index(rep, "{"):strings.LastIndex(rep, "}")+1]), &doc); err != nil {
		t.Fatalf("the repair message has no JSON report: %v", err)
	}
	errs := doc.Counts["error"]
	if errs == 0 || len(doc.Diagnostics) != errs+modelDiagnostics {
		t.Fatalf("%d diagnostics, %d errors", len(doc.Diagnostics), errs)
	}
	for i, d := range doc.Diagnostics {
		if (i < errs) != (d.Severity == "error") {
			t.Errorf("diagnostic %d is %s: the errors do not come first", i, d.Severity)
		}
	}
	if doc.Counts["warning"] < 2000 || doc.Omitted["warning"] != doc.Counts["warning"]-modelDiagnostics || doc.Omitted["error"] != 0 {
		t.Errorf("counts %v, omitted %v", doc.Counts, doc.Omitted)
	}
	for _, d := range doc.Diagnostics {
		if n := utf8.RuneCountInString(d.Excerpt); n > 110 {
			t.Errorf("an excerpt of %d characters", n)
		}
	}
}

// literalModel answers as a model that does what the checker's report
// says, word for word: first a plan of one call for each of 12
// customers; told that the plan has too many steps, the same calls as one
// for each (the way to keep every call the goal needs); told that it
// makes too few calls, each call a step of its own again.
func literalModel(req *llmtest.Request) llmtest.Reply {
	var ids []string
	var long strings.Builder
	for i := 1; i <= 12; i++ {
		ids = append(ids, fmt.Sprintf("%q", fmt.Sprintf("c-%d", i)))
		fmt.Fprintf(&long, "l%d: lookup(id: \"c-%d\") -> †state.c%d\n", i, i, i)
	}
	long.WriteString("output [")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&long, "†state.c%d, ", i)
	}
	long.WriteString("]\n")
	each := "all: for each id in [" + strings.Join(ids, ", ") + "]: lookup(id: †id) -> †state.customers\noutput †state.customers\n"
	last := req.Messages[len(req.Messages)-1].Content
	switch {
	case strings.Contains(last, "fewer than"):
		return llmtest.Text(long.String(), llm.Usage{})
	case strings.Contains(last, "more than the limit"):
		return llmtest.Text(each, llm.Usage{})
	}
	return llmtest.Text(long.String(), llm.Usage{})
}

// TestGenerateLongAnswerConverges: an answer of more steps than the most
// allowed is told to write its repeated calls as a for each; the for each
// that does is no longer refused for making too few calls (which sent the
// model back to one call a step, and round again), so the plan checks
// after one repair, within the two allowed.
func TestGenerateLongAnswerConverges(t *testing.T) {
	for _, p := range fakeProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(literalModel)
			defer srv.Close()
			c, cfg := testContext(t, customerTools, map[string]any{"id": "c-1"})
			got, err := Generate(context.Background(), GenerateOptions{Goal: "Look up customers c-1 to c-12.", Context: c, Check: cfg, MaxRepairs: 2,
				Model: p.open(srv.Settings("planner", "judge"))})
			if err != nil {
				t.Fatal(err)
			}
			if !got.OK || got.Rounds > 3 {
				t.Fatalf("ok %v after %d rounds:\n%s", got.OK, got.Rounds, got.Diagnostics)
			}
			repair := srv.Requests()[1].Messages[2].Content
			if !strings.Contains(repair, "more than the limit of 10") || !strings.Contains(repair, "one for each over a list of those arguments") {
				t.Errorf("the repair does not say how to write fewer steps:\n%s", repair)
			}
		})
	}
}

// TestStepRulesAgree: the plan each step-count rule asks for is not
// refused by the other. A for each counts as one step toward the most
// steps and as its calls toward the fewest, whether its list is written
// in the plan, read from the input, or known only when it runs.
func TestStepRulesAgree(t *testing.T) {
	c, cfg := testContext(t, customerTools+"tool search(q: string) -> [string] pure\n", map[string]any{"id": "c-1", "ids": []any{"a", "b", "c", "d"}})
	rules := checkRules{minSteps: 3, maxSteps: 10}
	for _, answer := range []string{
		"all: for each id in [\"a\", \"b\", \"c\"]: lookup(id: †id) -> †state.customers\noutput †state.customers\n",
		"all: for each id in †input.ids: lookup(id: †id) -> †state.customers\noutput †state.customers\n",
		"found: search(q: \"x\") -> †state.ids\nall: for each id in †state.ids: lookup(id: †id) -> †state.customers\noutput †state.customers\n",
		"all: for each n in lists.range(5): score(orders: †n) -> †state.scores\noutput †state.scores\n",
	} {
		ch := checkAnswer("plan", answer, c.prelude(nil, nil), &c, offeredConfig(cfg, &c), rules)
		if ch.diags.HasErrors() {
			t.Errorf("%s:\n%s", answer, ch.diags)
		}
	}
	ch := checkAnswer("plan", "all: for each id in [\"a\", \"b\"]: lookup(id: †id) -> †state.customers\noutput †state.customers\n", c.prelude(nil, nil), &c, offeredConfig(cfg, &c), rules)
	if len(ch.diags) != 1 || !strings.Contains(ch.diags[0].Message, "the plan makes 2 calls, fewer than 3") || !strings.Contains(ch.diags[0].Message, "in 10 steps at most") {
		t.Errorf("a for each of two calls:\n%s", ch.diags)
	}
}
