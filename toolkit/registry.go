// Package toolkit holds the tools a plan calls: a registry of tool
// definitions (name, description, JSON Schemas for input and output,
// effects) and the functions that implement them. Arguments are validated
// against a tool's input schema before it is called, and its result
// against its output schema after.
package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obelisk-plan/obelisk/internal/jsonschema"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tool is the implementation of a tool.
type Tool interface {
	// Call runs the tool with JSON-shaped arguments (nil, bool, int64,
	// float64, string, []any, map[string]any) and returns a JSON-shaped
	// result. It must return when ctx is done.
	Call(ctx context.Context, args map[string]any) (any, error)
}

// ToolFunc adapts a function to Tool.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, args map[string]any) (any, error) { return f(ctx, args) }

// Definition describes a tool in the shape of an MCP tool definition.
type Definition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
}

// Annotations are the MCP tool annotations Obelisk reads, and its own
// hints.
type Annotations struct {
	ReadOnly    bool   `json:"readOnlyHint,omitempty"`
	Idempotent  bool   `json:"idempotentHint,omitempty"`
	Destructive *bool  `json:"destructiveHint,omitempty"`
	Model       bool   `json:"model,omitempty"`
	Latency     string `json:"latency,omitempty"`
	Tokens      int    `json:"tokens,omitempty"`
}

// Registry holds tools by name. It is safe for concurrent use.
type Registry struct {
	mu    sync.Mutex
	tools map[string]*entry // guarded by mu
	// read is a copy of tools that calls read without a lock, which every
	// call of every step would share; nil after a tool is registered,
	// until the next call makes it again.
	read atomic.Pointer[map[string]*entry]
}

type entry struct {
	def  Definition
	impl Tool
	// input and output validate arguments and results.
	input, output *Schema
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*entry{}} }

// lookup returns the tool of a name.
func (r *Registry) lookup(name string) (*entry, bool) {
	m := r.read.Load()
	if m == nil {
		r.mu.Lock()
		if m = r.read.Load(); m == nil {
			c := maps.Clone(r.tools)
			m = &c
			r.read.Store(m)
		}
		r.mu.Unlock()
	}
	e, ok := (*m)[name]
	return e, ok
}

// Register adds a tool. Its schemas must be valid JSON Schemas; the input
// schema must describe an object (the arguments).
func (r *Registry) Register(def Definition, impl Tool) error {
	if def.Name == "" {
		return errors.New("registering a tool: the definition has no name")
	}
	if impl == nil {
		return fmt.Errorf("registering tool %s: no implementation", def.Name)
	}
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type": "object"}`)
	}
	e := &entry{def: def, impl: impl}
	var err error
	if e.input, err = NewSchema(def.Name+"/input", def.InputSchema); err != nil {
		return fmt.Errorf("registering tool %s: input schema: %w", def.Name, err)
	}
	if len(def.OutputSchema) > 0 {
		if e.output, err = NewSchema(def.Name+"/output", def.OutputSchema); err != nil {
			return fmt.Errorf("registering tool %s: output schema: %w", def.Name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[def.Name]; dup {
		return fmt.Errorf("registering tool %s: a tool of that name is already registered", def.Name)
	}
	r.tools[def.Name] = e
	r.read.Store(nil)
	return nil
}

// MustRegister is Register for tools defined in code, whose schemas are
// known to be valid; it panics on error.
func (r *Registry) MustRegister(def Definition, impl Tool) {
	if err := r.Register(def, impl); err != nil {
		panic(err)
	}
}

// Definitions returns the definitions of every tool, sorted by name.
func (r *Registry) Definitions() []Definition {
	r.mu.Lock()
	out := make([]Definition, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e.def)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Has reports whether a tool is registered.
func (r *Registry) Has(name string) bool {
	_, ok := r.lookup(name)
	return ok
}

// ToolsJSON returns the registry as an MCP tools/list result, the form the
// checker reads tool signatures from (see the function ToolsJSON).
func (r *Registry) ToolsJSON() []byte {
	return ToolsJSON(r.Definitions())
}

// ToolsJSON returns definitions as a tools file, an MCP tools/list result
// ({"tools": […]}): the form the checker reads tool signatures from
// (lang.ParseTools) and a plan's source records them in.
func ToolsJSON(defs []Definition) []byte {
	if defs == nil {
		defs = []Definition{}
	}
	b, _ := json.Marshal(map[string]any{"tools": defs})
	return b
}

// Call validates args against the tool's input schema, calls it, converts
// its result to JSON shape and validates it against the output schema.
func (r *Registry) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	e, ok := r.lookup(name)
	if !ok {
		return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no tool named %s is registered", name)}
	}
	if err := e.input.Validate(map[string]any(args)); err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("arguments of %s: %v", name, err)}
	}
	out, err := e.impl.Call(ctx, args)
	if err != nil {
		return nil, err
	}
	out, err = Normalize(out)
	if err != nil {
		return nil, &Error{Code: CodeInvalidOutput, Message: fmt.Sprintf("result of %s: %v", name, err)}
	}
	if e.output != nil {
		if err := e.output.Validate(out); err != nil {
			return nil, &Error{Code: CodeInvalidOutput, Message: fmt.Sprintf("result of %s does not match its output schema: %v", name, err)}
		}
	}
	return out, nil
}

// validationMessage shortens a schema validation error to its causes;
// at is where in the instance the schema applies ("count" for the schema
// of an argument).
func validationMessage(err error, at []string) string {
	english := message.NewPrinter(language.English)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(append(at[:len(at):len(at)], e.InstanceLocation...), "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(english)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(parts, "; ")
}

// The error codes of a failed call, as they appear in the error value a
// step writes to its `||` slot.
const (
	CodeToolError        = "tool-error"
	CodeUnknownTool      = "unknown-tool"
	CodeInvalidArguments = "invalid-arguments"
	CodeInvalidOutput    = "invalid-output"
	CodeTimeout          = "timeout"
	CodeCanceled         = "canceled"
	CodePanic            = "panic"
	CodeRejected         = "rejected"
	CodeExpectFailed     = "expect-failed"
	// CodePermissionDenied: the operator has not granted what the call
	// needs (a host, an environment variable); the message says which
	// flag would.
	CodePermissionDenied = "permission-denied"
	// CodeLimitExceeded: a call or a run stopped by a limit the operator
	// set, of time, cost or size.
	CodeLimitExceeded = "limit-exceeded"
)

// Error is a tool failure with a code. A tool may return one to give its
// failure a code of its own ("card_declined"); any other error has the
// code tool-error.
type Error struct {
	Code    string
	Message string
	// NotRetryable tells the interpreter that retrying cannot help (a
	// declined card will stay declined).
	NotRetryable bool
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// CopyJSON copies the lists and objects of a value in JSON shape, so that
// whoever holds the copy cannot change the original.
func CopyJSON(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = CopyJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = CopyJSON(e)
		}
		return out
	}
	return v
}

// Normalize converts a tool's result to JSON shape: nil, bool, int64,
// float64, string, []any and map[string]any. Values already in that shape
// are returned as they are; others go through encoding/json.
func Normalize(v any) (any, error) {
	if jsonShaped(v, 0) {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the value cannot be encoded as JSON: %w", err)
	}
	return DecodeJSON(b)
}

func jsonShaped(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch v := v.(type) {
	case nil, bool, int64, float64, string:
		return true
	case []any:
		for _, e := range v {
			if !jsonShaped(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !jsonShaped(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// DecodeJSON decodes JSON text into JSON-shaped values, with integers as
// int64 and other numbers as float64. A number beyond the range of a
// float64 (1e999) is an error, not an infinity, which JSON cannot carry.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return fromNumbers(v)
}

// fromNumbers replaces the json.Numbers in v by int64s and float64s.
func fromNumbers(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range: the largest is about 1.8e308", excerptNumber(string(v)))
		}
		return f, nil
	case []any:
		for i, e := range v {
			if v[i], err = fromNumbers(e); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range v {
			if v[k], err = fromNumbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// excerptNumber shortens a number's text for a message.
func excerptNumber(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// ParseLatency reads a latency hint ("300ms"); "" is zero.
func ParseLatency(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}
