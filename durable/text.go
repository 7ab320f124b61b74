package durable

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/agent"
)

// EventText says what an event holds, in one line, for people: its step
// and tool, the attempt, the verdict, the error and its code, the reason,
// the message, and how long the step took. What the event does not hold
// is left out: a caller that shows the step apart clears ev.Step.
func EventText(ev vm.Event) string {
	var parts []string
	if ev.Step != "" {
		parts = append(parts, ev.Step)
	}
	if ev.Tool != "" {
		parts = append(parts, "("+ev.Tool+")")
	}
	if ev.Attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", ev.Attempt))
	}
	if ev.Verdict != "" {
		parts = append(parts, ev.Verdict)
	}
	if ev.Error != nil {
		parts = append(parts, ErrorText(ev.Error, false))
	}
	if ev.Reason != "" {
		parts = append(parts, ev.Reason)
	}
	if ev.Message != "" {
		parts = append(parts, ev.Message)
	}
	if ev.Duration > 0 {
		parts = append(parts, "in "+RoundDuration(ev.Duration).String())
	}
	return strings.Join(parts, " ")
}

// ErrorText says what a step's error is, for people: its message and
// code, and, when handled is set, that it went to the step's || slot.
func ErrorText(err *vm.StepError, handled bool) string {
	s := fmt.Sprintf("%s [%s]", err.Message, err.Code)
	if handled {
		s += " (to its || slot)"
	}
	return s
}

// DecisionText says how an approval was decided, for people: approved
// or rejected, by whom, and the note.
func DecisionText(approved bool, by, note string) string {
	s := "rejected"
	if approved {
		s = "approved"
	}
	s += " by " + by
	if note != "" {
		s += ": " + note
	}
	return s
}

// RoundDuration rounds a duration for people: to the second above a
// minute, to 10ms above a second, to 0.1ms above a millisecond.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// String says who made a run, for people; for nil, that the run did not
// record it.
func (o *Origin) String() string {
	switch {
	case o == nil:
		return "not recorded (the run is older than the record of origins)"
	case o.By == ByCLI:
		return "obelisk, the command line"
	case o.By == ByMCPServer:
		grants := o.Grants
		if len(grants) > 12 {
			grants = grants[:12]
		}
		if o.Name == "" {
			return fmt.Sprintf("obelisk mcp-server, with no --name (grants %s)", grants)
		}
		return fmt.Sprintf("obelisk mcp-server --name %s (grants %s)", quoteName(o.Name), grants)
	}
	return o.By
}

// quoteName quotes a name that holds more than letters, digits and
// -_./=:@, so that it reads as one word.
func quoteName(s string) string {
	const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@"
	if s == "" || strings.Trim(s, plain) != "" {
		return strconv.Quote(s)
	}
	return s
}

// WriteText writes a run for people: its status, plan or goal, origin
// and times, input, steps, approvals, the plans of its replans and its
// output. Every line has the characters a terminal acts on escaped
// (lang.EscapeControl). What to do next is the caller's to say.
func (d *Detail) WriteText(w io.Writer) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { b.WriteString(lang.EscapeControl(fmt.Sprintf(format, args...))) }
	p("run %s: %s\n", d.ID, d.Status)
	if d.Goal != nil {
		p("goal:      %s (%s mode)\n", d.Goal.Goal, cmp.Or(d.Goal.Mode, agent.Eager))
		p("context:   %s\n", d.Plan)
	} else {
		p("plan:      %s\n", d.Plan)
	}
	if d.Hash != "" {
		p("planfile:  %s\n", d.Hash)
	}
	p("made by:   %s\n", d.Origin)
	p("created:   %s\n", d.Created.Local().Format(time.DateTime))
	if !d.Finished.IsZero() {
		p("finished:  %s (%s after it was created)\n", d.Finished.Local().Format(time.DateTime), RoundDuration(d.Finished.Sub(d.Created)))
	}
	p("processes: %d\n", d.Processes)
	if d.Error != "" {
		p("error:     %s\n", d.Error)
	}
	p("input:\n%s\n", indent(JSONText(d.Input)))
	p("\nsteps:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	row := func(cells ...string) {
		for i, c := range cells {
			cells[i] = lang.EscapeControl(c)
		}
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(cells, "\t"), "\t"))
	}
	row("  STEP", "STATUS", "ATTEMPTS", "DURATION", "RESULT")
	for _, s := range d.Steps {
		id := s.ID
		switch {
		case d.Goal != nil:
			id = fmt.Sprintf("%s (turn %d)", id, s.Round)
		case s.Round > 0:
			id = fmt.Sprintf("%s (replan %d)", id, s.Round)
		}
		what := ""
		switch {
		case s.Error != nil:
			what = ErrorText(s.Error, s.Handled)
		case s.Status == vm.StatusSkipped:
			what = s.Reason
		case s.Status == vm.StatusCompleted:
			what = oneLine(s.Result, 60)
		case s.Status == vm.StatusRunning:
			what = "started, did not finish: it runs again when the run is resumed"
		}
		dur := "-"
		if s.Duration > 0 {
			dur = RoundDuration(s.Duration).String()
		}
		row("  "+id, string(s.Status), fmt.Sprint(s.Attempts), dur, what)
	}
	tw.Flush()
	if len(d.Approvals) > 0 {
		p("\napprovals:\n")
		for _, a := range d.Approvals {
			state := "waiting"
			if a.Decided() {
				state = DecisionText(a.Approved, a.By, a.Note)
			}
			p("  %s: %s\n", Describe(a), state)
			if !a.Decided() && a.Args != nil {
				p("    arguments: %s\n", oneLine(a.Args, 200))
			}
			if a.Diff != "" {
				p("%s\n", indent(indent(a.Diff)))
			}
		}
	}
	rounds := make([]int, 0, len(d.Replans))
	for r := range d.Replans {
		rounds = append(rounds, r)
	}
	sort.Ints(rounds)
	for _, r := range rounds {
		p("\nplan of replan %d:\n%s\n", r, indent(d.Replans[r]))
	}
	if d.Output != nil && !d.Finished.IsZero() {
		p("\noutput:\n%s\n", indent(JSONText(d.Output)))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// indent indents each line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// JSONText is a value of a run (its input, a result, the output) as
// indented JSON for people: HTML characters as they are, the characters
// that could hide or reorder text escaped (lang.EscapeControlJSON).
func JSONText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(cannot be shown: %v)", err)
	}
	return string(lang.EscapeControlJSON(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
}

// oneLine is a value as JSON on one line, cut to max characters.
func oneLine(v any, max int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len([]rune(s)) > max {
		s = string([]rune(s)[:max-1]) + "…"
	}
	return s
}

// ContinueText says, for people, what a run that waits needs once no
// decision waits any more: the last decision, and that the run waits to be
// continued, by resume (the command or call that resumes it) or a
// worker: "approved by ann: fine, waiting for the run to continue (obelisk
// resume r1, or a worker)". It returns "" while a decision waits.
func (d *Detail) ContinueText(resume string) string {
	var last *Approval
	for _, a := range d.Approvals {
		if !a.Decided() {
			return ""
		}
		if last == nil || !a.DecidedAt.Before(last.DecidedAt) {
			last = a
		}
	}
	what := "no decision waits"
	if last != nil {
		what = DecisionText(last.Approved, last.By, last.Note)
	}
	return what + ", waiting for the run to continue (" + resume + ", or a worker)"
}
