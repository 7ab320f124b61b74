package compiler

import (
	"math"
	"math/bits"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// The cost of a CEL expression bounds the work of evaluating it, in
// cel-go's units: 1 for each call, variable and element visited, a tenth
// for each byte of a string read or written. Checking estimates it with
// unknown sizes taken as Limits.SizeHint (celCost); running counts it and
// stops the evaluation past a limit (MaxCost).
//
// cel-go counts a call once it has returned, from its arguments and
// result. That is enough for a call whose work is about the size of values
// that are already in memory, but not for one that makes much more than it
// is given: a value may hold the same string or list many times over
// (lists.range(1000).map(i, s) holds s a thousand times, for the cost of a
// thousand iterations), and a call that walks or copies it (format, join,
// ==, flatten) would run out of time or memory before the count caught
// up. Such calls are priced before they run (pricedFunctions): the price
// is computed from the arguments, without walking past what is left of
// the limit, and a call whose price is over it stops the evaluation before
// it starts. Other functions that cel-go counts as one call although they
// read a whole string or list, or that it does not price at all, get
// models of their own (celCostModels).

// DefaultMaxCost is the cost limit of one evaluation of a CEL
// expression when none is given.
const DefaultMaxCost = 1_000_000

const (
	// pricedOverload is the overload under which a priced call reports
	// its price to the cost tracker.
	pricedOverload = "obelisk.priced"
	// tzLookupCost is the cost of reading a time zone from the system's
	// time zone database, which the timestamp functions with a zone
	// argument do on every call (some 20µs, as much as 200 calls).
	tzLookupCost = 200
	// formatNumberBytes bounds the text of a number formatted by format:
	// 20 digits of an int, or of a double of ordinary magnitude.
	formatNumberBytes = 25
	// formatDoubleBytes bounds the text of any double: %.100f of 1e308.
	formatDoubleBytes = 420
)

// celCostModels prices the functions whose work cel-go's cost models miss:
// conversions and map lookups that read a whole string, size() of a string
// (which counts its code points), the timestamp functions that look a
// time zone up, the optional functions that copy a list, and format,
// which cel-go prices by its format string alone. The priced functions
// (pricedFunctions) are counted at run time by their price; their models
// here only estimate.
func celCostModels() []cost.OverloadModel {
	scanArg := func(i int) cost.QuantityExpr {
		return cost.Sum(cost.Const(cost.CallCost), cost.StringScan(cost.Arg(i)))
	}
	scanTarget := cost.Sum(cost.Const(cost.CallCost), cost.StringScan(cost.Target()))
	models := []cost.OverloadModel{
		cost.Overload("size_string", cost.EvalCost(scanArg(0))),
		cost.MemberOverload("string_size", cost.EvalCost(scanTarget)),
		cost.Overload("size_bytes", cost.EvalCost(cost.Const(cost.CallCost))),
		cost.Overload("string_to_bool", cost.EvalCost(scanArg(0))),
		cost.Overload("string_to_double", cost.EvalCost(scanArg(0))),
		cost.Overload("string_to_int64", cost.EvalCost(scanArg(0))),
		cost.Overload("string_to_uint64", cost.EvalCost(scanArg(0))),
		cost.Overload("string_to_duration", cost.EvalCost(scanArg(0))),
		cost.Overload("string_to_timestamp", cost.EvalCost(scanArg(0))),
		// Looking a key up hashes it.
		cost.Overload("index_map", cost.EvalCost(scanArg(1)), cost.ResultSize(cost.ArgElem(0))),
		cost.Overload("optional_map_index_value", cost.EvalCost(scanArg(1))),
		cost.Overload("map_optindex_optional_value", cost.EvalCost(scanArg(1))),
		cost.Overload("optional_map_optindex_optional_value", cost.EvalCost(scanArg(1))),
		cost.Overload("in_map", cost.EvalCost(scanArg(0))),
		// They copy the list.
		cost.Overload("optional_unwrap", cost.EvalCost(cost.AllocList(cost.Length(cost.Arg(0)))), cost.ResultSize(cost.AtMost(cost.Arg(0)))),
		cost.MemberOverload("optional_unwrapOpt", cost.EvalCost(cost.AllocList(cost.Length(cost.Target()))), cost.ResultSize(cost.AtMost(cost.Target()))),
		cost.MemberOverload("string_format", cost.ManualCost(estimateFormat, func(args []ref.Val, _ ref.Val) *uint64 {
			c := priceFormat(args, math.MaxUint64)
			return &c
		})),
	}
	for _, id := range []string{
		"timestamp_to_day_of_month_1_based_with_tz", "timestamp_to_day_of_month_with_tz",
		"timestamp_to_day_of_week_with_tz", "timestamp_to_day_of_year_with_tz",
		"timestamp_to_year_with_tz", "timestamp_to_hours_with_tz",
		"timestamp_to_milliseconds_with_tz", "timestamp_to_minutes_with_tz",
		"timestamp_to_month_with_tz", "timestamp_to_seconds_tz",
	} {
		models = append(models, cost.MemberOverload(id, cost.EvalCost(cost.Sum(cost.Const(tzLookupCost), cost.StringScan(cost.Arg(0))))))
	}
	return models
}

// trackPrice is the run-time cost of a priced call: its price, which the
// call reports as its one argument (see pricedCall).
func trackPrice(args []ref.Val, _ ref.Val) *uint64 {
	c := uint64(cost.CallCost)
	if len(args) == 1 {
		if u, ok := args[0].(types.Uint); ok {
			c = uint64(u)
		}
	}
	return &c
}

// estimateFormat estimates fmt.format(args): it writes the format string
// and the text of every argument, and a list or map argument is written
// whole, each element as long as its estimated size (a string its length,
// a number formatNumberBytes).
func estimateFormat(est cost.Estimator, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	if target == nil || len(args) != 1 {
		return nil
	}
	text := satAdd(cost.EstimateSize(est, *target).Max, formatSize(cost.EstimateSize(est, args[0]), 0))
	size := cost.SizeEstimate{Min: 0, Max: text}
	c := cost.CostEstimate{Min: cost.CallCost, Max: satAdd(cost.CallCost, text/10)}
	return cost.NewCallEstimate(c, &size)
}

// formatSize bounds the text of a value of estimated size sz: a list or
// map writes its elements (and keys) with a separator, anything else is as
// long as its size, or a number's length.
func formatSize(sz cost.SizeEstimate, depth int) uint64 {
	if sz.Elem == nil || depth > 32 {
		return max(sz.Max, formatNumberBytes)
	}
	each := satAdd(formatSize(*sz.Elem, depth+1), 2)
	if sz.Key != nil {
		each = satAdd(each, satAdd(formatSize(*sz.Key, depth+1), 2))
	}
	return satAdd(2, satMul(sz.Max, each))
}

// A priceFunc returns the cost of a call with the given arguments, without
// counting much past budget: a price over budget is only known to be.
type priceFunc func(args []ref.Val, budget uint64) uint64

// pricedFunctions are the functions priced before they run, by name: those
// whose work or result can be much larger than the values they are given
// (see the comment at the top of this file). Their names as operators
// (_==_) and the legacy names of `in` count too.
func pricedFunctions(name string) priceFunc {
	switch name {
	case "format":
		return priceFormat
	case "join":
		return priceJoin
	case "replace":
		return priceReplace
	case "split":
		return priceSplit
	case "flatten":
		return priceFlatten
	case "_==_", "_!=_":
		return priceEquals
	case "@in", "_in_", "in":
		return priceIn
	case "sets.contains", "sets.intersects", "hasAll", "hasAny", "hasOnly":
		return priceSets(1)
	case "sets.equivalent", "hasExactly":
		return priceSets(2)
	case "distinct":
		return priceDistinct
	case "sort":
		return priceSort
	case "@sortByAssociatedKeys":
		return priceSortByKeys
	case "lists.range":
		return priceRange
	case "matches":
		return priceMatches
	}
	return nil
}

// meter measures values for a price: 1 for every value, a tenth of the
// length of a string or bytes more, and a list or map its elements (and
// keys). It stops once the count is over its limit.
type meter struct {
	n, limit uint64
	// text, when set, measures the text format writes instead, in bytes:
	// a value's text, and a list's or map's brackets and separators.
	text bool
}

func (m *meter) over() bool { return m.n > m.limit }

func (m *meter) add(n uint64) { m.n = satAdd(m.n, n) }

func (m *meter) value(v ref.Val) {
	if m.over() {
		return
	}
	if !m.text {
		m.add(1)
	}
	switch v := v.(type) {
	case types.String:
		m.addText(len(v))
	case types.Bytes:
		m.addText(len(v))
	case traits.Mapper:
		m.addSeparator(2)
		it := v.Iterator()
		for !m.over() && it.HasNext() == types.True {
			k := it.Next()
			m.addSeparator(4)
			m.value(k)
			m.value(v.Get(k))
		}
	case traits.Lister:
		m.addSeparator(2)
		it := v.Iterator()
		for !m.over() && it.HasNext() == types.True {
			m.addSeparator(2)
			m.value(it.Next())
		}
	case types.Double:
		if m.text && !ordinary(float64(v)) {
			m.add(formatDoubleBytes)
		} else if m.text {
			m.add(formatNumberBytes)
		}
	default:
		if m.text {
			m.add(formatNumberBytes)
		}
	}
}

// addText counts n bytes of a string: n as text, else a tenth of them.
func (m *meter) addText(n int) {
	if m.text {
		m.add(uint64(n))
	} else {
		m.add(uint64(n) / 10)
	}
}

// addSeparator counts the brackets or separators around an element: n
// bytes as text, else 1 for visiting the element.
func (m *meter) addSeparator(n uint64) {
	if m.text {
		m.add(n)
	} else {
		m.add(1)
	}
}

// ordinary reports whether a double formats in formatNumberBytes.
func ordinary(f float64) bool {
	a := math.Abs(f)
	return a == 0 || a >= 1e-6 && a < 1e20 || math.IsNaN(f) || math.IsInf(f, 0)
}

// units measures a value (see meter), counting up to a little past limit.
func units(v ref.Val, limit uint64) uint64 {
	m := meter{limit: limit}
	m.value(v)
	return m.n
}

// priceFormat prices fmt.format(args) by the text it may write: the
// format string, and each argument formatted, an argument twice as long
// as its bytes (%x writes two digits a byte), a number up to
// formatDoubleBytes (%.100f). Every element written costs 1 more.
func priceFormat(args []ref.Val, budget uint64) uint64 {
	if len(args) != 2 {
		return cost.CallCost
	}
	textBudget := satMul(budget, 10)
	text := meter{text: true, limit: textBudget}
	if s, ok := args[0].(types.String); ok {
		text.add(uint64(len(s)))
	}
	elems := uint64(0)
	if l, ok := args[1].(traits.Lister); ok {
		it := l.Iterator()
		for !text.over() && it.HasNext() == types.True {
			arg := it.Next()
			switch a := arg.(type) {
			case types.String:
				text.add(2 * uint64(len(a)))
			case types.Bytes:
				text.add(2 * uint64(len(a)))
			case types.Int, types.Uint, types.Double:
				text.add(formatDoubleBytes)
			default:
				text.value(arg)
			}
		}
		elems = units(l, budget)
	}
	return satAdd(cost.CallCost, text.n/10, elems)
}

// priceJoin prices list.join(sep): it writes every string and a separator
// between two.
func priceJoin(args []ref.Val, budget uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return cost.CallCost
	}
	sep := 0
	if len(args) == 2 {
		if s, ok := args[1].(types.String); ok {
			sep = len(s)
		}
	}
	n := uint64(cost.CallCost)
	it := l.Iterator()
	for n <= budget && it.HasNext() == types.True {
		n = satAdd(n, 1, uint64(sep)/10)
		if s, ok := it.Next().(types.String); ok {
			n = satAdd(n, uint64(len(s))/10)
		}
	}
	return n
}

// priceReplace prices s.replace(old, new[, n]) by the string it reads and
// the one it writes, which holds new once for each match of old.
func priceReplace(args []ref.Val, _ uint64) uint64 {
	if len(args) < 3 {
		return cost.CallCost
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return cost.CallCost
	}
	matches := uint64(strings.Count(string(s), string(old)))
	if len(args) == 4 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && uint64(n) < matches {
			matches = uint64(n)
		}
	}
	out := satAdd(uint64(len(s)), satMul(matches, uint64(len(repl))))
	return satAdd(cost.CallCost, uint64(len(s))/10, out/10, matches)
}

// priceSplit prices s.split(sep[, n]) by the string it reads and the list
// it makes, one element for each separator found.
func priceSplit(args []ref.Val, _ uint64) uint64 {
	if len(args) < 2 {
		return cost.CallCost
	}
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return cost.CallCost
	}
	parts := uint64(strings.Count(string(s), string(sep))) + 1
	if len(args) == 3 {
		if n, ok := args[2].(types.Int); ok && n >= 0 && uint64(n) < parts {
			parts = uint64(n)
		}
	}
	return satAdd(cost.CallCost+cost.ListCreateBaseCost, uint64(len(s))/10, parts)
}

// priceFlatten prices list.flatten([depth]) by the elements it copies and
// the lists it opens.
func priceFlatten(args []ref.Val, budget uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return cost.CallCost
	}
	depth := int64(1)
	if len(args) == 2 {
		if d, ok := args[1].(types.Int); ok {
			depth = int64(d)
		}
	}
	n := uint64(cost.CallCost + cost.ListCreateBaseCost)
	var walk func(l traits.Lister, depth int64)
	walk = func(l traits.Lister, depth int64) {
		it := l.Iterator()
		for n <= budget && it.HasNext() == types.True {
			n = satAdd(n, 1)
			if inner, ok := it.Next().(traits.Lister); ok && depth > 0 {
				walk(inner, depth-1)
			}
		}
	}
	walk(l, depth)
	return n
}

// priceEquals prices a == b: comparing two lists or maps walks them
// together, up to the smaller; comparing strings reads the shorter.
func priceEquals(args []ref.Val, budget uint64) uint64 {
	if len(args) != 2 {
		return cost.CallCost
	}
	a, b := args[0], args[1]
	if container(a) && container(b) {
		ua := units(a, budget)
		return satAdd(cost.CallCost, units(b, min(ua, budget)))
	}
	sa, sb := textLen(a), textLen(b)
	return satAdd(cost.CallCost, uint64(min(sa, sb))/10)
}

// priceIn prices x in container: a list compares x with each element, a
// map hashes x.
func priceIn(args []ref.Val, budget uint64) uint64 {
	if len(args) != 2 {
		return cost.CallCost
	}
	if _, ok := args[1].(traits.Lister); ok {
		return satAdd(cost.CallCost, units(args[1], budget))
	}
	return satAdd(cost.CallCost, uint64(textLen(args[0]))/10)
}

// priceSets prices the set functions of two lists: each element of one is
// compared with each of the other, and a comparison costs at most the
// smaller of the two elements, so the whole at most the length of one
// list times the size of the other. factor counts the directions compared.
func priceSets(factor uint64) priceFunc {
	return func(args []ref.Val, budget uint64) uint64 {
		if len(args) != 2 {
			return cost.CallCost
		}
		a, okA := args[0].(traits.Lister)
		b, okB := args[1].(traits.Lister)
		if !okA || !okB {
			return cost.CallCost
		}
		la, lb := length(a), length(b)
		per := budget/max(1, factor)/max(1, min(la, lb)) + 1
		pairs := min(satMul(la, units(b, per)), satMul(lb, units(a, per)))
		return satAdd(cost.CallCost, satMul(factor, pairs))
	}
}

// priceDistinct prices list.distinct(): each element is compared with the
// ones kept before it.
func priceDistinct(args []ref.Val, budget uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return cost.CallCost
	}
	n := length(l)
	return satAdd(cost.CallCost+cost.ListCreateBaseCost, satMul(n, units(l, budget/max(1, n)+1)))
}

// priceSort prices list.sort() by its comparisons: n log n of them, each
// reading up to the longest string.
func priceSort(args []ref.Val, budget uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return cost.CallCost
	}
	return sortPrice(l, budget)
}

// priceSortByKeys prices the sort of sortBy, by its keys (see priceSort).
func priceSortByKeys(args []ref.Val, budget uint64) uint64 {
	if len(args) != 2 {
		return cost.CallCost
	}
	keys, ok := args[1].(traits.Lister)
	if !ok {
		return cost.CallCost
	}
	return sortPrice(keys, budget)
}

func sortPrice(l traits.Lister, budget uint64) uint64 {
	n := length(l)
	longest := 0
	it := l.Iterator()
	for i := uint64(0); i <= budget && it.HasNext() == types.True; i++ {
		longest = max(longest, textLen(it.Next()))
	}
	compares := satMul(n, uint64(bits.Len64(n)))
	return satAdd(cost.CallCost+cost.ListCreateBaseCost, n, satMul(compares, 1+uint64(longest)/10))
}

// priceRange prices lists.range(n) by the list it makes.
func priceRange(args []ref.Val, _ uint64) uint64 {
	if n, ok := args[0].(types.Int); ok && n > 0 {
		return satAdd(cost.CallCost+cost.ListCreateBaseCost, uint64(n))
	}
	return cost.CallCost + cost.ListCreateBaseCost
}

// priceMatches prices s.matches(re) as cel-go does, but before it runs:
// matching may take the length of the string times that of the pattern.
func priceMatches(args []ref.Val, _ uint64) uint64 {
	if len(args) != 2 {
		return cost.CallCost
	}
	s, re := uint64(textLen(args[0])), uint64(textLen(args[1]))
	return satAdd(cost.CallCost, satMul(satAdd(s, 1)/10+1, re/4+1))
}

func container(v ref.Val) bool {
	switch v.(type) {
	case traits.Lister, traits.Mapper:
		return true
	}
	return false
}

// textLen is the length in bytes of a string or bytes value, else 0.
func textLen(v ref.Val) int {
	switch v := v.(type) {
	case types.String:
		return len(v)
	case types.Bytes:
		return len(v)
	}
	return 0
}

func length(l traits.Lister) uint64 {
	if n, ok := l.Size().(types.Int); ok && n > 0 {
		return uint64(n)
	}
	return 0
}

func satAdd(a uint64, more ...uint64) uint64 {
	for _, b := range more {
		s, carry := bits.Add64(a, b, 0)
		if carry != 0 {
			return math.MaxUint64
		}
		a = s
	}
	return a
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// celBindings are the implementations of the functions of baseEnv, by
// overload ID and by function name (the name dispatches on the arguments'
// types).
var celBindings = sync.OnceValues(func() (map[string]*functions.Overload, error) {
	env, err := baseEnv()
	if err != nil {
		return nil, err
	}
	out := map[string]*functions.Overload{}
	for name, fn := range env.Functions() {
		if pricedFunctions(name) == nil {
			continue
		}
		bs, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			out[b.Operator] = b
		}
	}
	return out, nil
})

// celProgramOptions are the options of every program compiled from a
// plan: the cost limit, interrupted evaluation, and the priced calls.
func celProgramOptions(limit uint64) ([]cel.ProgramOption, error) {
	bindings, err := celBindings()
	if err != nil {
		return nil, err
	}
	return []cel.ProgramOption{
		cel.CostLimit(limit),
		cel.CostTrackerOptions(cost.OverloadTracker(pricedOverload, trackPrice)),
		cel.InterruptCheckFrequency(100),
		cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
			call, ok := i.(interpreter.InterpretableCall)
			if !ok {
				return i, nil
			}
			price := pricedFunctions(call.Function())
			if price == nil {
				return i, nil
			}
			p := &pricedCall{InterpretableCall: call, args: call.Args(), price: price}
			switch call.Function() {
			case "_==_":
				p.apply = func(a []ref.Val) ref.Val { return types.Equal(a[0], a[1]) }
			case "_!=_":
				p.apply = func(a []ref.Val) ref.Val { return types.Bool(types.Equal(a[0], a[1]) != types.True) }
			default:
				b := bindings[call.OverloadID()]
				if b == nil {
					b = bindings[call.Function()]
				}
				if b == nil {
					return i, nil // not one of baseEnv's functions
				}
				p.apply = apply(b)
			}
			return p, nil
		}),
	}, nil
}

// apply calls an implementation with arguments.
func apply(b *functions.Overload) func([]ref.Val) ref.Val {
	return func(args []ref.Val) ref.Val {
		switch {
		case len(args) == 1 && b.Unary != nil:
			return b.Unary(args[0])
		case len(args) == 2 && b.Binary != nil:
			return b.Binary(args[0], args[1])
		case b.Function != nil:
			return b.Function(args...)
		}
		return types.NewErr("no such overload: %s", b.Operator)
	}
}

// pricedCall is a call priced before it runs: it evaluates its arguments,
// stops the evaluation as cel-go's cost limit does when their price is
// more than what is left of the limit, and otherwise makes the call and
// counts its price.
type pricedCall struct {
	interpreter.InterpretableCall
	args  []interpreter.InterpretableV2
	price priceFunc
	apply func([]ref.Val) ref.Val
}

// OverloadID names the call to the cost tracker, which counts its price.
func (p *pricedCall) OverloadID() string { return pricedOverload }

// Eval implements interpreter.Interpretable.
func (p *pricedCall) Eval(vars interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(vars, p.Exec)
}

// Exec implements interpreter.InterpretableV2.
func (p *pricedCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	vals := make([]ref.Val, len(p.args))
	for i, a := range p.args {
		v := a.Exec(frame)
		if types.IsUnknownOrError(v) {
			return v
		}
		vals[i] = v
	}
	costs := frame.CostTracker()
	var price uint64 = cost.CallCost
	if costs != nil {
		left := uint64(math.MaxUint64)
		if costs.Limit != nil {
			left = cost.SafeSubtract(*costs.Limit, costs.ActualCost())
		}
		if price = p.price(vals, left); price > left {
			panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "operation cancelled: actual cost limit exceeded"})
		}
	}
	res := types.LabelErrNode(p.ID(), p.apply(vals))
	if costs != nil {
		costs.EvalVarArgs(frame, p.ID(), p, []ref.Val{types.Uint(price)}, res)
	}
	return res
}
