package durable_test

import (
	"context"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// Run a plan in memory, without a journal: the run cannot be resumed,
// and a gate with nobody to ask rejects its step. Here a policy of the
// program's decides the gate.
func ExampleTransient() {
	var calls atomic.Int64
	reg := tools(&calls)
	plan, _, err := durable.Compile(source("greet.plan", greeting, reg), map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	policy := vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
		return vm.Decision{Approved: true, Note: "greetings may be sent"}, nil
	})
	run := durable.Transient(plan, durable.Settings{})
	res, err := run.Execute(context.Background(), durable.ExecOptions{Tools: reg, Approver: policy})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Output)

	// Without an approver, the gate rejects its step.
	res, err = durable.Transient(plan, durable.Settings{}).Execute(context.Background(), durable.ExecOptions{Tools: reg})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Steps {
		if s.Error != nil {
			fmt.Println(res.Status, "at", s.ID, s.Error.Code)
		}
	}
	// Output:
	// completed sent: Hello, Ada!
	// failed at sent rejected
}
