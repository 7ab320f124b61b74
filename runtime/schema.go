package runtime

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a JSON Schema compiled for validating values, the way
// Registry.Call validates a tool's arguments and result: a simple schema
// (types, properties, required, items) is checked by its shape, and the
// validator, compiled when a value first needs it, gives the verdict on
// everything else. The checker validates a plan's constant arguments with
// it, so that a value the check accepts is one the call accepts.
//
// A Schema is safe for concurrent use.
type Schema struct {
	root *schemaRoot
	// ptr is the JSON pointer of the schema in its root's document, ""
	// for the root; at is where in the instance it applies, for messages.
	ptr string
	at  []string
	// shape checks a simple schema without the validator; nil when the
	// schema is not simple.
	shape *shape

	once     sync.Once
	compiled *jsonschema.Schema
	err      error
}

// schemaRoot is a schema document and the compiler its schemas and
// subschemas share.
type schemaRoot struct {
	url string
	raw json.RawMessage

	mu       sync.Mutex
	compiler *jsonschema.Compiler // guarded by mu
	docOnce  sync.Once
	doc      any // the document decoded, to walk for Property and Items
}

// NewSchema reads a JSON Schema; name names it in errors. A schema that
// is not simple is compiled now, so that an invalid one is an error here;
// a simple one is compiled when a value first needs the validator, since
// compiling takes time quadratic in the number of properties.
func NewSchema(name string, raw json.RawMessage) (*Schema, error) {
	root := &schemaRoot{url: "mem://" + strings.ReplaceAll(name, " ", "_") + ".json", raw: raw}
	s := &Schema{root: root, shape: shapeOf(raw)}
	if s.shape == nil {
		s.once.Do(s.compile)
	}
	return s, s.err
}

func (s *Schema) compile() {
	r := s.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.compiler == nil {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(r.raw)))
		if err != nil {
			s.err = fmt.Errorf("not JSON: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(r.url, doc); err != nil {
			s.err = err
			return
		}
		r.compiler = c
	}
	loc := r.url
	if s.ptr != "" {
		loc += "#" + s.ptr
	}
	s.compiled, s.err = r.compiler.Compile(loc)
}

// Validate reports whether v, a JSON-shaped value (see Normalize), matches
// the schema. The error says where and why, in words, as a failed call
// does: "at /count: maximum: got 20, want 10".
func (s *Schema) Validate(v any) error {
	if s.shape != nil && s.shape.accepts(v) {
		return nil // surely valid: the validator would say so, at a hundred times the cost
	}
	s.once.Do(s.compile)
	if s.err != nil {
		return fmt.Errorf("the schema does not compile: %w", s.err)
	}
	if err := s.compiled.Validate(v); err != nil {
		return &validationError{msg: validationMessage(err, s.at), err: err}
	}
	return nil
}

// validationError is a value that does not match a schema: the message in
// words, and the validator's error.
type validationError struct {
	msg string
	err error
}

func (e *validationError) Error() string { return e.msg }
func (e *validationError) Unwrap() error { return e.err }

// Property returns the schema that the value of property name of an
// object matching s must match, whatever the rest of the object holds: the
// entry of s's "properties", reached through local references ("$ref":
// "#/…"). ok is false when s says nothing of the property that way (it may
// still constrain it otherwise, with allOf or patternProperties; Validate
// on the whole object decides those).
func (s *Schema) Property(name string) (*Schema, bool) {
	node, ptr, ok := s.node()
	if !ok {
		return nil, false
	}
	props, ok := node["properties"].(map[string]any)
	if !ok {
		return nil, false
	}
	sub, ok := props[name]
	if !ok {
		return nil, false
	}
	return s.child(sub, ptr+"/properties/"+escapePointer(name), name), true
}

// Items returns the schema that every element of a list matching s must
// match (its "items", when that is one schema), for the element at index,
// which names the place in messages. ok is false when s gives none that
// way (a tuple of "prefixItems" or of draft-04 "items").
func (s *Schema) Items(index int) (*Schema, bool) {
	node, ptr, ok := s.node()
	if !ok {
		return nil, false
	}
	if _, tuple := node["prefixItems"]; tuple {
		return nil, false
	}
	sub, ok := node["items"]
	if !ok {
		return nil, false
	}
	switch sub.(type) {
	case map[string]any, bool:
	default:
		return nil, false
	}
	return s.child(sub, ptr+"/items", strconv.Itoa(index)), true
}

func (s *Schema) child(node any, ptr, at string) *Schema {
	return &Schema{root: s.root, ptr: ptr, at: append(s.at[:len(s.at):len(s.at)], at), shape: shapeOfValue(node, 0)}
}

// node returns the object s stands for in its document, after following
// local references, and its pointer.
func (s *Schema) node() (map[string]any, string, bool) {
	r := s.root
	r.docOnce.Do(func() {
		if err := json.Unmarshal(r.raw, &r.doc); err != nil {
			r.doc = nil
		}
	})
	ptr := s.ptr
	v, ok := lookupPointer(r.doc, ptr)
	for hops := 0; ok && hops < 32; hops++ {
		m, isObj := v.(map[string]any)
		if !isObj {
			return nil, "", false
		}
		ref, has := m["$ref"].(string)
		if !has {
			return m, ptr, true
		}
		if !strings.HasPrefix(ref, "#") {
			return nil, "", false // a reference to another document
		}
		ptr = ref[1:]
		v, ok = lookupPointer(r.doc, ptr)
	}
	return nil, "", false
}

// lookupPointer follows a JSON pointer ("/properties/a") in a decoded
// document.
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, doc != nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false // an anchor, not a pointer
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
