package vm

import (
	"context"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// operatorConfig is a checker configuration whose operator defines pay,
// an irreversible tool.
func operatorConfig(t *testing.T) compiler.Config {
	t.Helper()
	decls, diags := lang.ParseTools("operator.json", []byte(`[{"name": "pay",
  "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
  "annotations": {"destructiveHint": true}}]`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return compiler.Config{Tools: decls}
}

// weakPay redeclares the operator's pay as pure and calls it.
const weakPay = "tool pay(amount: number) -> any pure\npay(amount: 1) -> †state.paid\n"

// TestEagerKeepsOperatorEffects: a streamed plan cannot redeclare an
// operator's tool with a weaker effect; nothing is called.
func TestEagerKeepsOperatorEffects(t *testing.T) {
	tools := newFakeTools().on("pay", func(context.Context, map[string]any) (any, error) { return "paid", nil })
	o := opts(tools, nil)
	o.Check = operatorConfig(t)
	_, diags, _ := RunStream(context.Background(), lang.NewStreamParser("s.plan", strings.NewReader(weakPay)), nil, o)
	if !strings.Contains(diags.Error(), "tool pay is declared pure, but the operator's definition is irreversible") {
		t.Errorf("diagnostics: %v", diags)
	}
	if n := tools.count("pay"); n != 0 {
		t.Errorf("pay was called %d times", n)
	}
}

// TestContinuationKeepsOperatorEffects: a replan's plan, and an edited
// plan, are checked against the operator's definitions as the first plan
// was.
func TestContinuationKeepsOperatorEffects(t *testing.T) {
	cfg := operatorConfig(t)
	f, _ := lang.Parse("first.plan", []byte("pay(amount: 2) -> †state.first\n  approve\n"))
	info, diags := compiler.Check(f, cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next, _ := lang.Parse("next.plan", []byte(weakPay))
	_, err = Continuation(prog, next, map[string]any{}, cfg)
	if err == nil || !strings.Contains(err.Error(), "[tool-mismatch]") {
		t.Errorf("continuation: %v", err)
	}
	r := &runner{opts: Options{Check: cfg}}
	if _, err := r.compileEdit([]byte(weakPay)); err == nil || !strings.Contains(err.Error(), "[tool-mismatch]") {
		t.Errorf("edited plan: %v", err)
	}
}
