package planfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const toolsV1 = `{"tools": [
  {"name": "issueRefund", "inputSchema": {"type": "object", "properties": {"customerId": {"type": "string"}, "amount": {"type": "number"}}, "required": ["customerId", "amount"]},
   "outputSchema": {"type": "object", "properties": {"confirmationId": {"type": "string"}}, "required": ["confirmationId"]},
   "annotations": {"destructiveHint": true}},
  {"name": "lookup", "inputSchema": {"type": "object", "properties": {"customerId": {"type": "string"}}, "required": ["customerId"]},
   "annotations": {"readOnlyHint": true}}
]}`

const plan = `type Receipt {
  confirmationId: string
}

input {
  customerId: string
  amount: number
}

lookup(customerId: †input.customerId) -> †state.history
issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.receipt
  approve "Refund?"
`

func source(tools string) *Source {
	return &Source{Name: "refund.plan", Text: plan, Tools: []File{{Name: "tools.json", Text: tools}}}
}

func TestPlanfileRoundTrip(t *testing.T) {
	src := source(toolsV1)
	prog, diags, err := src.Compile()
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	pf, err := New(src, prog, map[string]any{"customerId": "c1", "amount": 50.5})
	if err != nil {
		t.Fatal(err)
	}
	want := []Signature{
		{Name: "issueRefund", Signature: "(customerId: string, amount: number) -> {confirmationId: string} irreversible"},
		{Name: "lookup", Signature: "(customerId: string) -> any pure"},
	}
	if diff := cmp.Diff(want, pf.Tools); diff != "" {
		t.Errorf("signatures (-want +got):\n%s", diff)
	}
	b, err := pf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash != pf.Hash || !strings.HasPrefix(pf.Hash, "sha256:") {
		t.Errorf("hash %s, read back %s", pf.Hash, back.Hash)
	}
	if _, _, err := back.Compile(); err != nil {
		t.Errorf("compiling the planfile: %v", err)
	}
	if err := back.Stale(source(toolsV1)); err != nil {
		t.Errorf("unchanged tools: %v", err)
	}

	// A changed parameter type makes the plan stale, by name.
	changed := strings.Replace(toolsV1, `"confirmationId": {"type": "string"}`, `"confirmationId": {"type": "integer"}`, 1)
	err = back.Stale(source(changed))
	var stale *StaleError
	if !errors.As(err, &stale) || len(stale.Changes) != 1 ||
		stale.Changes[0] != "tool issueRefund changed from (customerId: string, amount: number) -> {confirmationId: string} irreversible to (customerId: string, amount: number) -> {confirmationId: int} irreversible" {
		t.Errorf("stale: %v", err)
	}
	// A tool that is gone: the plan does not check any more.
	err = back.Stale(source(`{"tools": []}`))
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "no longer checks") {
		t.Errorf("gone: %v", err)
	}

	// A planfile edited by hand is refused.
	tampered := strings.Replace(string(b), `"amount": 50.5`, `"amount": 5000`, 1)
	if tampered == string(b) {
		t.Fatal("the test did not change the planfile")
	}
	if _, err := Read([]byte(tampered)); err == nil || !strings.Contains(err.Error(), "changed after it was written") {
		t.Errorf("tampered: %v", err)
	}

	// A key given twice, which encoding/json reads as the hashed value
	// (the last) but a reader keeping the first reads as another, is
	// refused though the hash matches.
	doubled := strings.Replace(string(b), `"amount": 50.5`, `"amount": 5000, "amount": 50.5`, 1)
	if doubled == string(b) {
		t.Fatal("the test did not change the planfile")
	}
	if _, err := Read([]byte(doubled)); err == nil || !strings.Contains(err.Error(), `key "amount" is given twice`) {
		t.Errorf("a key given twice: %v", err)
	}
}

func TestSourceImportsServedFromSource(t *testing.T) {
	src := &Source{
		Name:    "p.plan",
		Dir:     "plans",
		Text:    "import \"tools.json\"\nf(x: 1) -> †state.y\n",
		Imports: []File{{Name: "plans/tools.json", Text: `{"tools": [{"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, "outputSchema": {"type": "integer"}, "annotations": {"readOnlyHint": true}}]}`}},
	}
	prog, diags, err := src.Compile()
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	if len(prog.Steps) != 1 || Signatures(prog)[0].Signature != "(x: int) -> int pure" {
		t.Errorf("signatures %v", Signatures(prog))
	}
	src.Imports = nil
	if _, _, err := src.Compile(); err == nil {
		t.Error("an import that was not recorded compiled")
	}
}
