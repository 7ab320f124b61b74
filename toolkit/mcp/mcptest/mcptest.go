// Package mcptest provides small MCP servers, built with the official Go
// SDK, for testing the MCP client: over an in-memory transport, or over
// stdio in a test binary that runs itself as the server.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvServer is the environment variable that makes a test binary an MCP
// server (see Main).
const EnvServer = "OBELISK_MCP_TEST_SERVER"

// Main runs the test binary as an MCP server on stdio, and exits, when the
// environment variable EnvServer is set: the server its first argument
// names, "calc" or "other" (the servers of NewServer), "broken" (a server
// that fails before it answers, writing why on standard error), or "mute"
// (a server that reads its input and never answers).
// Call it first in TestMain; it returns when the variable is not set.
func Main() {
	if os.Getenv(EnvServer) == "" {
		return
	}
	name := "calc"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	switch name {
	case "broken":
		fmt.Fprintln(os.Stderr, "calc: cannot read calc.conf: no such file")
		os.Exit(3)
	case "mute":
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if err := NewServer(name).Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// addIn are the arguments of add.
type addIn struct {
	A float64 `json:"a" jsonschema:"the first term"`
	B float64 `json:"b" jsonschema:"the second term"`
}

// addOut is the result of add.
type addOut struct {
	Sum float64 `json:"sum"`
}

// chargeIn are the arguments of charge.
type chargeIn struct {
	Amount float64 `json:"amount"`
}

// chargeOut is the result of charge.
type chargeOut struct {
	Receipt string `json:"receipt"`
}

// NewServer returns a server. "calc" lists:
//
//   - add(a, b) -> {sum}: read-only, structured output;
//   - greet(name): idempotent, text output;
//   - stats(values): read-only, JSON in its text output and no output schema;
//   - charge(amount) -> {receipt}: destructive; an amount over 100 is a tool
//     error whose structured content is {code: "card_declined", message};
//   - crash(): the server process exits, writing why on standard error
//     (call it only of a server in a process of its own);
//   - explode(): a tool error with text only;
//   - hang(): returns when the call is canceled;
//   - "bad name/tool": a name a plan cannot call.
//
// "other" lists add (which clashes with calc's) and echo(value).
func NewServer(name string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "v0.0.1"}, nil)
	yes := true
	if name == "other" {
		sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two numbers, the other way.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
				return nil, addOut{Sum: in.B + in.A + 1000}, nil
			})
		s.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{}}}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
			})
		return s
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two numbers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	s.AddTool(&sdk.Tool{Name: "greet", Description: "Greets someone.", Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(bool)},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args := strings.TrimSuffix(strings.TrimPrefix(string(req.Params.Arguments), `{"name":"`), `"}`)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + args + "!"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "stats", Description: "Counts values.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"values": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}}}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n := strings.Count(string(req.Params.Arguments), ",") + 1
			if strings.Contains(string(req.Params.Arguments), "[]") {
				n = 0
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(`{"count": %d}`, n)}}}, nil
		})
	// The typed AddTool would replace a tool error's structured content
	// with the zero output, so charge is added with explicit schemas.
	s.AddTool(&sdk.Tool{Name: "charge", Description: "Charges a card.", Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes},
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "number"}}, "required": []any{"amount"}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"receipt": map[string]any{"type": "string"}}, "required": []any{"receipt"}}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in chargeIn
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			if in.Amount > 100 {
				return &sdk.CallToolResult{IsError: true,
					Content:           []sdk.Content{&sdk.TextContent{Text: "Your card was declined."}},
					StructuredContent: map[string]any{"code": "card_declined", "message": "Your card was declined.", "retryable": false},
				}, nil
			}
			out := chargeOut{Receipt: fmt.Sprintf("R-%g", in.Amount)}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out.Receipt}}, StructuredContent: out}, nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", Description: "Makes the server exit: only for a server in its own process.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "calc: out of memory")
			os.Exit(2)
			return nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "explode", Description: "Always fails."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the calculator caught fire")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Waits until the call is canceled.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "bad name/tool", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	return s
}
