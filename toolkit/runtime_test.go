package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type greetIn struct {
	Name  string   `json:"name" desc:"who to greet"`
	Times int      `json:"times,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

type greetOut struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func TestFuncSchemasAndValidation(t *testing.T) {
	def, impl := Func("greet", "Greets.", Annotations{ReadOnly: true}, func(ctx context.Context, in greetIn) (greetOut, error) {
		if in.Name == "boom" {
			return greetOut{}, errors.New("boom")
		}
		return greetOut{Text: "hello " + in.Name, Count: max(in.Times, 1)}, nil
	})
	var schema map[string]any
	json.Unmarshal(def.InputSchema, &schema)
	want := map[string]any{
		"type":     "object",
		"required": []any{"name"},
		"properties": map[string]any{
			"name":  map[string]any{"type": "string", "description": "who to greet"},
			"times": map[string]any{"type": "integer"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	}
	if diff := cmp.Diff(want, schema); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}
	reg := NewRegistry()
	if err := reg.Register(def, impl); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(def, impl); err == nil {
		t.Error("registered the same name twice")
	}
	v, err := reg.Call(context.Background(), "greet", map[string]any{"name": "Ada", "times": int64(2)})
	if err != nil || !cmp.Equal(v, map[string]any{"text": "hello Ada", "count": int64(2)}) {
		t.Errorf("call: %v %v", v, err)
	}
	_, err = reg.Call(context.Background(), "greet", map[string]any{"times": "two"})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeInvalidArguments || !strings.Contains(re.Message, "/times") {
		t.Errorf("invalid arguments: %v", err)
	}
	if _, err := reg.Call(context.Background(), "greet", map[string]any{"name": "boom"}); err == nil || err.Error() != "boom" {
		t.Errorf("tool error: %v", err)
	}
	if _, err := reg.Call(context.Background(), "nope", nil); !errors.As(err, &re) || re.Code != CodeUnknownTool {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestOutputValidated(t *testing.T) {
	reg := NewRegistry()
	reg.MustRegister(Definition{Name: "bad", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object","required":["id"]}`)},
		ToolFunc(func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"other": 1}, nil }))
	_, err := reg.Call(context.Background(), "bad", map[string]any{})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeInvalidOutput {
		t.Errorf("want invalid-output, got %v", err)
	}
	if err := reg.Register(Definition{Name: "broken", InputSchema: json.RawMessage(`{"type": 5}`)}, ToolFunc(nil)); err == nil {
		t.Error("accepted an invalid schema")
	}
}

func TestNormalize(t *testing.T) {
	type point struct {
		X int     `json:"x"`
		Y float64 `json:"y"`
	}
	v, err := Normalize([]point{{1, 2.5}})
	if err != nil || !cmp.Equal(v, []any{map[string]any{"x": int64(1), "y": 2.5}}) {
		t.Errorf("%v %v", v, err)
	}
	if _, err := Normalize(make(chan int)); err == nil {
		t.Error("normalized a channel")
	}
}

func TestMocks(t *testing.T) {
	m, err := ParseMocks([]byte(`{
		"pay": {"error": {"code": "card_declined", "message": "Declined."}},
		"forecast": {"latency": "5ms", "cases": [{"args": {"city": "Paris"}, "result": {"temp": 18}}], "result": {"temp": 20.5}},
		"page": {"results": ["first", "second"]},
		"book": {"sequence": [{"error": {"code": "busy", "message": "Try again"}}, {"result": {"id": "b1"}}]},
		"final": {"error": {"code": "gone", "message": "Gone", "retryable": false}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = m.Call(ctx, "pay", nil)
	var re *Error
	if !errors.As(err, &re) || re.Code != "card_declined" || re.NotRetryable {
		t.Errorf("pay: %v (retryable unless the mock says otherwise)", err)
	}
	if _, err := m.Call(ctx, "final", nil); !errors.As(err, &re) || !re.NotRetryable {
		t.Errorf("final: %v", err)
	}
	_, err1 := m.Call(ctx, "book", nil)
	v2, err2 := m.Call(ctx, "book", nil)
	if !errors.As(err1, &re) || re.Code != "busy" || err2 != nil || !cmp.Equal(v2, map[string]any{"id": "b1"}) {
		t.Errorf("sequence: %v, then %v %v", err1, v2, err2)
	}
	v, _ := m.Call(ctx, "forecast", map[string]any{"city": "Paris"})
	w, _ := m.Call(ctx, "forecast", map[string]any{"city": "Oslo"})
	if !cmp.Equal(v, map[string]any{"temp": int64(18)}) || !cmp.Equal(w, map[string]any{"temp": 20.5}) {
		t.Errorf("cases: %v %v", v, w)
	}
	var got []any
	for range 3 {
		v, _ := m.Call(ctx, "page", nil)
		got = append(got, v)
	}
	if !cmp.Equal(got, []any{"first", "second", "second"}) {
		t.Errorf("results in turn: %v", got)
	}
	if _, err := ParseMocks([]byte(`{"x": {"reslt": 1}}`)); err == nil || !strings.Contains(err.Error(), "mock of x") {
		t.Errorf("misspelled key: %v", err)
	}
	chain := Chain{Mocks: m}
	if _, err := chain.Call(ctx, "unknown", nil); !errors.As(err, &re) || re.Code != CodeUnknownTool {
		t.Errorf("chain unknown: %v", err)
	}
}

// BenchmarkRegistryCall is what the registry adds to each call of a
// no-op tool: the look-up, the checks of the arguments and the result
// against simple schemas, from two goroutines at once.
func BenchmarkRegistryCall(b *testing.B) {
	reg := NewRegistry()
	reg.MustRegister(Definition{
		Name:         "work",
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"in0": {}, "in1": {}, "in2": {}, "ms": {"type": "integer"}}}`),
		OutputSchema: json.RawMessage(`{"type": "integer"}`),
	}, ToolFunc(func(context.Context, map[string]any) (any, error) { return int64(1), nil }))
	args := map[string]any{"in0": int64(1), "in1": int64(2), "ms": int64(0)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := reg.Call(context.Background(), "work", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
