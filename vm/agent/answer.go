package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// parseAnswer parses an answer as .plan text or as the JSON form.
func parseAnswer(name, text string) (*lang.File, lang.Diagnostics, bool) {
	if planfile.IsJSON("", []byte(text)) {
		f, diags := lang.ParseJSON(name+".json", []byte(text))
		return f, diags, true
	}
	f, diags := lang.Parse(name+".plan", []byte(text))
	return f, diags, false
}

// labelSteps gives every step without a label one, named after its tool,
// as eager mode does (vm.RunStream): the base name of the tool, then with
// a number from 2 when taken. Labels let results be matched to steps.
func labelSteps(steps []*lang.Step) {
	taken := map[string]bool{}
	for _, st := range steps {
		if st.Label != nil {
			taken[st.Label.Name] = true
			continue
		}
		base := st.Callee()
		if i := strings.LastIndexAny(base, ".-"); i >= 0 {
			base = base[i+1:]
		}
		name := base
		for k := 2; taken[name]; k++ {
			name = fmt.Sprintf("%s%d", base, k)
		}
		taken[name] = true
		st.Label = &lang.Ident{Span: st.Head(), Name: name}
	}
}

// checkRules are what an answer may contain besides steps and output.
type checkRules struct {
	// settings allows mode and on failure; approve a plan-level approve.
	settings, approve bool
	// minSteps and maxSteps bound the steps (0: no bound).
	minSteps, maxSteps int
}

// checked is an answer checked against its context.
type checked struct {
	text   string
	json   bool
	answer *lang.File // the answer alone
	file   *lang.File // the prelude and the answer
	info   *compiler.Info
	diags  lang.Diagnostics
}

// checkAnswer parses an answer and checks it after the prelude. The
// answer's items come after the prelude's in the checked file, and the
// file is named after the answer, so diagnostics on the answer point into
// the answer's own text.
func checkAnswer(name, text, prelude string, c *Context, cfg compiler.Config, rules checkRules) *checked {
	ch := &checked{text: text}
	f, diags, isJSON := parseAnswer(name, text)
	ch.json, ch.answer = isJSON, f
	ch.diags = append(ch.diags, diags...)
	labelSteps(lang.Steps(f.Items))
	given := c.toolNames()
	for _, it := range f.Items {
		switch d := it.(type) {
		case *lang.ToolDecl:
			if given[d.Name.Name] {
				ch.diags = append(ch.diags, answerError(f, lang.DuplicateDecl, d.Span, "tool %s is given in the context: call it, do not declare it", d.Name.Name))
			} else {
				ch.diags = append(ch.diags, answerError(f, lang.UnknownTool, d.Span, "a plan cannot add a tool: call only the tools of the [tools] context message"))
			}
		case *lang.InputDecl:
			ch.diags = append(ch.diags, answerError(f, lang.DuplicateDecl, d.Span, "the input is given in the context: read it as †input.NAME, do not declare it"))
		case *lang.ModeDecl, *lang.PolicyDecl:
			if !rules.settings {
				ch.diags = append(ch.diags, answerError(f, lang.InvalidOption, it.Range(), "mode and on failure are chosen by the agent: leave them out"))
			}
		case *lang.ApproveDecl:
			if !rules.settings && !rules.approve {
				ch.diags = append(ch.diags, answerError(f, lang.InvalidOption, it.Range(), "a plan-level approve needs the whole plan before it runs, which eager mode does not have: put approve on the steps that need it"))
			}
		}
	}
	if diags.HasErrors() {
		ch.tooFew(f, nil, rules)
		ch.diags.Sort()
		return ch
	}
	// The prelude is read as if it came after the answer's last line, so
	// that a diagnostic, or a note, on the context is told from one on the
	// answer, whose file it is checked in.
	lines := strings.Count(text, "\n") + 1
	pf, pdiags := lang.Parse("context.plan", []byte(strings.Repeat("\n", lines)+prelude))
	if pdiags.HasErrors() {
		// The context itself is wrong: report it as it is.
		ch.diags = append(ch.diags, pdiags...)
		return ch
	}
	ch.file = &lang.File{Name: f.Name, Span: f.Span, InputValues: c.Input, JSON: f.JSON}
	ch.file.Items = append(append(ch.file.Items, pf.Items...), f.Items...)
	if rules.maxSteps > 0 {
		cfg.Limits.MaxSteps = rules.maxSteps
	}
	info, cdiags := compiler.Check(ch.file, cfg)
	ch.info = info
	ch.diags = append(ch.diags, answerOnly(cdiags, lines)...)
	ch.tooFew(f, info, rules)
	ch.diags.Sort()
	return ch
}

// tooFew reports an answer that makes fewer calls than rules.minSteps. A
// step is a call, and a for each as many calls as the elements of its
// list (compiler.Each.Count), for the limit on steps counts a for each as
// one step and asks for one where calls repeat: the for each it asks for
// makes the calls it replaces, so the two rules never refuse each other's
// fix. Without info (the answer does not parse) a for each is not
// counted, nor its plan refused.
func (ch *checked) tooFew(f *lang.File, info *compiler.Info, rules checkRules) {
	if rules.minSteps <= 0 {
		return
	}
	each := map[*lang.Step]int{}
	if info != nil {
		for _, p := range info.Plans {
			for _, s := range p.Steps {
				if s.Each != nil {
					each[s.Node] = s.Each.Count()
				}
			}
		}
	}
	steps := lang.Steps(f.Items)
	for _, it := range f.Items {
		if d, ok := it.(*lang.PlanDecl); ok {
			steps = append(steps, lang.Steps(d.Items)...)
		}
	}
	calls := 0
	for _, st := range steps {
		n, ok := each[st]
		switch {
		case ok:
			calls += n
		case st.Each != nil:
			return
		default:
			calls++
		}
	}
	if calls < rules.minSteps {
		upto := ""
		if rules.maxSteps > 0 {
			upto = fmt.Sprintf(", in %d steps at most", rules.maxSteps)
		}
		ch.diags = append(ch.diags, answerError(f, lang.LimitExceeded, f.Span, "the plan makes %s, fewer than %d: split the work into smaller steps, each one call with one bounded outcome%s (a for each is one step, and makes a call for each element of its list)",
			plural(calls, "call"), rules.minSteps, upto))
	}
}

// answerOnly keeps the places of diagnostics that are in the answer, its
// first lines: a diagnostic on the context loses its span (its message
// says what is wrong), a note or an edit there is left out.
func answerOnly(diags lang.Diagnostics, lines int) lang.Diagnostics {
	in := func(s lang.Span) bool { return s.Start.Line <= lines }
	for i, d := range diags {
		if in(d.Span) && !slices.ContainsFunc(d.Related, func(r lang.Related) bool { return !in(r.Span) }) &&
			(d.Fix == nil || !slices.ContainsFunc(d.Fix.Edits, func(e lang.Edit) bool { return !in(e.Span) })) {
			continue
		}
		nd := *d
		if !in(d.Span) {
			nd.Span = lang.Span{}
		}
		nd.Related = slices.DeleteFunc(slices.Clone(d.Related), func(r lang.Related) bool { return !in(r.Span) })
		if d.Fix != nil {
			fix := *d.Fix
			fix.Edits = slices.DeleteFunc(slices.Clone(d.Fix.Edits), func(e lang.Edit) bool { return !in(e.Span) })
			if len(fix.Edits) == 0 && fix.Message == "" {
				nd.Fix = nil
			} else {
				nd.Fix = &fix
			}
		}
		diags[i] = &nd
	}
	return diags
}

// answerError makes a diagnostic on the answer.
func answerError(f *lang.File, code lang.Code, span lang.Span, format string, args ...any) *lang.Diagnostic {
	return &lang.Diagnostic{Severity: lang.SeverityError, Code: code, File: f.Name, Span: span, Message: fmt.Sprintf(format, args...)}
}

// modelDiagnostics is the most diagnostics of each severity a model is
// shown of its answer: an answer of thousands of calls on one line may
// have a warning for each.
const modelDiagnostics = 20

// report renders diagnostics as the JSON document of `obelisk check
// --format json`, with the excerpt of each line from the answer: the
// errors first, then the warnings, each in the answer's order, at most
// modelDiagnostics of each.
func report(name, text string, diags lang.Diagnostics) string {
	diags = slices.Clone(diags)
	slices.SortStableFunc(diags, func(a, b *lang.Diagnostic) int { return cmp.Compare(a.Severity, b.Severity) })
	b, err := json.Marshal(lang.Report{File: name, OK: !diags.HasErrors(), Diagnostics: diags, Source: []byte(text), Max: modelDiagnostics})
	if err != nil {
		return diags.Error()
	}
	// encoding/json escapes <, > and & for HTML; a model reads them better
	// as they are, and the JSON stays valid.
	return htmlEscapes.Replace(string(b))
}

var htmlEscapes = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// shift moves diagnostics of a text that followed a prelude of n bytes and
// lines lines back into the coordinates of that text. A diagnostic inside
// the prelude loses its span (its message still says what is wrong).
func shift(diags lang.Diagnostics, name string, n, lines int) lang.Diagnostics {
	out := make(lang.Diagnostics, 0, len(diags))
	for _, d := range diags {
		nd := *d
		nd.File = name
		if d.Span.Start.Offset < n {
			nd.Span = lang.Span{}
		} else {
			nd.Span.Start.Offset -= n
			nd.Span.End.Offset -= n
			nd.Span.Start.Line -= lines
			nd.Span.End.Line -= lines
		}
		nd.Related = nil
		nd.Fix = nil
		if d.Fix != nil && d.Fix.Message != "" {
			nd.Fix = &lang.Fix{Message: d.Fix.Message}
		}
		out = append(out, &nd)
	}
	return out
}

// diagnostic says that no code block of an answer is a plan, naming the
// blocks, or is nil when the answer set none aside.
func (m missedBlocks) diagnostic(file, form string) *lang.Diagnostic {
	if m.n == 0 {
		return nil
	}
	what := "the code block of the answer is not a plan: "
	if m.n > 1 {
		what = fmt.Sprintf("none of the %d code blocks of the answer is a plan: ", m.n)
	}
	what += strings.Join(m.shown, "; ")
	if more := m.n - len(m.shown); more > 0 {
		what += fmt.Sprintf("; and %d more", more)
	}
	fix := "write the plan in a code block of its own tagged plan, or with no fence: its steps (label: tool(arg: value) -> †state.slot) and its output"
	if form == FormJSON {
		fix = `answer with the plan alone, in the JSON form {"calls": […], "output": …}`
	}
	return &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.EmptyPlan, File: file, Message: what, Fix: &lang.Fix{Message: fix}}
}

// noPlan makes the diagnostics of an answer in which no code block is a
// plan, and of which nothing was read, the one that names its blocks.
func (ch *checked) noPlan(m missedBlocks, form string) {
	if d := m.diagnostic(ch.answer.Name, form); d != nil {
		ch.diags = lang.Diagnostics{d}
	}
}
