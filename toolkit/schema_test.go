package toolkit

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

const linksSchema = `{
  "type": "object",
  "properties": {
    "count": {"type": "number", "minimum": 1, "maximum": 10},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "minItems": 1},
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    "opts": {"$ref": "#/$defs/Opts"},
    "a/b~c": {"type": "string", "maxLength": 2},
    "plain": {"type": "string"}
  },
  "$defs": {"Opts": {"type": "object", "properties": {"depth": {"type": "integer", "maximum": 3}}}}
}`

// TestSchemaParts: the schema of a property, of a list's elements and of
// a property behind a local reference validate as the whole schema does,
// with messages that say where the value is in the whole.
func TestSchemaParts(t *testing.T) {
	s, err := NewSchema("links", json.RawMessage(linksSchema))
	if err != nil {
		t.Fatal(err)
	}
	count, ok := s.Property("count")
	if !ok {
		t.Fatal("no schema for count")
	}
	if err := count.Validate(int64(20)); err == nil || err.Error() != "at /count: maximum: got 20, want 10" {
		t.Errorf("count 20: %v", err)
	}
	if err := count.Validate(int64(5)); err != nil {
		t.Errorf("count 5: %v", err)
	}
	tags, _ := s.Property("tags")
	if err := tags.Validate([]any{}); err == nil || err.Error() != "at /tags: minItems: got 0, want 1" {
		t.Errorf("tags []: %v", err)
	}
	elem, ok := tags.Items(2)
	if !ok {
		t.Fatal("no schema for the elements of tags")
	}
	if err := elem.Validate("ABC"); err == nil || !strings.HasPrefix(err.Error(), "at /tags/2: ") || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("tags[2] ABC: %v", err)
	}
	pair, _ := s.Property("pair")
	if _, ok := pair.Items(0); ok {
		t.Error("a tuple's elements have no one schema")
	}
	opts, _ := s.Property("opts")
	depth, ok := opts.Property("depth")
	if !ok {
		t.Fatal("no schema for opts.depth behind $ref")
	}
	if err := depth.Validate(int64(4)); err == nil || err.Error() != "at /opts/depth: maximum: got 4, want 3" {
		t.Errorf("opts.depth 4: %v", err)
	}
	odd, ok := s.Property("a/b~c")
	if !ok {
		t.Fatal("no schema for a property whose name needs escaping in a pointer")
	}
	if err := odd.Validate("abc"); err == nil || !strings.Contains(err.Error(), "maxLength") {
		t.Errorf("a/b~c: %v", err)
	}
	if _, ok := s.Property("missing"); ok {
		t.Error("a property the schema does not name has a schema")
	}
	plain, _ := s.Property("plain")
	if err := plain.Validate("x"); err != nil || plain.unit.shape == nil {
		t.Errorf("a simple part: %v, shape %v", err, plain.unit.shape)
	}
	if plain.unit.compiled != nil {
		t.Error("a value the shape accepts compiled the validator")
	}
	// The whole agrees with its parts, as a call's arguments are
	// validated.
	err = s.Validate(map[string]any{"count": int64(20)})
	if err == nil || err.Error() != "at /count: maximum: got 20, want 10" {
		t.Errorf("the whole: %v", err)
	}
}

// TestSchemaConcurrent: a schema and its parts may be used from several
// goroutines at once (the checker checks sub-plans, the runtime calls
// tools in parallel).
func TestSchemaConcurrent(t *testing.T) {
	s, err := NewSchema("links", json.RawMessage(linksSchema))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			count, _ := s.Property("count")
			if err := count.Validate(int64(20 + i)); err == nil {
				t.Error("count over its maximum accepted")
			}
			opts, _ := s.Property("opts")
			depth, _ := opts.Property("depth")
			if err := depth.Validate(int64(1)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// TestSchemaInvalid: a schema that is not simple and does not compile is
// refused by NewSchema; a simple one is compiled only when needed.
func TestSchemaInvalid(t *testing.T) {
	if _, err := NewSchema("bad", json.RawMessage(`{"type": "object", "properties": {"n": {"maximum": "ten"}}}`)); err == nil {
		t.Error("an invalid schema was accepted")
	}
	s, err := NewSchema("simple", json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}}`))
	if err != nil || s.unit.compiled != nil {
		t.Fatalf("simple: %v, compiled %v", err, s.unit.compiled != nil)
	}
	if err := s.Validate(map[string]any{"n": "one"}); err == nil || err.Error() != "at /n: got string, want integer" {
		t.Errorf("n one: %v", err)
	}
}

// TestSimpleSchemaParts: the parts of a schema simple enough to check by
// its shape (which its parts share with it) accept and refuse as the
// validator does, and say where the value is.
func TestSimpleSchemaParts(t *testing.T) {
	s, err := NewSchema("simple", json.RawMessage(`{"type": "object", "properties": {
  "n": {"type": "integer"},
  "o": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"], "additionalProperties": false},
  "l": {"type": "array", "items": {"type": "boolean"}}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := s.Property("n")
	if err := n.Validate(int64(1)); err != nil {
		t.Errorf("n 1: %v", err)
	}
	if err := n.Validate("one"); err == nil || !strings.HasPrefix(err.Error(), "at /n: ") {
		t.Errorf("n \"one\": %v", err)
	}
	o, _ := s.Property("o")
	if err := o.Validate(map[string]any{"k": "v"}); err != nil {
		t.Errorf("o {k: v}: %v", err)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"k": "v", "x": int64(1)}} {
		if err := o.Validate(bad); err == nil || !strings.HasPrefix(err.Error(), "at /o: ") {
			t.Errorf("o %v: %v", bad, err)
		}
	}
	k, _ := o.Property("k")
	if err := k.Validate(int64(3)); err == nil || !strings.HasPrefix(err.Error(), "at /o/k: ") {
		t.Errorf("o.k 3: %v", err)
	}
	l, _ := s.Property("l")
	e, _ := l.Items(1)
	if err := e.Validate("yes"); err == nil || !strings.HasPrefix(err.Error(), "at /l/1: ") {
		t.Errorf("l[1] \"yes\": %v", err)
	}
	if err := l.Validate([]any{true, false}); err != nil {
		t.Errorf("l [true, false]: %v", err)
	}
}
