package fill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
	"github.com/obelisk-plan/obelisk/toolkit/replay"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

func compile(t *testing.T, src string) *compiler.Program {
	t.Helper()
	f, diags := lang.Parse("test.plan", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse:\n%s", diags)
	}
	info, cd := compiler.Check(f, compiler.Config{})
	if cd.HasErrors() {
		t.Fatalf("check:\n%s", cd)
	}
	prog, err := compiler.Compile(info, cd, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// tools answers calls with fixed results and records them.
type tools struct {
	mu      sync.Mutex
	results map[string]any
	calls   []call
}

type call struct {
	Tool string
	Args map[string]any
}

func (f *tools) Call(_ context.Context, name string, args map[string]any) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{name, args})
	r, ok := f.results[name]
	if !ok {
		return nil, fmt.Errorf("no result for %s", name)
	}
	return r, nil
}

func (f *tools) called(name string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, c := range f.calls {
		if c.Tool == name {
			out = append(out, c.Args)
		}
	}
	return out
}

// approvals approves every request and keeps it.
type approvals struct {
	mu   sync.Mutex
	reqs []vm.ApprovalRequest
}

func (a *approvals) Approve(_ context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, req)
	return vm.Decision{Approved: true}, nil
}

// events keeps the events of a run.
type events struct {
	mu  sync.Mutex
	all []vm.Event
}

func (e *events) observe(ev vm.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(t vm.EventType) []vm.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []vm.Event
	for _, ev := range e.all {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

const refundPlan = `tool checkBillingHistory(customerId: string) -> {orders: int, refundable: number} pure
tool issueRefund(customerId: string, amount: number) -> {confirmationId: string} irreversible

input {
  customerId: string
}

history: checkBillingHistory(customerId: †input.customerId) -> †state.history
refund: issueRefund(customerId: †input.customerId, amount: ? "the refundable amount from †state.history") -> †state.receipt
  approve "Refund the customer?"

output †state.receipt.confirmationId
`

func refundTools() *tools {
	return &tools{results: map[string]any{
		"checkBillingHistory": map[string]any{"orders": int64(3), "refundable": 42.5},
		"issueRefund":         map[string]any{"confirmationId": "RF-1"},
	}}
}

func openAIModel(srv *llmtest.Server) llm.Model {
	return openai.New(srv.Settings("gpt-test", "gpt-eval"), nil)
}

// TestHoleFilled: the model is asked, with the instruction, the value the
// instruction reads and the parameter's schema held by strict Structured
// Outputs; its answer is checked, recorded as a step-filled event, shown
// at the approval gate, and passed to the tool.
func TestHoleFilled(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`{"value": 42.5}`, llm.Usage{Input: 100, Output: 5})))
	defer srv.Close()
	tl, ap, ev := refundTools(), &approvals{}, &events{}
	res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: tl, Approver: ap, Observer: ev.observe, Filler: &fill.Model{Model: openAIModel(srv)}})
	if err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
	}
	if res.Output != "RF-1" {
		t.Errorf("output %v", res.Output)
	}
	if got := tl.called("issueRefund"); len(got) != 1 || got[0]["amount"] != 42.5 {
		t.Errorf("issueRefund calls %v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if !r.Strict || r.SchemaName != "obelisk_fill" {
		t.Errorf("schema %q strict %v", r.SchemaName, r.Strict)
	}
	want := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "number"}}, "required": []any{"value"}, "additionalProperties": false}
	if diff := cmp.Diff(want, r.Schema); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	prompt := r.Messages[0].Content
	for _, s := range []string{"issueRefund", "amount", "the refundable amount from †state.history", `†state.history = {"orders":3,"refundable":42.5}`} {
		if !strings.Contains(prompt, s) {
			t.Errorf("the prompt lacks %q:\n%s", s, prompt)
		}
	}
	if len(ap.reqs) != 1 || ap.reqs[0].Args["amount"] != 42.5 || !slices.Equal(ap.reqs[0].Filled, []string{"amount"}) {
		t.Errorf("approval requests %+v", ap.reqs)
	}
	filled := ev.of(vm.StepFilled)
	if len(filled) != 1 || filled[0].Step != "refund" || filled[0].Message != "amount" || filled[0].Result != 42.5 || filled[0].Verdict != vm.FillAccepted {
		t.Errorf("step-filled events %+v", filled)
	}
}

// TestWrongFillRejected: an answer that does not fit the parameter is
// refused and the model asked again, with the reason; answers that never
// fit fail the step, and the tool is not called nor its approval asked.
func TestWrongFillRejected(t *testing.T) {
	t.Run("then right", func(t *testing.T) {
		srv := llmtest.NewOpenAI(llmtest.Script(
			llmtest.Text(`{"value": "fifty"}`, llm.Usage{}),
			llmtest.Text(`{"value": 42.5}`, llm.Usage{}),
		))
		defer srv.Close()
		tl, ev := refundTools(), &events{}
		res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
			vm.Options{Tools: tl, Approver: &approvals{}, Observer: ev.observe, Filler: &fill.Model{Model: openAIModel(srv)}})
		if err != nil || res.Status != vm.RunCompleted {
			t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[0].Content, `Your answer before, "fifty", was refused: amount: the string "fifty" is not a number`) {
			t.Fatalf("requests: %d; the second:\n%s", len(reqs), reqs[len(reqs)-1].Messages[0].Content)
		}
		rejected := 0
		for _, e := range ev.of(vm.StepFilled) {
			if e.Verdict == vm.FillRejected {
				rejected++
			}
		}
		if rejected != 1 {
			t.Errorf("%d rejected fillings", rejected)
		}
		if got := tl.called("issueRefund"); len(got) != 1 || got[0]["amount"] != 42.5 {
			t.Errorf("issueRefund calls %v", got)
		}
	})
	t.Run("never right", func(t *testing.T) {
		srv := llmtest.NewOpenAI(llmtest.Script(
			llmtest.Text(`{"value": "fifty"}`, llm.Usage{}),
			llmtest.Text(`{"value": null}`, llm.Usage{}),
			llmtest.Text(`{"value": [42.5]}`, llm.Usage{}),
		))
		defer srv.Close()
		tl, ap := refundTools(), &approvals{}
		res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
			vm.Options{Tools: tl, Approver: ap, Filler: &fill.Model{Model: openAIModel(srv)}})
		if err != nil {
			t.Fatal(err)
		}
		step := res.Steps[1]
		if step.Status != vm.StatusFailed || step.Error.Code != vm.CodeBadFill ||
			!strings.Contains(step.Error.Message, "the model's answer for argument amount of issueRefund does not fit, after 3 tries: amount: a list is not a number; it was not used") {
			t.Fatalf("refund: %s %+v", step.Status, step.Error)
		}
		if got := tl.called("issueRefund"); len(got) != 0 || len(ap.reqs) != 0 {
			t.Errorf("issueRefund called %v, approvals %v", got, ap.reqs)
		}
	})
}

const taskPlan = `tool findPetFriendlyHotel(city: string, pets: bool) -> {name: string, pets: bool} pure
tool bookHotel(city: string, nights: int) -> {name: string, ref: string} irreversible
tool deleteAccount(id: string) -> {deleted: bool} irreversible

input {
  city: string
}

state {
  hotel: {name: string}
}

hotel: task "find a hotel in †input.city that takes pets" using [findPetFriendlyHotel, bookHotel] -> †state.hotel
  approve "Go ahead?"

output †state.hotel.name
`

func taskTools() *tools {
	return &tools{results: map[string]any{
		"findPetFriendlyHotel": map[string]any{"name": "Tiergarten", "pets": true},
		"bookHotel":            map[string]any{"name": "Adlon", "ref": "B-1"},
		"deleteAccount":        map[string]any{"deleted": true},
	}}
}

// TestTaskChoosesBetweenTwoTools: the model is shown the task's goal, the
// values it reads and the candidates with their schemas, under Anthropic's
// tool use; it chooses one, whose arguments are checked, shown at the
// approval gate and passed to it. The other candidate is not called, and
// a choice outside the candidates is refused, though the tool exists.
func TestTaskChoosesBetweenTwoTools(t *testing.T) {
	srv := llmtest.NewAnthropic(llmtest.Script(
		llmtest.Text(`{"value": {"candidate": "deleteAccount", "arguments": {"id": "u1"}}}`, llm.Usage{}),
		llmtest.Text(`{"value": {"candidate": "bookHotel", "arguments": {"city": "Berlin", "nights": 2.0}}}`, llm.Usage{}),
	))
	defer srv.Close()
	model := anthropic.New(srv.Settings("claude-test", "claude-eval"), nil)
	tl, ap, ev := taskTools(), &approvals{}, &events{}
	res, err := vm.Run(context.Background(), compile(t, taskPlan), map[string]any{"city": "Berlin"},
		vm.Options{Tools: tl, Approver: ap, Observer: ev.observe, Filler: &fill.Model{Model: model}})
	if err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
	}
	if res.Output != "Adlon" {
		t.Errorf("output %v", res.Output)
	}
	if got := tl.called("bookHotel"); len(got) != 1 || got[0]["nights"] != int64(2) || got[0]["city"] != "Berlin" {
		t.Errorf("bookHotel calls %v", got)
	}
	if n, m := len(tl.called("findPetFriendlyHotel")), len(tl.called("deleteAccount")); n != 0 || m != 0 {
		t.Errorf("findPetFriendlyHotel called %d times, deleteAccount %d", n, m)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !strings.Contains(reqs[1].Messages[0].Content, `candidate "deleteAccount" is not one of the task's: choose one of findPetFriendlyHotel, bookHotel`) {
		t.Errorf("the second request:\n%s", reqs[1].Messages[0].Content)
	}
	prompt := reqs[0].Messages[0].Content
	for _, s := range []string{"find a hotel in †input.city that takes pets", `†input.city = "Berlin"`, "- findPetFriendlyHotel (pure)", "- bookHotel (irreversible)"} {
		if !strings.Contains(prompt, s) {
			t.Errorf("the prompt lacks %q:\n%s", s, prompt)
		}
	}
	value, _ := reqs[0].Schema["properties"].(map[string]any)["value"].(map[string]any)
	if alts, _ := value["anyOf"].([]any); len(alts) != 2 {
		t.Errorf("the answer's schema: %v", reqs[0].Schema)
	}
	if len(ap.reqs) != 1 || ap.reqs[0].Tool != "bookHotel" || ap.reqs[0].Args["nights"] != int64(2) || !slices.Equal(ap.reqs[0].Filled, []string{"city", "nights"}) {
		t.Errorf("approval requests %+v", ap.reqs)
	}
	if r := res.Steps[0]; r.Tool != "bookHotel" {
		t.Errorf("the step's tool is %s", r.Tool)
	}
}

// TestTaskResultMustFit: a candidate whose result does not fit the task's
// declared type fails the step with invalid-output.
func TestTaskResultMustFit(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`{"value": {"candidate": "findPetFriendlyHotel", "arguments": {"city": "Berlin", "pets": true}}}`, llm.Usage{})))
	defer srv.Close()
	tl := taskTools()
	tl.results["findPetFriendlyHotel"] = map[string]any{"pets": true}
	res, err := vm.Run(context.Background(), compile(t, taskPlan), map[string]any{"city": "Berlin"},
		vm.Options{Tools: tl, Approver: &approvals{}, Filler: &fill.Model{Model: openAIModel(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Steps[0].Error; e == nil || e.Code != "invalid-output" || !strings.Contains(e.Message, "the result of findPetFriendlyHotel does not match its type") {
		t.Errorf("error %+v", e)
	}
}

// TestSchemaRejected: a server without constrained output refuses the
// schema; the request is made again without it, and no schema is sent
// after that.
func TestSchemaRejected(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text("```json\n{\"value\": 42.5}\n```", llm.Usage{})))
	srv.RejectSchema = "response_format json_schema is not supported"
	defer srv.Close()
	tl := refundTools()
	res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: tl, Approver: &approvals{}, Filler: &fill.Model{Model: openAIModel(srv)}})
	if err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Schema == nil || reqs[1].Schema != nil {
		t.Fatalf("requests %d", len(reqs))
	}
}

// TestNoFiller: a step with a hole, in a run without a filler, fails with
// no-filler and calls nothing.
func TestNoFiller(t *testing.T) {
	tl := refundTools()
	res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"}, vm.Options{Tools: tl, Approver: &approvals{}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Steps[1].Error; e == nil || e.Code != vm.CodeNoFiller {
		t.Fatalf("error %+v", e)
	}
	if len(tl.called("issueRefund")) != 0 {
		t.Error("issueRefund was called")
	}
}

// TestRestoreFill: a filling recorded by an earlier process of the run is
// taken, and the model is not asked; one that no longer fits is asked
// for again.
func TestRestoreFill(t *testing.T) {
	srv := llmtest.NewOpenAI(llmtest.Script(llmtest.Text(`{"value": 7.5}`, llm.Usage{})))
	defer srv.Close()
	run := func(recorded any) *tools {
		tl := refundTools()
		_, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"}, vm.Options{Tools: tl, Approver: &approvals{},
			Filler: &fill.Model{Model: openAIModel(srv)},
			RestoreFill: func(round int, step, arg string) (any, bool) {
				return recorded, round == 0 && step == "refund" && arg == "amount"
			}})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	if got := run(int64(40)); got.called("issueRefund")[0]["amount"] != 40.0 || len(srv.Requests()) != 0 {
		t.Errorf("restored: %v, %d requests", got.called("issueRefund"), len(srv.Requests()))
	}
	if got := run("forty"); got.called("issueRefund")[0]["amount"] != 7.5 || len(srv.Requests()) != 1 {
		t.Errorf("not fitting: %v, %d requests", got.called("issueRefund"), len(srv.Requests()))
	}
}

// TestScriptAndReplay: a fills file answers holes and tasks offline; a
// run recorded with its fillings replays them, asking no model.
func TestScriptAndReplay(t *testing.T) {
	script, err := fill.ParseScript([]byte(`{"refund": {"amount": 12}}`))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	tl := refundTools()
	rec, err := replay.NewRecorder(tl, path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: rec, Approver: &approvals{}, Filler: fill.Recorded(script, rec)})
	if err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("run: %v %v %v", err, res.Status, res.Err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := vm.Run(context.Background(), compile(t, refundPlan), map[string]any{"customerId": "c1"},
		vm.Options{Tools: p, Approver: &approvals{}, Filler: fill.Replayed(p)})
	if err != nil || res2.Status != vm.RunCompleted {
		t.Fatalf("replay: %v %v %v", err, res2.Status, res2.Err)
	}
	a, _ := json.Marshal(res.Output)
	b, _ := json.Marshal(res2.Output)
	if string(a) != string(b) || len(p.Unused()) != 0 {
		t.Errorf("outputs %s and %s; unused %v", a, b, p.Unused())
	}
	if _, err := p.Fill("refund", "amount"); err == nil || !strings.Contains(err.Error(), "the recording has no answer of a model for argument amount of step refund") {
		t.Errorf("a fill past the recording: %v", err)
	}
}
