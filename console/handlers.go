package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
)

// routes sets up the console's pages.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.handleRuns)
	m.HandleFunc("GET /runs/{id}", s.handleRun)
	m.HandleFunc("POST /runs/{id}/decide", s.handleDecide)
	m.HandleFunc("POST /runs/{id}/cancel", s.handleCancel)
	m.HandleFunc("GET /approvals", s.handleApprovals)
	m.HandleFunc("GET /plan", s.handlePlan)
	m.HandleFunc("POST /plan", s.handlePlan)
	m.HandleFunc("GET /watch", s.handleWatch)
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(s.static)))
	s.mux = m
}

// page is what every page's layout needs.
type page struct {
	Title string
	// Nav names the page's entry in the navigation.
	Nav  string
	CSRF string
	// Watch is the run the page watches for changes ("" for the journal),
	// and Live is set when it watches at all.
	Watch string
	Live  bool
	// WatchURL is the address of the stream the page watches.
	WatchURL string
	Pending  int
	Flash    string
	Data     any
}

// render writes a page. The text is escaped twice over: html/template
// escapes every value for its place in the page, and then the whole page
// has the characters that could hide or reorder text (bidirectional
// overrides, zero-width characters, control characters) written as
// visible escapes, as the command line writes them.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p *page) {
	p.CSRF = s.session(w, r)
	if p.Live {
		p.WatchURL = "/watch"
		if p.Watch != "" {
			p.WatchURL += "?run=" + url.QueryEscape(p.Watch)
		}
	}
	if n, err := s.pendingCount(); err == nil {
		p.Pending = n
	}
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, name, p); err != nil {
		s.fail(w, fmt.Errorf("rendering the page: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(lang.EscapeControl(b.String())))
}

// fail answers a request the console could not serve.
func (s *Server) fail(w http.ResponseWriter, err error) {
	s.opts.ErrorLog.Printf("console: %v", err)
	refuse(w, http.StatusInternalServerError, lang.EscapeControl(err.Error()))
}

// pendingCount counts the approvals the journal's runs wait for.
func (s *Server) pendingCount() (int, error) {
	runs, err := s.store.Runs()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		if r.Status != "waiting" {
			continue
		}
		p, err := s.store.Pending(r.ID)
		if err != nil {
			return 0, err
		}
		n += len(p)
	}
	return n, nil
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	filter := r.URL.Query().Get("status")
	if filter != "" && statusClass(filter) == "unknown" {
		filter = ""
	}
	v, err := s.runsView(filter, time.Now())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, r, http.StatusOK, "runs.html", &page{Title: "Runs", Nav: "runs", Live: true, Data: v})
}

// lookup finds the run a request names, answering 404 itself.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if _, err := s.store.Stored(id); err != nil {
		if errors.Is(err, durable.ErrNotFound) {
			refuse(w, http.StatusNotFound, "no run "+quoteHost(id)+" in this journal: the list of runs is at /")
			return "", false
		}
		s.fail(w, err)
		return "", false
	}
	return id, true
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	id, ok := s.lookup(w, r)
	if !ok {
		return
	}
	v, err := s.runView(id, time.Now())
	if err != nil {
		s.fail(w, err)
		return
	}
	p := &page{Title: "Run " + id, Nav: "runs", Watch: id, Live: true, Data: v}
	if r.URL.Query().Get("decided") != "" {
		p.Flash = s.decidedText(id)
	}
	if r.URL.Query().Get("canceled") != "" {
		p.Flash = "Your request to cancel the run is recorded: the process running it stops it within about a second, and a run no process runs is stopped at once."
	}
	s.render(w, r, http.StatusOK, "run.html", p)
}

// approvalsView is the approvals page: every approval a run waits for.
type approvalsView struct {
	Waiting  []*approvalView
	StateDir string
}

func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	runs, err := s.store.Runs()
	if err != nil {
		s.fail(w, err)
		return
	}
	v := &approvalsView{StateDir: s.store.Dir()}
	for _, run := range runs {
		pending, err := s.store.Pending(run.ID)
		if err != nil {
			s.fail(w, err)
			return
		}
		if len(pending) == 0 {
			continue
		}
		det, err := s.store.Show(run.ID)
		if err != nil {
			s.fail(w, err)
			return
		}
		prog, _ := s.program(run.ID, edited(det.Approvals))
		for _, a := range pending {
			v.Waiting = append(v.Waiting, s.approvalView(a, run.Plan, prog))
		}
	}
	p := &page{Title: "Approvals", Nav: "approvals", Live: true, Data: v}
	if r.URL.Query().Get("decided") != "" {
		p.Flash = s.decidedText("RUN")
	}
	s.render(w, r, http.StatusOK, "approvals.html", p)
}

// decisionView is the page of a decision that was not recorded.
type decisionView struct {
	Run     string
	Problem string
	Diags   string
	Back    string
}

// handleDecide records a decision on an approval a run waits for, as
// `obelisk approve` does. The form names the approval by its round and
// step; one that is not waiting any more (decided in the meantime, here
// or elsewhere) is refused and keeps its first decision.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	id, ok := s.lookup(w, r)
	if !ok {
		return
	}
	round, err := strconv.Atoi(r.PostForm.Get("round"))
	step := r.PostForm.Get("step")
	verdict := r.PostForm.Get("decision")
	note := strings.TrimSpace(r.PostForm.Get("note"))
	back := "/runs/" + id
	if r.PostForm.Get("from") == "approvals" {
		back = "/approvals"
	}
	problem := func(code int, msg, diags string) {
		s.render(w, r, code, "decision.html", &page{Title: "Decision not recorded", Nav: "approvals",
			Data: &decisionView{Run: id, Problem: msg, Diags: diags, Back: back}})
	}
	if err != nil || round < 0 || (verdict != "approve" && verdict != "reject" && verdict != "edit") {
		problem(http.StatusBadRequest, "the form is not one of this console's: it names no round, or no decision (approve, reject or edit)", "")
		return
	}
	pending, err := s.store.Pending(id)
	if err != nil {
		s.fail(w, err)
		return
	}
	var ap *durable.Approval
	for _, p := range pending {
		if p.Round == round && p.Step == step {
			ap = p
		}
	}
	if ap == nil {
		problem(http.StatusConflict, s.notWaiting(id, round, step), "")
		return
	}
	dec := durable.Decision{Approved: verdict != "reject", Note: note, By: decider(r)}
	if verdict == "edit" {
		if ap.Step != "" || ap.Round != 0 {
			problem(http.StatusBadRequest, durable.ErrEditStep.Error(), "")
			return
		}
		dec.Plan, dec.PlanName = []byte(strings.ReplaceAll(r.PostForm.Get("plan"), "\r\n", "\n")), "edited.plan"
	}
	if dec.Note == "" {
		dec.Note = "approved in the console"
		if !dec.Approved {
			dec.Note = "rejected in the console"
		}
	}
	if err := s.store.Decide(id, ap, dec); err != nil {
		if diags := lang.Diagnostics(nil); errors.As(err, &diags) {
			var b bytes.Buffer
			lang.WriteText(&b, lang.Sources{dec.PlanName: dec.Plan}, diags, lang.TextOptions{Max: 50})
			problem(http.StatusUnprocessableEntity, "the edited plan does not check, and nothing was recorded: correct it and approve it again", b.String())
			return
		}
		if strings.Contains(err.Error(), "waiting for a decision") {
			problem(http.StatusConflict, s.notWaiting(id, round, step), "")
			return
		}
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, back+"?decided=1", http.StatusSeeOther)
}

// notWaiting says why an approval cannot be decided: it was decided
// before, or the run never asked it.
func (s *Server) notWaiting(id string, round int, step string) string {
	what := "the plan"
	if step != "" {
		what = "step " + step
	}
	if round > 0 && step == "" {
		what = fmt.Sprintf("the changes of replan %d", round)
	}
	det, err := s.store.Show(id)
	if err == nil {
		for _, a := range det.Approvals {
			if a.Round == round && a.Step == step && a.Decided() {
				verb := "rejected"
				if a.Approved {
					verb = "approved"
				}
				return fmt.Sprintf("the approval of %s of run %s was decided already (%s by %s, %s), and a decision is made once: nothing was recorded",
					what, id, verb, a.By, a.DecidedAt.Local().Format(time.DateTime))
			}
		}
	}
	return fmt.Sprintf("run %s waits for no approval of %s: nothing was recorded", id, what)
}

// compiled is a run's program, or why it does not compile.
type compiled struct {
	prog *compiler.Program
	err  error
}

// maxPrograms bounds the programs kept compiled.
const maxPrograms = 64

// program returns the program a run runs: its recorded plan, or the
// plan a person approved in its place (edit, "" for none), compiled once.
func (s *Server) program(id, edit string) (*compiler.Program, error) {
	sum := sha256.Sum256([]byte(edit))
	key := id + "\x00" + hex.EncodeToString(sum[:])
	s.mu.Lock()
	c := s.programs[key]
	s.mu.Unlock()
	if c != nil {
		return c.prog, c.err
	}
	st, err := s.store.Stored(id)
	if err != nil {
		return nil, err
	}
	c = &compiled{}
	if edit == "" {
		c.prog, _, c.err = st.Source.Compile()
	} else {
		c.prog, c.err = compileEdit(st.Source, edit)
	}
	if c.err != nil {
		c.err = fmt.Errorf("the run's plan does not compile here: %w", c.err)
	}
	s.mu.Lock()
	if len(s.programs) >= maxPrograms {
		clear(s.programs)
	}
	s.programs[key] = c
	s.mu.Unlock()
	return c.prog, c.err
}

// compileEdit compiles a plan approved in place of a run's, as the run
// does: checked with the tools its source was checked with.
func compileEdit(src *planfile.Source, edit string) (*compiler.Program, error) {
	prog, diags, err := src.WithText("edited.plan", edit).Compile()
	if diags.HasErrors() {
		return nil, diags
	}
	return prog, err
}

// edited returns the plan a person approved in place of a run's, or "".
func edited(approvals []*durable.Approval) string {
	for _, a := range approvals {
		if a.Round == 0 && a.Step == "" && a.Decided() && a.Approved {
			return a.Edit
		}
	}
	return ""
}

// parsePages parses the pages' templates.
func parsePages() (*template.Template, error) {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.Local().Format("2006-01-02 15:04:05")
		},
		"clock": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.Local().Format("15:04:05.000")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"dur": func(d time.Duration) string { return roundDuration(d).String() },
		"ms": func(d time.Duration) string {
			return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
		},
		"status": func(s string) string {
			return statusClass(s)
		},
		"icon": statusIcon,
		"plus": func(a, b int) int { return a + b },
		"card": func(a *approvalView, csrf, from string) approvalCard {
			return approvalCard{A: a, CSRF: csrf, From: from}
		},
		"join": strings.Join,
		"base": path.Base,
	}
	t := template.New("").Funcs(funcs)
	return t.ParseFS(assets, "assets/templates/*.html")
}

// approvalCard is an approval with what its form needs.
type approvalCard struct {
	A    *approvalView
	CSRF string
	// From names the page the form is on, to go back to.
	From string
}

// statusIcon is the sign shown with a status, beside its word.
func statusIcon(status string) string {
	switch status {
	case "completed", "approved":
		return "✓"
	case "failed", "rejected":
		return "✕"
	case "running":
		return "▶"
	case "waiting":
		return "‖"
	case "skipped":
		return "↷"
	case "partial":
		return "◐"
	case "canceled":
		return "⊘"
	}
	return "○"
}

// decidedText says what becomes of a run once a decision is recorded.
func (s *Server) decidedText(id string) string {
	return "Your decision is recorded. A process that waits for it (obelisk run --wait) or a worker (obelisk worker --state-dir " + s.store.Dir() +
		") goes on with the run by itself; otherwise continue it with obelisk resume --state-dir " + s.store.Dir() + " " + id
}

// decider is who made a decision or a request in the console: the name
// the form gives, or, without one, the console.
func decider(r *http.Request) string {
	by := strings.TrimSpace(lang.EscapeControl(r.PostForm.Get("by")))
	if by == "" {
		return "someone at the console (no name given)"
	}
	if len([]rune(by)) > 100 {
		by = string([]rune(by)[:100])
	}
	return by + " (console)"
}

// cancelView is the page that asks to confirm a cancel.
type cancelView struct {
	Run, Reason, By string
}

// handleCancel records a request to cancel a run, as obelisk cancel does,
// once the person confirmed it: the first POST, from the run's page, asks
// to confirm; the second, with confirm=yes, records.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id, ok := s.lookup(w, r)
	if !ok {
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if r.PostForm.Get("confirm") != "yes" {
		s.render(w, r, http.StatusOK, "cancel.html", &page{Title: "Cancel run " + id, Nav: "runs",
			Data: &cancelView{Run: id, Reason: reason, By: r.PostForm.Get("by")}})
		return
	}
	if _, err := s.store.Cancel(id, decider(r), reason); err != nil {
		if fe := (*durable.FinishedError)(nil); errors.As(err, &fe) {
			s.render(w, r, http.StatusConflict, "decision.html", &page{Title: "Not canceled", Nav: "runs",
				Data: &decisionView{Run: id, Problem: fmt.Sprintf("run %s has ended (%s): there is nothing to cancel", id, fe.Status), Back: "/runs/" + id}})
			return
		}
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, "/runs/"+id+"?canceled=1", http.StatusSeeOther)
}
