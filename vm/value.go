// Package vm runs compiled plans.
//
// A run is dataflow: a step starts as soon as every step it waits for has
// finished and its condition holds, up to a bound on parallelism, so the
// makespan of a plan approaches its critical path. The engine decides what
// runs, evaluates arguments, records outcomes and applies the failure
// policy; Run drives it with goroutines and real tools, Simulate with
// values invented from the tools' output types and virtual time.
package vm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Unknown stands for a value that cannot be known before the run; a
// symbolic dry run carries it through references and expressions.
type Unknown struct{}

// String returns "(known after run)".
func (Unknown) String() string { return "(known after run)" }

// MarshalJSON encodes Unknown as the string "(known after run)".
func (Unknown) MarshalJSON() ([]byte, error) { return []byte(`"(known after run)"`), nil }

// errNotWritten is returned when a reference reads a slot that no step
// wrote.
var errNotWritten = errors.New("not written")

// scope is what references evaluate against.
type scope struct {
	slots   []any
	written []bool
	index   map[string]int
	input   map[string]any
	elem    string
	elemVal any
	// lenient makes a missing value null instead of an error (the plan's
	// output, which reads whatever was written).
	lenient bool
}

// slot returns the position of a step's slot: from pos, the step's
// method that gives it once its plan is compiled, else by name.
func (sc *scope) slot(name string, pos func() (int, bool)) int {
	if i, ok := pos(); ok {
		return i
	}
	return sc.index[name]
}

// lookup evaluates a reference.
func (sc *scope) lookup(r *compiler.RefPath) (any, error) {
	var v any
	path := r.Path
	done := 0 // the elements of r.Path read before path
	switch {
	case r.Root == "state":
		if len(path) == 0 {
			return nil, fmt.Errorf("%s names no slot", r)
		}
		i, ok := r.SlotIndex()
		if !ok {
			i, ok = sc.index[path[0].Field]
		}
		if !ok || !sc.written[i] {
			if sc.lenient {
				return nil, nil
			}
			return nil, fmt.Errorf("†state.%s: %w", path[0].Field, errNotWritten)
		}
		v = sc.slots[i]
		path, done = path[1:], 1
	case r.Root == "input":
		v = sc.input
	case r.Root == sc.elem:
		v = sc.elemVal
	default:
		return nil, fmt.Errorf("unknown reference %s", r)
	}
	for k, e := range path {
		if _, ok := v.(Unknown); ok {
			return v, nil
		}
		switch {
		case e.IsIndex:
			list, ok := v.([]any)
			if !ok {
				if v == nil && sc.lenient {
					return nil, nil
				}
				return nil, fmt.Errorf("%s: %s is not a list", r, prefix(r, done+k))
			}
			if e.Index >= len(list) {
				if sc.lenient {
					return nil, nil
				}
				return nil, fmt.Errorf("%s: index %d is out of range: %s has %d elements", r, e.Index, prefix(r, done+k), len(list))
			}
			v = list[e.Index]
		default:
			obj, ok := v.(map[string]any)
			if !ok {
				if v == nil && sc.lenient {
					return nil, nil
				}
				return nil, fmt.Errorf("%s: %s is not an object", r, prefix(r, done+k))
			}
			fv, present := obj[e.Field]
			if !present && !sc.lenient {
				return nil, fmt.Errorf("%s: %s has no field %s", r, prefix(r, done+k), e.Field)
			}
			v = fv
		}
	}
	return v, nil
}

// prefix formats the first k path elements of a reference.
func prefix(r *compiler.RefPath, k int) string {
	c := *r
	c.Path = r.Path[:k]
	return c.String()
}

// eval evaluates an operand. A CEL expression stops when ctx ends, and
// when it costs more than the engine's cost limit.
func (e *engine) eval(ctx context.Context, op *compiler.Operand, sc *scope) (any, error) {
	switch op.Kind {
	case compiler.OpConst:
		return toolkit.CopyJSON(op.Const), nil
	case compiler.OpRef:
		return sc.lookup(op.Ref)
	case compiler.OpList:
		out := make([]any, len(op.Elems))
		for i, el := range op.Elems {
			v, err := e.eval(ctx, el, sc)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case compiler.OpObject:
		out := make(map[string]any, len(op.Keys))
		for i, k := range op.Keys {
			v, err := e.eval(ctx, op.Vals[i], sc)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case compiler.OpCEL:
		return e.evalCEL(ctx, op, sc)
	}
	return nil, fmt.Errorf("cannot evaluate operand of kind %d", op.Kind)
}

// bounded returns ctx with the deadline of the step's time limit when ctx
// is the bound of a step's evaluation: the limit starts when first
// needed, and holds for all that the step's evaluation runs after.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	b, ok := ctx.(*boundCtx)
	if !ok || b.timeout <= 0 {
		return ctx, func() {}
	}
	if b.deadline.IsZero() {
		b.deadline = time.Now().Add(b.timeout)
	}
	return context.WithDeadline(b.Context, b.deadline)
}

// evalCEL runs a CEL expression. The activation holds only the slots the
// expression reads. Converting its value counts against the cost limit
// too: a value may hold one string or list many times over, and would
// take as many copies.
func (e *engine) evalCEL(ctx context.Context, op *compiler.Operand, sc *scope) (any, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	limit := e.costLimit
	if limit == 0 {
		limit = compiler.DefaultMaxCost
	}
	prg, err := e.prog.CEL(op, limit)
	if err != nil {
		return nil, err
	}
	state := make(map[string]any, len(op.Refs))
	for _, r := range op.Refs {
		switch r.Root {
		case "state":
			name := r.Slot()
			i, ok := r.SlotIndex()
			if !ok {
				i, ok = sc.index[name]
			}
			if ok && sc.written[i] {
				if _, unknown := sc.slots[i].(Unknown); unknown {
					return Unknown{}, nil
				}
				state[name] = sc.slots[i]
			}
		case sc.elem:
			if _, unknown := sc.elemVal.(Unknown); unknown {
				return Unknown{}, nil
			}
		}
	}
	vars := map[string]any{"state": state, "input": sc.input}
	if sc.elem != "" {
		vars[sc.elem] = sc.elemVal
	}
	if ctx == nil {
		ctx = context.Background()
	}
	val, det, err := prg.ContextEval(ctx, vars)
	var stop interpreter.EvalCancelledError
	switch {
	case errors.As(err, &stop) && stop.Cause == interpreter.CostLimitExceeded:
		return nil, &codedError{code: toolkit.CodeLimitExceeded, err: fmt.Errorf("evaluating %s: it costs more than the limit of %d: give it smaller values, or raise the limit (vm.Options.MaxCost) if the plan is trusted", op.Text, limit)}
	case ctx.Err() != nil:
		// Interrupted; the value, if any, may have absorbed the
		// interruption (an error || true).
		return nil, stopped(ctx, "evaluating "+op.Text)
	case err != nil:
		// CEL's messages may quote values whole ("no such key: …").
		return nil, fmt.Errorf("evaluating %s: %s", op.Text, clip(err.Error(), 1000))
	}
	left := limit
	if c := det.ActualCost(); c != nil {
		left -= min(*c, left)
	}
	v, err := fromCEL(val, &left)
	if errors.Is(err, errTooLarge) {
		return nil, &codedError{code: toolkit.CodeLimitExceeded, err: fmt.Errorf("evaluating %s: its value costs more than the limit of %d to take out of CEL: give it smaller values, or raise the limit (vm.Options.MaxCost) if the plan is trusted", op.Text, limit)}
	}
	return v, err
}

// clip shortens a message to at most n bytes, on a rune boundary.
func clip(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}

// codedError is an evaluation that failed in a way that decides the code
// of the step's error: it was stopped by a limit, or by its context.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// errorCode is the code of a step whose expression failed with err: the
// code of a codedError, else fallback.
func errorCode(err error, fallback string) string {
	if ce := (*codedError)(nil); errors.As(err, &ce) {
		return ce.code
	}
	return fallback
}

// stopped is the error of something ended by its context: canceled, by
// the run's time limit (which the message gives) or otherwise, or stopped
// by its own time limit (timeout). A step canceled so is run again when
// its run is resumed.
func stopped(ctx context.Context, what string) error {
	if re := (*toolkit.Error)(nil); errors.As(context.Cause(ctx), &re) && re.Code == toolkit.CodeLimitExceeded {
		return &codedError{code: toolkit.CodeCanceled, err: fmt.Errorf("%s was stopped: %s", what, re.Message)}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &codedError{code: toolkit.CodeTimeout, err: fmt.Errorf("%s took longer than the step's time limit", what)}
	}
	return &codedError{code: toolkit.CodeCanceled, err: fmt.Errorf("%s was canceled", what)}
}

// errTooLarge is a value whose conversion went past its budget.
var errTooLarge = errors.New("the value is too large")

// fromCEL converts a CEL value to JSON shape. Converting counts as
// evaluating does: each value converted takes 1 from budget, and a string
// a tenth of its length more; it fails with errTooLarge once the budget is
// spent. A CEL value may hold one string or list many times over for
// little cost, and its copies (and their text, once the value is sent to
// a tool) would take as much time and memory as if it held them all.
func fromCEL(v ref.Val, budget *uint64) (any, error) {
	n := uint64(1)
	switch v := v.(type) {
	case types.String:
		n += uint64(len(v)) / 10
	case types.Bytes:
		n += uint64(len(v)) / 10
	}
	if *budget < n {
		return nil, errTooLarge
	}
	*budget -= n
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("the value %du is beyond the range of an int (64-bit): convert it with double(x), or keep it below 2^63", uint64(v))
		}
		return int64(v), nil
	case types.Double:
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the value is %v, which JSON cannot hold: test it with math.isFinite, or guard the division", f)
		}
		return float64(v), nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return string(v), nil
	case types.Duration:
		return v.Duration.String(), nil
	case types.Timestamp:
		return v.Time.Format(time.RFC3339Nano), nil
	case *types.Err:
		return nil, v
	}
	if l, ok := v.(traits.Lister); ok {
		n := int(l.Size().(types.Int))
		if uint64(n) > *budget {
			return nil, errTooLarge // each element takes 1 at least
		}
		out := make([]any, n)
		it := l.Iterator()
		for i := 0; i < n && it.HasNext() == types.True; i++ {
			e, err := fromCEL(it.Next(), budget)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		n := int(m.Size().(types.Int))
		if uint64(n) > *budget/2 {
			return nil, errTooLarge // each entry takes 2 at least
		}
		out := make(map[string]any, n)
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			val, err := fromCEL(m.Get(k), budget)
			if err != nil {
				return nil, err
			}
			key, err := fromCEL(k, budget)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(key)] = val
		}
		return out, nil
	}
	switch native := v.Value().(type) {
	case map[string]any, []any, string, int64, float64, bool, nil:
		return native, nil
	}
	if o, ok := v.Value().(Unknown); ok {
		return o, nil
	}
	return nil, fmt.Errorf("expression result of type %s cannot be used as a value", v.Type())
}

// truthy reads a condition's value.
func truthy(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case Unknown:
		return false, errUnknown
	}
	return false, fmt.Errorf("the condition is %s, not a bool", describe(v))
}

var errUnknown = errors.New("unknown before the run")

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v (%s)", v, reflect.TypeOf(v))
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonSize measures v as compact JSON, roughly (strings without their
// escapes), and stops as soon as it passes limit or meets a number JSON
// cannot hold (NaN, an infinity): it returns the size measured so far,
// whether it is over the limit, and whether it met such a number.
func jsonSize(v any, limit int) (n int, over, nonFinite bool) {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case nil:
			n += 4
		case bool:
			n += 5
		case string:
			n += len(v) + 2
		case []any:
			n += 2 + len(v)
			for _, e := range v {
				if n > limit || !walk(e) {
					return false
				}
			}
		case map[string]any:
			n += 2 + len(v)
			for k, e := range v {
				n += len(k) + 3
				if n > limit || !walk(e) {
					return false
				}
			}
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				nonFinite = true
				return false
			}
			n += 8
		default:
			n += 8 // a number, or a value of another type
		}
		return n <= limit
	}
	walk(v)
	return n, n > limit, nonFinite
}
