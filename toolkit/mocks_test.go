package toolkit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestMocksUnknownKey: a misspelt key of a mock is refused with every key
// a mock may have, sequence included; a misspelt key inside a case names
// the keys of a case.
func TestMocksUnknownKey(t *testing.T) {
	for _, c := range []struct{ mocks, want string }{
		{`{"book": {"sequnce": [{"result": 1}]}}`, `mock of book: unknown key "sequnce": a mock has the keys result, results, sequence, cases, error, latency`},
		{`{"book": {"reslt": 1}}`, `mock of book: unknown key "reslt": a mock has the keys result, results, sequence, cases, error, latency`},
		{`{"book": {"cases": [{"arg": {}, "result": 1}]}}`, `mock of book: json: unknown field "arg" (a case or a sequence entry has the keys args, result and error; an error has code, message and retryable)`},
		{`{"book": 3}`, `mock of book: want an object with the keys result, results, sequence, cases, error, latency`},
	} {
		_, err := ParseMocks([]byte(c.mocks))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseMocks(%s):\n got %v\nwant %s", c.mocks, err, c.want)
		}
	}
	if _, err := ParseMocks([]byte(`{"book": {"sequence": [{"error": {"code": "busy", "message": "later"}}, {"result": 1}], "latency": "1ms"}}`)); err != nil {
		t.Errorf("every key spelt right: %v", err)
	}
	// The list is Mock's JSON keys, all of them.
	var keys []string
	typ := reflect.TypeFor[Mock]()
	for i := range typ.NumField() {
		if tag := typ.Field(i).Tag.Get("json"); tag != "" {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	listed := strings.Split(mockKeys, ", ")
	slices.Sort(keys)
	slices.Sort(listed)
	if !slices.Equal(keys, listed) {
		t.Errorf("mockKeys lists %v; Mock has %v", listed, keys)
	}
}

// TestMocksPositions: a sequence goes on from the calls set, each call is
// heard before it is answered, and a call fails when its hearer does.
func TestMocksPositions(t *testing.T) {
	m, err := ParseMocks([]byte(`{"book": {"sequence": [{"result": "a"}, {"result": "b"}, {"result": "c"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	m.SetCalls(map[string]int{"book": 1})
	var heard []int
	m.OnAnswer(func(tool string, calls int) error {
		heard = append(heard, calls)
		if calls > 2 {
			return errors.New("full")
		}
		return nil
	})
	if v, err := m.Call(context.Background(), "book", nil); v != "b" || err != nil {
		t.Errorf("the second answer: %v %v", v, err)
	}
	if _, err := m.Call(context.Background(), "book", nil); err == nil || !strings.Contains(err.Error(), "recording the call of the mock of book: full") {
		t.Errorf("a call whose hearer fails: %v", err)
	}
	if fmt.Sprint(heard) != "[2 3]" || m.Calls()["book"] != 3 {
		t.Errorf("heard %v, calls %v", heard, m.Calls())
	}
}
