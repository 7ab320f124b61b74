package toolkit

import "math"

// shape is a JSON Schema simple enough to check a value against without
// the validator: types, object properties, required properties,
// additionalProperties and array items, with annotations (description,
// title, default, examples) ignored. It only ever accepts: a value it
// does not accept is handed to the validator, which gives the verdict and
// the message, so the two never disagree on a value the shape accepts.
type shape struct {
	any        bool   // {} or true: every value
	typ        string // "" when the schema gives no type
	props      map[string]*shape
	propList   []namedShape // props, to look up in an object
	required   []string
	additional *shape // nil: any additional property
	closed     bool   // additionalProperties: false
	items      *shape
}

type namedShape struct {
	name  string
	shape *shape
}

// annotations are the keywords a shape ignores: they do not constrain
// values.
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "$comment": true, "readOnly": true, "writeOnly": true, "deprecated": true}

// shapeOfValue reads a decoded schema as a shape, or returns nil when it
// uses anything else ($ref, enum, formats, bounds, combinators…).
func shapeOfValue(v any, depth int) *shape {
	if depth > 32 {
		return nil
	}
	switch v := v.(type) {
	case bool:
		if v {
			return &shape{any: true}
		}
		return nil
	case map[string]any:
		s := &shape{}
		for k, x := range v {
			switch {
			case annotations[k]:
				if !validAnnotation(k, x) {
					return nil // not a valid schema: the validator says why
				}
			case k == "type":
				t, ok := x.(string)
				if !ok {
					return nil
				}
				switch t {
				case "object", "array", "string", "integer", "number", "boolean", "null":
					s.typ = t
				default:
					return nil
				}
			case k == "properties":
				m, ok := x.(map[string]any)
				if !ok {
					return nil
				}
				s.props = make(map[string]*shape, len(m))
				for name, sub := range m {
					if s.props[name] = shapeOfValue(sub, depth+1); s.props[name] == nil {
						return nil
					}
					s.propList = append(s.propList, namedShape{name, s.props[name]})
				}
			case k == "required":
				list, ok := x.([]any)
				if !ok {
					return nil
				}
				for _, r := range list {
					name, ok := r.(string)
					if !ok {
						return nil
					}
					s.required = append(s.required, name)
				}
			case k == "additionalProperties":
				if b, ok := x.(bool); ok {
					s.closed = !b
					continue
				}
				if s.additional = shapeOfValue(x, depth+1); s.additional == nil {
					return nil
				}
			case k == "items":
				if s.items = shapeOfValue(x, depth+1); s.items == nil {
					return nil
				}
			default:
				return nil
			}
		}
		s.any = s.typ == "" && s.props == nil && s.required == nil && s.additional == nil && !s.closed && s.items == nil
		return s
	}
	return nil
}

// accepts reports whether v, a JSON-shaped value, surely matches the
// shape; false means "ask the validator".
func (s *shape) accepts(v any) bool {
	if s.any {
		return true
	}
	switch s.typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		_, ok := v.(int64)
		return ok
	case "number":
		switch n := v.(type) {
		case int64:
			return true
		case float64:
			return !math.IsNaN(n) && !math.IsInf(n, 0)
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "array":
		list, ok := v.([]any)
		if !ok {
			return false
		}
		if s.items != nil {
			for _, e := range list {
				if !s.items.accepts(e) {
					return false
				}
			}
		}
		return true
	case "object":
		return s.acceptsObject(v)
	case "":
		// No type: the object and array keywords apply to objects and
		// arrays only; leave everything else to the validator.
		if _, isObj := v.(map[string]any); isObj {
			return s.acceptsObject(v)
		}
		return false
	}
	return false
}

func (s *shape) acceptsObject(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, r := range s.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	if s.items != nil {
		return false // items on an object schema: leave it to the validator
	}
	if len(s.propList) <= 2*len(obj)+8 {
		// Few properties: look each up in the object, which is cheaper
		// than going through the object's keys; when the object has no
		// other key, that is all.
		found := 0
		for _, p := range s.propList {
			if x, ok := obj[p.name]; ok {
				if !p.shape.accepts(x) {
					return false
				}
				found++
			}
		}
		if found == len(obj) {
			return true
		}
	}
	for k, x := range obj {
		if p, ok := s.props[k]; ok {
			if !p.accepts(x) {
				return false
			}
			continue
		}
		switch {
		case s.closed:
			return false
		case s.additional != nil && !s.additional.accepts(x):
			return false
		}
	}
	return true
}

// validAnnotation reports whether an annotation's value has the type the
// JSON Schema meta-schema gives it, so that a schema read as a shape is a
// valid schema.
func validAnnotation(k string, x any) bool {
	switch k {
	case "description", "title", "$comment":
		_, ok := x.(string)
		return ok
	case "readOnly", "writeOnly", "deprecated":
		_, ok := x.(bool)
		return ok
	case "examples":
		_, ok := x.([]any)
		return ok
	}
	return true
}
