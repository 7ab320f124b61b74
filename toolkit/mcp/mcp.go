// Package mcp calls the tools of MCP servers, through the official Go SDK.
//
// Start runs a server as a child process and talks to it over stdio;
// Connect uses any transport of the SDK (the in-memory one in tests). Both
// list the server's tools, whose definitions (input and output schemas,
// annotations) become runtime definitions. Bind names them for plans:
// each tool is SERVER.TOOL, and also TOOL when no other server lists a tool
// of that name and no other tool has it.
//
// A tool's input and output schemas keep the order the server gives their
// properties in, which is the order of the tool's parameters in a plan's
// signatures.
//
// A call's result is the tool's structured content when it has some; else,
// when its content is text only, the text read as JSON, or the text; else
// (an image, audio, a resource or a resource link beside the text, or no
// text) its content list as MCP gives it, each item an object with a
// "type", so that nothing the tool returned is dropped.
//
// A server has one call of a tool that is not read-only (a write) in
// progress at a time, by default: many servers read their state, change it
// and write it back, and two writes at once lose one of them. Calls of
// read-only tools (readOnlyHint) do not wait. Options.MaxWrites raises the
// bound of writes, and Options.MaxParallel bounds all calls.
//
// A result marked isError is a step error
// with code tool-error and the text as message; when its structured content
// is an object with a string "code", that code and its "message" are the
// error's ("card_declined"), and "retryable": false says a retry cannot
// help. A protocol error is a step error too: invalid-arguments for bad
// parameters, unknown-tool for an unknown tool, tool-error otherwise, and
// tool-error that is not retried when the server has stopped.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/toolkit"
)

// Options configure a server's connection.
type Options struct {
	// Stderr receives what a server started by Start writes on its
	// standard error (default: nothing); its last lines are kept for error
	// messages either way.
	Stderr io.Writer
	// Dir is the working directory of a server started by Start (default:
	// the current one).
	Dir string
	// StartTimeout bounds starting, initializing and listing the tools
	// (default 30s).
	StartTimeout time.Duration
	// MaxParallel, when positive, bounds how many calls the server has in
	// progress at once, reads and writes: the others wait, in the order
	// they come, until one returns. Zero or less: no bound.
	MaxParallel int
	// MaxWrites bounds how many calls of tools that are not read-only
	// (their annotations do not say readOnlyHint, or the server does not
	// list them) the server has in progress at once; they wait as for
	// MaxParallel, and a write also takes one of MaxParallel's places.
	// Zero is the default, 1: a server that reads its state, changes it
	// and writes it back (a knowledge graph kept in one file) loses no
	// write. Negative: no bound, for a server known to take writes at
	// once.
	MaxWrites int
}

// Server is a connected MCP server.
type Server struct {
	name    string
	command string // how it was started, for messages; "" for Connect
	session *sdk.ClientSession
	tools   []toolkit.Definition
	stderr  *toolkit.TailWriter
	// slots holds a token for each call in progress when the calls are
	// bounded (Options.MaxParallel); nil when they are not.
	slots chan struct{}
	// writes holds a token for each call of a tool that is not read-only
	// in progress (Options.MaxWrites); nil when they are not bounded.
	writes chan struct{}
	// readOnly holds the tools whose annotations say readOnlyHint.
	readOnly map[string]bool
}

// Start runs the server argv names as a child process, connects to it over
// stdio, and lists its tools. The error says which server failed and why,
// with the end of what it wrote on standard error.
func Start(ctx context.Context, name string, argv []string, opts Options) (*Server, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("MCP server %s: no command", name)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = opts.Dir
	s := &Server{name: name, command: strings.Join(argv, " "), stderr: &toolkit.TailWriter{W: opts.Stderr, Max: 2048}}
	cmd.Stderr = s.stderr
	if err := s.connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// Connect connects to a server over a transport and lists its tools.
func Connect(ctx context.Context, name string, t sdk.Transport, opts Options) (*Server, error) {
	s := &Server{name: name, stderr: &toolkit.TailWriter{Max: 2048}}
	if err := s.connect(ctx, t, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// slots returns the tokens of n calls at once, or nil for no bound.
func slots(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}

func (s *Server) connect(ctx context.Context, t sdk.Transport, opts Options) error {
	s.slots = slots(opts.MaxParallel)
	if opts.MaxWrites == 0 {
		opts.MaxWrites = 1
	}
	s.writes = slots(opts.MaxWrites)
	s.readOnly = map[string]bool{}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "obelisk", Version: "v0"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	listed := &listedSchemas{}
	session, err := client.Connect(ctx, schemaTransport{t, listed}, nil)
	if err != nil {
		return s.failure("cannot start", ctx, err)
	}
	s.session = session
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			session.Close()
			return s.failure("cannot list its tools", ctx, err)
		}
		def, err := definition(tool, listed.of(tool.Name))
		if err != nil {
			session.Close()
			return fmt.Errorf("%s: tool %q: %w", s, tool.Name, err)
		}
		s.tools = append(s.tools, def)
		s.readOnly[tool.Name] = def.Annotations.ReadOnly
	}
	sort.Slice(s.tools, func(i, j int) bool { return s.tools[i].Name < s.tools[j].Name })
	return nil
}

// failure says why a server could not be started or listed.
func (s *Server) failure(what string, ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer in time: %w", err)
	}
	msg := fmt.Sprintf("%s: %s: %v", s, what, err)
	if ex := toolkit.Excerpt(s.stderr.Bytes(), 300); ex != "" {
		msg += " (it wrote: " + ex + ")"
	}
	return errors.New(msg)
}

// String names the server for messages: MCP server NAME (COMMAND).
func (s *Server) String() string {
	if s.command == "" {
		return "MCP server " + s.name
	}
	return fmt.Sprintf("MCP server %s (%s)", s.name, s.command)
}

// Name returns the server's name.
func (s *Server) Name() string { return s.name }

// Tools returns the definitions of the server's tools, as it lists them,
// sorted by name.
func (s *Server) Tools() []toolkit.Definition { return append([]toolkit.Definition(nil), s.tools...) }

// Close ends the session; a server started by Start has its standard input
// closed and is waited for (and stopped if it does not exit).
func (s *Server) Close() error {
	err := s.session.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // stopped by a signal after it did not exit on its own: it is stopped
	}
	if err != nil {
		return fmt.Errorf("%s: stopping: %w", s, err)
	}
	return nil
}

// definition converts an MCP tool definition. raw holds the tool's
// schemas as the server sent them, when they were seen: they keep the
// order of the properties, which the SDK's maps lose.
func definition(t *sdk.Tool, raw rawSchemas) (toolkit.Definition, error) {
	d := toolkit.Definition{Name: t.Name, Description: t.Description}
	var err error
	if d.InputSchema, err = schemaJSON(raw.InputSchema, t.InputSchema); err != nil {
		return d, fmt.Errorf("input schema: %w", err)
	}
	if t.OutputSchema != nil {
		if d.OutputSchema, err = schemaJSON(raw.OutputSchema, t.OutputSchema); err != nil {
			return d, fmt.Errorf("output schema: %w", err)
		}
	}
	if a := t.Annotations; a != nil {
		d.Annotations = toolkit.Annotations{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint, Destructive: a.DestructiveHint}
	}
	return d, nil
}

// schemaJSON returns a schema as the server sent it (compacted), or else
// as the SDK decoded it.
func schemaJSON(raw json.RawMessage, decoded any) (json.RawMessage, error) {
	if len(raw) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err == nil {
			return b.Bytes(), nil
		}
	}
	return json.Marshal(decoded)
}

// Call calls one of the server's tools by the name the server lists. It
// waits for its turn first: a call of a tool that is not read-only for a
// place among the writes (Options.MaxWrites), then any call for a place
// among all calls (Options.MaxParallel).
func (s *Server) Call(ctx context.Context, tool string, args map[string]any) (any, error) {
	if !s.readOnly[tool] {
		release, err := take(ctx, s.writes)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	release, err := take(ctx, s.slots)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := s.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, s.callError(ctx, tool, err)
	}
	if res.IsError {
		return nil, toolError(s.name+"."+tool, res)
	}
	return resultValue(res)
}

// take waits for a place among slots, and returns the function that
// gives it back; with nil slots, it does not wait.
func take(ctx context.Context, slots chan struct{}) (release func(), err error) {
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) callError(ctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the step's deadline or cancellation
	}
	var we *jsonrpc.Error
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe):
		s.waitStopped()
		msg := fmt.Sprintf("%s has stopped", s)
		if ex := toolkit.Excerpt(s.stderr.Bytes(), 300); ex != "" {
			msg += " (it wrote: " + ex + ")"
		}
		return &toolkit.Error{Code: toolkit.CodeToolError, Message: msg, NotRetryable: true}
	case errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams:
		return &toolkit.Error{Code: toolkit.CodeInvalidArguments, Message: fmt.Sprintf("%s.%s: %s", s.name, tool, we.Message), NotRetryable: true}
	case errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound:
		return &toolkit.Error{Code: toolkit.CodeUnknownTool, Message: fmt.Sprintf("%s.%s: %s", s.name, tool, we.Message), NotRetryable: true}
	}
	return fmt.Errorf("%s.%s: %w", s.name, tool, err)
}

// waitStopped waits a little for a server whose connection is lost to be
// gone, so that all it wrote on standard error is in s.stderr.
func (s *Server) waitStopped() {
	done := make(chan struct{})
	go func() {
		s.session.Wait()
		close(done)
	}()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// toolError is the step error of a result marked isError.
func toolError(name string, res *sdk.CallToolResult) error {
	e := &toolkit.Error{Code: toolkit.CodeToolError, Message: text(res)}
	if m, ok := normalized(res.StructuredContent).(map[string]any); ok {
		if c, ok := m["code"].(string); ok && c != "" {
			e.Code = c
			if msg, ok := m["message"].(string); ok {
				e.Message = msg
			}
		}
		if r, ok := m["retryable"].(bool); ok && !r {
			e.NotRetryable = true
		}
	}
	if e.Message == "" {
		e.Message = name + " failed"
	}
	return e
}

// resultValue maps a result to a plan value.
func resultValue(res *sdk.CallToolResult) (any, error) {
	if res.StructuredContent != nil {
		if v, ok := mirrored(res); ok {
			return v, nil
		}
		return normalized(res.StructuredContent), nil
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if len(texts) > 0 && len(texts) == len(res.Content) {
		return toolkit.DecodeJSONOrText([]byte(strings.Join(texts, "\n"))), nil
	}
	if len(res.Content) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, &toolkit.Error{Code: toolkit.CodeInvalidOutput, Message: err.Error()}
	}
	return toolkit.DecodeJSON(b)
}

func text(res *sdk.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// mirrored returns a result's structured content as the JSON of its text
// content, which a server should give too, when that JSON is the same
// value: decoded from the text, an integer keeps every digit, where the
// SDK decodes the structured content with a float64 for every number,
// which rounds an integer beyond 2^53.
func mirrored(res *sdk.CallToolResult) (any, bool) {
	t := text(res)
	if t == "" {
		return nil, false
	}
	v, err := toolkit.DecodeJSON([]byte(t))
	if err != nil || !sameJSON(res.StructuredContent, v, 0) {
		return nil, false
	}
	return v, true
}

// sameJSON reports whether a, as the SDK decodes JSON, and b, as the
// runtime does, are the same value, but for the precision of a's numbers.
func sameJSON(a, b any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			if f, ok := y[k]; !ok || !sameJSON(e, f, depth+1) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case float64:
		switch y := b.(type) {
		case int64:
			return float64(y) == x
		case float64:
			return y == x
		}
		return false
	case string, bool, nil:
		return a == b
	}
	return false
}

// normalized converts a value the SDK decoded to the runtime's JSON shape:
// a float64 that holds an integer below 2^53, which no other number
// rounds to, is an int64; a larger one stays a float64, since it may have been rounded from the
// integer the server sent (a place typed int refuses it rather than take
// a rounded integer).
func normalized(v any) any {
	if out, ok := fromDecoded(v, 0); ok {
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, err := toolkit.DecodeJSON(b)
	if err != nil {
		return nil
	}
	return out
}

// fromDecoded is normalized for a value of the types encoding/json
// decodes into; ok is false for any other.
func fromDecoded(v any, depth int) (any, bool) {
	if depth > 64 {
		return nil, false
	}
	switch x := v.(type) {
	case nil, string, bool:
		return v, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
		return v, !math.IsNaN(x) && !math.IsInf(x, 0)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, ok := fromDecoded(e, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, ok := fromDecoded(e, depth+1)
			if !ok {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	}
	return nil, false
}

// Binding is a tool of a server under the name a plan calls it by. It
// implements toolkit.Tool.
type Binding struct {
	Server *Server
	// Tool is the name the server lists.
	Tool string
	// Definition is the tool's definition under the plan's name.
	Definition toolkit.Definition
}

// Call calls the tool.
func (b Binding) Call(ctx context.Context, args map[string]any) (any, error) {
	return b.Server.Call(ctx, b.Tool, args)
}

// Bind names the tools of servers for plans: every tool as SERVER.TOOL, and
// also as TOOL unless another server lists a tool of that name or taken
// reports that the name is used (by a built-in tool, say). Bindings come
// sorted by name.
func Bind(servers []*Server, taken func(name string) bool) []Binding {
	listedBy := map[string]int{}
	for _, s := range servers {
		for _, d := range s.tools {
			listedBy[d.Name]++
		}
	}
	var out []Binding
	for _, s := range servers {
		for _, d := range s.tools {
			q := d
			q.Name = s.name + "." + d.Name
			out = append(out, Binding{Server: s, Tool: d.Name, Definition: q})
			if listedBy[d.Name] == 1 && (taken == nil || !taken(d.Name)) {
				out = append(out, Binding{Server: s, Tool: d.Name, Definition: d})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Definition.Name < out[j].Definition.Name })
	return out
}

// ParseSpec reads a server given on the command line: NAME=COMMAND ARGS…,
// split at spaces; quotes ('…' or "…") keep spaces in an argument. NAME is
// letters, digits and _, starting with a letter.
func ParseSpec(spec string) (name string, argv []string, err error) {
	name, cmdline, ok := strings.Cut(spec, "=")
	if !ok || !validName(name) {
		return "", nil, fmt.Errorf("%q: give a server as NAME=COMMAND [ARGS…], with a NAME of letters, digits and _", spec)
	}
	argv, err = splitCommand(cmdline)
	if err != nil {
		return "", nil, fmt.Errorf("%q: %w", spec, err)
	}
	if len(argv) == 0 {
		return "", nil, fmt.Errorf("%q: no command after %s=", spec, name)
	}
	return name, argv, nil
}

func validName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func splitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
