package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mocks answers tool calls from canned responses, so a plan can be run or
// simulated without touching real systems. A mocks file is a JSON object
// from tool name to Mock:
//
//	{
//	  "processPayment": {"error": {"code": "card_declined", "message": "Your card was declined."}},
//	  "forecast": {"latency": "120ms", "cases": [{"args": {"city": "Paris"}, "result": {"temp": 18}}], "result": {"temp": 20}},
//	  "search": {"results": [["a"], ["b"]]},
//	  "book": {"sequence": [{"error": {"code": "busy", "message": "Try again"}}, {"result": {"id": "b1"}}]}
//	}
type Mocks struct {
	mu    sync.Mutex
	tools map[string]*Mock
	calls map[string]int
	// onAnswer, when set, hears of each call before it is answered.
	onAnswer func(tool string, calls int) error
}

// Calls returns how many calls of each tool the mocks have answered: the
// position of a sequence, or of a list of results.
func (m *Mocks) Calls() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

// SetCalls sets how many calls of each tool were answered before, so that
// a sequence or a list of results goes on where it was: in a run resumed
// by another process, for instance.
func (m *Mocks) SetCalls(calls map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range calls {
		m.calls[k] = v
	}
}

// OnAnswer sets f to hear of each call the mocks answer, before its
// answer is given: the tool, and how many of its calls have been answered,
// this one included. When f fails, so does the call. A journal records
// the positions of sequences so. Set it before the mocks answer calls.
func (m *Mocks) OnAnswer(f func(tool string, calls int) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onAnswer = f
}

// Mock is the canned behaviour of one tool: the first case whose args all
// equal the call's arguments answers; else Sequence in turn (each a result
// or an error; the last one repeats); else Results in turn (the last one
// repeats); else Result; else Error.
type Mock struct {
	Result   any        `json:"result"`
	Results  []any      `json:"results,omitempty"`
	Error    *MockError `json:"error,omitempty"`
	Cases    []MockCase `json:"cases,omitempty"`
	Sequence []MockCase `json:"sequence,omitempty"`
	// Latency is how long the call takes: slept for by a run, added to
	// virtual time by a dry run.
	Latency string `json:"latency,omitempty"`

	hasResult bool
	latency   time.Duration
}

// MockCase answers calls whose arguments include Args.
type MockCase struct {
	Args   map[string]any `json:"args"`
	Result any            `json:"result"`
	Error  *MockError     `json:"error,omitempty"`
}

// MockError is a canned failure. It may be retried unless Retryable is
// false.
type MockError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable *bool  `json:"retryable,omitempty"`
}

func (e *MockError) err() error {
	return &Error{Code: e.Code, Message: e.Message, NotRetryable: e.Retryable != nil && !*e.Retryable}
}

// ParseMocks reads a mocks file. A key given twice in an object of it is
// an error (see CheckUniqueKeys).
func ParseMocks(b []byte) (*Mocks, error) {
	if err := CheckUniqueKeys(b); err != nil {
		return nil, fmt.Errorf("reading mocks: %w", err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("reading mocks: %w", err)
	}
	m := &Mocks{tools: map[string]*Mock{}, calls: map[string]int{}}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw[name], &probe); err != nil || probe == nil {
			return nil, fmt.Errorf("mock of %s: want an object with the keys %s", name, mockKeys)
		}
		for key := range probe {
			if !strings.Contains(", "+mockKeys+",", ", "+key+",") {
				return nil, fmt.Errorf("mock of %s: unknown key %q: a mock has the keys %s", name, key, mockKeys)
			}
		}
		var mk Mock
		d := json.NewDecoder(bytes.NewReader(raw[name]))
		d.DisallowUnknownFields()
		d.UseNumber() // a float64 would round an integer beyond 2^53
		if err := d.Decode(&mk); err != nil {
			return nil, fmt.Errorf("mock of %s: %w (a case or a sequence entry has the keys args, result and error; an error has code, message and retryable)", name, err)
		}
		_, mk.hasResult = probe["result"]
		var err error
		if mk.latency, err = ParseLatency(mk.Latency); err != nil {
			return nil, fmt.Errorf("mock of %s: latency: %w", name, err)
		}
		if mk.Result, err = normalizeMock(mk.Result); err != nil {
			return nil, fmt.Errorf("mock of %s: %w", name, err)
		}
		for i := range mk.Results {
			if mk.Results[i], err = normalizeMock(mk.Results[i]); err != nil {
				return nil, fmt.Errorf("mock of %s: %w", name, err)
			}
		}
		for i := range mk.Sequence {
			if mk.Sequence[i].Result, err = normalizeMock(mk.Sequence[i].Result); err != nil {
				return nil, fmt.Errorf("mock of %s: %w", name, err)
			}
		}
		for i := range mk.Cases {
			if mk.Cases[i].Result, err = normalizeMock(mk.Cases[i].Result); err != nil {
				return nil, fmt.Errorf("mock of %s: %w", name, err)
			}
			for k, v := range mk.Cases[i].Args {
				if mk.Cases[i].Args[k], err = normalizeMock(v); err != nil {
					return nil, fmt.Errorf("mock of %s: %w", name, err)
				}
			}
		}
		m.tools[name] = &mk
	}
	return m, nil
}

// mockKeys are the keys of a mock, as an error message lists them.
const mockKeys = "result, results, sequence, cases, error, latency"

// normalizeMock turns the json.Numbers of a decoded mock into int64s and
// float64s, as DecodeJSON does.
func normalizeMock(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return DecodeJSON(b)
}

// Has reports whether a tool has a mock.
func (m *Mocks) Has(name string) bool {
	if m == nil {
		return false
	}
	_, ok := m.tools[name]
	return ok
}

// Latency returns a tool's mocked latency, if it has one.
func (m *Mocks) Latency(name string) (time.Duration, bool) {
	if m == nil {
		return 0, false
	}
	if mk, ok := m.tools[name]; ok && mk.latency > 0 {
		return mk.latency, true
	}
	return 0, false
}

// Answer returns the canned answer to a call without waiting: the result,
// or the error. ok is false when the tool has no mock.
func (m *Mocks) Answer(name string, args map[string]any) (result any, ok bool, err error) {
	if m == nil {
		return nil, false, nil
	}
	mk, found := m.tools[name]
	if !found {
		return nil, false, nil
	}
	m.mu.Lock()
	n := m.calls[name]
	m.calls[name]++
	hear := m.onAnswer
	m.mu.Unlock()
	if hear != nil {
		if err := hear(name, n+1); err != nil {
			return nil, true, fmt.Errorf("recording the call of the mock of %s: %w", name, err)
		}
	}
	for _, c := range mk.Cases {
		if matches(c.Args, args) {
			if c.Error != nil {
				return nil, true, c.Error.err()
			}
			return CopyJSON(c.Result), true, nil
		}
	}
	switch {
	case len(mk.Sequence) > 0:
		c := mk.Sequence[min(n, len(mk.Sequence)-1)]
		if c.Error != nil {
			return nil, true, c.Error.err()
		}
		return CopyJSON(c.Result), true, nil
	case len(mk.Results) > 0:
		return CopyJSON(mk.Results[min(n, len(mk.Results)-1)]), true, nil
	case mk.Error != nil && !mk.hasResult:
		return nil, true, mk.Error.err()
	}
	return CopyJSON(mk.Result), true, nil
}

// Call answers like Answer, after sleeping the mocked latency. It
// implements the interpreter's tool caller.
func (m *Mocks) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	v, ok, err := m.Answer(name, args)
	if !ok {
		return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no mock answers %s", name), NotRetryable: true}
	}
	if d, has := m.Latency(name); has {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return v, err
}

func matches(want, got map[string]any) bool {
	for k, v := range want {
		if !reflect.DeepEqual(v, got[k]) {
			return false
		}
	}
	return true
}

// Chain calls the first caller that has the tool: mocks first, then the
// registry.
type Chain struct {
	Mocks    *Mocks
	Registry *Registry
}

// Call calls the tool from the mocks if they answer it, else from the
// registry.
func (c Chain) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if c.Mocks.Has(name) {
		return c.Mocks.Call(ctx, name, args)
	}
	if c.Registry != nil && c.Registry.Has(name) {
		return c.Registry.Call(ctx, name, args)
	}
	return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no tool named %s is available: register it, or answer it in a mocks file", name), NotRetryable: true}
}
