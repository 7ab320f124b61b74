package console

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/vm"
)

// The timeline's geometry, in SVG user units.
const (
	tlLabelW = 220
	tlChartW = 720
	tlRowH   = 22
	tlBarH   = 14
	tlAxisH  = 24
	// maxElements is the most elements of a for each drawn as rows; the
	// rest are counted on a row of their own.
	maxElements = 20
)

// timelineView is a run drawn over time: a row for each step, and below
// it a row for each element of a for each and each step of a sub-plan;
// on each row a bar for each attempt of the step, for its waits for a
// decision and for its retries' backoffs.
type timelineView struct {
	Width, Height int
	ChartX        int
	Rows          []*tlRow
	Ticks         []tlTick
	Total         time.Duration
}

// tlRow is a row of the timeline.
type tlRow struct {
	Y     int
	Label string
	// Step is the row's step, element or sub-plan step ID; Anchor the ID
	// of the step's details on the page.
	Step, Anchor string
	Sub          bool
	Critical     bool
	// More counts the elements not drawn, on a row that says so.
	More  int
	Bars  []tlBar
	TextY int
}

// tlBar is a span of time on a row.
type tlBar struct {
	X, Y, W int
	// Kind is attempt, wait (for a decision) or backoff (before a retry);
	// Status the attempt's end: completed, failed, running, skipped.
	Kind, Status string
	Title        string
}

// tlTick is a mark of the time axis.
type tlTick struct {
	X     int
	Label string
}

// span is a bar being built: when it began and ended (relative to the
// run's start), open while it has not ended.
type span struct {
	kind, status string
	from, to     time.Duration
	open         bool
	attempt      int
}

// timeline draws the events of a run. start is when the run began, end
// when it ended (or now, while it runs: bars still open end there);
// critical marks the steps (by index) on the critical path; anchor gives
// the ID of a step's details on the page.
func timeline(prog *compiler.Program, events []vm.Event, start, end time.Time, critical []int32, anchor func(int) string) *timelineView {
	if prog == nil || len(prog.Steps) == 0 {
		return nil
	}
	total := end.Sub(start)
	for _, ev := range events {
		if d := ev.Time.Sub(start); d > total {
			total = d
		}
	}
	if total <= 0 {
		total = time.Millisecond
	}
	// The spans of each row, by its step ID, and the order rows appear.
	spans := map[string][]*span{}
	var order []string
	at := func(t time.Time) time.Duration { return t.Sub(start) }
	add := func(id string, s *span) {
		if _, ok := spans[id]; !ok {
			order = append(order, id)
		}
		spans[id] = append(spans[id], s)
	}
	last := func(id, kind string) *span {
		l := spans[id]
		if n := len(l); n > 0 && l[n-1].open && (kind == "" || l[n-1].kind == kind) {
			return l[n-1]
		}
		return nil
	}
	closeAll := func(id string, t time.Duration, status string) {
		for _, s := range spans[id] {
			if s.open {
				s.open, s.to = false, t
				if s.kind == "attempt" {
					s.status = status
				}
			}
		}
	}
	stepStart := map[string]time.Duration{}
	attempts := map[string]int{}
	for _, ev := range events {
		t := at(ev.Time)
		id := ev.Step
		switch ev.Type {
		case vm.ApprovalRequested:
			// A resumed run asks again for a decision it waited for.
			if last(id, "wait") == nil {
				add(id, &span{kind: "wait", from: t, open: true})
			}
		case vm.ApprovalDecided:
			if s := last(id, "wait"); s != nil {
				s.open, s.to = false, t
			}
		case vm.StepStarted:
			closeAll(id, t, "")
			stepStart[id] = t
			attempts[id]++
			add(id, &span{kind: "attempt", status: "running", from: t, open: true, attempt: attempts[id]})
		case vm.StepRetried:
			if s := last(id, "attempt"); s != nil {
				s.open, s.to, s.status = false, t, "failed"
			} else if base, ok := elementStart(id, stepStart); ok {
				// An element's first attempt began with its step.
				add(id, &span{kind: "attempt", status: "failed", from: base, to: t, attempt: 1})
				attempts[id] = 1
			}
			delay := retryDelay(ev.Reason)
			if delay > 0 {
				add(id, &span{kind: "backoff", from: t, to: t + delay})
			}
			attempts[id]++
			add(id, &span{kind: "attempt", status: "running", from: t + delay, open: true, attempt: attempts[id]})
		case vm.StepCompleted, vm.StepFailed, vm.StepSkipped, vm.StepRestored, vm.ElementCompleted:
			status := "completed"
			switch {
			case ev.Type == vm.StepFailed, ev.Type == vm.StepRestored && ev.Verdict == "failed":
				status = "failed"
			case ev.Type == vm.StepSkipped:
				status = "skipped"
			}
			if last(id, "attempt") == nil && ev.Type == vm.ElementCompleted {
				if base, ok := elementStart(id, stepStart); ok {
					add(id, &span{kind: "attempt", from: base, open: true, attempt: 1})
				}
			}
			if ev.Type == vm.StepSkipped || ev.Type == vm.StepRestored {
				if _, ok := spans[id]; !ok {
					add(id, &span{kind: "attempt", from: t, open: true})
				}
			}
			closeAll(id, t, status)
		}
	}

	v := &timelineView{ChartX: tlLabelW, Width: tlLabelW + tlChartW + 8, Total: total}
	x := func(d time.Duration) int { return tlLabelW + int(float64(d)/float64(total)*tlChartW) }
	onPath := map[int]bool{}
	for _, i := range critical {
		onPath[int(i)] = true
	}
	y := tlAxisH
	row := func(label, id, anc string, sub, crit bool) *tlRow {
		r := &tlRow{Y: y, Label: label, Step: id, Anchor: anc, Sub: sub, Critical: crit, TextY: y + tlRowH/2 + 4}
		for _, s := range spans[id] {
			to := s.to
			if s.open {
				to = total
			}
			b := tlBar{X: x(s.from), Y: y + (tlRowH-tlBarH)/2, Kind: s.kind, Status: s.status}
			b.W = max(x(to)-b.X, 2)
			switch s.kind {
			case "wait":
				b.Title = fmt.Sprintf("%s waited for a decision %s", id, roundDuration(to-s.from))
				if s.open {
					b.Title = fmt.Sprintf("%s waits for a decision, %s so far", id, roundDuration(to-s.from))
				}
			case "backoff":
				b.Title = fmt.Sprintf("%s waited %s before retrying", id, roundDuration(to-s.from))
			default:
				word := s.status
				if s.open || word == "" {
					word = "running"
				}
				b.Title = fmt.Sprintf("%s attempt %d from %s: %s, %s", id, max(s.attempt, 1), roundDuration(s.from), word, roundDuration(to-s.from))
			}
			r.Bars = append(r.Bars, b)
		}
		v.Rows = append(v.Rows, r)
		y += tlRowH
		return r
	}
	for i, cs := range prog.Steps {
		label := cs.ID
		if cs.Each != nil {
			label += " (for each)"
		}
		row(label, cs.ID, anchor(i), false, onPath[i])
		elements := 0
		for _, id := range underStep(cs.ID, order) {
			rest := id[len(cs.ID):]
			if rest[0] == '[' && !strings.Contains(rest, "/") {
				elements++
				if elements > maxElements {
					continue
				}
			}
			row(rest, id, anchor(i), true, false)
		}
		if elements > maxElements {
			r := row(fmt.Sprintf("+%d more", elements-maxElements), "", anchor(i), true, false)
			r.More = elements - maxElements
		}
	}
	v.Height = y + 6
	for k := 0; k <= 4; k++ {
		d := total * time.Duration(k) / 4
		v.Ticks = append(v.Ticks, tlTick{X: x(d), Label: roundDuration(d).String()})
	}
	return v
}

// underStep returns the rows under step (of its elements, by their index,
// and of its sub-plans' steps, in the order they began) among the IDs
// of the rows.
func underStep(step string, ids []string) []string {
	var elems, others []string
	index := map[string]int{}
	for _, id := range ids {
		rest, ok := strings.CutPrefix(id, step)
		if !ok || rest == "" || (rest[0] != '[' && rest[0] != '/' && rest[0] != '#') {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimSuffix(rest[1:], "]")); rest[0] == '[' && err == nil {
			index[id] = k
			elems = append(elems, id)
			continue
		}
		others = append(others, id)
	}
	slices.SortStableFunc(elems, func(a, b string) int { return index[a] - index[b] })
	return append(elems, others...)
}

// elementStart is when the step of element id ("fetch[2]") began: an
// element's own start is not recorded.
func elementStart(id string, stepStart map[string]time.Duration) (time.Duration, bool) {
	i := strings.LastIndexByte(id, '[')
	if i <= 0 || !strings.HasSuffix(id, "]") {
		return 0, false
	}
	t, ok := stepStart[id[:i]]
	return t, ok
}

// retryDelay reads the backoff a StepRetried event's reason gives
// ("...; retrying in 250ms"); 0 when it gives none (a fallback is called
// at once).
func retryDelay(reason string) time.Duration {
	i := strings.LastIndex(reason, "; retrying in ")
	if i < 0 {
		return 0
	}
	d, err := time.ParseDuration(reason[i+len("; retrying in "):])
	if err != nil || d < 0 {
		return 0
	}
	return d
}
