package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"sync/atomic"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// tools returns the operator's tools, Go functions, and counts their
// calls: greet(name) says hello; send(text) pretends to send a message.
func tools(calls *atomic.Int64) *toolkit.Registry {
	reg := toolkit.NewRegistry()
	str := json.RawMessage(`{"type": "string"}`)
	reg.MustRegister(toolkit.Definition{Name: "greet", Annotations: toolkit.Annotations{ReadOnly: true},
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}`),
		OutputSchema: str,
	}, toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		return "Hello, " + args["name"].(string) + "!", nil
	}))
	reg.MustRegister(toolkit.Definition{Name: "send",
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}`),
		OutputSchema: str,
	}, toolkit.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		return "sent: " + args["text"].(string), nil
	}))
	return reg
}

// source is a plan with the operator's tools: the checker takes their
// signatures and effects from the registry, never from the plan.
func source(name, text string, reg *toolkit.Registry) *planfile.Source {
	return &planfile.Source{Name: name, Text: text, Tools: []planfile.File{{Name: "tools.json", Text: string(reg.ToolsJSON())}}}
}

const greeting = `input {
  name: string
}

hello: greet(name: †input.name) -> †state.hello
sent: send(text: †state.hello) -> †state.sent
  approve "Send the greeting?"

output †state.sent
`

// A model wrote a plan: check it, and read the diagnostics to send back to
// the model for a repair.
func ExampleCompile() {
	var calls atomic.Int64
	answer := `hello: greet(nme: "Ada") -> †state.hello
output †state.hello
`
	_, diags, err := durable.Compile(source("answer.plan", answer, tools(&calls)), nil)
	fmt.Println(err)
	for _, d := range diags {
		fmt.Printf("%s:%d:%d: %s [%s]\n", d.File, d.Span.Start.Line, d.Span.Start.Column, d.Message, d.Code)
	}
	// Output:
	// answer.plan does not check
	// answer.plan:1:14: greet has no parameter nme (did you mean "name"?) [unknown-argument]
}

// Run a plan with a journal: every step is recorded as it finishes, and
// the run can be listed and shown afterwards, from any process.
func ExampleStore_Create() {
	dir, err := os.MkdirTemp("", "obelisk")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := durable.Open(dir, durable.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	var calls atomic.Int64
	reg := tools(&calls)
	plan, _, err := durable.Compile(source("greet.plan", greeting, reg), map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := store.Create(plan, "greet-1", durable.Settings{})
	if err != nil {
		log.Fatal(err)
	}
	// A person at hand approves the gate.
	yes := vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
		return vm.Decision{Approved: true, Note: "approved in the example"}, nil
	})
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: reg, Approver: yes})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Output)

	det, err := store.Show("greet-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range det.Steps {
		fmt.Println(s.ID, s.Status, s.Result)
	}
	// Output:
	// completed sent: Hello, Ada!
	// hello completed Hello, Ada!
	// sent completed sent: Hello, Ada!
}

// Resume a run after its process stopped: the step that finished is not
// run again. A process that died (kill -9, a crash) leaves its run as
// running, owned by a process that is gone; Resume takes it over the same
// way.
func ExampleStore_Resume() {
	dir, err := os.MkdirTemp("", "obelisk")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var calls atomic.Int64
	reg := tools(&calls)

	// The first process: it stops while the second step waits for its
	// approval.
	func() {
		store, err := durable.Open(dir, durable.Options{})
		if err != nil {
			log.Fatal(err)
		}
		defer store.Close()
		plan, _, err := durable.Compile(source("greet.plan", greeting, reg), map[string]any{"name": "Ada"})
		if err != nil {
			log.Fatal(err)
		}
		r, err := store.Create(plan, "greet-2", durable.Settings{})
		if err != nil {
			log.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		stopper := vm.ApproverFunc(func(ctx context.Context, _ vm.ApprovalRequest) (vm.Decision, error) {
			stop() // the process is stopped while it asks
			<-ctx.Done()
			return vm.Decision{}, ctx.Err()
		})
		res, err := r.Execute(ctx, durable.ExecOptions{Tools: reg, Approver: stopper})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("first process:", res.Status, "after", calls.Load(), "call")
	}()

	// Another process: it builds the same program again from the
	// journal, and continues.
	store, err := durable.OpenExisting(dir, durable.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err := store.Resume("greet-2", false)
	if err != nil {
		log.Fatal(err)
	}
	yes := vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
		return vm.Decision{Approved: true}, nil
	})
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: reg, Approver: yes})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed:", res.Status, res.Output, "after", calls.Load(), "calls in all")
	// Output:
	// first process: canceled after 1 call
	// resumed: completed sent: Hello, Ada! after 2 calls in all
}

// Approve from another process: a run with nobody to ask waits at its
// gate; a decision is recorded by another process (a person's command, a
// web console), and the run is resumed to take it.
func ExampleStore_Decide() {
	dir, err := os.MkdirTemp("", "obelisk")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var calls atomic.Int64
	reg := tools(&calls)

	store, err := durable.Open(dir, durable.Options{})
	if err != nil {
		log.Fatal(err)
	}
	plan, _, err := durable.Compile(source("greet.plan", greeting, reg), map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := store.Create(plan, "greet-3", durable.Settings{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: reg})
	if err != nil {
		log.Fatal(err)
	}
	pending, _ := r.Pending()
	fmt.Println(res.Status, "for", durable.Describe(pending[0]))
	store.Close()

	// The person's process records the decision.
	other, err := durable.OpenExisting(dir, durable.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ap, err := other.Choose("greet-3", "sent")
	if err == nil {
		err = other.Decide("greet-3", ap, durable.Decision{Approved: true, Note: "looks right", By: "ada@example.com"})
	}
	if err != nil {
		log.Fatal(err)
	}
	other.Close()

	// A third process resumes the run.
	store, err = durable.OpenExisting(dir, durable.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err = store.Resume("greet-3", false)
	if err != nil {
		log.Fatal(err)
	}
	if res, err = r.Execute(context.Background(), durable.ExecOptions{Tools: reg}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Output, "with", calls.Load(), "calls")
	if _, err := store.Resume("greet-3", false); errors.As(err, new(*durable.FinishedError)) {
		fmt.Println(err)
	}
	// Output:
	// waiting for step sent (send) "Send the greeting?"
	// completed sent: Hello, Ada! with 2 calls
	// run greet-3 has ended (completed): there is nothing to resume
}

// Start a run of a plan in a state directory. Journaled, with nobody to
// ask, it waits at the approval gate for a decision that any process may
// record (see Store.Decide); StartOptions.NoJournal would run it without
// a journal instead, and the gate would reject.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "obelisk")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var calls atomic.Int64
	reg := tools(&calls)
	plan, _, err := durable.Compile(source("greet.plan", greeting, reg), map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	r, store, err := durable.Start(plan, durable.Settings{}, durable.StartOptions{Dir: dir, ID: "greet-4"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: reg})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, res.Status)
	pending, err := r.Pending()
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range pending {
		fmt.Println("waiting for", durable.Describe(a))
	}
	// Output:
	// greet-4 waiting
	// waiting for step sent (send) "Send the greeting?"
}
