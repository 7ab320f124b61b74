package durable_test

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

func TestEventText(t *testing.T) {
	failed := &vm.StepError{Code: "tool-error", Message: "503 from the server"}
	for _, c := range []struct {
		ev   vm.Event
		want string
	}{
		{vm.Event{Type: vm.PlanStarted}, ""},
		{vm.Event{Type: vm.ApprovalRequested, Step: "pay", Tool: "bank.pay", Message: "over 100"}, "pay (bank.pay) over 100"},
		{vm.Event{Type: vm.ApprovalDecided, Step: "pay", Verdict: "approved", Message: "by obelisk approve"}, "pay approved by obelisk approve"},
		{vm.Event{Type: vm.StepStarted, Step: "a", Tool: "http.get", Attempt: 1}, "a (http.get) attempt 1"},
		{vm.Event{Type: vm.StepRetried, Step: "a", Tool: "http.get", Attempt: 2, Error: failed}, "a (http.get) attempt 2 503 from the server [tool-error]"},
		{vm.Event{Type: vm.StepCompleted, Step: "a", Tool: "http.get", Duration: 1234567 * time.Nanosecond}, "a (http.get) in 1.2ms"},
		{vm.Event{Type: vm.StepFailed, Step: "a", Error: failed, Duration: 61400 * time.Millisecond}, "a 503 from the server [tool-error] in 1m1s"},
		{vm.Event{Type: vm.StepSkipped, Step: "b", Reason: "its condition is false"}, "b its condition is false"},
		{vm.Event{Type: vm.StepVerdict, Step: "b", Verdict: "pass", Message: "the total is right"}, "b pass the total is right"},
		{vm.Event{Type: vm.StepRestored, Step: "a", Verdict: "completed"}, "a completed"},
		{vm.Event{Type: vm.StepWaiting, Step: "pay", Reason: "waiting for a decision"}, "pay waiting for a decision"},
		{vm.Event{Type: vm.StepFilled, Step: "c", Message: "hole 1"}, "c hole 1"},
		{vm.Event{Type: vm.ElementCompleted, Step: "each[2]", Tool: "echo"}, "each[2] (echo)"},
		{vm.Event{Type: vm.Replanned, Reason: "a failed", Message: "round 1"}, "a failed round 1"},
		{vm.Event{Type: vm.PlanFinished, Message: "completed"}, "completed"},
	} {
		if got := durable.EventText(c.ev); got != c.want {
			t.Errorf("%s: %q, want %q", c.ev.Type, got, c.want)
		}
	}
}

func TestDecisionAndErrorText(t *testing.T) {
	if got := durable.DecisionText(true, "obelisk approve", ""); got != "approved by obelisk approve" {
		t.Errorf("approved: %q", got)
	}
	if got := durable.DecisionText(false, "the console", "too much"); got != "rejected by the console: too much" {
		t.Errorf("rejected: %q", got)
	}
	err := &vm.StepError{Code: "timeout", Message: "slow"}
	if got := durable.ErrorText(err, true); got != "slow [timeout] (to its || slot)" {
		t.Errorf("handled: %q", got)
	}
}

func TestOriginString(t *testing.T) {
	for _, c := range []struct {
		o    *durable.Origin
		want string
	}{
		{nil, "not recorded (the run is older than the record of origins)"},
		{&durable.Origin{By: durable.ByCLI}, "obelisk, the command line"},
		{&durable.Origin{By: durable.ByMCPServer, Grants: "0123456789abcdef"}, "obelisk mcp-server, with no --name (grants 0123456789ab)"},
		{&durable.Origin{By: durable.ByMCPServer, Name: "shop's desk", Grants: "ab"}, `obelisk mcp-server --name "shop's desk" (grants ab)`},
		{&durable.Origin{By: "other"}, "other"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}

// TestWriteText shows a journaled run that waits for an approval, then
// has completed: its steps, approvals and output, escaped.
func TestWriteText(t *testing.T) {
	var calls atomic.Int64
	reg := tools(&calls)
	plan, _, err := durable.Compile(source("greeting.plan", greeting, reg), map[string]any{"name": "Ada\x1b"})
	if err != nil {
		t.Fatal(err)
	}
	r, store, err := durable.Start(plan, durable.Settings{Origin: &durable.Origin{By: durable.ByCLI}}, durable.StartOptions{Dir: t.TempDir(), ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	res, err := r.Execute(t.Context(), durable.ExecOptions{Tools: reg})
	if err != nil || res.Status != vm.RunWaiting {
		t.Fatalf("%v %v", res, err)
	}
	text := func() string {
		det, err := store.Show("g")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := det.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	waiting := text()
	for _, want := range []string{"run g: waiting\n", "plan:      greeting.plan\n", "made by:   obelisk, the command line\n",
		"processes: 1\n", "input:\n  {\n    \"name\": \"Ada\\u001b\"\n  }\n", "  hello  completed  1", `"Hello, Ada\u001b!"`,
		"\napprovals:\n  step sent (send) \"Send the greeting?\": waiting\n    arguments: {\"text\":\"Hello, Ada\\u001b!\"}\n"} {
		if !strings.Contains(waiting, want) {
			t.Errorf("waiting: no %q in\n%s", want, waiting)
		}
	}
	ap, err := store.Choose("g", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Decide("g", ap, durable.Decision{Approved: true, By: "a test", Note: "fine"}); err != nil {
		t.Fatal(err)
	}
	if r, err = store.Resume("g", false); err != nil {
		t.Fatal(err)
	}
	if res, err = r.Execute(t.Context(), durable.ExecOptions{Tools: reg}); err != nil || res.Status != vm.RunCompleted {
		t.Fatalf("%v %v", res, err)
	}
	done := text()
	for _, want := range []string{"run g: completed\n", "finished:  ", "processes: 2\n", ": approved by a test: fine\n",
		"\noutput:\n  \"sent: Hello, Ada\\u001b!\"\n"} {
		if !strings.Contains(done, want) {
			t.Errorf("completed: no %q in\n%s", want, done)
		}
	}
	if strings.Contains(done, "\x1b") {
		t.Errorf("an escape character went through:\n%q", done)
	}
}
