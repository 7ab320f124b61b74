package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// defaultLimit is how many tools search_tools answers with, unless asked.
const defaultLimit = 5

// maxReported bounds the diagnostics of each severity an answer holds,
// as `obelisk check` prints at most 100: a model repairs the first ones
// and checks again.
const maxReported = 20

// planArgs are the arguments of the tools that take a plan.
type planArgs struct {
	Plan  string          `json:"plan"`
	Input json.RawMessage `json:"input,omitempty"`
	Seed  *uint64         `json:"seed,omitempty"`
	Wait  *float64        `json:"wait,omitempty"`
}

// runArgs are the arguments of the tools that take a run.
type runArgs struct {
	Run  string   `json:"run"`
	Wait *float64 `json:"wait,omitempty"`
}

// searchArgs are the arguments of search_tools.
type searchArgs struct {
	Query string `json:"query"`
	Limit *int   `json:"limit,omitempty"`
}

// decodeArgs decodes a call's arguments strictly: a key given twice or
// one the tool does not take is refused with a message that says so.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if err := toolkit.CheckUniqueKeys(raw); err != nil {
		return fmt.Errorf("the arguments: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the arguments: %w", err)
	}
	return nil
}

// compiled is a plan read, checked and, when it checks, compiled.
type compiled struct {
	src   *planfile.Source
	cfg   compiler.Config
	file  *lang.File
	info  *compiler.Info
	prog  *compiler.Program
	diags lang.Diagnostics
}

// ok reports whether the plan compiled.
func (c *compiled) ok() bool { return c.prog != nil }

// report returns the diagnostics as `obelisk check --format json` prints
// them.
func (c *compiled) report(extra lang.Diagnostics) string {
	diags := append(append(lang.Diagnostics(nil), c.diags...), extra...)
	diags.Sort()
	b, err := lang.Report{File: c.src.Name, OK: !diags.HasErrors(), Diagnostics: diags, Source: []byte(c.src.Text), Max: maxReported}.MarshalJSON()
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// result is the answer of the check's report, with its diagnostics and
// extra: an error when the plan or its input does not check.
func (c *compiled) result(extra lang.Diagnostics) *sdk.CallToolResult {
	return structured(c.report(extra), c.diags.HasErrors() || extra.HasErrors())
}

// compile reads, checks and compiles a plan against the server's tools.
// A plan sent by a client imports nothing, and is checked strictly: an
// irreversible call without an approval gate is an error.
func (s *Server) compile(text string) *compiled {
	isJSON := planfile.IsJSON("", []byte(text))
	name := "plan.plan"
	if isJSON {
		name = "plan.json"
	}
	src := &planfile.Source{Name: name, JSON: isJSON, Text: text, WorkDir: s.opts.WorkDir, Tools: s.opts.Tools, Strict: true, MaxParallel: s.opts.MaxParallel}
	cfg, diags := src.Config()
	cfg.Imports = nil // this checker reads no files
	cfg.Limits = s.opts.Limits
	cfg.NoFiller = serverCheck().NoFiller
	f, pd := src.Parse()
	b, err := planfile.Build(f, append(pd, diags...), cfg, compiler.Options{MaxParallel: s.opts.MaxParallel})
	c := &compiled{src: src, cfg: cfg, file: b.File, info: b.Info, diags: b.Diagnostics, prog: b.Program}
	c.diags.Sort()
	if err != nil && !c.diags.HasErrors() {
		c.diags = append(c.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.LimitExceeded, Message: err.Error()})
	}
	return c
}

// input reads the input a call gives, or the one a JSON plan carries, and
// checks it against the plan's input declaration.
func (c *compiled) input(raw json.RawMessage) (map[string]any, lang.Diagnostics, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c.file.InputValues, compiler.CheckInput(c.info, c.file.InputValues), nil
	}
	v, err := toolkit.DecodeJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the input is not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errors.New("the input must be a JSON object, its fields the plan's input block's")
	}
	return m, compiler.CheckInput(c.info, m), nil
}

// checkPlan answers check_plan.
func (s *Server) checkPlan(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args planArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	c := s.compile(args.Plan)
	var extra lang.Diagnostics
	if c.info != nil && len(args.Input) > 0 && !c.diags.HasErrors() {
		_, d, err := c.input(args.Input)
		if err != nil {
			return failure(err.Error()), nil
		}
		extra = d
	}
	return c.result(extra), nil
}

// dryRun answers dry_run_plan.
func (s *Server) dryRun(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args planArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	c := s.compile(args.Plan)
	if !c.ok() {
		return c.result(nil), nil
	}
	input, diags, err := c.input(args.Input)
	if err != nil {
		return failure(err.Error()), nil
	}
	if diags.HasErrors() {
		return c.result(diags), nil
	}
	seed := uint64(1)
	if args.Seed != nil {
		seed = *args.Seed
	}
	res, err := vm.Simulate(ctx, c.prog, input, vm.SimOptions{MaxParallel: s.opts.MaxParallel, Seed: seed, MaxCost: s.opts.Limits.MaxCost})
	if err != nil {
		return failure(err.Error()), nil
	}
	return jsonResult(res, len(res.Problems) > 0)
}

// runPlan answers run_plan: it starts a run, journaled, and follows it.
func (s *Server) runPlan(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args planArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	if args.Seed != nil {
		return failure("the arguments: seed is dry_run_plan's; a run calls the real tools"), nil
	}
	c := s.compile(args.Plan)
	if !c.ok() {
		return c.result(nil), nil
	}
	input, diags, err := c.input(args.Input)
	if err != nil {
		return failure(err.Error()), nil
	}
	if diags.HasErrors() {
		return c.result(diags), nil
	}
	if s.opts.Preflight != nil {
		if problems := s.opts.Preflight(c.prog); len(problems) > 0 {
			return failure("the plan cannot run, and nothing ran:\n" + strings.Join(problems, "\n")), nil
		}
	}
	plan := &durable.Plan{Source: c.src, Program: c.prog, Input: input, Check: c.cfg}
	set := s.opts.Settings
	set.Origin = &s.origin
	r, err := s.opts.Store.Create(plan, "", set)
	if err != nil {
		return failure(fmt.Sprintf("the run could not be recorded, and nothing ran: %v", err)), nil
	}
	return s.follow(ctx, req, s.start(r), s.waitFor(args.Wait))
}

// searchTools answers search_tools.
func (s *Server) searchTools(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args searchArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	limit := defaultLimit
	if args.Limit != nil {
		limit = min(max(*args.Limit, 1), 100)
	}
	found, total := s.catalog.search(args.Query, limit)
	var b strings.Builder
	switch {
	case total == 0:
		fmt.Fprintf(&b, "# no tool matches %q; the tools: %s. Search with other words, or an empty query to list them all.\n", args.Query, s.catalog.summary())
	case total > len(found):
		fmt.Fprintf(&b, "# the best %d of %d tools that match; ask for more with limit, or search with more words\n", len(found), total)
	}
	full := map[string]bool{}
	for _, f := range strings.Fields(strings.ReplaceAll(args.Query, ",", " ")) {
		full[f] = true
	}
	b.WriteString(briefText(found, full))
	if slices.ContainsFunc(found, func(e *entry) bool { return !full[e.name] && e.brief != e.signature }) {
		b.WriteString("# descriptions are cut to their first sentence: search a tool's full name for all of it\n")
	}
	return withText(b.String(), searchAnswer{Tools: b.String(), Shown: len(found), Total: total}), nil
}

// searchAnswer is search_tools' structured answer.
type searchAnswer struct {
	Tools string `json:"tools"`
	Shown int    `json:"shown"`
	Total int    `json:"total"`
}

// primerArgs are get_primer's arguments.
type primerArgs struct {
	Section string `json:"section"`
}

// getPrimer answers get_primer: by default the workflow and the start of
// the language, else the section named, or all of it.
func (s *Server) getPrimer(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args primerArgs
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return failure(err.Error()), nil
	}
	text := s.short
	switch name := sectionName(args.Section); name {
	case "":
	case primerAll:
		text = s.primer
	default:
		var ok bool
		if text, ok = s.sections[name]; !ok {
			return failure(fmt.Sprintf("the primer has no section %q; its sections: %s, or %s", args.Section, strings.Join(s.names, ", "), primerAll)), nil
		}
	}
	return withText(text, struct {
		Primer string `json:"primer"`
	}{text}), nil
}

// textResult is an answer of one text.
func textResult(text string, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
}

// failure is an answer that says why a call did nothing.
func failure(msg string) *sdk.CallToolResult { return textResult(msg, true) }

// jsonResult is an answer of a JSON value, written compactly (every byte
// of it goes to the model's context): its structured content, and the
// same JSON in a text block for the clients that read only text, as the
// specification asks.
func jsonResult(v any, isError bool) (*sdk.CallToolResult, error) {
	b, err := compactJSON(v)
	if err != nil {
		return failure(fmt.Sprintf("encoding the answer: %v", err)), nil
	}
	return structured(string(b), isError), nil
}

// structured is an answer of a JSON text: its structured content, and
// the text itself in a text block.
func structured(jsonText string, isError bool) *sdk.CallToolResult {
	res := textResult(jsonText, isError)
	res.StructuredContent = json.RawMessage(jsonText)
	return res
}

// withText is an answer whose text is for reading (the primer, tool
// signatures): the text block holds it as it is, rather than escaped in
// JSON, and the structured content v holds it too, with what else v says.
func withText(text string, v any) *sdk.CallToolResult {
	res := textResult(text, false)
	if b, err := compactJSON(v); err == nil {
		res.StructuredContent = json.RawMessage(b)
	}
	return res
}

// compactJSON encodes v on one line, without escaping <, > and &.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
