package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/lang"
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
	const tools = `{"tools": [{"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, "outputSchema": {"type": "integer"}, "annotations": {"readOnlyHint": true}}]}`
	src := &Source{
		Name:    "p.plan",
		Dir:     "plans",
		Text:    "import \"tools.json\"\nf(x: 1) -> †state.y\n",
		Imports: []File{{Name: "tools.json", Text: tools}},
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
	// Sources recorded before imports were confined to the plan's
	// directory name an import by its path joined to Dir.
	src.Imports = []File{{Name: "plans/tools.json", Text: tools}}
	if _, diags, err := src.Compile(); err != nil {
		t.Errorf("an import recorded by its old name: %v\n%s", err, diags)
	}
}

// TestSourceImportsConfined: the names a source records for its imports
// are read by the plan's rules, both from the record and, by Refresh,
// from disk: nothing outside the plan's directory, however the record
// names it.
func TestSourceImportsConfined(t *testing.T) {
	work := t.TempDir()
	secret := filepath.Join(work, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"tools": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../secret.json", secret} {
		src := &Source{Name: "plans/p.plan", Dir: "plans", WorkDir: work, Text: "import " + lang.Quote(name) + "\n",
			Imports: []File{{Name: name, Text: `{"tools": []}`}}}
		if _, _, err := src.Compile(); err == nil {
			t.Errorf("import %s compiled", name)
		}
		if _, err := src.Refresh(os.ReadFile); err == nil || !strings.Contains(err.Error(), "reading an import") {
			t.Errorf("import %s: Refresh read it: %v", name, err)
		}
	}
}
