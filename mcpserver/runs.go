package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

// A run executes in a goroutine of the server, under the server's context,
// not the call's: it outlives the call that started it. While a call
// follows it (run_plan, run_status with wait, resume_run), the call sends
// progress notifications, and asks the person through the client at each
// approval gate. With no call following, or a client that cannot ask, a
// gate waits: the run is saved as waiting in the journal.

// activeRun is a run executing in this process.
type activeRun struct {
	id    string
	total int // the plan's steps
	done  chan struct{}
	// err is set, before done is closed, when the run could not start or
	// its end could not be recorded.
	err error

	mu        sync.Mutex
	finished  int // steps completed, failed or skipped
	running   int
	last      string // what happened last, for progress messages
	followers []*follower
}

// follower is a call that follows a run.
type follower struct {
	// canAsk says whether the call's client can ask the person.
	canAsk bool
	// questions carries the approval requests the call is to ask; gone
	// is closed when the call stops following.
	questions chan *question
	gone      chan struct{}
	// progress is signaled when the run has progressed.
	progress chan struct{}
}

// question is an approval request, and where its decision goes.
type question struct {
	req    vm.ApprovalRequest
	answer chan decision
}

type decision struct {
	dec vm.Decision
	err error
}

// start executes a run in the background.
func (s *Server) start(r *durable.Run) *activeRun {
	ar := &activeRun{id: r.ID, total: len(r.Plan().Program.Steps), done: make(chan struct{})}
	s.mu.Lock()
	s.active[r.ID] = ar
	s.mu.Unlock()
	var approver vm.Approver = ar
	if s.opts.ApproveAll {
		approver = vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
			return vm.Decision{Approved: true, Note: "approved by the operator's --yes"}, nil
		})
	}
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		_, err := r.Execute(s.ctx, durable.ExecOptions{Tools: s.opts.Caller, Approver: approver, Observer: ar.observe})
		if err != nil {
			s.warn("a run ended with an error", "run", r.ID, "error", err)
		}
		ar.err = err
		// Gone from the active runs before its followers hear that it
		// ended: a call that comes after one of them answered resumes
		// the run again instead of following the one that ended.
		s.mu.Lock()
		delete(s.active, r.ID)
		s.mu.Unlock()
		close(ar.done)
	}()
	return ar
}

// observe counts the run's top-level steps as they go, and tells the
// calls that follow it.
func (ar *activeRun) observe(ev vm.Event) {
	if strings.Contains(ev.Step, "/") {
		return // a sub-plan's steps count in the step that calls it
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	switch ev.Type {
	case vm.StepStarted:
		ar.running++
		return
	case vm.StepCompleted, vm.StepFailed:
		ar.running = max(ar.running-1, 0)
		ar.finished++
	case vm.StepSkipped, vm.StepRestored:
		ar.finished++
	default:
		return
	}
	ar.last = fmt.Sprintf("%s %s", ev.Step, strings.TrimPrefix(string(ev.Type), "step-"))
	for _, f := range ar.followers {
		select {
		case f.progress <- struct{}{}:
		default: // signaled already
		}
	}
}

// counts returns how far the run has got.
func (ar *activeRun) counts() (finished, running int, last string) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.finished, ar.running, ar.last
}

// Approve asks a following call's client, which asks the person. With no
// call that can ask, the gate waits for a decision recorded in the
// journal.
func (ar *activeRun) Approve(ctx context.Context, req vm.ApprovalRequest) (vm.Decision, error) {
	for {
		ar.mu.Lock()
		i := slices.IndexFunc(ar.followers, func(f *follower) bool { return f.canAsk })
		var f *follower
		if i >= 0 {
			f = ar.followers[i]
		}
		ar.mu.Unlock()
		if f == nil {
			return vm.Decision{}, vm.ErrWaiting
		}
		q := &question{req: req, answer: make(chan decision, 1)}
		select {
		case f.questions <- q:
		case <-f.gone:
			continue // that call has returned: another may ask
		case <-ctx.Done():
			return vm.Decision{}, ctx.Err()
		}
		select {
		case d := <-q.answer:
			return d.dec, d.err
		case <-ctx.Done():
			return vm.Decision{}, ctx.Err()
		}
	}
}

func (ar *activeRun) attach(f *follower) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.followers = append(ar.followers, f)
}

func (ar *activeRun) detach(f *follower) {
	ar.mu.Lock()
	ar.followers = slices.DeleteFunc(ar.followers, func(g *follower) bool { return g == f })
	ar.mu.Unlock()
	close(f.gone)
}

// canElicit reports whether a session's client can ask its user.
func canElicit(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// follow follows a run for a call, up to wait: it answers when the run
// ends (its output) or waits for a decision nobody here can give, or when
// wait has passed (how far it has got).
func (s *Server) follow(ctx context.Context, req *sdk.CallToolRequest, ar *activeRun, wait time.Duration) (*sdk.CallToolResult, error) {
	f := &follower{
		canAsk:    !s.opts.NoElicitation && req.Session != nil && canElicit(req.Session),
		questions: make(chan *question),
		gone:      make(chan struct{}),
		progress:  make(chan struct{}, 1),
	}
	ar.attach(f)
	defer ar.detach(f)
	f.progress <- struct{}{} // how far the run has got, from the start
	token := req.Params.GetProgressToken()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ar.done:
			return s.answer(ar.id, ar.err)
		case q := <-f.questions:
			q.answer <- s.ask(ctx, req.Session, ar.id, q.req)
		case <-f.progress:
			if token != nil {
				finished, running, last := ar.counts()
				msg := fmt.Sprintf("%d of %d steps done, %d running", finished, ar.total, running)
				if last != "" {
					msg += "; " + last
				}
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(finished), Total: float64(ar.total), Message: msg}); err != nil {
					s.warn("sending a progress notification", "run", ar.id, "error", err)
				}
			}
		case <-timer.C:
			return s.answer(ar.id, nil)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ask asks the person, through the client, to decide an approval: accept
// with approve true approves, accept with approve false or decline
// rejects. Any other answer (the person dismissed the request, the client
// could not ask or said neither) leaves the gate waiting.
func (s *Server) ask(ctx context.Context, ss *sdk.ServerSession, run string, req vm.ApprovalRequest) decision {
	res, err := ss.Elicit(ctx, &sdk.ElicitParams{
		Mode:    "form",
		Message: approvalText(run, req),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "true to let it run, false to reject it"},
			},
			"required": []any{"approve"},
		},
	})
	if err != nil {
		s.warn("asking for an approval through the client", "run", run, "error", err)
		return decision{err: vm.ErrWaiting}
	}
	switch res.Action {
	case "accept":
		switch approve, ok := res.Content["approve"].(bool); {
		case ok && approve:
			return decision{dec: vm.Decision{Approved: true, Note: "approved through the MCP client"}}
		case ok:
			return decision{dec: vm.Decision{Note: "rejected through the MCP client"}}
		}
		// An answer that says neither leaves the gate to a person.
	case "decline":
		return decision{dec: vm.Decision{Note: "declined through the MCP client"}}
	}
	return decision{err: vm.ErrWaiting}
}

// approvalText says what a person is asked to approve: the step, its
// tool and the arguments it will be sent, or the plan. The plan's text and
// the arguments may hold characters that would hide or reorder what the
// person reads: they are shown escaped.
func approvalText(run string, req vm.ApprovalRequest) string {
	var b strings.Builder
	switch {
	case req.Diff != "":
		fmt.Fprintf(&b, "Run %s was replanned; approve its new and changed steps (%s)?\n\n%s", run, strings.Join(req.Changed, ", "), req.Diff)
	case req.Step == "":
		fmt.Fprintf(&b, "Run %s asks for approval before it runs", run)
		if req.Message != "" {
			fmt.Fprintf(&b, ": %s", req.Message)
		}
		fmt.Fprintf(&b, "\n\n%s", req.Plan)
	default:
		fmt.Fprintf(&b, "Step %s of run %s calls %s", req.Step, run, req.Tool)
		if req.Message != "" {
			fmt.Fprintf(&b, ": %s", req.Message)
		}
		args, _ := json.MarshalIndent(req.Args, "", "  ")
		fmt.Fprintf(&b, "\nwith the arguments %s", lang.EscapeControlJSON(args))
	}
	return lang.EscapeControl(b.String())
}

// answer is what a call says of a run.
type answer struct {
	Run     string `json:"run"`
	Status  string `json:"status"`
	Output  any    `json:"output,omitempty"`
	Summary string `json:"summary"`
	// Failures are the steps that failed, and why.
	Failures []string `json:"failures,omitempty"`
	// Waiting are the approvals the run waits for.
	Waiting []string `json:"waiting,omitempty"`
	// Next says what to do now.
	Next string `json:"next,omitempty"`
}

// answer reads what the journal holds of a run: its output once it has
// ended, what it waits for, or how far it has got.
func (s *Server) answer(id string, runErr error) (*sdk.CallToolResult, error) {
	det, err := s.opts.Store.Show(id)
	if err != nil {
		return failure(fmt.Sprintf("run %s: %v", id, err)), nil
	}
	a := answer{Run: id, Status: string(det.Status)}
	var failed []string
	for _, st := range det.Steps {
		if st.Status == vm.StatusFailed && st.Error != nil && !st.Handled && !strings.Contains(st.ID, "/") {
			failed = append(failed, fmt.Sprintf("%s failed: %s [%s]", st.ID, st.Error.Message, st.Error.Code))
		}
	}
	a.Summary = stepCounts(&det.Summary)
	s.mu.Lock()
	ar := s.active[id]
	s.mu.Unlock()
	isError := false
	switch det.Status {
	case vm.RunCompleted:
		a.Output = det.Output
	case vm.RunPartial, vm.RunFailed, vm.RunCanceled, vm.RunRejected, durable.RunAborted:
		a.Output = det.Output
		a.Failures = failed
		if det.Error != "" && len(failed) == 0 {
			a.Failures = []string{det.Error}
		}
		isError = det.Status != vm.RunPartial
		if det.Status == vm.RunCanceled {
			a.Next = fmt.Sprintf("the run was stopped before it ended; %s continues it", toolResume)
		}
	case vm.RunWaiting:
		pending, err := s.opts.Store.Pending(id)
		if err != nil {
			return failure(fmt.Sprintf("run %s: %v", id, err)), nil
		}
		var steps []string
		for _, p := range pending {
			a.Waiting = append(a.Waiting, durable.Describe(p))
			step := p.Step
			if step == "" {
				step = "plan"
			}
			steps = append(steps, step)
		}
		if len(pending) == 0 {
			a.Next = det.ContinueText(fmt.Sprintf("call %s with run %s", toolResume, id))
			break
		}
		cmd := s.approveCommand(id, "")
		if len(steps) == 1 {
			cmd = s.approveCommand(id, steps[0])
		}
		a.Next = fmt.Sprintf("the run is saved, waiting for a person's decision, which you cannot give: ask the person to run %s (or add --reject), then call %s with run %s", cmd, toolResume, id)
	default: // running
		if ar != nil {
			finished, running, _ := ar.counts()
			a.Summary = fmt.Sprintf("%d of %d steps done, %d running", finished, ar.total, running)
			a.Next = fmt.Sprintf("the run goes on: call %s with run %s to wait for its result", toolStatus, id)
		} else {
			a.Next = fmt.Sprintf("the run is recorded as running, but not in this server: if its process has stopped, %s continues it", toolResume)
		}
	}
	if runErr != nil && a.Status != string(vm.RunWaiting) {
		a.Failures = append(a.Failures, runErr.Error())
		isError = true
	}
	return jsonResult(a, isError)
}

// stepCounts says how many steps ended how: "5 steps: 4 completed, 1
// skipped".
func stepCounts(sum *durable.Summary) string {
	total := 0
	for _, n := range sum.Steps {
		total += n
	}
	s := fmt.Sprintf("%s, %d step(s)", sum.Status, total)
	if counts := durable.StepCounts(sum.Steps); counts != "" {
		s += ": " + counts
	}
	if !sum.Finished.IsZero() {
		s += fmt.Sprintf(", in %s", sum.Finished.Sub(sum.Created).Round(time.Millisecond))
	}
	return s
}

// own reports whether run id, named exactly, is one this server made:
// of its name and grants. A run of the command line, of another server,
// of other grants (whose output they produced, and whose gates waited for
// another policy) or that recorded no origin is not.
func (s *Server) own(id string) bool {
	o, err := s.opts.Store.Origin(id)
	if err != nil && !errors.Is(err, durable.ErrNotFound) {
		s.warn("reading a run's origin", "run", id, "error", err)
	}
	return err == nil && o != nil && *o == s.origin
}

// lookup finds the run a call names: one of this server's, by its whole
// ID. Whether another run has that ID, or one that starts with it, is
// not said.
func (s *Server) lookup(run string) (string, error) {
	if strings.TrimSpace(run) == "" {
		return "", errors.New("give the run's ID, as run_plan answered it")
	}
	if !s.own(run) {
		return "", fmt.Errorf("no such run: %q is not the ID of a run of this server; give the whole ID that run_plan answered", run)
	}
	return run, nil
}

// runStatus answers run_status.
func (s *Server) runStatus(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args runArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	id, err := s.lookup(args.Run)
	if err != nil {
		return failure(err.Error()), nil
	}
	s.mu.Lock()
	ar := s.active[id]
	s.mu.Unlock()
	if ar != nil && args.Wait != nil && *args.Wait > 0 {
		return s.follow(ctx, req, ar, s.waitFor(args.Wait))
	}
	return s.answer(id, nil)
}

// resumeRun answers resume_run: it continues a run that stopped, or
// follows one executing here.
func (s *Server) resumeRun(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args runArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	id, err := s.lookup(args.Run)
	if err != nil {
		return failure(err.Error()), nil
	}
	s.mu.Lock()
	ar := s.active[id]
	s.mu.Unlock()
	if ar != nil {
		return s.follow(ctx, req, ar, s.waitFor(args.Wait))
	}
	r, err := s.opts.Store.Resume(id, false)
	var finished *durable.FinishedError
	switch {
	case errors.As(err, &finished):
		return s.answer(id, nil)
	case err != nil:
		return failure(err.Error()), nil
	}
	if s.opts.Preflight != nil {
		if problems := s.opts.Preflight(r.Plan().Program); len(problems) > 0 {
			r.Leave(errors.New("its tools may not run: " + problems[0]))
			return failure("the run cannot go on, and nothing ran:\n" + strings.Join(problems, "\n")), nil
		}
	}
	return s.follow(ctx, req, s.start(r), s.waitFor(args.Wait))
}
