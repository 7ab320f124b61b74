package obtemporal

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/obelisk-plan/obelisk/vm"
)

// StartRun starts a run of a plan as a workflow on a task queue, under
// the workflow ID id ("" for a new one). It returns the workflow's ID.
// timeout bounds the workflow (0: no bound but the worker's).
func StartRun(ctx context.Context, c client.Client, taskQueue, id string, s Start, timeout time.Duration) (string, error) {
	// A workflow ID is never used again, even once its run has ended: it
	// is the run's ID in each call's idempotency key, which must not be
	// shared by two runs.
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue, WorkflowExecutionTimeout: timeout,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}
	if opts.ID == "" {
		opts.ID = "obelisk-" + vm.NewRunID()
	}
	run, err := c.ExecuteWorkflow(ctx, opts, WorkflowName, s)
	if err != nil {
		return "", fmt.Errorf("starting the workflow: %w", err)
	}
	return run.GetID(), nil
}

// Wait waits for a run's workflow to end and returns its outcome.
func Wait(ctx context.Context, c client.Client, id string) (*Outcome, error) {
	var out Outcome
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("waiting for workflow %s: %w", id, err)
	}
	return &out, nil
}

// followInterval is how often Follow looks at a run.
const followInterval = 200 * time.Millisecond

// Follow waits until a run's workflow ends, and returns its outcome, or
// until the run waits for a decision, and returns its state, whose
// Approvals say which.
func Follow(ctx context.Context, c client.Client, id string) (*Outcome, *Status, error) {
	for {
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return nil, nil, fmt.Errorf("following workflow %s: %w", id, err)
		}
		if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			out, err := Wait(ctx, c, id)
			return out, nil, err
		}
		// A query is answered once a worker has taken the run.
		if st, err := Show(ctx, c, id); err == nil && st.Status == vm.RunWaiting {
			return nil, st, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("following workflow %s: %w", id, ctx.Err())
		case <-time.After(followInterval):
		}
	}
}

// Approve records a decision on an approval a run waits for. It returns
// what was decided ("approved step x"), or an error that says which
// approvals the run waits for when the decision names none of them.
func Approve(ctx context.Context, c client.Client, id string, d Decision) (string, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: ApproveUpdate, Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return "", err
	}
	var what string
	if err := h.Get(ctx, &what); err != nil {
		return "", err
	}
	return what, nil
}

// Show returns a run's state: its steps, approvals and output.
func Show(ctx context.Context, c client.Client, id string) (*Status, error) {
	v, err := c.QueryWorkflow(ctx, id, "", ShowQuery)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}
