package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

const schemaTools = `
type Address {street: string, city: string}
tool lookup(id: string) -> {name: string, orders: int} pure
tool score(orders: int) -> number pure
# Refunds an amount.
tool issueRefund(customerId: string, amount: number, reason?: "late" | "damaged", address?: Address) -> {amount: number, confirmationId: string}
tool tag(labels: [string], meta: object, extra?: any) -> any idempotent
`

// planSchema returns the schema of the test tools' plans, compiled.
func planSchema(t *testing.T) ([]byte, *toolkit.Schema, Context, compiler.Config) {
	t.Helper()
	c, cfg := testContext(t, schemaTools, map[string]any{"id": "c-1"})
	schema, err := PlanSchema(&c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := toolkit.NewSchema("plan", b)
	if err != nil {
		t.Fatal(err)
	}
	return b, s, c, cfg
}

// TestPlanSchemaIsStrict: the schema keeps to the rules of OpenAI's strict
// Structured Outputs.
func TestPlanSchemaIsStrict(t *testing.T) {
	b, _, _, _ := planSchema(t)
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if err := llmtest.CheckStrictSchema(schema); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"const":"issueRefund"`, `"enum":["late","damaged"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the schema lacks %s", want)
		}
	}
	// The properties keep their order: _tool and _id first.
	if i, j := strings.Index(string(b), `"_tool"`), strings.Index(string(b), `"_outputPath"`); i > j {
		t.Errorf("_tool comes after _outputPath")
	}
}

// call is a call of the JSON form with every option null, as a strict
// schema makes a model write it.
func call(tool, id string, args string) string {
	opts := `"_outputPath": "†state.` + id + `", "_when": null, "_expect": null, "_criterion": null, "_approve": null, "_retry": null, "_timeout": null, "_forEach": null, "_as": null, "_max": null, "_hint": null`
	if args != "" {
		args += ", "
	}
	return `{"_tool": "` + tool + `", "_id": "` + id + `", ` + args + opts + `}`
}

// TestPlanSchemaHoldsPlans: an answer the schema accepts is a plan that
// checks once its nulls are dropped; the schema refuses an unknown tool, a
// missing argument, an argument of the wrong type, a malformed reference
// or output path, and an extra key.
func TestPlanSchemaHoldsPlans(t *testing.T) {
	_, s, c, cfg := planSchema(t)
	good := `{"calls": [` +
		call("lookup", "customer", `"id": "†input.id"`) + `, ` +
		call("score", "score", `"orders": "†state.customer.orders"`) + `, ` +
		call("issueRefund", "refund", `"customerId": "†input.id", "amount": {"_expr": "†state.score * 0.5"}, "reason": null, "address": {"street": "1 Main St", "city": "Oslo"}`) + `, ` +
		call("tag", "tagged", `"labels": ["a", "†state.customer.name"], "meta": {"_expr": "{source: 'agent'}"}, "extra": null`) +
		`], "output": {"_expr": "{name: †state.customer.name, refund: †state.refund.confirmationId}"}}`
	var v any
	if err := json.Unmarshal([]byte(good), &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("the schema refuses a good plan: %v", err)
	}
	sigs, err := offeredSignatures(&c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	answer := dropNulls(good, toolsByName(sigs))
	if strings.Contains(answer, "null") && !strings.Contains(answer, `"extra": null`) {
		t.Errorf("nulls left:\n%s", answer)
	}
	ch := checkAnswer("plan", answer, c.prelude(nil, nil), &c, cfg, checkRules{settings: true, approve: true})
	if ch.diags.HasErrors() || !ch.json {
		t.Fatalf("the plan does not check:\n%s\n%s", answer, ch.diags)
	}
	if got := strings.Join(strings.Fields(lang.FormatItem(lang.Steps(ch.answer.Items)[2])), " "); !strings.Contains(got, `amount: †state.score * 0.5, address: {street: "1 Main St", city: "Oslo"}, ) -> †state.refund`) {
		t.Errorf("the refund step reads %s", got)
	}
	bad := map[string]string{
		"unknown tool":     `{"calls": [` + call("http.get", "g", `"url": "https://example.com"`) + `], "output": null}`,
		"missing argument": `{"calls": [` + call("score", "s", "") + `], "output": null}`,
		"wrong type":       `{"calls": [` + call("score", "s", `"orders": "many"`) + `], "output": null}`,
		"bad reference":    `{"calls": [` + call("score", "s", `"orders": "†state..x"`) + `], "output": null}`,
		"bad output path":  strings.Replace(`{"calls": [`+call("score", "s", `"orders": 1`)+`], "output": null}`, `"†state.s"`, `"state.s"`, 1),
		"extra key":        strings.Replace(`{"calls": [`+call("score", "s", `"orders": 1`)+`], "output": null}`, `"_max": null`, `"_max": null, "_fallback": null`, 1),
		"no output":        `{"calls": []}`,
	}
	for name, text := range bad {
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Validate(v); err == nil {
			t.Errorf("%s: the schema accepts %s", name, text)
		}
	}
}

// TestDropNulls: the nulls a strict schema makes a model write for what it
// leaves out are dropped, where the type takes no null; nulls that are
// values stay; an answer that is not a JSON document is left as it is.
func TestDropNulls(t *testing.T) {
	c, cfg := testContext(t, "tool f(a?: int, b?: int?, c: {x?: string, y: string?}) -> any pure\n", nil)
	sigs, err := offeredSignatures(&c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := dropNulls(`{"calls": [{"_tool": "f", "a": null, "b": null, "c": {"x": null, "y": null}, "_when": null}], "output": null}`, toolsByName(sigs))
	want := "{\"calls\": [\n  {\"_tool\": \"f\", \"b\": null, \"c\": {\"y\": null}}\n], \"output\": null}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, s := range []string{"a: f(c: {y: null})\n", `{"calls": [] `, `[{"_tool": "f"}]`} {
		if got := dropNulls(s, nil); got != s {
			t.Errorf("dropNulls(%q) = %q", s, got)
		}
	}
}

// TestPlanSchemaSubPlans: a sub-plan the context declares is called like
// a tool, so it is an alternative of the schema too.
func TestPlanSchemaSubPlans(t *testing.T) {
	c, cfg := testContext(t, customerTools+`
plan rate(id: string) -> number {
  l: lookup(id: †input.id) -> †state.l
  s: score(orders: †state.l.orders) -> †state.s
  output †state.s
}
`, nil)
	schema, err := PlanSchema(&c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(schema)
	for _, want := range []string{`"call_rate"`, `"const":"rate"`, `"const":"lookup"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the schema lacks %s", want)
		}
	}
}

// TestPromptTokens: the provider's count of a prompt's tokens, or, when it
// gives none, an estimate of a token for four bytes, the schema included.
func TestPromptTokens(t *testing.T) {
	req := &llm.Request{System: strings.Repeat("s", 200), Messages: []llm.Message{{Content: strings.Repeat("u", 196)}}}
	if got := promptTokens(0, req); got != 99 {
		t.Errorf("estimate %d, want 99", got)
	}
	if got := promptTokens(7, req); got != 7 {
		t.Errorf("counted %d, want 7", got)
	}
	req.Schema = &llm.Schema{JSON: map[string]any{"type": "object"}}
	if got := promptTokens(0, req); got != 104 {
		t.Errorf("estimate with a schema %d, want 104", got)
	}
}

// TestPlanSchemaHolesAndTasks: an answer in the JSON form may leave an
// argument to a model ({"_hole": …}) and make a step a task among the
// offered tools; the schema holds both, refuses a task's candidate that
// is not offered, and the plan checks.
func TestPlanSchemaHolesAndTasks(t *testing.T) {
	_, s, c, cfg := planSchema(t)
	task := `{"_task": "score †state.customer", "_using": ["score"], "_id": "s", "_outputPath": "†state.s", "_when": null, "_expect": null, "_criterion": null, "_approve": null, "_retry": null, "_timeout": null, "_hint": null}`
	good := `{"calls": [` +
		call("lookup", "customer", `"id": {"_hole": "the id of the customer in †input.id"}`) + `, ` + task +
		`], "output": {"_expr": "†state.s"}}`
	var v any
	if err := json.Unmarshal([]byte(good), &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("the schema refuses a plan with a hole and a task: %v", err)
	}
	sigs, err := offeredSignatures(&c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	answer := dropNulls(good, toolsByName(sigs))
	ch := checkAnswer("plan", answer, c.prelude(nil, nil), &c, cfg, checkRules{settings: true, approve: true})
	if ch.diags.HasErrors() {
		t.Fatalf("the plan does not check:\n%s\n%s", answer, ch.diags)
	}
	bad := strings.Replace(good, `"_using": ["score"]`, `"_using": ["http.get"]`, 1)
	if err := json.Unmarshal([]byte(bad), &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err == nil {
		t.Errorf("the schema accepts a task that may choose a tool not offered")
	}
}
