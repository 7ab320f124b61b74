package llmtest

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The limits of a strict Structured Outputs schema, as OpenAI documents
// them (https://platform.openai.com/docs/guides/structured-outputs,
// "Supported schemas").
const (
	StrictMaxProperties = 5000   // object properties in all
	StrictMaxNesting    = 10     // levels of nested objects
	StrictMaxEnumValues = 1000   // enum values in all
	StrictMaxStringSize = 120000 // characters of property names, definition names, enum and const values
)

// strictKeywords are the keywords strict mode supports.
var strictKeywords = map[string]bool{
	"type": true, "description": true, "title": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true,
	"anyOf": true, "enum": true, "const": true, "$ref": true, "$defs": true,
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
}

// CheckStrictSchema reports how a schema breaks the rules of OpenAI's
// strict Structured Outputs: the root is an object schema, not anyOf;
// every object lists all its properties in required and sets
// additionalProperties to false; only the supported keywords appear; a
// $ref points into $defs (or is "#"); and the documented limits hold.
func CheckStrictSchema(schema map[string]any) error {
	if schema["type"] != "object" {
		return fmt.Errorf("the root schema must be an object (type: object), got type %v", schema["type"])
	}
	if _, ok := schema["anyOf"]; ok {
		return fmt.Errorf("the root schema must not be anyOf")
	}
	c := &strictCheck{root: schema}
	if err := c.check(schema, "#", 0); err != nil {
		return err
	}
	switch {
	case c.properties > StrictMaxProperties:
		return fmt.Errorf("%d object properties, more than %d", c.properties, StrictMaxProperties)
	case c.enums > StrictMaxEnumValues:
		return fmt.Errorf("%d enum values, more than %d", c.enums, StrictMaxEnumValues)
	case c.chars > StrictMaxStringSize:
		return fmt.Errorf("%d characters of names and values, more than %d", c.chars, StrictMaxStringSize)
	}
	return nil
}

type strictCheck struct {
	root                     map[string]any
	properties, enums, chars int
}

func (c *strictCheck) check(s map[string]any, path string, depth int) error {
	for k := range s {
		if !strictKeywords[k] {
			return fmt.Errorf("%s: keyword %q is not supported", path, k)
		}
	}
	if r, ok := s["$ref"]; ok {
		ref, _ := r.(string)
		if ref != "#" && !strings.HasPrefix(ref, "#/$defs/") {
			return fmt.Errorf("%s: $ref %q must be # or point into $defs", path, ref)
		}
		if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
			defs, _ := c.root["$defs"].(map[string]any)
			if _, ok := defs[name]; !ok {
				return fmt.Errorf("%s: $ref %q: no such definition", path, ref)
			}
		}
	}
	if defs, ok := s["$defs"].(map[string]any); ok {
		if path != "#" {
			return fmt.Errorf("%s: $defs only at the root", path)
		}
		for name, d := range defs {
			c.chars += utf8.RuneCountInString(name)
			ds, ok := d.(map[string]any)
			if !ok {
				return fmt.Errorf("%s/$defs/%s: not a schema", path, name)
			}
			if err := c.check(ds, path+"/$defs/"+name, 0); err != nil {
				return err
			}
		}
	}
	if hasType(s, "object") || s["properties"] != nil {
		if depth >= StrictMaxNesting {
			return fmt.Errorf("%s: objects nested more than %d levels", path, StrictMaxNesting)
		}
		if s["additionalProperties"] != false {
			return fmt.Errorf("%s: additionalProperties must be false", path)
		}
		props, _ := s["properties"].(map[string]any)
		var req []string
		for _, r := range asList(s["required"]) {
			name, _ := r.(string)
			req = append(req, name)
		}
		for name, p := range props {
			c.properties++
			c.chars += utf8.RuneCountInString(name)
			if !slices.Contains(req, name) {
				return fmt.Errorf("%s: property %q must be in required: every property is", path, name)
			}
			ps, ok := p.(map[string]any)
			if !ok {
				return fmt.Errorf("%s/properties/%s: not a schema", path, name)
			}
			if err := c.check(ps, path+"/properties/"+name, depth+1); err != nil {
				return err
			}
		}
		for _, r := range req {
			if _, ok := props[r]; !ok {
				return fmt.Errorf("%s: required %q is not a property", path, r)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		if err := c.check(items, path+"/items", depth); err != nil {
			return err
		}
	}
	for i, a := range asList(s["anyOf"]) {
		as, ok := a.(map[string]any)
		if !ok {
			return fmt.Errorf("%s/anyOf/%d: not a schema", path, i)
		}
		if err := c.check(as, fmt.Sprintf("%s/anyOf/%d", path, i), depth); err != nil {
			return err
		}
	}
	for _, e := range asList(s["enum"]) {
		c.enums++
		if str, ok := e.(string); ok {
			c.chars += utf8.RuneCountInString(str)
		}
	}
	if str, ok := s["const"].(string); ok {
		c.chars += utf8.RuneCountInString(str)
	}
	return nil
}

func hasType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
