package toolkit

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Func makes a tool of a typed Go function. The input schema is derived
// from In, which must be a struct: each exported field is a parameter
// named by its json tag, required unless the tag says omitempty or the
// field is a pointer; a `desc:"…"` tag describes it. The output schema is
// derived from Out. Arguments are decoded into In and the result encoded
// from Out through encoding/json.
func Func[In, Out any](name, description string, ann Annotations, fn func(context.Context, In) (Out, error)) (Definition, Tool) {
	var in In
	var out Out
	inSchema := SchemaOf(reflect.TypeOf(in))
	def := Definition{
		Name:         name,
		Description:  description,
		InputSchema:  mustJSON(inSchema),
		OutputSchema: mustJSON(SchemaOf(reflect.TypeOf(&out).Elem())),
		Annotations:  ann,
	}
	impl := ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, &Error{Code: CodeInvalidArguments, Message: err.Error()}
		}
		var v In
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("arguments of %s: %v", name, err)}
		}
		return fn(ctx, v)
	})
	return def, impl
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// SchemaOf returns the JSON Schema of a Go type, as encoding/json would
// encode its values.
func SchemaOf(t reflect.Type) map[string]any {
	return schemaOf(t, map[reflect.Type]bool{})
}

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{"type": "object"}
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ps := schemaOf(f.Type, seen)
			if d := f.Tag.Get("desc"); d != "" {
				ps["description"] = d
			}
			props[name] = ps
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}
