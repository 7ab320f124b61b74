package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// shop is the operator's tools of the tests: a pure lookup, an
// irreversible charge that counts its calls, and a slow pure tool that
// returns when the test releases it.
type shop struct {
	reg     *toolkit.Registry
	charges atomic.Int32
	// release lets slow return; entered is signaled when it is called.
	release chan struct{}
	entered chan struct{}
}

func newShop(t *testing.T) *shop {
	t.Helper()
	sh := &shop{reg: toolkit.NewRegistry(), release: make(chan struct{}), entered: make(chan struct{}, 16)}
	sh.reg.MustRegister(toolkit.Definition{Name: "lookup", Description: "Looks up a customer's orders by the customer's ID.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"orders":{"type":"integer"},"notes":{"type":"string"}},"required":["orders","notes"]}`),
		Annotations:  toolkit.Annotations{ReadOnly: true}},
		toolkit.ToolFunc(func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"orders": int64(3), "notes": "a long internal note about " + args["id"].(string)}, nil
		}))
	sh.reg.MustRegister(toolkit.Definition{Name: "charge", Description: "Charges a card. It cannot be undone.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"receipt":{"type":"string"}},"required":["receipt"]}`)},
		toolkit.ToolFunc(func(_ context.Context, args map[string]any) (any, error) {
			sh.charges.Add(1)
			return map[string]any{"receipt": fmt.Sprintf("R-%v", args["amount"])}, nil
		}))
	sh.reg.MustRegister(toolkit.Definition{Name: "slow", Description: "Takes its time.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Annotations: toolkit.Annotations{ReadOnly: true}},
		toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			sh.entered <- struct{}{}
			select {
			case <-sh.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return args["n"], nil
		}))
	return sh
}

// harness is a server over the shop's tools and a client connected to it.
type harness struct {
	shop   *shop
	server *Server
	store  *durable.Store
	client *sdk.ClientSession
	// progress receives the progress notifications the client receives.
	progress chan *sdk.ProgressNotificationParams
}

// start makes a server with opts (its tools, caller and store are
// filled in), and connects a client; elicit, when set, answers the
// server's elicitation requests (the client then can ask its user).
func start(t *testing.T, opts Options, elicit func(*sdk.ElicitRequest) *sdk.ElicitResult) *harness {
	t.Helper()
	st, err := durable.Open(t.TempDir(), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return startOn(t, newShop(t), st, opts, elicit)
}

// another makes another server over the same tools and journal, with
// opts, and connects a client to it.
func (h *harness) another(t *testing.T, opts Options) *harness {
	t.Helper()
	return startOn(t, h.shop, h.store, opts, nil)
}

// startOn makes a server over the shop's tools and a journal, and
// connects a client.
func startOn(t *testing.T, sh *shop, st *durable.Store, opts Options, elicit func(*sdk.ElicitRequest) *sdk.ElicitResult) *harness {
	t.Helper()
	h := &harness{shop: sh, store: st, progress: make(chan *sdk.ProgressNotificationParams, 100)}
	opts.Tools = []planfile.File{{Name: "<shop>", Text: string(h.shop.reg.ToolsJSON())}}
	opts.Caller = h.shop.reg
	opts.Store = st
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.server = srv
	copts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		select {
		case h.progress <- req.Params:
		default: // the test reads the first ones only
		}
	}}
	if elicit != nil {
		copts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return elicit(req), nil }
	}
	ctx := context.Background()
	t1, t2 := sdk.NewInMemoryTransports()
	ss, err := srv.mcp.Connect(ctx, t1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, copts).Connect(ctx, t2, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.client = cs
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
		srv.Close()
	})
	return h
}

// call calls a tool and returns its text and whether it is an error.
func (h *harness) call(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken("p-" + tool)
	res, err := h.client.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*sdk.TextContent).Text)
	}
	return b.String(), res.IsError
}

// answerOf decodes a run's answer.
func answerOf(t *testing.T, text string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("not a run's answer: %v\n%s", err, text)
	}
	return a
}

const refund = `input {
  id: string
}

history: lookup(id: †input.id) -> †state.history
pay: charge(amount: 20) -> †state.receipt
  when †state.history.orders > 0
  approve "Refund the customer?"

output {
  orders: †state.history.orders
  receipt: †state.receipt.receipt
}
`

func TestToolsListed(t *testing.T) {
	h := start(t, Options{}, nil)
	var names []string
	for tool, err := range h.client.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if strings.Contains(strings.ToLower(tool.Name), "approve") || strings.Contains(strings.ToLower(tool.Name), "decide") {
			t.Errorf("tool %s: no tool may approve on a person's behalf", tool.Name)
		}
	}
	want := []string{toolCheck, toolDryRun, toolPrimer, toolResume, toolRun, toolStatus, toolSearch}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("tools %v, want %v", names, want)
	}
}

// TestCheckPlan: check_plan answers with the report `obelisk check
// --format json` prints, fixes included; a plan that does not check is
// an error (isError), as it is for the other tools.
func TestCheckPlan(t *testing.T) {
	h := start(t, Options{}, nil)
	broken := strings.Replace(refund, "lookup(id:", "lookup(ID:", 1)
	got, isErr := h.call(t, toolCheck, map[string]any{"plan": broken})
	if !isErr {
		t.Errorf("check_plan of a plan that does not check is not an error: %s", got)
	}
	var rep struct {
		OK          bool `json:"ok"`
		Diagnostics []struct {
			Code, Message string
			Fix           *struct{ Message string } `json:"fix"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(got), &rep); err != nil {
		t.Fatalf("not a report: %v\n%s", err, got)
	}
	if rep.OK || len(rep.Diagnostics) == 0 || rep.Diagnostics[0].Code != "unknown-argument" || rep.Diagnostics[0].Fix == nil || !strings.Contains(rep.Diagnostics[0].Fix.Message, "rename the argument to id") {
		t.Errorf("the report of a plan with a misspelt argument:\n%s", got)
	}
	c := h.server.compile(broken)
	if want := c.report(nil); got != want {
		t.Errorf("check_plan's answer is not the check report:\n got %s\nwant %s", got, want)
	}
	got, _ = h.call(t, toolCheck, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
	if !strings.HasPrefix(got, `{"file":"plan.plan","ok":true`) {
		t.Errorf("a clean plan: %s", got)
	}
	got, _ = h.call(t, toolCheck, map[string]any{"plan": refund, "input": map[string]any{"id": 7}})
	if !strings.Contains(got, `"ok":false`) || !strings.Contains(got, "type-mismatch") {
		t.Errorf("an input of the wrong type: %s", got)
	}
	// The server's runs have no model to fill a hole: one is an error.
	holed := strings.Replace(refund, "charge(amount: 20)", `charge(amount: ? "the amount the customer asks back")`, 1)
	got, _ = h.call(t, toolCheck, map[string]any{"plan": holed, "input": map[string]any{"id": "c1"}})
	if !strings.Contains(got, `"ok":false`) || !strings.Contains(got, "no-filler") || !strings.Contains(got, "argument amount of charge is left for a model to fill") {
		t.Errorf("a plan with a hole: %s", got)
	}
}

// TestRunOutput: run_plan answers with the output and a summary, not the
// steps' results, which stay in the journal.
func TestRunOutput(t *testing.T) {
	h := start(t, Options{ApproveAll: true}, nil)
	got, isErr := h.call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
	a := answerOf(t, got)
	if isErr || a.Status != "completed" || fmt.Sprint(a.Output) != "map[orders:3 receipt:R-20]" {
		t.Fatalf("run_plan: %s", got)
	}
	if strings.Contains(got, "internal note") {
		t.Errorf("the answer holds a step's result that the output leaves out: %s", got)
	}
	if !strings.Contains(a.Summary, "completed, 2 step(s): 2 completed") {
		t.Errorf("summary %q", a.Summary)
	}
	det, err := h.store.Show(a.Run)
	if err != nil || len(det.Steps) != 2 {
		t.Fatalf("the journal: %v, %+v", err, det)
	}
	if h.shop.charges.Load() != 1 {
		t.Errorf("charge was called %d times, want 1", h.shop.charges.Load())
	}
	// The status of an ended run is its answer again.
	again, _ := h.call(t, toolStatus, map[string]any{"run": a.Run})
	if again != got {
		t.Errorf("run_status of the ended run:\n got %s\nwant %s", again, got)
	}
}

// TestApprovalWaits: with a client that cannot ask its user, a gate saves
// the run as waiting, and the answer says how a person decides; nothing
// the model can call approves it. Once a person has decided, resume_run
// continues the run.
func TestApprovalWaits(t *testing.T) {
	h := start(t, Options{ApproveCommand: "obelisk approve --state-dir /s"}, nil)
	got, _ := h.call(t, toolRun, map[string]any{"plan": refund, "input": map[string]any{"id": "c1"}})
	a := answerOf(t, got)
	if a.Status != "waiting" || len(a.Waiting) != 1 || !strings.Contains(a.Waiting[0], `step pay (charge) "Refund the customer?"`) {
		t.Fatalf("run_plan: %s", got)
	}
	if want := "obelisk approve --state-dir /s " + a.Run + " pay"; !strings.Contains(a.Next, want) || !strings.Contains(a.Next, "which you cannot give") {
		t.Errorf("the answer does not say to run %q: %s", want, a.Next)
	}
	// Whatever the model calls, the gate stays shut.
	for _, tool := range []string{toolResume, toolStatus, toolResume} {
		got, _ := h.call(t, tool, map[string]any{"run": a.Run})
		if b := answerOf(t, got); b.Status != "waiting" {
			t.Errorf("%s: %s", tool, got)
		}
	}
	if h.shop.charges.Load() != 0 {
		t.Fatalf("charge ran %d times without an approval", h.shop.charges.Load())
	}
	// A person decides, as obelisk approve does.
	ap, err := h.store.Choose(a.Run, "pay")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Decide(a.Run, ap, durable.Decision{Approved: true, Note: "ok", By: "ann"}); err != nil {
		t.Fatal(err)
	}
	// The status tells the truth: decided, waiting to be continued.
	got, _ = h.call(t, toolStatus, map[string]any{"run": a.Run})
	if b := answerOf(t, got); b.Status != "waiting" || strings.Contains(b.Next, "obelisk approve") ||
		!strings.Contains(b.Next, "approved by ann: ok, waiting for the run to continue (call "+toolResume+" with run "+a.Run+", or a worker)") {
		t.Errorf("run_status after the decision: %s", got)
	}
	got, _ = h.call(t, toolResume, map[string]any{"run": a.Run})
	if b := answerOf(t, got); b.Status != "completed" || h.shop.charges.Load() != 1 {
		t.Fatalf("resume_run after the decision: %s (%d charges)", got, h.shop.charges.Load())
	}
}

// TestApprovalElicits: a client that can ask its user is asked, with the
// step, its tool and its arguments escaped; accept approves, decline
// rejects, and cancel leaves the gate waiting.
func TestApprovalElicits(t *testing.T) {
	for _, tc := range []struct {
		action  string
		approve any
		status  string
		charges int32
	}{
		{"accept", true, "completed", 1},
		{"accept", false, "failed", 0},
		{"decline", nil, "failed", 0},
		{"cancel", nil, "waiting", 0},
		{"accept", nil, "waiting", 0},
		{"accept", "yes", "waiting", 0},
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.action, tc.approve), func(t *testing.T) {
			var asked []string
			h := start(t, Options{}, func(req *sdk.ElicitRequest) *sdk.ElicitResult {
				asked = append(asked, req.Params.Message)
				res := &sdk.ElicitResult{Action: tc.action}
				if tc.approve != nil {
					res.Content = map[string]any{"approve": tc.approve}
				}
				return res
			})
			plan := strings.Replace(refund, `"Refund the customer?"`, `"Refund\u202e the customer?"`, 1)
			got, _ := h.call(t, toolRun, map[string]any{"plan": plan, "input": map[string]any{"id": "c1"}})
			if a := answerOf(t, got); a.Status != tc.status || h.shop.charges.Load() != tc.charges {
				t.Errorf("run_plan: %s (%d charges)", got, h.shop.charges.Load())
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "Step pay of run") || !strings.Contains(asked[0], `calls charge: Refund\u202e the customer?`) || !strings.Contains(asked[0], `"amount": 20`) {
				t.Errorf("the person was asked %q", asked)
			}
		})
	}
}

// TestLongRun: a run that outlives its call goes on; the call says so,
// progress notifications come while a call follows it, and run_status
// gives its result.
func TestLongRun(t *testing.T) {
	h := start(t, Options{}, nil)
	plan := "a: slow(n: 1) -> †state.a\nb: slow(n: 2) -> †state.b\noutput †state.a + †state.b\n"
	got, _ := h.call(t, toolRun, map[string]any{"plan": plan, "wait": 0})
	a := answerOf(t, got)
	if a.Status != "running" || !strings.Contains(a.Next, "call run_status with run "+a.Run) {
		t.Fatalf("run_plan with wait 0: %s", got)
	}
	<-h.shop.entered
	<-h.shop.entered
	done := make(chan string)
	go func() {
		got, _ := h.call(t, toolStatus, map[string]any{"run": a.Run, "wait": 600})
		done <- got
	}()
	close(h.shop.release)
	got = <-done
	if b := answerOf(t, got); b.Status != "completed" || fmt.Sprint(b.Output) != "3" {
		t.Fatalf("run_status with wait: %s", got)
	}
	for p := range h.progress {
		if p.ProgressToken != "p-"+toolStatus {
			continue // run_plan's
		}
		if p.Total != 2 || !strings.Contains(p.Message, "of 2 steps done") {
			t.Errorf("a progress notification: %+v", p)
		}
		break
	}
}

func TestSearchTools(t *testing.T) {
	h := start(t, Options{}, nil)
	for _, tc := range []struct {
		query string
		limit int
		want  []string
		not   []string
	}{
		{"orders of a customer", 10, []string{"tool lookup(id: string) -> {orders: int, notes: string} pure", "# Looks up a customer's orders"}, []string{"tool charge"}},
		{"charge", 10, []string{"# Charges a card. It cannot be undone.\ntool charge(amount: number) -> {receipt: string} irreversible\n"}, []string{"tool lookup", "cut to their first sentence"}},
		{"a card", 10, []string{"# Charges a card.\ntool charge(", "# descriptions are cut to their first sentence: search a tool's full name for all of it"}, []string{"It cannot be undone"}},
		{"", 1, []string{"# the best 1 of 3 tools that match", "tool charge"}, []string{"tool lookup"}},
		{"zebra", 10, []string{`# no tool matches "zebra"; the tools: charge (1), lookup (1), slow (1)`}, nil},
	} {
		got, _ := h.call(t, toolSearch, map[string]any{"query": tc.query, "limit": tc.limit})
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("search %q: no %q in\n%s", tc.query, w, got)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("search %q: %q in\n%s", tc.query, w, got)
			}
		}
	}
}

// TestResources: the primer and the signatures are resources, and the
// prompt holds the primer and the goal.
func TestResources(t *testing.T) {
	h := start(t, Options{}, nil)
	ctx := context.Background()
	for uri, want := range map[string]string{
		primerURI:                      "The language, quoted from its reference:",
		toolsURI:                       "tool slow(n: int) pure",
		toolURIPrefix + "lookup":       "tool lookup(id: string)",
		toolURIPrefix + "charge":       "irreversible",
		"obelisk://tools/no-such-tool": "",
	} {
		res, err := h.client.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if want == "" {
			if err == nil {
				t.Errorf("%s: read", uri)
			}
			continue
		}
		if err != nil || !strings.Contains(res.Contents[0].Text, want) {
			t.Errorf("%s: %v, no %q", uri, err, want)
		}
	}
	p, err := h.client.GetPrompt(ctx, &sdk.GetPromptParams{Name: promptName, Arguments: map[string]string{"goal": "refund c1"}})
	if err != nil || !strings.HasSuffix(p.Messages[0].Content.(*sdk.TextContent).Text, "Goal: refund c1\n") {
		t.Errorf("prompt: %v %v", err, p)
	}
}

// TestAdvise: Options.Advise rewrites the text of every answer, and JSON
// answers stay JSON.
func TestAdvise(t *testing.T) {
	h := start(t, Options{Advise: func(s string) string {
		return strings.ReplaceAll(s, "is left for a model to fill", "is left for the operator's --model")
	}}, nil)
	holed := strings.Replace(refund, "charge(amount: 20)", `charge(amount: ? "the amount the customer asks back")`, 1)
	got, _ := h.call(t, toolCheck, map[string]any{"plan": holed, "input": map[string]any{"id": "c1"}})
	if !json.Valid([]byte(got)) || !strings.Contains(got, "argument amount of charge is left for the operator's --model") {
		t.Errorf("check_plan's answer, advised: %s", got)
	}
}
