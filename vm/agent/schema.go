package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// The forms a model may answer in.
const (
	// FormText: .plan text, read by the answer reader. Every server
	// takes it, and eager mode runs each statement as it is written.
	FormText = "text"
	// FormJSON: the JSON form, constrained by a JSON Schema of a valid
	// plan (PlanSchema) where the provider offers constrained output.
	FormJSON = "json"
)

// The patterns of the strings of a plan in the JSON form.
const (
	namePattern = `^[A-Za-z_][A-Za-z0-9_]*$`
	// refPattern is a reference: †root, then fields and indexes.
	refPattern      = `^†[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\["[^"]*"\])*$`
	slotPattern     = `^†state\.[A-Za-z_][A-Za-z0-9_]*( \|\| †state\.[A-Za-z_][A-Za-z0-9_]*)?$`
	durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
)

// schemaName names the plan's schema in requests.
const schemaName = "obelisk_plan"

// PlanSchema returns the JSON Schema of an answer in the JSON form that
// calls the tools the context offers (and the sub-plans it declares):
// {"calls": [...], "output": ...}. Each call is one alternative: its
// _tool a constant, its parameters typed, each argument a value of its
// type, a reference string or {"_expr": "CEL"}, and _id, _outputPath and
// the options by their patterns. A model held to it cannot call an
// unknown tool, leave out a required argument or write malformed JSON;
// the checker still checks the plan.
//
// The schema keeps to what OpenAI's strict Structured Outputs accept:
// every object lists all its properties as required and allows no
// others, so an option or an optional parameter left out is given as
// null (which the reader of the answer drops), and a free-form object is
// written as an expression.
func PlanSchema(c *Context, cfg compiler.Config) (map[string]any, error) {
	tools, err := offeredSignatures(c, cfg)
	if err != nil {
		return nil, err
	}
	b := &schemaBuilder{defs: map[string]any{
		"ref":        map[string]any{"type": "string", "pattern": refPattern, "description": "a reference: †input.NAME, †state.SLOT, or a for each element, with .field and [index]"},
		"outputPath": map[string]any{"type": []any{"string", "null"}, "pattern": slotPattern, "description": "†state.NAME, or †state.NAME || †state.ERRORNAME"},
		"text":       map[string]any{"type": []any{"string", "null"}},
		"count":      map[string]any{"type": []any{"integer", "null"}},
		"duration":   map[string]any{"type": []any{"string", "null"}, "pattern": durationPattern},
		"name":       map[string]any{"type": []any{"string", "null"}, "pattern": namePattern},
		"expr":       object(ordered{{"_expr", map[string]any{"type": "string", "description": "an expression in plan syntax or CEL, such as {name: †state.customer.name} or size(†state.items) > 0"}}}),
		"hole":       object(ordered{{"_hole", map[string]any{"type": "string", "description": "an instruction for the model that fills the argument when the step runs, which may read †state.SLOT"}}}),
		"any": map[string]any{"anyOf": []any{
			map[string]any{"type": "string"}, map[string]any{"type": "number"}, map[string]any{"type": "boolean"}, map[string]any{"type": "null"},
			map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/any"}},
			ref("expr"),
		}},
	}, named: map[string]string{}}
	var calls []any
	for _, t := range tools {
		calls = append(calls, ref(b.call(t)))
	}
	if len(calls) == 0 {
		return nil, errors.New("no tools are offered: a plan could call nothing")
	}
	calls = append(calls, ref(b.task(tools)))
	root := object(ordered{
		{"calls", map[string]any{"type": "array", "items": map[string]any{"anyOf": calls}, "description": "the steps"}},
		{"output", map[string]any{"anyOf": []any{map[string]any{"type": "null"}, ref("ref"), ref("expr")},
			"description": "the goal's result, read from the state once the steps are done; null when it is not known yet"}},
	})
	root["$defs"] = b.defs
	return root, nil
}

// offeredSignatures returns the checked signatures of the offered tools
// and of the context's sub-plans, in the order the context gives them.
func offeredSignatures(c *Context, cfg compiler.Config) ([]*compiler.Tool, error) {
	cfg = offeredConfig(cfg, c)
	f, diags := lang.Parse("context.plan", []byte(c.prelude(nil, nil)))
	if diags.HasErrors() {
		return nil, diags
	}
	info, _ := compiler.Check(f, cfg)
	var out []*compiler.Tool
	for _, d := range cfg.Tools {
		if t := info.Tools[d.Name.Name]; t != nil {
			out = append(out, t)
		}
	}
	for _, d := range c.Decls {
		if p, ok := d.(*lang.PlanDecl); ok {
			if t := info.Tools[p.Name.Name]; t != nil && t.Plan != nil {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

type schemaBuilder struct {
	defs map[string]any
	// named maps a declared type's name to its definition's key.
	named map[string]string
}

// call defines a tool's call and returns the definition's key.
func (b *schemaBuilder) call(t *compiler.Tool) string {
	key := "call_" + defKey(t.Name)
	for b.defs[key] != nil {
		key += "_"
	}
	props := ordered{
		{"_tool", map[string]any{"type": "string", "const": t.Name}},
		{"_id", map[string]any{"type": "string", "pattern": namePattern}},
	}
	for _, p := range t.Params {
		s := b.arg(p.Type, 0)
		if p.Optional || p.HasDefault {
			s = orNull(s)
		}
		props = append(props, member{p.Name, s})
	}
	// The options refer to shared definitions, which the prompt explains,
	// so that each call adds only its name.
	props = append(props,
		member{"_outputPath", ref("outputPath")},
		member{"_when", ref("text")}, member{"_expect", ref("text")}, member{"_criterion", ref("text")}, member{"_approve", ref("text")},
		member{"_retry", ref("count")}, member{"_timeout", ref("duration")},
		member{"_forEach", ref("text")}, member{"_as", ref("name")}, member{"_max", ref("count")},
		member{"_hint", ref("text")},
	)
	// The tool's description is in the prompt's [tools] message already.
	b.defs[key] = object(props)
	return key
}

// task defines a task: a goal and the offered tools and sub-plans it
// chooses among, with the options of a call but for a for each, a
// fallback and a given result. It returns the definition's key.
func (b *schemaBuilder) task(tools []*compiler.Tool) string {
	names := make([]any, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	b.defs["task"] = object(ordered{
		{"_task", map[string]any{"type": "string", "description": "the goal, which may read †state.SLOT"}},
		{"_using", map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": names}}},
		{"_id", map[string]any{"type": "string", "pattern": namePattern}},
		{"_outputPath", ref("outputPath")},
		{"_when", ref("text")}, {"_expect", ref("text")}, {"_criterion", ref("text")}, {"_approve", ref("text")},
		{"_retry", ref("count")}, {"_timeout", ref("duration")}, {"_hint", ref("text")},
	})
	return "task"
}

// arg is the schema of an argument of a type: a value of the type, a
// reference, or, at the top, an expression.
func (b *schemaBuilder) arg(t *compiler.Type, depth int) map[string]any {
	var alts []any
	if v := b.value(t, depth); v != nil {
		alts = append(alts, v)
	}
	if t == nil || t.Kind != compiler.KindString {
		alts = append(alts, ref("ref")) // a string argument may be a reference already
	}
	if depth == 0 && (t == nil || t.Kind != compiler.KindAny) {
		alts = append(alts, ref("expr"))
	}
	if depth == 0 {
		alts = append(alts, ref("hole"))
	}
	if len(alts) == 1 {
		return alts[0].(map[string]any)
	}
	return map[string]any{"anyOf": alts}
}

// value is the schema of a literal value of a type, or nil when strict
// schemas cannot hold one (a free-form object).
func (b *schemaBuilder) value(t *compiler.Type, depth int) map[string]any {
	if t == nil || t.Kind == compiler.KindAny {
		return ref("any")
	}
	if t.Name != "" && t.Name != "state" && t.Name != "input" {
		key, ok := b.named[t.Name]
		if !ok {
			key = "type_" + defKey(t.Name)
			b.named[t.Name] = key
			b.defs[key] = map[string]any{} // for a recursive use
			plain := *t
			plain.Name, plain.Nullable = "", false
			b.defs[key] = b.value(&plain, depth)
			if b.defs[key] == nil {
				b.defs[key] = ref("expr")
			}
		}
		s := ref(key)
		if t.Nullable {
			return orNull(s)
		}
		return s
	}
	var s map[string]any
	switch t.Kind {
	case compiler.KindNull:
		return map[string]any{"type": "null"}
	case compiler.KindBool:
		s = map[string]any{"type": "boolean"}
	case compiler.KindInt:
		s = map[string]any{"type": "integer"}
	case compiler.KindNumber:
		s = map[string]any{"type": "number"}
	case compiler.KindString:
		s = map[string]any{"type": "string"}
	case compiler.KindEnum:
		vals := slices.Clone(t.Values)
		if t.Nullable {
			vals = append(vals, nil)
		}
		e := map[string]any{"enum": vals}
		if !slices.ContainsFunc(t.Values, func(v any) bool { _, ok := v.(string); return !ok }) {
			e["type"] = "string"
			if t.Nullable {
				e["type"] = []any{"string", "null"}
			}
		}
		return e
	case compiler.KindList:
		s = map[string]any{"type": "array", "items": b.arg(t.Elem, depth+1)}
	case compiler.KindObject:
		if t.Open || len(t.Fields) == 0 {
			return nil
		}
		props := make(ordered, 0, len(t.Fields))
		for _, f := range t.Fields {
			fs := b.arg(f.Type, depth+1)
			if f.Optional {
				fs = orNull(fs)
			}
			props = append(props, member{f.Name, fs})
		}
		s = object(props)
	default:
		return ref("any")
	}
	if t.Nullable {
		return orNull(s)
	}
	return s
}

// object is the schema of an object with these properties, every one
// required and no other. The properties keep their order, which is the
// order a model held to the schema writes them in.
func object(props ordered) map[string]any {
	req := make([]any, len(props))
	for i, m := range props {
		req[i] = m.key
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// MarshalJSON writes the object with its keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	writeValue(&b, o)
	return b.Bytes(), nil
}

func ref(key string) map[string]any { return map[string]any{"$ref": "#/$defs/" + key} }

// orNull lets a schema also be null.
func orNull(s map[string]any) map[string]any {
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && m["type"] == "null" {
				return s
			}
		}
		out := map[string]any{"anyOf": append(slices.Clone(alts), map[string]any{"type": "null"})}
		if d, ok := s["description"]; ok {
			out["description"] = d
		}
		return out
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// defKey makes a name a definition key: letters, digits and _.
func defKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// dropNulls rewrites an answer in the JSON form that a schema held to the
// strict rules: the options and optional arguments (and optional fields
// of literal objects) given as null, which means left out, are left out,
// where null is not a value their type takes. Each call goes on a line of
// its own, for diagnostics. An answer that is not such a document is
// returned as it is.
func dropNulls(answer string, tools map[string]*compiler.Tool) string {
	dec := json.NewDecoder(strings.NewReader(answer))
	dec.UseNumber()
	v, err := readOrdered(dec)
	if err != nil || dec.More() {
		return answer
	}
	if _, err := dec.Token(); err != io.EOF {
		return answer
	}
	root, ok := v.(ordered)
	if !ok {
		return answer
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, m := range root {
		if i > 0 {
			b.WriteString(", ")
		}
		writeJSON(&b, m.key)
		b.WriteString(": ")
		calls, isList := m.val.([]any)
		if m.key != "calls" || !isList {
			writeValue(&b, m.val)
			continue
		}
		b.WriteString("[")
		for j, c := range calls {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  ")
			if call, ok := c.(ordered); ok {
				c = dropCallNulls(call, tools)
			}
			writeValue(&b, c)
		}
		if len(calls) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("]")
	}
	b.WriteString("}\n")
	return b.String()
}

// dropCallNulls leaves out a call's null options and null optional
// arguments.
func dropCallNulls(call ordered, tools map[string]*compiler.Tool) ordered {
	var tool *compiler.Tool
	for _, m := range call {
		if s, ok := m.val.(string); ok && m.key == "_tool" {
			tool = tools[s]
		}
	}
	out := make(ordered, 0, len(call))
	for _, m := range call {
		if strings.HasPrefix(m.key, "_") {
			if m.val != nil {
				out = append(out, m)
			}
			continue
		}
		var p *compiler.Param
		if tool != nil {
			for _, tp := range tool.Params {
				if tp.Name == m.key {
					p = tp
				}
			}
		}
		if p == nil {
			out = append(out, m)
			continue
		}
		if m.val == nil && (p.Optional || p.HasDefault) && !takesNull(p.Type) {
			continue
		}
		out = append(out, member{m.key, dropFieldNulls(m.val, p.Type)})
	}
	return out
}

// dropFieldNulls leaves out the null optional fields of a literal value
// of type t.
func dropFieldNulls(v any, t *compiler.Type) any {
	if t == nil {
		return v
	}
	switch x := v.(type) {
	case []any:
		if t.Kind != compiler.KindList {
			return v
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropFieldNulls(e, t.Elem)
		}
		return out
	case ordered:
		if t.Kind != compiler.KindObject {
			return v
		}
		out := make(ordered, 0, len(x))
		for _, m := range x {
			f := t.Field(m.key)
			if f != nil && m.val == nil && f.Optional && !takesNull(f.Type) {
				continue
			}
			if f != nil {
				m.val = dropFieldNulls(m.val, f.Type)
			}
			out = append(out, m)
		}
		return out
	}
	return v
}

// takesNull reports whether null is a value of a type.
func takesNull(t *compiler.Type) bool {
	return t == nil || t.Nullable || t.Kind == compiler.KindAny || t.Kind == compiler.KindNull
}

// ordered is a JSON object with its keys in their order.
type ordered []member

type member struct {
	key string
	val any
}

// readOrdered reads a JSON value, objects as ordered.
func readOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '{':
			var o ordered
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("a key is not a string")
				}
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{key, v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", d)
	}
	return tok, nil
}

func writeValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case ordered:
		b.WriteString("{")
		for i, m := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, m.key)
			b.WriteString(": ")
			writeValue(b, m.val)
		}
		b.WriteString("}")
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteString("]")
	default:
		writeJSON(b, v)
	}
}

// writeJSON writes a scalar as JSON, without escaping <, > and &.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// toolsByName indexes tools by their names.
func toolsByName(tools []*compiler.Tool) map[string]*compiler.Tool {
	out := make(map[string]*compiler.Tool, len(tools))
	for _, t := range tools {
		out[t.Name] = t
	}
	return out
}
