package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The input schemas of the server's tools. Each refuses other properties.
var (
	planSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"plan":{"type":"string","description":"plan text, or its JSON form"},` +
		`"input":{"type":"object","description":"the fields of its input block"}},` +
		`"required":["plan"],"additionalProperties":false}`)
	dryRunSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"plan":{"type":"string","description":"plan text, or its JSON form"},` +
		`"input":{"type":"object","description":"the fields of its input block"},` +
		`"seed":{"type":"integer","minimum":0,"description":"of the invented values (default 1)"}},` +
		`"required":["plan"],"additionalProperties":false}`)
	runSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"plan":{"type":"string","description":"plan text, or its JSON form"},` +
		`"input":{"type":"object","description":"the fields of its input block"},` +
		`"wait":{"type":"number","minimum":0}},` +
		`"required":["plan"],"additionalProperties":false}`)
	runIDSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"run":{"type":"string","description":"as run_plan answered it"},` +
		`"wait":{"type":"number","minimum":0}},` +
		`"required":["run"],"additionalProperties":false}`)
	searchSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"default 10"}},` +
		`"required":["query"],"additionalProperties":false}`)
)

// The output schemas of the server's tools: the shape of each answer's
// structured content, written by hand, as the input schemas are, and as
// short: a client carries them in its context with the tools' list, and
// the schemas the SDK infers from the Go types would spell out every
// nested field of a run's result. They name the fields a client may rely
// on, and let an answer carry others (a run's answer is the check's
// report, ok false, when its plan does not check).
var (
	primerOutput = json.RawMessage(`{"type":"object","properties":{"primer":{"type":"string"}}}`)
	searchOutput = json.RawMessage(`{"type":"object","properties":{"tools":{"type":"string"},"total":{"type":"integer"}}}`)
	checkOutput  = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"diagnostics":{"type":"array"}}}`)
	dryRunOutput = json.RawMessage(`{"type":"object","properties":{"status":{"type":"string"},"output":{},"problems":{"type":"array"}}}`)
	runOutput    = json.RawMessage(`{"type":"object","properties":{"run":{"type":"string"},"status":{"type":"string"},"output":{},"next":{"type":"string"}}}`)
)

// addTools adds the server's tools. None of them approves anything.
func (s *Server) addTools() {
	desc := s.descriptions()
	// Reading, checking and simulating change nothing and reach nothing
	// outside the server: the same call gives the same answer.
	// (destructiveHint means nothing for a read-only tool, and is left out.)
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	// A run calls the operator's tools, which reach the world and may do
	// what cannot be undone unless every one of them is pure. Starting a
	// run twice runs it twice; resuming one twice runs nothing again.
	destructive := ptr(s.catalog.effectful())
	runs := &sdk.ToolAnnotations{DestructiveHint: destructive, OpenWorldHint: ptr(true)}
	resumes := &sdk.ToolAnnotations{DestructiveHint: destructive, IdempotentHint: true, OpenWorldHint: ptr(true)}
	for _, t := range []struct {
		name        string
		schema, out json.RawMessage
		ann         *sdk.ToolAnnotations
		h           sdk.ToolHandler
	}{
		{toolPrimer, s.primerSchema(), primerOutput, readOnly, s.getPrimer},
		{toolSearch, searchSchema, searchOutput, readOnly, s.searchTools},
		{toolCheck, planSchema, checkOutput, readOnly, s.checkPlan},
		{toolDryRun, dryRunSchema, dryRunOutput, readOnly, s.dryRun},
		{toolRun, runSchema, runOutput, runs, s.runPlan},
		{toolStatus, runIDSchema, runOutput, readOnly, s.runStatus},
		{toolResume, runIDSchema, runOutput, resumes, s.resumeRun},
	} {
		s.mcp.AddTool(&sdk.Tool{Name: t.name, Description: desc[t.name], InputSchema: t.schema, OutputSchema: t.out, Annotations: t.ann}, s.advised(t.h))
	}
}

func ptr[T any](v T) *T { return &v }

// primerSchema is get_primer's input schema: the names of the primer's
// sections, so that a model may ask for those a plan needs along with the
// first part, in one turn.
func (s *Server) primerSchema() json.RawMessage {
	desc, _ := json.Marshal("default the first part; or all, or one of: " + strings.Join(s.names, ", "))
	return json.RawMessage(`{"type":"object","properties":{"section":{"type":"string","description":` + string(desc) + `}},"additionalProperties":false}`)
}

// advised returns h with Options.Advise applied to the text of its
// answers.
func (s *Server) advised(h sdk.ToolHandler) sdk.ToolHandler {
	if s.opts.Advise == nil {
		return h
	}
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := h(ctx, req)
		if res != nil {
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					tc.Text = s.opts.Advise(tc.Text)
				}
			}
			// The advice goes into strings of the JSON, and quotes nothing:
			// should a rewrite not leave JSON, the answer keeps its own.
			if raw, ok := res.StructuredContent.(json.RawMessage); ok {
				if advised := s.opts.Advise(string(raw)); json.Valid([]byte(advised)) {
					res.StructuredContent = json.RawMessage(advised)
				}
			}
		}
		return res, err
	}
}

// addResources adds the primer and the tools' signatures as resources, and
// the prompt that asks for a plan.
func (s *Server) addResources() {
	s.mcp.AddResource(&sdk.Resource{URI: primerURI, Name: "primer", Title: "How to write an Obelisk plan", MIMEType: "text/markdown", Description: "The workflow and the language, quoted from its reference."},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: primerURI, MIMEType: "text/markdown", Text: s.primer}}}, nil
		})
	s.mcp.AddResource(&sdk.Resource{URI: toolsURI, Name: "tools", Title: "The tools a plan may call", MIMEType: "text/plain",
		Description: fmt.Sprintf("The signatures of the %d tools (%s), as tool lines.", len(s.catalog.tools), s.catalog.summary())},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: toolsURI, MIMEType: "text/plain", Text: text(s.catalog.tools)}}}, nil
		})
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: toolURIPrefix + "{name}", Name: "tool", Title: "One tool's signature", MIMEType: "text/plain"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			name := strings.TrimPrefix(req.Params.URI, toolURIPrefix)
			e := s.catalog.byName[name]
			if e == nil {
				return nil, sdk.ResourceNotFoundError(req.Params.URI)
			}
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: e.signature + "\n"}}}, nil
		})
	s.mcp.AddPrompt(&sdk.Prompt{Name: promptName, Title: "Reach a goal with one plan", Description: "The primer, and a goal to reach with one Obelisk plan.",
		Arguments: []*sdk.PromptArgument{{Name: "goal", Description: "what the plan is to do", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			goal := req.Params.Arguments["goal"]
			return &sdk.GetPromptResult{Description: "Reach a goal with one Obelisk plan", Messages: []*sdk.PromptMessage{
				{Role: "user", Content: &sdk.TextContent{Text: s.primer + "\nGoal: " + goal + "\n"}},
			}}, nil
		})
}
