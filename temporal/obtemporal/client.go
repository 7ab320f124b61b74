package obtemporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

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

// Wait waits for a run's workflow to end and returns its outcome. A run
// canceled (Cancel) or terminated (Terminate, or by the server) has an
// outcome too, with the status vm.RunCanceled and an error that says why.
func Wait(ctx context.Context, c client.Client, id string) (*Outcome, error) {
	var out Outcome
	err := retrying(ctx, func() error { return c.GetWorkflow(ctx, id, "").Get(ctx, &out) })
	if err == nil {
		return &out, nil
	}
	if ce := (*temporal.CanceledError)(nil); errors.As(err, &ce) {
		if ce.HasDetails() && ce.Details(&out) == nil {
			return &out, nil
		}
		return &Outcome{Status: vm.RunCanceled, Error: "the run's workflow was canceled"}, nil
	}
	if te := (*temporal.TerminatedError)(nil); errors.As(err, &te) {
		msg := "the run's workflow was terminated"
		if reason := terminatedReason(ctx, c, id); reason != "" {
			msg += ": " + reason
		}
		return &Outcome{Status: vm.RunCanceled, Error: msg + "; what it had done is in obelisk-temporal show"}, nil
	}
	return nil, fmt.Errorf("waiting for workflow %s: %w", id, err)
}

// terminatedReason returns why a terminated workflow was terminated, as
// its history's last event says: the reason given to Terminate, or the
// server's (a history over its limits); "" when the history cannot be
// read.
func terminatedReason(ctx context.Context, c client.Client, id string) string {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return ""
		}
		if a := ev.GetWorkflowExecutionTerminatedEventAttributes(); a != nil {
			return a.GetReason()
		}
	}
	return ""
}

// Cancel asks a run's workflow to stop: it starts no more calls and ends
// with the status vm.RunCanceled and what it had done; calls that a
// worker has under way are asked to stop and may still finish. It
// returns once the request is recorded.
func Cancel(ctx context.Context, c client.Client, id string) error {
	if err := c.CancelWorkflow(ctx, id, ""); err != nil {
		return fmt.Errorf("canceling workflow %s: %w", id, err)
	}
	return nil
}

// Terminate ends a run's workflow at once, with no worker involved: it
// runs no code of the workflow's, and calls under way are abandoned.
// reason is kept in the workflow's history. Prefer Cancel, which lets the
// run record how it ended.
func Terminate(ctx context.Context, c client.Client, id, reason string) error {
	if err := c.TerminateWorkflow(ctx, id, "", reason); err != nil {
		return fmt.Errorf("terminating workflow %s: %w", id, err)
	}
	return nil
}

// LastPoll returns when a worker last polled a task queue for the
// workflow tasks of runs, as the server remembers it (for a few minutes);
// the zero time when no worker did.
func LastPoll(ctx context.Context, c client.Client, taskQueue string) (time.Time, error) {
	resp, err := c.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return time.Time{}, fmt.Errorf("describing task queue %s: %w", taskQueue, err)
	}
	var last time.Time
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime().AsTime(); t.After(last) {
			last = t
		}
	}
	return last, nil
}

// followInterval is how often Follow first looks at a run, and
// followMax how often at the least, once the run has gone on a while.
const (
	followInterval = 200 * time.Millisecond
	followMax      = 2 * time.Second
)

// unreachableFor is how long Wait and Follow go on trying while the
// server cannot be reached (restarted, or failing over) before they
// give up; a run goes on without them, and Wait or Follow again later
// finds it.
const unreachableFor = 2 * time.Minute

// transient reports whether err is the server's being unreachable for a
// while, which Wait and Follow wait out.
func transient(err error) bool {
	var u *serviceerror.Unavailable
	var d *serviceerror.DeadlineExceeded
	return errors.As(err, &u) || errors.As(err, &d)
}

// retrying calls f until it returns an error that is not transient, or
// the server has been unreachable for unreachableFor, or ctx ends.
func retrying(ctx context.Context, f func() error) error {
	var since time.Time
	wait := followInterval
	for {
		err := f()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > unreachableFor {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, followMax)
	}
}

// Follow waits until a run's workflow ends, and returns its outcome, or
// until the run waits for a decision, and returns its state, whose
// Approvals say which. It looks at the run with the status query, more
// rarely as the run goes on, and waits out a server that cannot be
// reached for a while.
func Follow(ctx context.Context, c client.Client, id string) (*Outcome, *Status, error) {
	wait := followInterval
	for {
		var running bool
		err := retrying(ctx, func() error {
			desc, err := c.DescribeWorkflowExecution(ctx, id, "")
			running = err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("following workflow %s: %w", id, err)
		}
		if !running {
			out, err := Wait(ctx, c, id)
			return out, nil, err
		}
		// A query is answered once a worker has taken the run.
		if st, err := query(ctx, c, id, StatusQuery); err == nil && st.Status == vm.RunWaiting {
			return nil, st, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("following workflow %s: %w", id, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait+wait/2, followMax)
	}
}

// pollWindow is how recently a worker must have polled a run's task
// queue for a decision to be sent to the run.
const pollWindow = time.Minute

// ErrNoWorker is returned, wrapped, by Approve when no worker polls the
// run's task queue: the decision was not sent.
var ErrNoWorker = errors.New("no worker polls the run's task queue")

// Approve records a decision on an approval a run waits for. It returns
// what was decided ("approved step x"), or an error that says which
// approvals the run waits for when the decision names none of them.
//
// A decision is taken by the run's worker. When no worker has polled the
// run's task queue lately, Approve sends nothing and returns ErrNoWorker
// at once: a decision sent then would wait in the server and be applied
// whenever a worker came back, long after its caller gave up on it.
func Approve(ctx context.Context, c client.Client, id string, d Decision) (string, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "", fmt.Errorf("workflow %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "", fmt.Errorf("workflow %s has ended (%s): it waits for no decision", id, strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_")))
	}
	queue := info.GetTaskQueue()
	last, err := LastPoll(ctx, c, queue)
	if err != nil {
		return "", err
	}
	if last.IsZero() || time.Since(last) > pollWindow {
		return "", fmt.Errorf("%w: no worker has polled task queue %s in the last %s, so the decision was not sent; start one (obelisk-temporal worker --task-queue %s) and decide again", ErrNoWorker, queue, pollWindow, queue)
	}
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
	return query(ctx, c, id, ShowQuery)
}

// query asks a run's workflow one of its queries.
func query(ctx context.Context, c client.Client, id, name string) (*Status, error) {
	v, err := c.QueryWorkflow(ctx, id, "", name)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}
