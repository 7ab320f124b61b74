package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/console/consoletest"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

// replanner answers every replan with one plan.
type replanner string

func (p replanner) Replan(ctx context.Context, req *vm.ReplanRequest) (*lang.File, error) {
	f, diags := lang.Parse("replan.plan", []byte(p))
	if diags.HasErrors() {
		return nil, diags
	}
	return f, nil
}

// TestReplanApproval: after a replan of a plan approved as a whole, the
// approvals page shows the diff of the new plan against the approved one
// and the changed steps to approve; approving them in the page records
// the decision the resumed run takes.
func TestReplanApproval(t *testing.T) {
	st := openStore(t)
	text := `approve "Run it?"
on failure replan max 1
tool fetch() -> string pure
tool scrape(url: string) -> string idempotent
tool api(url: string) -> string idempotent
fetch() -> †state.url
scrape(url: †state.url) -> †state.page
output †state.page
`
	tools := callerFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
		switch name {
		case "fetch":
			return "u", nil
		case "api":
			return "page of " + args["url"].(string), nil
		}
		return nil, errors.New("blocked")
	})
	p, diags, err := durable.Compile(&planfile.Source{Name: "r.plan", Text: text}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	r, err := st.Create(p, "rp", durable.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	plan := vm.ApproverFunc(func(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
		if req.Round == 0 {
			return vm.Decision{Approved: true}, nil
		}
		return vm.Decision{}, vm.ErrWaiting
	})
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: tools, Approver: plan, Replanner: replanner("api(url: †state.url) -> †state.page\n")})
	if err != nil || res.Status != vm.RunWaiting {
		t.Fatalf("status %v: %v %v", res.Status, res.Err, err)
	}
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	_, page := c.Get("/approvals")
	for _, want := range []string{"Replan 1: the new and changed steps", "approve only what the replan changes: <strong>api</strong>",
		`<span class="d-add">&#43; api(url: †state.url) -&gt; †state.page</span>`, `<span class="d-head">--- the plan before replan 1</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the approvals page has no %q", want)
		}
	}
	csrf := c.CSRF("/approvals")
	form := decideForm(csrf, "approve", "")
	form.Set("round", "1")
	form.Set("step", "")
	if code, body := c.Post("/runs/rp/decide", form, nil); code != http.StatusSeeOther {
		t.Fatalf("approving the replan: %d\n%s", code, body)
	}
	if res := resumeRun(t, st, "rp", tools); res.Output != "page of u" {
		t.Fatalf("resumed: %s %v %v", res.Status, res.Output, res.Err)
	}
	_, page = c.Get("/runs/rp")
	if !strings.Contains(page, "Plan of replan 1") || !strings.Contains(page, `<h3>Steps of replans</h3>`) {
		t.Error("the run's page does not show the replan")
	}
	// The new plan's graph, its steps in their states.
	_, round, ok := strings.Cut(page, `<div class="round-graph" data-round="1">`)
	round, _, _ = strings.Cut(round, "</svg>")
	if !ok || !strings.Contains(round, `class="node s-completed`) || !strings.Contains(round, `data-step="api"`) || strings.Contains(round, `data-step="scrape"`) {
		t.Errorf("the graph of replan 1:\n%s", round)
	}
}
