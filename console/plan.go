package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// simulateTimeout bounds the dry run of a plan from the page.
const simulateTimeout = 10 * time.Second

// planView is the plan page: the form, and what checking the plan found.
type planView struct {
	// The form, as sent.
	Name, Text, Input, Mocks, Seed string
	// InputFile names the input file opened with the plan, if the input
	// was read from one.
	InputFile        string
	Checked          bool
	OK               bool
	Problem          string
	Diags            string
	Errors, Warnings int
	Graph            *graphView
	Estimated        pathView
	Analysis         *compiler.Analysis
	MaxParallel      int
	Estimates        []estimateRow
	Sim              *vm.SimResult
	SimError         string
	Output           string
	Mocked           bool
}

// estimateRow is a line of the estimates: what, and how much.
type estimateRow struct{ What, Value string }

// handlePlan shows the plan page, and checks, draws and dry-runs the plan
// a POST gives (pasted, or a file opened in the browser). The plan is
// checked with the operator's tools and reads no file: no import, no
// tool is called, and the dry run invents the tools' results.
func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) {
	v := &planView{Seed: "1", MaxParallel: s.opts.MaxParallel}
	p := &page{Title: "Check a plan", Nav: "plan", Data: v}
	if r.Method != http.MethodPost {
		s.render(w, r, http.StatusOK, "plan.html", p)
		return
	}
	v.Checked = true
	v.Name, v.Text, v.Input, v.Mocks = "pasted.plan", formText(r, "plan"), formText(r, "input"), formText(r, "mocks")
	if seed := strings.TrimSpace(r.PostForm.Get("seed")); seed != "" {
		v.Seed = seed
	}
	if r.MultipartForm != nil {
		openedFiles(v, r.MultipartForm.File["file"])
	}
	if strings.TrimSpace(v.Text) == "" {
		v.Problem = "give a plan: paste its text, or open its file"
		s.render(w, r, http.StatusUnprocessableEntity, "plan.html", p)
		return
	}
	select {
	case s.checking <- struct{}{}:
		defer func() { <-s.checking }()
	default:
		refuse(w, http.StatusServiceUnavailable, "the console is checking other plans: send the plan again in a moment")
		return
	}
	code := s.checkPlan(r.Context(), v)
	s.render(w, r, code, "plan.html", p)
}

// formText is the text of a form's field with its line ends made "\n":
// a browser sends a textarea's lines ended by "\r\n", and a "\r" the page
// showed again would be shown as the two characters \r (the page escapes
// control characters), which the next submit would send as text.
func formText(r *http.Request, field string) string {
	return lineEnds.Replace(r.PostForm.Get(field))
}

// lineEnds makes "\r\n" and a lone "\r" into "\n".
var lineEnds = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// openedFiles reads the files opened in the form into the view: the plan
// (the one file that is not an input file), and the plan's input from
// NAME.input.json when it was opened with the plan and no input was
// typed, as obelisk run reads the file beside the plan. Files that cannot
// be read are left out.
func openedFiles(v *planView, files []*multipart.FileHeader) {
	read := func(fh *multipart.FileHeader) (string, bool) {
		f, err := fh.Open()
		if err != nil {
			return "", false
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxBody))
		if err != nil {
			return "", false
		}
		return lineEnds.Replace(string(b)), true
	}
	inputs := map[string]*multipart.FileHeader{}
	var plan *multipart.FileHeader
	for _, fh := range files {
		switch {
		case fh.Size == 0:
		case strings.HasSuffix(fh.Filename, inputSuffix):
			inputs[strings.TrimSuffix(fh.Filename, inputSuffix)] = fh
		case plan == nil:
			plan = fh
		}
	}
	if plan == nil {
		return
	}
	text, ok := read(plan)
	if !ok {
		return
	}
	v.Name, v.Text = plan.Filename, text
	if strings.TrimSpace(v.Input) != "" {
		return
	}
	if fh := inputs[planfile.Base(plan.Filename)]; fh != nil {
		if text, ok := read(fh); ok {
			v.Input, v.InputFile = text, fh.Filename
		}
	}
}

// inputSuffix ends the name of a plan's input file, NAME.input.json.
const inputSuffix = ".input.json"

// checkPlan checks, compiles and dry-runs the plan of the form, filling
// the view, and returns the status to answer with.
func (s *Server) checkPlan(ctx context.Context, v *planView) int {
	seed, err := strconv.ParseUint(v.Seed, 10, 64)
	if err != nil {
		v.Problem = "the seed must be a whole number, such as 1"
		return http.StatusUnprocessableEntity
	}
	src := []byte(v.Text)
	isJSON := planfile.IsJSON("", src) // the text says, whatever its name
	if isJSON && !strings.HasSuffix(v.Name, ".json") {
		v.Name = strings.TrimSuffix(v.Name, ".plan") + ".json"
	}
	f, diags := (&planfile.Source{Name: v.Name, JSON: isJSON, Text: v.Text}).Parse()
	c, err := planfile.Build(f, diags, s.opts.Check, compiler.Options{MaxParallel: s.opts.MaxParallel})
	diags, info, prog := c.Diagnostics, c.Info, c.Program
	diags.Sort()
	v.Errors, v.Warnings = diags.Count(lang.SeverityError), diags.Count(lang.SeverityWarning)
	if len(diags) > 0 {
		var b bytes.Buffer
		lang.WriteText(&b, lang.Sources{v.Name: src}, diags, lang.TextOptions{Max: 100, More: "the first 100 of each are shown"})
		v.Diags = b.String()
	}
	if diags.HasErrors() {
		return http.StatusOK
	}
	if err != nil {
		v.Problem = err.Error()
		return http.StatusOK
	}
	v.OK = true
	v.Analysis = prog.Analysis
	v.Estimated = estimatedPath(prog)
	v.Graph = layout(prog, func(int) stepState { return stepState{Status: "pending"} }, prog.Analysis.CriticalPath,
		func(i int) string { return fmt.Sprintf("step-%d", i) })
	v.Estimates = estimates(prog)
	input := f.InputValues
	if strings.TrimSpace(v.Input) != "" {
		if input, err = decodeObject(v.Input); err != nil {
			v.SimError = "the input: " + err.Error()
			return http.StatusOK
		}
	}
	if d := compiler.CheckInput(info, input); len(d) > 0 {
		var b bytes.Buffer
		lang.WriteText(&b, lang.Sources{v.Name: src}, d, lang.TextOptions{Max: 20})
		v.SimError = "the input does not fit the plan:\n" + b.String()
		return http.StatusOK
	}
	var mocks *toolkit.Mocks
	if strings.TrimSpace(v.Mocks) != "" {
		if mocks, err = toolkit.ParseMocks([]byte(v.Mocks)); err != nil {
			v.SimError = "the mocks: " + err.Error()
			return http.StatusOK
		}
		v.Mocked = true
	}
	sctx, cancel := context.WithTimeout(ctx, simulateTimeout)
	defer cancel()
	res, err := vm.Simulate(sctx, prog, input, vm.SimOptions{MaxParallel: s.opts.MaxParallel, Seed: seed, Mocks: mocks, MaxCost: s.opts.Check.Limits.MaxCost})
	if err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the dry run took longer than %s and was stopped", simulateTimeout)
		}
		v.SimError = err.Error()
		return http.StatusOK
	}
	v.Sim = res
	v.Output = jsonText(res.Output)
	return http.StatusOK
}

// estimates lists what the analysis knows of a program before it runs.
func estimates(prog *compiler.Program) []estimateRow {
	a := prog.Analysis
	rows := []estimateRow{
		{"steps", fmt.Sprint(len(prog.Steps))},
		{"critical path", fmt.Sprintf("%s over %d steps", roundDuration(a.CriticalLatency), len(a.CriticalPath))},
		{"level by level", roundDuration(a.LevelLatency).String()},
		{"one call after another", roundDuration(a.SequentialLatency).String()},
		{"speed-up over one call after another", fmt.Sprintf("%.2f×", a.SpeedUp)},
		{"depth, widest level", fmt.Sprintf("%d steps, %d steps", a.Depth, a.Width)},
		{"tool calls", fmt.Sprintf("%g in all, %g on the longest path, %.2f on an average path", a.Calls.Total, a.Calls.Longest, a.Calls.Average)},
		{"model calls", fmt.Sprintf("%g in all, %g on the longest path, %.2f on an average path", a.ModelCalls.Total, a.ModelCalls.Longest, a.ModelCalls.Average)},
	}
	if a.Tokens > 0 {
		rows = append(rows, estimateRow{"tokens", fmt.Sprintf("%d in all, %d on the critical path", a.Tokens, a.CriticalTokens)})
	}
	var estimated []string
	for i, e := range a.Estimated {
		if e {
			estimated = append(estimated, prog.Steps[i].ID)
		}
	}
	if len(estimated) > 0 {
		rows = append(rows, estimateRow{"latency estimated, not declared, for", strings.Join(estimated, ", ")})
	}
	return rows
}

// decodeObject reads a JSON object strictly (toolkit.DecodeObject).
func decodeObject(text string) (map[string]any, error) {
	m, err := toolkit.DecodeObject([]byte(text))
	if errors.Is(err, toolkit.ErrNotObject) {
		return nil, errors.New("give a JSON object")
	}
	return m, err
}
