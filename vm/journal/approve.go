package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

// ApprovalPolicy says what happens to an approval nobody decides: after
// Timeout (0: never), the gate is approved when Approve is set, rejected
// otherwise.
type ApprovalPolicy struct {
	Timeout time.Duration `json:"timeout,omitempty"`
	Approve bool          `json:"approve,omitempty"`
}

// String says it for people: "approve after 24h0m0s".
func (p ApprovalPolicy) String() string {
	if p.Timeout <= 0 {
		return "wait for a decision"
	}
	if p.Approve {
		return "approve after " + p.Timeout.String()
	}
	return "reject after " + p.Timeout.String()
}

// Approver returns the run's approver: a request decided before (by an
// earlier process, or with obelisk approve) gets that decision; a new one
// is recorded, then asked of next, and the answer recorded. Without next
// the gate waits: the approver returns vm.ErrWaiting and the run stops as
// waiting, to be resumed once the decision is recorded. Once a request is
// older than the policy's timeout, the policy decides it.
func (r *Run) Approver(next vm.Approver, policy ApprovalPolicy) vm.Approver {
	return &approver{r: r, next: next, policy: policy}
}

type approver struct {
	r      *Run
	next   vm.Approver
	policy ApprovalPolicy
}

func (a *approver) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	d := a.r.d
	ap, err := d.approval(a.r.ID, req.Round, req.Step)
	if err != nil {
		return vm.Decision{}, err
	}
	if ap == nil {
		args, err := json.Marshal(req.Args)
		if err != nil {
			return vm.Decision{}, fmt.Errorf("recording the approval request: %w", err)
		}
		now := d.now()
		if err := a.r.write(anApproval, a.r.ID, req.Round, req.Step, req.Tool, req.Message, args, req.Plan, req.Diff, now.UnixNano()); err != nil {
			return vm.Decision{}, fmt.Errorf("recording the approval request: %w", err)
		}
		ap = &Approval{Run: a.r.ID, Round: req.Round, Step: req.Step, Requested: now}
	}
	if ap.Decided() {
		return ap.Decision(), nil
	}
	if a.policy.Timeout > 0 && d.now().Sub(ap.Requested) >= a.policy.Timeout {
		return a.byDefault(ap)
	}
	if a.next == nil {
		return vm.Decision{}, fmt.Errorf("%s: %w", what(req.Step), vm.ErrWaiting)
	}
	actx := ctx
	if a.policy.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, ap.Requested.Add(a.policy.Timeout))
		defer cancel()
	}
	dec, err := a.next.Approve(actx, req)
	if err != nil {
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return a.byDefault(ap)
		}
		return dec, err
	}
	if err := d.Decide(a.r.ID, req.Round, req.Step, Decision{Approved: dec.Approved, Note: dec.Note, Plan: dec.Plan, By: "the run's approver"}); err != nil {
		return vm.Decision{}, err
	}
	return dec, nil
}

// byDefault decides a request that timed out by the policy.
func (a *approver) byDefault(ap *Approval) (vm.Decision, error) {
	verb := "rejected"
	if a.policy.Approve {
		verb = "approved"
	}
	dec := Decision{Approved: a.policy.Approve, Note: fmt.Sprintf("no decision within %s: %s by default", a.policy.Timeout, verb), By: "timeout"}
	if err := a.r.d.Decide(a.r.ID, ap.Round, ap.Step, dec); err != nil {
		return vm.Decision{}, err
	}
	return vm.Decision{Approved: dec.Approved, Note: dec.Note}, nil
}

func what(step string) string {
	if step == "" {
		return "the plan"
	}
	return "step " + step
}

// Approval is an approval request of a run, and its decision once made.
type Approval struct {
	Run   string `json:"run"`
	Round int    `json:"round"`
	// Step is the gated step, or "" for the whole plan.
	Step    string         `json:"step"`
	Tool    string         `json:"tool,omitempty"`
	Message string         `json:"message,omitempty"`
	Args    map[string]any `json:"args,omitempty"`
	// Plan is the plan's text for a plan approval; Diff shows a replanned
	// plan against the one before.
	Plan      string    `json:"plan,omitempty"`
	Diff      string    `json:"diff,omitempty"`
	Requested time.Time `json:"requested"`
	// DecidedAt is zero while the request waits.
	DecidedAt time.Time `json:"decided,omitzero"`
	Approved  bool      `json:"approved"`
	Note      string    `json:"note,omitempty"`
	Edit      string    `json:"edit,omitempty"`
	By        string    `json:"by,omitempty"`
}

// Decided reports whether the request has its decision.
func (a *Approval) Decided() bool { return !a.DecidedAt.IsZero() }

// Decision returns the decision as the interpreter takes it.
func (a *Approval) Decision() vm.Decision {
	d := vm.Decision{Approved: a.Approved, Note: a.Note}
	if a.Edit != "" {
		d.Plan = []byte(a.Edit)
	}
	return d
}

// Decision is a decision to record.
type Decision struct {
	Approved bool
	Note     string
	// Plan replaces the plan (plan text), for a plan approval.
	Plan []byte
	// By says who or what decided.
	By string
}

func scanApproval(row interface{ Scan(...any) error }) (*Approval, error) {
	var a Approval
	var args []byte
	var requested, decided int64
	err := row.Scan(&a.Run, &a.Round, &a.Step, &a.Tool, &a.Message, &args, &a.Plan, &a.Diff, &requested, &decided, &a.Approved, &a.Note, &a.Edit, &a.By)
	if err != nil {
		return nil, err
	}
	a.Requested = time.Unix(0, requested).UTC()
	if decided != 0 {
		a.DecidedAt = time.Unix(0, decided).UTC()
	}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a.Args); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

const approvalColumns = `run, round, step, tool, message, args, plan, diff, requested, decided, approved, note, edit, by`

func (d *DB) approval(run string, round int, step string) (*Approval, error) {
	a, err := scanApproval(d.db.QueryRow(`SELECT `+approvalColumns+` FROM approvals WHERE run = ? AND round = ? AND step = ?`, run, round, step))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return a, err
}

// Approvals returns a run's approval requests, in the order they were
// made.
func (d *DB) Approvals(run string) ([]*Approval, error) {
	rows, err := d.db.Query(`SELECT `+approvalColumns+` FROM approvals WHERE run = ? ORDER BY requested, round, step`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Pending returns a run's approval requests that wait for a decision.
func (d *DB) Pending(run string) ([]*Approval, error) {
	all, err := d.Approvals(run)
	if err != nil {
		return nil, err
	}
	var out []*Approval
	for _, a := range all {
		if !a.Decided() {
			out = append(out, a)
		}
	}
	return out, nil
}

// Decide records the decision of a request. A request decided already
// keeps its first decision.
func (d *DB) Decide(run string, round int, step string, dec Decision) error {
	res, err := d.exec(`UPDATE approvals SET decided = ?, approved = ?, note = ?, edit = ?, by = ? WHERE run = ? AND round = ? AND step = ? AND decided = 0`,
		d.now().UnixNano(), dec.Approved, dec.Note, string(dec.Plan), dec.By, run, round, step)
	if err != nil {
		return fmt.Errorf("recording the decision: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %s has no approval of %s waiting for a decision", run, what(step))
	}
	return nil
}

// replanner gives recorded replans, and records new ones.
type replanner struct {
	r    *Run
	next vm.Replanner
}

func (p *replanner) Replan(ctx context.Context, req *vm.ReplanRequest) (*lang.File, error) {
	d := p.r.d
	var text string
	err := d.db.QueryRow(`SELECT plan FROM replans WHERE run = ? AND round = ?`, p.r.ID, req.Attempt).Scan(&text)
	switch {
	case err == nil:
		f, diags := lang.Parse(fmt.Sprintf("replan-%d.plan", req.Attempt), []byte(text))
		if diags.HasErrors() {
			return nil, fmt.Errorf("the recorded replan %d does not parse: %w", req.Attempt, diags)
		}
		return f, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	case p.next == nil:
		return nil, errors.New("no replanner is configured")
	}
	f, err := p.next.Replan(ctx, req)
	if err != nil || f == nil {
		return f, err
	}
	if err := p.r.write(aReplan, p.r.ID, req.Attempt, string(lang.Format(f)), d.now().UnixNano()); err != nil {
		return nil, fmt.Errorf("recording the new plan: %w", err)
	}
	return f, nil
}
