package jsonschema

import (
	"strings"
	"sync"
	"testing"
)

// TestMetaschemasLoadOnFirstCompile holds the one change made to this
// copy: nothing is compiled before a schema is, and a schema is still
// validated against its draft's metaschema once they are.
func TestMetaschemasLoadOnFirstCompile(t *testing.T) {
	if Draft2020.sch != nil || Draft4.sch != nil {
		t.Fatal("the metaschemas were compiled before any schema was")
	}
	compile := func(src string) (*Schema, error) {
		doc, err := UnmarshalJSON(strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		c := NewCompiler()
		if err := c.AddResource("mem://s.json", doc); err != nil {
			t.Fatal(err)
		}
		return c.Compile("mem://s.json")
	}
	// Schemas compiled at once from several goroutines wait for one
	// loading of the metaschemas.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			s, err := compile(`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}`)
			if err == nil {
				err = s.Validate(map[string]any{"n": 2})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if d.sch == nil {
			t.Errorf("draft %d: no metaschema after a schema was compiled", d.version)
		}
	}
	// The metaschema still refuses a schema that breaks it.
	if _, err := compile(`{"type": "object", "maximum": "three"}`); err == nil {
		t.Error("a schema whose maximum is a string compiled")
	}
	if _, err := compile(`{"$schema": "http://json-schema.org/draft-04/schema#", "type": 5}`); err == nil {
		t.Error("a draft-04 schema whose type is a number compiled")
	}
	// And a value that breaks the schema is refused.
	s, err := compile(`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"n": 5}); err == nil {
		t.Error("5 passed a maximum of 3")
	}
}
