package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// The attacks of a model that writes the plans and makes the calls: each
// is refused with a message that says why, and nothing runs.

func (h *harness) wantNoCharge(t *testing.T) {
	t.Helper()
	if n := h.shop.charges.Load(); n != 0 {
		t.Errorf("charge ran %d times", n)
	}
}

// TestAttackUngatedCall: an irreversible call without an approval gate is
// an error, not a warning, whatever the client.
func TestAttackUngatedCall(t *testing.T) {
	h := start(t, Options{}, nil)
	plan := strings.Replace(refund, "  approve \"Refund the customer?\"\n", "", 1)
	for _, tool := range []string{toolCheck, toolRun} {
		got, _ := h.call(t, tool, map[string]any{"plan": plan, "input": map[string]any{"id": "c1"}})
		if !strings.Contains(got, `"severity":"error","code":"unapproved-effect"`) || !strings.Contains(got, "charge is irreversible, and no approval comes before it") {
			t.Errorf("%s: %s", tool, got)
		}
	}
	h.wantNoCharge(t)
}

// TestAttackImport: a plan sent by a client reads no file.
func TestAttackImport(t *testing.T) {
	h := start(t, Options{ApproveAll: true}, nil)
	for _, path := range []string{"/etc/passwd.json", "../tools.json", "tools.json"} {
		plan := `import "` + path + `"` + "\n" + refund
		got, isErr := h.call(t, toolRun, map[string]any{"plan": plan, "input": map[string]any{"id": "c1"}})
		if !isErr || !strings.Contains(got, "import-error") || !strings.Contains(got, "this checker reads no files") {
			t.Errorf("import %s: %s", path, got)
		}
	}
	h.wantNoCharge(t)
}

// TestAttackArguments: a call with an argument the tool does not take
// (an attempt to approve, say) is refused, and runs nothing.
func TestAttackArguments(t *testing.T) {
	h := start(t, Options{}, nil)
	for tool, args := range map[string]map[string]any{
		toolRun:    {"plan": refund, "input": map[string]any{"id": "c1"}, "approve": true},
		toolResume: {"run": "x", "force": true},
	} {
		got, isErr := h.call(t, tool, args)
		if !isErr || !strings.Contains(got, "unknown field") {
			t.Errorf("%s with an extra argument: %s", tool, got)
		}
	}
	got, _ := h.call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}, "seed": 3})
	if !strings.Contains(got, "seed is dry_run_plan's") {
		t.Errorf("run_plan with a seed: %s", got)
	}
	h.wantNoCharge(t)
	if err := decodeArgs(json.RawMessage(`{"plan": "a", "plan": "b"}`), &planArgs{}); err == nil || !strings.Contains(err.Error(), `"plan" is given twice`) && !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("arguments with a key twice: %v", err)
	}
}

// TestAttackLimits: the operator's limits bound a plan sent by a client.
func TestAttackLimits(t *testing.T) {
	h := start(t, Options{Limits: compiler.Limits{MaxSteps: 2}, ApproveAll: true}, nil)
	plan := "a: lookup(id: \"1\") -> †state.a\nb: lookup(id: \"2\") -> †state.b\nc: lookup(id: \"3\") -> †state.c\noutput [†state.a, †state.b, †state.c]\n"
	got, isErr := h.call(t, toolRun, map[string]any{"plan": plan})
	if !isErr || !strings.Contains(got, "limit-exceeded") {
		t.Errorf("a plan over --max-steps: %s", got)
	}
}

// TestAttackOtherRuns: the server reads, reports and resumes only the
// runs it made, named by their whole ID. A run of the command line, of a
// server of another name or other grants, and one that recorded no origin
// (made before runs recorded it) get the answer of a run that does not
// exist, whatever the tool and however it is named, and are left as they
// were; a prefix names no run, and no answer names another run.
func TestAttackOtherRuns(t *testing.T) {
	h := start(t, Options{Name: "shop", Grants: "net=a"}, nil)
	var foreign []string
	// Waiting runs of the same tools and plan, recorded by others.
	for id, origin := range map[string]*durable.Origin{"cli-run-1": {By: durable.ByCLI}, "cli-run-2": {By: durable.ByCLI}, "old-run": nil} {
		src := &planfile.Source{Name: "plan.plan", Text: refund, Tools: []planfile.File{{Name: "<shop>", Text: string(h.shop.reg.ToolsJSON())}}, Strict: true}
		plan, _, err := durable.Compile(src, map[string]any{"id": "c1"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.store.Create(plan, id, durable.Settings{Origin: origin})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Execute(context.Background(), durable.ExecOptions{Tools: h.shop.reg}); err != nil {
			t.Fatal(err)
		}
		foreign = append(foreign, id)
	}
	// Waiting runs of servers on the same journal, with the same tools:
	// of another name, and of other grants.
	for _, opts := range []Options{{Name: "other", Grants: "net=a"}, {Name: "shop", Grants: "net=b"}} {
		got, _ := h.another(t, opts).call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
		a := answerOf(t, got)
		if a.Status != "waiting" {
			t.Fatalf("run_plan of a server of %+v: %s", opts, got)
		}
		foreign = append(foreign, a.Run)
	}
	got, _ := h.call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
	own := answerOf(t, got).Run
	// The server's own run, by its whole ID.
	if got, _ := h.call(t, toolStatus, map[string]any{"run": own}); answerOf(t, got).Status != "waiting" {
		t.Errorf("run_status of the server's own run: %s", got)
	}
	noSuchRun := func(id string) string {
		return fmt.Sprintf("no such run: %q is not the ID of a run of this server; give the whole ID that run_plan answered", id)
	}
	names := []string{"no-such-run", "cli-run", own[:len(own)-2]}
	for _, id := range foreign {
		names = append(names, id, id[:len(id)-1])
	}
	for _, id := range names {
		for _, tool := range []string{toolStatus, toolResume} {
			got, isErr := h.call(t, tool, map[string]any{"run": id, "wait": 1})
			if !isErr || got != noSuchRun(id) {
				t.Errorf("%s of %q: %s", tool, id, got)
			}
			for _, other := range append(foreign, own) {
				if other != id && strings.Contains(got, other) {
					t.Errorf("%s of %q names run %s: %s", tool, id, other, got)
				}
			}
		}
	}
	// A server of the same name with other grants (--yes) cannot resume
	// the run, which would approve its gate; the same server, started
	// again, can read it.
	yes := h.another(t, Options{Name: "shop", Grants: "net=a", ApproveAll: true})
	if got, isErr := yes.call(t, toolResume, map[string]any{"run": own}); !isErr || got != noSuchRun(own) {
		t.Errorf("resume_run of a server with --yes: %s", got)
	}
	again := h.another(t, Options{Name: "shop", Grants: "net=a"})
	if got, _ := again.call(t, toolStatus, map[string]any{"run": own}); answerOf(t, got).Status != "waiting" {
		t.Errorf("run_status of the same server started again: %s", got)
	}
	for _, id := range append(foreign, own) {
		if det, err := h.store.Show(id); err != nil || det.Status != vm.RunWaiting {
			t.Errorf("run %s after the calls: %v %+v", id, err, det)
		}
	}
	h.wantNoCharge(t)
}

// TestAttackNoElicitation: when the operator says so, a gate waits for
// obelisk approve even when the client could ask.
func TestAttackNoElicitation(t *testing.T) {
	asked := false
	h := start(t, Options{NoElicitation: true}, func(*sdk.ElicitRequest) *sdk.ElicitResult {
		asked = true
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	got, _ := h.call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
	if a := answerOf(t, got); a.Status != "waiting" || asked {
		t.Errorf("run_plan: %s (asked: %v)", got, asked)
	}
	h.wantNoCharge(t)
}

// TestAttackHTTP: over HTTP, a request without the token, from a page of
// another origin, or to a loopback address under another host name (DNS
// rebinding) is refused before it reaches the server.
func TestAttackHTTP(t *testing.T) {
	h := start(t, Options{ApproveAll: true}, nil)
	srv := httptest.NewServer(h.server.Handler(HTTPOptions{Token: "s3cret"}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		host    string
		want    int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer guess"}, "", http.StatusUnauthorized},
		{"another origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		{"a rebound name", map[string]string{"Authorization": "Bearer s3cret"}, "evil.example", http.StatusForbidden},
		{"the token", map[string]string{"Authorization": "Bearer s3cret"}, "", http.StatusOK},
	} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range tc.headers {
			req.Header.Set(k, v)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}
