package console

import (
	"cmp"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

// runStatuses are the statuses a run may have, as the filter offers them.
var runStatuses = []string{"waiting", "running", "completed", "partial", "failed", "canceled", "rejected"}

// statusClass returns the status as a class name: a known status, or
// "unknown".
func statusClass(s string) string {
	switch s {
	case "pending", "blocked", "running", "waiting", "completed", "partial", "failed", "skipped", "canceled", "aborted", "rejected", "approved":
		return s
	}
	return "unknown"
}

// runRow is a run in the list of runs.
type runRow struct {
	ID, Plan, Status string
	Created          time.Time
	Duration         string
	Steps            string
	// Waiting counts the approvals the run waits for.
	Waiting int
	Error   string
}

// runsView is the runs page.
type runsView struct {
	Rows     []runRow
	Filter   string
	Statuses []string
	Counts   map[string]int
	Total    int
}

// runsView lists the runs, those that wait for a decision first, then
// the newest first; filter keeps those of one status.
func (s *Server) runsView(filter string, now time.Time) (*runsView, error) {
	runs, err := s.store.Runs()
	if err != nil {
		return nil, err
	}
	v := &runsView{Filter: filter, Statuses: runStatuses, Counts: map[string]int{}, Total: len(runs)}
	for _, r := range runs {
		v.Counts[string(r.Status)]++
		if filter != "" && string(r.Status) != filter {
			continue
		}
		row := runRow{ID: r.ID, Plan: r.Plan, Status: string(r.Status), Created: r.Created, Steps: cmp.Or(durable.StepCounts(r.Steps), "—"), Error: r.Error}
		end := r.Finished
		switch {
		case end.IsZero() && r.Status == "running":
			end = now
		case end.IsZero():
			end = r.Updated
		}
		row.Duration = roundDuration(end.Sub(r.Created)).String()
		if r.Status == vm.RunWaiting {
			pending, err := s.store.Pending(r.ID)
			if err != nil {
				return nil, err
			}
			row.Waiting = len(pending)
		}
		v.Rows = append(v.Rows, row)
	}
	sort.SliceStable(v.Rows, func(i, j int) bool { return v.Rows[i].Waiting > 0 && v.Rows[j].Waiting == 0 })
	return v, nil
}

// stepView is a step of a run, as its row and details show it.
type stepView struct {
	Anchor   string
	ID       string
	Tool     string
	Effect   string
	Status   string
	Round    int
	Attempts int
	Retries  int
	Started  time.Time
	Finished time.Time
	Duration string
	// Key is the idempotency key of its tool calls.
	Key string
	// Args are its arguments as its tool was called with them, or as the
	// gate asked them to be approved; "" when not recorded.
	Args string
	// Source is the step as the plan writes it.
	Source   string
	Result   string
	HasValue bool
	// ResultMarkdown is the result rendered, when it is Markdown text.
	ResultMarkdown template.HTML
	Error          *vm.StepError
	Handled        bool
	Reason         string
	Verdicts       []vm.Verdict
	// Parts are the elements of a for each and the steps of a sub-plan;
	// Elements counts the elements among them.
	Parts    []*stepView
	Elements int
}

// eventView is a line of the event log.
type eventView struct {
	Seq     int
	Time    time.Time
	Elapsed string
	Type    string
	Step    string
	Text    string
}

// approvalView is an approval, waiting or decided.
type approvalView struct {
	Run     string
	RunPlan string
	Round   int
	Step    string
	// What says what is to be approved, for people.
	What      string
	Tool      string
	Effect    string
	Message   string
	Args      string
	HasArgs   bool
	Plan      string
	Diff      []diffLine
	Changed   []string
	Requested time.Time
	Decided   bool
	DecidedAt time.Time
	Approved  bool
	Note      string
	By        string
	Edited    bool
	// Editable is set for an approval of the whole plan as it started:
	// the one `obelisk approve --edit` may replace.
	Editable bool
	// Irreversible lists, for an approval of a plan, the steps whose
	// tools cannot be undone.
	Irreversible []string
	Steps        int
}

// diffLine is a line of a replan's diff.
type diffLine struct {
	Kind string // "add", "del", "head" or "keep"
	Text string
}

// runView is the run page.
type runView struct {
	durable.Summary
	Duration  string
	Input     string
	Output    string
	HasOutput bool
	// OutputMarkdown is the output rendered, when it is Markdown text.
	OutputMarkdown template.HTML
	Graph          *graphView
	// Timeline draws the steps' attempts, waits and backoffs over time.
	Timeline *timelineView
	// Rounds are the graphs of the plans of later replanning rounds.
	Rounds    []roundView
	Estimated pathView
	Observed  pathView
	Steps     []*stepView
	// Other are steps the program does not have (of replans).
	Other    []*stepView
	Waiting  []*approvalView
	Decided  []*approvalView
	Events   []eventView
	Earlier  int
	PlanText string
	// Edited is set when PlanText is a plan a person approved in place of
	// the run's.
	Edited    bool
	PlanError string
	StateDir  string
	Diags     string
	// Next says, for a run that waits once its decisions are made, that
	// it waits to be continued; Cancelable is set for a run that has not
	// ended.
	Next       string
	Cancelable bool
}

// roundView is a replanning round: its plan and, if it compiles, graph.
type roundView struct {
	Round int
	Plan  string
	Graph *graphView
}

// maxEvents is the most events the run page lists, the latest.
const maxEvents = 500

// runView gathers a run's page.
func (s *Server) runView(id string, now time.Time) (*runView, error) {
	det, err := s.store.Show(id)
	if err != nil {
		return nil, err
	}
	events, err := s.store.Events(id)
	if err != nil {
		return nil, err
	}
	v := &runView{Summary: det.Summary, Input: jsonText(det.Input), StateDir: s.store.Dir()}
	switch det.Status {
	case vm.RunWaiting:
		v.Next = det.ContinueText("obelisk resume --state-dir " + s.store.Dir() + " " + id)
		v.Cancelable = true
	case "running", vm.RunCanceled:
		v.Cancelable = true
	}
	end := det.Finished
	switch {
	case end.IsZero() && det.Status == "running":
		end = now
	case end.IsZero():
		end = det.Updated
	}
	v.Duration = roundDuration(end.Sub(det.Created)).String()
	if det.Output != nil && !det.Finished.IsZero() {
		v.Output, v.HasOutput = jsonText(det.Output), true
		v.OutputMarkdown, _ = markdownHTML(det.Output)
	}
	// The arguments each step was called with: the last start of each.
	args := map[string]map[string]any{}
	for _, ev := range events {
		if ev.Type == vm.StepStarted && ev.Args != nil {
			args[ev.Step] = ev.Args
		}
	}
	for _, a := range det.Approvals {
		if a.Step != "" && a.Args != nil {
			if _, ok := args[a.Step]; !ok {
				args[a.Step] = a.Args
			}
		}
	}
	prog, perr := s.program(id, edited(det.Approvals))
	if perr != nil {
		v.PlanError = perr.Error()
	}
	if st, err := s.store.Stored(id); err == nil {
		v.PlanText = st.Source.Text
	}
	if e := edited(det.Approvals); e != "" {
		v.PlanText, v.Edited = e, true
	}
	byID := map[string]*durable.Step{}
	for _, st := range det.Steps {
		if st.Round == 0 {
			byID[st.ID] = st
		}
	}
	used := map[*durable.Step]bool{}
	view := func(anchor string, st *durable.Step, tool *compiler.Tool) *stepView {
		sv := &stepView{Anchor: anchor, Status: "pending"}
		if tool != nil {
			sv.Effect = tool.Effect.String()
			if tool.Plan != nil {
				sv.Effect = "sub-plan"
			}
		}
		if st == nil {
			return sv
		}
		used[st] = true
		sv.ID, sv.Tool, sv.Status, sv.Round = st.ID, st.Tool, statusClass(string(st.Status)), st.Round
		sv.Attempts, sv.Retries, sv.Started, sv.Finished = st.Attempts, st.Retries, st.StartedAt, st.FinishedAt
		if st.Duration > 0 {
			sv.Duration = roundDuration(st.Duration).String()
		}
		sv.Key = id + "/" + st.ID
		if a, ok := args[st.ID]; ok {
			sv.Args = jsonText(a)
		}
		if st.Status == vm.StatusCompleted {
			sv.Result, sv.HasValue = jsonText(st.Result), true
			sv.ResultMarkdown, _ = markdownHTML(st.Result)
		}
		sv.Error, sv.Handled, sv.Reason, sv.Verdicts = st.Error, st.Handled, st.Reason, st.Verdicts
		return sv
	}
	if prog != nil {
		states := map[int]stepState{}
		for i, cs := range prog.Steps {
			st := byID[cs.ID]
			sv := view(fmt.Sprintf("step-%d", i), st, cs.Tool)
			sv.ID, sv.Source = cs.ID, lang.FormatItem(cs.Node)
			if sv.Tool == "" {
				sv.Tool = cs.ToolName()
			}
			if sv.Key == "" {
				sv.Key = id + "/" + cs.ID
			}
			if cs.Each != nil {
				sv.Key = id + "/" + cs.ID + "[n]"
			}
			// The elements of a for each, the steps of a sub-plan.
			for _, other := range det.Steps {
				if other.Round == 0 && (strings.HasPrefix(other.ID, cs.ID+"[") || strings.HasPrefix(other.ID, cs.ID+"/")) {
					part := view(fmt.Sprintf("step-%d-%d", i, len(sv.Parts)), other, nil)
					sv.Parts = append(sv.Parts, part)
				}
			}
			v.Steps = append(v.Steps, sv)
			note := ""
			if cs.Each != nil && len(sv.Parts) > 0 {
				done := 0
				for _, p := range sv.Parts {
					if !strings.Contains(p.ID[len(cs.ID):], "/") {
						sv.Elements++
					}
					if p.Status == "completed" && !strings.Contains(p.ID[len(cs.ID):], "/") {
						done++
					}
				}
				note = fmt.Sprintf("%d returned", done)
			}
			states[i] = stepState{Status: sv.Status, Note: note}
		}
		v.Estimated = estimatedPath(prog)
		var idx []int32
		v.Observed, idx = observedPath(prog, func(i int) (time.Duration, bool) {
			st := byID[prog.Steps[i].ID]
			if st == nil || st.FinishedAt.IsZero() || (st.Status != vm.StatusCompleted && st.Status != vm.StatusFailed) {
				return 0, false
			}
			return st.FinishedAt.Sub(det.Created), true
		})
		path := prog.Analysis.CriticalPath
		if det.Status != "running" && det.Status != vm.RunWaiting && len(idx) > 0 {
			path = idx
		}
		v.Graph = layout(prog, func(i int) stepState { return states[i] }, path, func(i int) string { return fmt.Sprintf("step-%d", i) })
		tlEnd := det.Finished
		if tlEnd.IsZero() {
			tlEnd = now
		}
		v.Timeline = timeline(prog, events, det.Created, tlEnd, path, func(i int) string { return fmt.Sprintf("step-%d", i) })
	}
	others := map[string]*stepView{} // by round and ID
	for _, st := range det.Steps {
		if !used[st] {
			sv := view(fmt.Sprintf("other-%d", len(v.Other)), st, nil)
			v.Other = append(v.Other, sv)
			others[fmt.Sprintf("%d/%s", st.Round, st.ID)] = sv
		}
	}
	rounds := make([]int, 0, len(det.Replans))
	for r := range det.Replans {
		rounds = append(rounds, r)
	}
	sort.Ints(rounds)
	prev := prog
	var cfg compiler.Config
	if st, err := s.store.Stored(id); err == nil {
		cfg, _ = st.Source.Config()
	}
	for _, r := range rounds {
		rv := roundView{Round: r, Plan: det.Replans[r]}
		rprog := continuation(prev, det, cfg, r)
		prev = rprog
		if rprog != nil {
			part := func(i int) *stepView { return others[fmt.Sprintf("%d/%s", r, rprog.Steps[i].ID)] }
			rv.Graph = layout(rprog, func(i int) stepState {
				if sv := part(i); sv != nil {
					return stepState{Status: sv.Status}
				}
				return stepState{Status: "pending"}
			}, rprog.Analysis.CriticalPath, func(i int) string {
				if sv := part(i); sv != nil {
					return sv.Anchor
				}
				return "steps"
			})
		}
		v.Rounds = append(v.Rounds, rv)
	}
	for _, a := range det.Approvals {
		av := s.approvalView(a, det.Plan, prog)
		if a.Decided() {
			v.Decided = append(v.Decided, av)
		} else {
			v.Waiting = append(v.Waiting, av)
		}
	}
	if len(events) > maxEvents {
		v.Earlier = len(events) - maxEvents
	}
	for k, ev := range events[v.Earlier:] {
		v.Events = append(v.Events, eventView{Seq: v.Earlier + k + 1, Time: ev.Time, Elapsed: roundDuration(ev.Elapsed).String(),
			Type: string(ev.Type), Step: ev.Step, Text: eventLine(ev)})
	}
	return v, nil
}

// approvalView describes an approval; prog, the run's program, gives the
// effect of its tool (nil when it does not compile).
func (s *Server) approvalView(a *durable.Approval, plan string, prog *compiler.Program) *approvalView {
	av := &approvalView{Run: a.Run, RunPlan: plan, Round: a.Round, Step: a.Step, What: durable.Describe(a), Tool: a.Tool, Message: a.Message,
		Plan: a.Plan, Requested: a.Requested, Decided: a.Decided(), DecidedAt: a.DecidedAt, Approved: a.Approved, Note: a.Note, By: a.By,
		Edited: a.Edit != "", Editable: a.Step == "" && a.Round == 0}
	if a.Step != "" {
		av.Args, av.HasArgs = jsonText(a.Args), true
		if a.Args == nil {
			av.Args = "{}"
		}
	}
	if prog != nil {
		if t := prog.Info.Tools[a.Tool]; t != nil {
			av.Effect = t.Effect.String()
		}
		if a.Step == "" {
			av.Steps = len(prog.Steps)
			for _, st := range prog.Steps {
				if st.Tool != nil && st.Tool.Plan == nil && st.Tool.Effect == compiler.Irreversible && st.Result == nil {
					av.Irreversible = append(av.Irreversible, st.ID)
				}
			}
		}
	}
	if a.Step != "" && av.Effect == "" {
		av.Effect = "unknown (the run's plan does not compile here)"
	}
	if a.Diff != "" {
		av.What = fmt.Sprintf("the new and changed steps of replan %d", a.Round)
		for _, line := range strings.Split(strings.TrimRight(a.Diff, "\n"), "\n") {
			dl := diffLine{Kind: "keep", Text: line}
			switch {
			case strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ "):
				dl.Kind = "head"
			case strings.HasPrefix(line, "+ "):
				dl.Kind = "add"
			case strings.HasPrefix(line, "- "):
				dl.Kind = "del"
			}
			av.Diff = append(av.Diff, dl)
		}
		if _, list, ok := strings.Cut(a.Message, "("); ok {
			for _, id := range strings.Split(strings.TrimSuffix(list, ")"), ", ") {
				if id != "" {
					av.Changed = append(av.Changed, id)
				}
			}
		}
	}
	return av
}

// jsonText writes a value as indented JSON for people (durable.JSONText):
// the template escapes its HTML characters.
func jsonText(v any) string { return durable.JSONText(v) }

// continuation compiles the plan of replanning round r as the run did:
// the declarations of prev, the program of the round before, with the
// state its completed steps wrote, and the round's steps. Nil when it
// does not compile here.
func continuation(prev *compiler.Program, det *durable.Detail, cfg compiler.Config, r int) *compiler.Program {
	if prev == nil {
		return nil
	}
	f, diags := lang.Parse("replan.plan", []byte(det.Replans[r]))
	if diags.HasErrors() {
		return nil
	}
	state := map[string]any{}
	for name, slot := range prev.Plan.Slots {
		if slot.HasInitial {
			state[name] = slot.Initial
		}
	}
	done := map[string]*durable.Step{}
	for _, st := range det.Steps {
		if st.Round == r-1 && st.Status == vm.StatusCompleted {
			done[st.ID] = st
		}
	}
	for _, cs := range prev.Steps {
		if st := done[cs.ID]; st != nil && cs.Out != "" {
			state[cs.Out] = st.Result
		}
	}
	prog, err := vm.Continuation(prev, f, state, cfg)
	if err != nil {
		return nil
	}
	return prog
}

// eventLine says what an event holds, in one line, but for its step, which
// the event's row shows apart.
func eventLine(ev vm.Event) string {
	ev.Step = ""
	return durable.EventText(ev)
}

// roundDuration rounds a duration for people (durable.RoundDuration).
func roundDuration(d time.Duration) time.Duration { return durable.RoundDuration(d) }
