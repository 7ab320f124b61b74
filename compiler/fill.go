package compiler

import (
	"fmt"
	"maps"
	"sort"
	"strings"
)

// What a model fills in when a step runs (a hole's value, the arguments
// of the candidate a task chooses) is untrusted, as the plan is: it is
// held to the parameter's type and to the tool's schema of it, the same
// way a call's arguments are, before anything uses it.

// ArgumentSchema returns the JSON Schema of a parameter of the tool: the
// parameter's property of the tool's input schema when it has one (with
// the schema's definitions, for its references), else the schema of the
// parameter's type; nil for a parameter the tool does not have.
func (t *Tool) ArgumentSchema(name string) map[string]any {
	p := t.Param(name)
	if p == nil {
		return nil
	}
	if root := t.parsedSchema(); root != nil {
		if props, ok := root["properties"].(map[string]any); ok {
			if s, ok := props[name].(map[string]any); ok {
				s = maps.Clone(s)
				for _, k := range []string{"$defs", "definitions"} {
					if d, ok := root[k]; ok {
						if _, own := s[k]; !own {
							s[k] = d
						}
					}
				}
				return s
			}
		}
	}
	s := p.Type.Schema()
	if p.Doc != "" {
		s["description"] = p.Doc
	}
	return s
}

// ArgumentsSchema returns the JSON Schema of the tool's arguments: its
// input schema when it has one, else the schema of its parameters.
func (t *Tool) ArgumentsSchema() map[string]any {
	if root := t.parsedSchema(); root != nil {
		return maps.Clone(root)
	}
	props := map[string]any{}
	required := []any{}
	for _, p := range t.Params {
		props[p.Name] = t.ArgumentSchema(p.Name)
		if !p.Optional && !p.HasDefault {
			required = append(required, p.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// CheckArgument holds a value given for a parameter of the tool to the
// parameter's type (see Conform) and to the tool's schema of it (see
// runtime.Schema), as a call's arguments are held. It returns the value
// conformed to the type, or a message that says what does not fit.
func (t *Tool) CheckArgument(name string, v any) (any, string) {
	p := t.Param(name)
	if p == nil {
		return nil, fmt.Sprintf("%s has no parameter %s", t.Name, name)
	}
	cv, msg := Conform(v, p.Type, name)
	if msg != "" {
		return nil, msg
	}
	if s := t.argSchema(); s != nil {
		if sub, ok := s.Property(name); ok {
			if err := sub.Validate(cv); err != nil {
				return nil, fmt.Sprintf("%s does not match the tool's schema: %v", name, err)
			}
		}
	}
	return cv, ""
}

// CheckArguments holds a whole set of arguments for the tool: each is a
// parameter the tool has and fits it (CheckArgument), each required one
// is given, the defaults of the others are added, and the whole fits the
// tool's input schema. It returns the arguments as a call would pass
// them, or a message that says what does not fit.
func (t *Tool) CheckArguments(args map[string]any) (map[string]any, string) {
	out := make(map[string]any, len(t.Params))
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, msg := t.CheckArgument(k, args[k])
		if msg != "" {
			return nil, msg
		}
		out[k] = v
	}
	var missing []string
	for _, p := range t.Required() {
		if _, ok := out[p.Name]; !ok {
			missing = append(missing, p.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("%s needs %s", t.Name, strings.Join(missing, ", "))
	}
	for _, p := range t.Defaults() {
		if _, ok := out[p.Name]; !ok {
			out[p.Name] = p.Default
		}
	}
	if s := t.argSchema(); s != nil {
		if err := s.Validate(out); err != nil {
			return nil, fmt.Sprintf("the arguments of %s do not match its schema: %v", t.Name, err)
		}
	}
	return out, ""
}
