package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dominikbraun/graph/draw"
)

// JSON encodes the program for `obelisk compile`: its steps with their
// resolved tools, arguments, dependencies and options, the edges, levels,
// critical path, subgraphs and estimates, and its sub-plans. The encoding
// is deterministic: the same plan gives the same bytes.
func (p *Program) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p.export()); err != nil {
		return nil, fmt.Errorf("encoding the compiled plan: %w", err)
	}
	return buf.Bytes(), nil
}

type jsonProgram struct {
	Plan         string               `json:"plan,omitempty"`
	Mode         string               `json:"mode"`
	OnFailure    jsonPolicy           `json:"onFailure"`
	Approve      *jsonApprove         `json:"approve,omitempty"`
	Input        map[string]any       `json:"input"`
	Slots        []jsonSlot           `json:"slots"`
	Steps        []jsonStep           `json:"steps"`
	Edges        []jsonEdge           `json:"edges"`
	Levels       [][]string           `json:"levels"`
	CriticalPath jsonCritical         `json:"criticalPath"`
	Subgraphs    []jsonSubgraph       `json:"subgraphs"`
	Estimate     jsonEstimate         `json:"estimate"`
	Output       any                  `json:"output,omitempty"`
	OutputType   string               `json:"outputType"`
	SubPlans     map[string]*jsonProg `json:"subPlans,omitempty"`
}

// jsonProg lets sub-plans nest without an initialisation cycle.
type jsonProg = jsonProgram

type jsonPolicy struct {
	Action     string `json:"action"`
	MaxReplans int    `json:"maxReplans,omitempty"`
}

type jsonApprove struct {
	Message string `json:"message,omitempty"`
}

type jsonSlot struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Writers []string `json:"writers,omitempty"`
	Initial any      `json:"initial,omitempty"`
}

type jsonStep struct {
	ID        string         `json:"id"`
	Index     int            `json:"index"`
	Position  string         `json:"position"`
	Tool      string         `json:"tool"`
	SubPlan   bool           `json:"subPlan,omitempty"`
	Effect    string         `json:"effect"`
	Model     bool           `json:"model,omitempty"`
	Args      map[string]any `json:"args"`
	Out       string         `json:"out,omitempty"`
	ErrOut    string         `json:"errorOut,omitempty"`
	OutType   string         `json:"outType"`
	Deps      []string       `json:"deps"`
	Each      *jsonEach      `json:"forEach,omitempty"`
	When      any            `json:"when,omitempty"`
	Expect    []any          `json:"expect,omitempty"`
	Criteria  []string       `json:"criteria,omitempty"`
	Retry     int            `json:"retry,omitempty"`
	Backoff   string         `json:"backoff,omitempty"`
	Timeout   string         `json:"timeout,omitempty"`
	Fallback  *jsonFallback  `json:"fallback,omitempty"`
	Approve   *jsonApprove   `json:"approve,omitempty"`
	Result    any            `json:"result,omitempty"`
	Task      *jsonTask      `json:"task,omitempty"`
	Hint      string         `json:"hint,omitempty"`
	Gated     bool           `json:"gated"`
	Level     int            `json:"level"`
	Latency   string         `json:"latency"`
	Estimated bool           `json:"latencyEstimated,omitempty"`
}

type jsonTask struct {
	Goal       string   `json:"goal"`
	Candidates []string `json:"candidates"`
}

type jsonEach struct {
	Var  string `json:"as"`
	List any    `json:"in"`
	Max  int    `json:"max"`
}

type jsonFallback struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

type jsonEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Slot string `json:"slot"`
	Kind string `json:"kind"`
}

type jsonCritical struct {
	Steps     []string `json:"steps"`
	Latency   string   `json:"latency"`
	LatencyMs float64  `json:"latencyMs"`
}

type jsonSubgraph struct {
	ID    int      `json:"id"`
	Steps []string `json:"steps"`
	Deps  []int    `json:"deps"`
}

type jsonEstimate struct {
	Steps                int     `json:"steps"`
	ToolCalls            float64 `json:"toolCalls"`
	ToolCallsLongestPath float64 `json:"toolCallsLongestPath"`
	ToolCallsAveragePath float64 `json:"toolCallsAveragePath"`
	ModelCalls           float64 `json:"modelCalls"`
	ModelCallsLongest    float64 `json:"modelCallsLongestPath"`
	ModelCallsAverage    float64 `json:"modelCallsAveragePath"`
	Tokens               int     `json:"tokens"`
	TokensCriticalPath   int     `json:"tokensCriticalPath"`
	Depth                int     `json:"criticalPathDepth"`
	MaxParallelWidth     int     `json:"maxParallelWidth"`
	Sequential           string  `json:"sequentialLatency"`
	LevelByLevel         string  `json:"levelByLevelLatency"`
	Dataflow             string  `json:"dataflowLatency"`
	SpeedUp              float64 `json:"speedUpOverSequential"`
}

func (p *Program) export() *jsonProgram {
	a := p.Analysis
	plan := p.Plan
	out := &jsonProgram{
		Plan:       plan.Name,
		Mode:       plan.RunMode(),
		OnFailure:  jsonPolicy{Action: plan.Policy.Action, MaxReplans: plan.Policy.MaxReplans},
		Input:      map[string]any{},
		Steps:      []jsonStep{},
		Edges:      []jsonEdge{},
		Subgraphs:  []jsonSubgraph{},
		OutputType: plan.OutputType.String(),
	}
	if plan.Approve {
		out.Approve = &jsonApprove{Message: plan.ApproveMessage}
	}
	for _, f := range plan.Input.Fields {
		t := f.Type.String()
		if f.Optional {
			t += " (optional)"
		}
		out.Input[f.Name] = t
	}
	for _, name := range plan.SlotNames {
		s := plan.Slots[name]
		js := jsonSlot{Name: name, Type: s.Type.String(), Initial: s.Initial}
		for _, w := range s.Writers {
			js.Writers = append(js.Writers, w.ID)
		}
		for _, w := range s.ErrorWriters {
			js.Writers = append(js.Writers, w.ID+" (error)")
		}
		out.Slots = append(out.Slots, js)
	}
	for i, s := range p.Steps {
		js := jsonStep{
			ID: s.ID, Index: i, Position: s.Node.Span.Start.String(),
			Tool: s.Node.Callee(), Args: map[string]any{}, Out: s.Out, ErrOut: s.ErrOut, Hint: s.Hint,
			OutType: s.OutType.String(), Deps: []string{},
			Retry: s.Retry, Criteria: s.Criteria, Gated: s.Gated,
			Level: int(a.Level[i]), Latency: fmtDuration(a.Latency[i]), Estimated: a.Estimated[i],
		}
		if s.Tool != nil {
			js.Effect = stepEffect(s).String()
			js.Model = s.Tool.Model
			js.SubPlan = s.Tool.Plan != nil
		}
		if s.Task != nil {
			js.Effect = stepEffect(s).String()
			js.Task = &jsonTask{Goal: s.Task.Goal, Candidates: []string{}}
			for _, t := range s.Task.Candidates {
				js.Task.Candidates = append(js.Task.Candidates, t.Name)
			}
		}
		for _, arg := range s.Args {
			js.Args[arg.Name] = operandJSON(arg.Value)
		}
		for k, d := range s.Deps {
			if k == 0 || s.Deps[k-1].Step != d.Step {
				js.Deps = append(js.Deps, p.Steps[d.Step].ID)
			}
			out.Edges = append(out.Edges, jsonEdge{From: p.Steps[d.Step].ID, To: s.ID, Slot: d.Slot, Kind: d.Kind.String()})
		}
		if s.Each != nil {
			js.Each = &jsonEach{Var: s.Each.Var, List: operandJSON(s.Each.List), Max: s.Each.Max}
		}
		if s.When != nil {
			js.When = operandJSON(s.When)
		}
		for _, e := range s.Expects {
			js.Expect = append(js.Expect, operandJSON(e))
		}
		if s.Backoff > 0 {
			js.Backoff = fmtDuration(s.Backoff)
		}
		if s.Timeout > 0 {
			js.Timeout = fmtDuration(s.Timeout)
		}
		if s.Fallback != nil && s.Fallback.Tool != nil {
			fb := &jsonFallback{Tool: s.Fallback.Tool.Name, Args: map[string]any{}}
			for _, arg := range s.Fallback.Args {
				fb.Args[arg.Name] = operandJSON(arg.Value)
			}
			js.Fallback = fb
		}
		if s.Approve {
			js.Approve = &jsonApprove{Message: s.ApproveMessage}
		}
		if s.Result != nil {
			js.Result = operandJSON(s.Result)
		}
		out.Steps = append(out.Steps, js)
	}
	for _, lv := range a.Levels {
		ids := make([]string, len(lv))
		for i, s := range lv {
			ids[i] = p.Steps[s].ID
		}
		out.Levels = append(out.Levels, ids)
	}
	cp := jsonCritical{Steps: []string{}, Latency: fmtDuration(a.CriticalLatency), LatencyMs: ms(a.CriticalLatency)}
	for _, s := range a.CriticalPath {
		cp.Steps = append(cp.Steps, p.Steps[s].ID)
	}
	out.CriticalPath = cp
	for i, sg := range a.Subgraphs {
		jsg := jsonSubgraph{ID: i, Deps: sg.Deps}
		if jsg.Deps == nil {
			jsg.Deps = []int{}
		}
		for _, s := range sg.Steps {
			jsg.Steps = append(jsg.Steps, p.Steps[s].ID)
		}
		out.Subgraphs = append(out.Subgraphs, jsg)
	}
	out.Estimate = jsonEstimate{
		Steps:                len(p.Steps),
		ToolCalls:            round2(a.Calls.Total),
		ToolCallsLongestPath: round2(a.Calls.Longest),
		ToolCallsAveragePath: round2(a.Calls.Average),
		ModelCalls:           round2(a.ModelCalls.Total),
		ModelCallsLongest:    round2(a.ModelCalls.Longest),
		ModelCallsAverage:    round2(a.ModelCalls.Average),
		Tokens:               a.Tokens,
		TokensCriticalPath:   a.CriticalTokens,
		Depth:                a.Depth,
		MaxParallelWidth:     a.Width,
		Sequential:           fmtDuration(a.SequentialLatency),
		LevelByLevel:         fmtDuration(a.LevelLatency),
		Dataflow:             fmtDuration(a.CriticalLatency),
		SpeedUp:              round2(a.SpeedUp),
	}
	if plan.Output != nil {
		out.Output = operandJSON(plan.Output)
	}
	if plan.Name == "" && len(p.Sub) > 0 {
		out.SubPlans = map[string]*jsonProg{}
		for name, sub := range p.Sub {
			out.SubPlans[name] = sub.export()
		}
	}
	return out
}

func round2(f float64) float64 {
	if f != f { // NaN
		return 0
	}
	return float64(int64(f*100+0.5)) / 100
}

func ms(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }

// fmtDuration prints a duration compactly: 1.5s, 300ms, 2m0s becomes 2m.
func fmtDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "m0s")
	if strings.HasSuffix(d.String(), "m0s") {
		s += "m"
	}
	return s
}

// operandJSON encodes an operand: a constant as its value, a reference as
// its text, lists and objects element by element, CEL as {"cel": text}.
func operandJSON(o *Operand) any {
	if o == nil {
		return nil
	}
	switch o.Kind {
	case OpConst:
		if o.Const == nil {
			return map[string]any{"const": nil}
		}
		return o.Const
	case OpRef:
		return o.Ref.String()
	case OpList:
		out := make([]any, len(o.Elems))
		for i, e := range o.Elems {
			out[i] = operandJSON(e)
		}
		return out
	case OpObject:
		out := make(map[string]any, len(o.Keys))
		for i, k := range o.Keys {
			out[k] = operandJSON(o.Vals[i])
		}
		return out
	case OpCEL:
		return map[string]any{"cel": o.Text}
	case OpHole:
		return map[string]any{"hole": o.Text, "type": o.Type.String()}
	}
	return nil
}

// WriteDOT draws the program's graph in Graphviz DOT through the graph
// library's draw package: data dependencies are solid, `when` dependencies
// dashed, dependencies on an error slot red, approval gates drawn double,
// for each steps rounded.
func (p *Program) WriteDOT(w io.Writer) error {
	g := p.Graph()
	var buf bytes.Buffer
	if err := draw.DOT(g, &buf, draw.GraphAttribute("rankdir", "LR")); err != nil {
		return fmt.Errorf("drawing the graph: %w", err)
	}
	_, err := w.Write(canonicalDOT(buf.Bytes()))
	return err
}

// canonicalDOT puts what draw.DOT prints from maps in a fixed order: the
// attributes of each statement sorted, and the statements sorted by step
// (each vertex before its outgoing edges, edges by target).
func canonicalDOT(b []byte) []byte {
	var head, stmts, tail []string
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
		case strings.HasPrefix(t, `"`):
			open := strings.Index(t, "[ ")
			close := strings.LastIndex(t, " ]")
			if open >= 0 && close > open {
				attrs := splitAttrs(t[open+2 : close])
				sort.Strings(attrs)
				t = t[:open+2] + strings.Join(attrs, ", ") + t[close:]
			}
			stmts = append(stmts, "\t"+t)
		case t == "}":
			tail = append(tail, t)
		default:
			head = append(head, strings.TrimRight(line, " \t"))
		}
	}
	sort.SliceStable(stmts, func(i, j int) bool {
		fi, ti := dotKey(stmts[i])
		fj, tj := dotKey(stmts[j])
		if fi != fj {
			return fi < fj
		}
		return ti < tj
	})
	out := append(head, stmts...)
	out = append(out, tail...)
	return []byte(strings.Join(out, "\n") + "\n")
}

// dotKey returns the source vertex of a statement and its edge target (-1
// for a vertex statement).
func dotKey(stmt string) (from, to int) {
	to = -1
	fields := strings.Fields(stmt)
	if len(fields) > 0 {
		fmt.Sscanf(strings.Trim(fields[0], `"`), "%d", &from)
	}
	if len(fields) > 2 && fields[1] == "->" {
		fmt.Sscanf(strings.Trim(fields[2], `"`), "%d", &to)
	}
	return from, to
}

// splitAttrs splits `a="x", b="y, z"` at the commas between attributes.
func splitAttrs(s string) []string {
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// WriteMermaid draws the program's graph as a Mermaid flowchart: data
// dependencies are solid arrows labelled with the slot, `when` dependencies
// dotted, dependencies on an error slot thick and labelled "error".
func (p *Program) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for i, s := range p.Steps {
		label := s.ID
		if s.Tool != nil && s.Tool.Name != s.ID {
			label += "<br/>" + s.Tool.Name
		}
		if s.Task != nil {
			label += "<br/>task: " + taskCandidates(s.Task, " or ")
		}
		open, close := "[", "]"
		switch {
		case s.Approve:
			open, close = "[[", "]]"
		case s.Each != nil:
			open, close = "([", "])"
		}
		fmt.Fprintf(&b, "  s%d%s\"%s\"%s\n", i, open, mermaidText(label), close)
	}
	for i, s := range p.Steps {
		for _, d := range s.Deps {
			switch d.Kind {
			case DepWhen:
				fmt.Fprintf(&b, "  s%d -.->|\"when %s\"| s%d\n", d.Step, mermaidText(d.Slot), i)
			case DepError:
				fmt.Fprintf(&b, "  s%d ==>|\"on failure: %s\"| s%d\n", d.Step, mermaidText(d.Slot), i)
			default:
				fmt.Fprintf(&b, "  s%d -->|\"%s\"| s%d\n", d.Step, mermaidText(d.Slot), i)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<br/>", "<br/>").Replace(s)
}
