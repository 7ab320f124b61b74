package toolkit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/internal/jsonschema"
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
	unit *schemaUnit
	// at is where in the instance the schema applies, for messages.
	at []string
}

// schemaUnit is a schema at one place of its document: its shape, its
// validator, and the schemas of its parts, made once each.
type schemaUnit struct {
	root *schemaRoot
	// ptr is the JSON pointer of the schema in its root's document, ""
	// for the root.
	ptr string
	// shape checks a simple schema without the validator; nil when the
	// schema is not simple.
	shape *shape

	once     sync.Once
	compiled *jsonschema.Schema
	err      error

	partsMu sync.Mutex
	props   map[string]*schemaUnit // guarded by partsMu; nil: none
	items   *schemaUnit            // guarded by partsMu
	noItems bool                   // guarded by partsMu: items looked for, and not found
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

// NewSchema reads a JSON Schema; name names it in errors. OpenAPI's
// "nullable": true is taken to accept null, as the checker takes it. A schema that
// is not simple is compiled now, so that an invalid one is an error here;
// a simple one is compiled when a value first needs the validator, since
// compiling takes time quadratic in the number of properties.
func NewSchema(name string, raw json.RawMessage) (*Schema, error) {
	// OpenAPI's nullable: true is read as the checker reads it (T?).
	raw = openAPINullable(raw)
	root := &schemaRoot{url: "mem://" + strings.ReplaceAll(name, " ", "_") + ".json", raw: raw}
	// The document is decoded once, for its shape and for Property and
	// Items to walk.
	root.docOnce.Do(func() {
		if err := json.Unmarshal(raw, &root.doc); err != nil {
			root.doc = nil
		}
	})
	u := &schemaUnit{root: root, shape: shapeOfValue(root.doc, 0)}
	if u.shape == nil {
		u.once.Do(u.compile)
	}
	return &Schema{unit: u}, u.err
}

func (u *schemaUnit) compile() {
	r := u.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.compiler == nil {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(r.raw)))
		if err != nil {
			u.err = fmt.Errorf("not JSON: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(r.url, doc); err != nil {
			u.err = err
			return
		}
		r.compiler = c
	}
	loc := r.url
	if u.ptr != "" {
		loc += "#" + u.ptr
	}
	u.compiled, u.err = r.compiler.Compile(loc)
}

// Validate reports whether v, a JSON-shaped value (see Normalize), matches
// the schema. The error says where and why, in words, as a failed call
// does: "at /count: maximum: got 20, want 10".
func (s *Schema) Validate(v any) error {
	u := s.unit
	if u.shape != nil && u.shape.accepts(v) {
		return nil // surely valid: the validator would say so, at a hundred times the cost
	}
	u.once.Do(u.compile)
	if u.err != nil {
		return fmt.Errorf("the schema does not compile: %w", u.err)
	}
	if err := u.compiled.Validate(v); err != nil {
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
	u := s.unit
	u.partsMu.Lock()
	defer u.partsMu.Unlock()
	if p, ok := u.props[name]; ok {
		return s.child(p, name)
	}
	var part *schemaUnit
	if node, ptr, ok := u.node(); ok {
		if props, ok := node["properties"].(map[string]any); ok {
			if sub, ok := props[name]; ok {
				var sh *shape
				if u.shape != nil {
					// A simple schema holds the shapes of its properties.
					sh = u.shape.props[name]
				}
				if sh == nil {
					sh = shapeOfValue(sub, 0)
				}
				part = &schemaUnit{root: u.root, ptr: ptr + "/properties/" + escapePointer(name), shape: sh}
			}
		}
	}
	if u.props == nil {
		u.props = map[string]*schemaUnit{}
	}
	u.props[name] = part
	return s.child(part, name)
}

// Items returns the schema that every element of a list matching s must
// match (its "items", when that is one schema), for the element at index,
// which names the place in messages. ok is false when s gives none that
// way (a tuple of "prefixItems" or of draft-04 "items").
func (s *Schema) Items(index int) (*Schema, bool) {
	u := s.unit
	u.partsMu.Lock()
	defer u.partsMu.Unlock()
	if u.items == nil && !u.noItems {
		u.noItems = true
		if node, ptr, ok := u.node(); ok {
			_, tuple := node["prefixItems"]
			switch sub := node["items"].(type) {
			case map[string]any, bool:
				if !tuple {
					u.items, u.noItems = u.part(sub, ptr+"/items"), false
				}
			}
		}
	}
	return s.child(u.items, strconv.Itoa(index))
}

func (u *schemaUnit) part(node any, ptr string) *schemaUnit {
	return &schemaUnit{root: u.root, ptr: ptr, shape: shapeOfValue(node, 0)}
}

func (s *Schema) child(u *schemaUnit, at string) (*Schema, bool) {
	if u == nil {
		return nil, false
	}
	return &Schema{unit: u, at: append(s.at[:len(s.at):len(s.at)], at)}, true
}

// node returns the object u stands for in its document, after following
// local references, and its pointer.
func (u *schemaUnit) node() (map[string]any, string, bool) {
	r := u.root
	r.docOnce.Do(func() {
		if err := json.Unmarshal(r.raw, &r.doc); err != nil {
			r.doc = nil
		}
	})
	ptr := u.ptr
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
