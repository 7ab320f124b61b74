package vm_test

// The generator of the soundness test (soundness_test.go): random tool
// signatures, random well-typed plans over them, and random tool results
// that conform to the tools' output types and schemas. Everything is drawn
// from one seed.
//
// Some data can take a form that the value rules of the interpreter do
// not handle yet (an integer in a number slot, for one). Each such form is
// a data flag (dataFlags): the generator draws the same random numbers
// whatever the flags, so a plan generated with a flag off has the same
// steps, tools and expressions as with it on, and differs only in its data.
// The test uses that to tell a known class of failure from a new one.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

// kind is the kind of a generated type.
type kind uint8

const (
	kAny kind = iota
	kNull
	kBool
	kInt
	kNum
	kStr
	kObj // a free-form object
	kList
	kStruct // an object with declared fields
	kEnum
)

// gtype is a generated type: what the plan (or the tool's JSON Schema)
// says, and what the value generator produces.
type gtype struct {
	kind     kind
	nullable bool
	elem     *gtype
	fields   []*gfield
	values   []any // an enum's constants: string, int64, float64 or bool
	// name is the name of a declared type (`type Name …`); the plan
	// writes the type by it.
	name string
	// kw are the JSON Schema keywords of a tool defined by a schema;
	// closed says additionalProperties is false.
	kw     *keywords
	closed bool
	// numeric marks an any whose values are numbers, which expressions
	// may do arithmetic on.
	numeric bool
}

type gfield struct {
	name     string
	t        *gtype
	optional bool
	def      any
	hasDef   bool
}

// keywords are JSON Schema keywords a type cannot say.
type keywords struct {
	min, max           *int64
	minLen, maxLen     int // -1: none
	pattern            int // index in patterns, -1: none
	minItems, maxItems int // -1: none
}

// patterns are the pattern keywords, with a generator of matching strings
// and a string that does not match.
var patterns = []struct {
	re  string
	gen func(r *rand.Rand) string
	bad string
}{
	{`^[a-z]+$`, func(r *rand.Rand) string { return strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(5)) }, "Not lower"},
	{`^[0-9]{3}$`, func(r *rand.Rand) string { return fmt.Sprintf("%03d", r.IntN(1000)) }, "12"},
	{`^\S+$`, func(r *rand.Rand) string { return "x" + strconv.Itoa(r.IntN(100)) }, "has space"},
}

// raw is JSON text written as it is: a value that only JSON can say (a
// 30-digit integer, a lone surrogate).
type raw string

// dataFlags turn on the forms of data that belong to a known class of
// failure (see knownFailure in soundness_test.go).
type dataFlags struct {
	intInNumber   bool // integers in number slots and number enums
	intAsFloat    bool // integral numbers written 3.0 in int slots
	bigInt        bool // integers beyond 2^53 in int slots
	anyInt        bool // integers in any slots that expressions compute with
	bigDigits     bool // 30-digit integers in number and any slots
	loneSurrogate bool // lone UTF-16 surrogates in JSON strings
	literalSchema bool // literal arguments that break a keyword of the parameter's schema
	literalFanout bool // literal for-each lists longer than their max
}

func (f dataFlags) String() string {
	var on []string
	for _, x := range []struct {
		on   bool
		name string
	}{{f.intInNumber, "intInNumber"}, {f.intAsFloat, "intAsFloat"}, {f.bigInt, "bigInt"}, {f.anyInt, "anyInt"}, {f.bigDigits, "bigDigits"},
		{f.loneSurrogate, "loneSurrogate"}, {f.literalSchema, "literalSchema"}, {f.literalFanout, "literalFanout"}} {
		if x.on {
			on = append(on, x.name)
		}
	}
	return strings.Join(on, ",")
}

// gen draws a plan. Its methods consume random numbers in the same way
// whatever the data flags.
type gen struct {
	r     *rand.Rand
	flags dataFlags
	n     int // names
	// named are the declared types, in order.
	named []*gtype
	// optional holds the names of optional fields: reading one that is
	// absent is a data error, not the checker's.
	optional map[string]bool
	// json is set while drawing a plan of the JSON form: no declared
	// types, and no strings that the JSON form reads as references.
	json bool
	// schema is set while drawing a type for a JSON Schema.
	schema bool
}

func newGen(seed uint64, flags dataFlags) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x50e1d)), flags: flags, optional: map[string]bool{}}
}

func (g *gen) name(prefix string) string {
	g.n++
	return prefix + strconv.Itoa(g.n)
}

func (g *gen) chance(pct int) bool { return g.r.IntN(100) < pct }

// ---- types ----

// typ draws a type of at most depth levels of lists and objects.
func (g *gen) typ(depth int) *gtype {
	c := g.r.IntN(100)
	if depth <= 0 {
		c %= 57
	}
	var t *gtype
	switch {
	case c < 14:
		t = &gtype{kind: kInt}
	case c < 28:
		t = &gtype{kind: kNum}
	case c < 42:
		t = &gtype{kind: kStr}
	case c < 49:
		t = &gtype{kind: kBool}
	case c < 56:
		t = g.enum()
	case c < 57:
		t = &gtype{kind: kNull}
	case c < 62:
		t = &gtype{kind: kAny, numeric: g.chance(50)}
	case c < 64:
		t = &gtype{kind: kObj}
	case c < 78:
		t = &gtype{kind: kList, elem: g.typ(depth - 1)}
	default:
		t = &gtype{kind: kStruct}
		nf := 1 + g.r.IntN(4)
		for range nf {
			f := &gfield{name: g.name("f"), t: g.typ(depth - 1), optional: g.chance(30)}
			if g.chance(6) {
				f.name = "f-" + f.name[1:] // a name that is not an identifier
			}
			if f.optional {
				g.optional[f.name] = true
			}
			t.fields = append(t.fields, f)
		}
	}
	if g.schema {
		g.keywords(t)
	}
	if t.kind != kAny && t.kind != kNull && g.chance(12) {
		t.nullable = true
	}
	if !g.schema && !g.json && (t.kind == kStruct || t.kind == kList) && g.chance(15) {
		// A declared type; it is declared without ?, and used with
		// it when t is nullable.
		decl := *t
		decl.nullable = false
		decl.name = g.name("T")
		g.named = append(g.named, &decl)
		c := decl
		c.nullable = t.nullable
		t = &c
	}
	return t
}

func (g *gen) enum() *gtype {
	t := &gtype{kind: kEnum}
	n := 1 + g.r.IntN(3)
	switch c := g.r.IntN(10); {
	case c < 5:
		for i, s := range []string{"red", "green", "blue", "dark grey"}[:n] {
			_ = i
			t.values = append(t.values, s)
		}
	case c < 7:
		for i := range n {
			t.values = append(t.values, int64(i+1))
		}
	case c < 9:
		// Numbers, some integers: the enum is a number.
		t.values = []any{int64(1), 2.5, 4.25}[:max(n, 2)]
	default:
		t.values = []any{int64(1), "x", 2.5}[:max(n, 2)]
	}
	return t
}

// keywords gives a type of a JSON Schema some keywords a type cannot say.
func (g *gen) keywords(t *gtype) {
	if !g.chance(35) {
		return
	}
	kw := &keywords{minLen: -1, maxLen: -1, pattern: -1, minItems: -1, maxItems: -1}
	switch t.kind {
	case kInt, kNum:
		lo, hi := int64(g.r.IntN(5)-2), int64(5+g.r.IntN(20))
		if g.chance(70) {
			kw.min = &lo
		}
		if g.chance(70) {
			kw.max = &hi
		}
	case kStr:
		if g.chance(50) {
			kw.pattern = g.r.IntN(len(patterns))
		} else {
			kw.minLen, kw.maxLen = 1, 8
		}
	case kList:
		kw.minItems, kw.maxItems = g.r.IntN(2), 2+g.r.IntN(3)
	case kStruct:
		t.closed = g.chance(30)
		return
	default:
		return
	}
	t.kw = kw
}

// text writes a type as the plan language does.
func (t *gtype) text() string {
	var s string
	switch {
	case t.name != "":
		s = t.name
	default:
		s = t.bare()
	}
	if t.nullable {
		if t.kind == kEnum && len(t.values) > 1 {
			return s + "?" // the ? applies to the whole enum
		}
		return s + "?"
	}
	return s
}

// bare writes a type without its name and without ?.
func (t *gtype) bare() string {
	switch t.kind {
	case kAny:
		return "any"
	case kNull:
		return "null"
	case kBool:
		return "bool"
	case kInt:
		return "int"
	case kNum:
		return "number"
	case kStr:
		return "string"
	case kObj:
		return "object"
	case kList:
		return "[" + t.elem.text() + "]"
	case kStruct:
		parts := make([]string, len(t.fields))
		for i, f := range t.fields {
			parts[i] = fieldText(f)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case kEnum:
		parts := make([]string, len(t.values))
		for i, v := range t.values {
			parts[i] = lang.FormatExpr(lang.ValueExpr(v))
		}
		return strings.Join(parts, " | ")
	}
	panic("unknown kind")
}

func fieldText(f *gfield) string {
	name := f.name
	if !lang.IsPlainName(name) {
		name = lang.Quote(name)
	}
	if f.optional {
		name += "?"
	}
	s := name + ": " + f.t.text()
	if f.hasDef {
		s += " = " + lang.FormatExpr(lang.ValueExpr(f.def))
	}
	return s
}

// allInts, allNums and allStrings say what CEL type an enum is.
func (t *gtype) allInts() bool {
	for _, v := range t.values {
		if _, ok := v.(int64); !ok {
			return false
		}
	}
	return true
}

func (t *gtype) allNums() bool {
	for _, v := range t.values {
		switch v.(type) {
		case int64, float64:
		default:
			return false
		}
	}
	return true
}

func (t *gtype) allStrings() bool {
	for _, v := range t.values {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// orNull returns t with ?.
func (t *gtype) orNull() *gtype {
	if t.nullable || t.kind == kAny || t.kind == kNull {
		return t
	}
	c := *t
	c.nullable = true
	return &c
}

// nonNull returns t without ?.
func (t *gtype) nonNull() *gtype {
	if !t.nullable {
		return t
	}
	c := *t
	c.nullable = false
	return &c
}

// ---- values ----

// value draws a value of type t. lit is set for a value the plan writes
// as a literal: it holds no raw JSON.
func (g *gen) value(t *gtype, lit bool, depth int) any {
	if t.nullable {
		if g.r.IntN(4) == 0 {
			return nil
		}
	}
	switch t.kind {
	case kAny:
		return g.anyValue(t, lit, depth)
	case kNull:
		return nil
	case kBool:
		return g.r.IntN(2) == 0
	case kInt:
		return g.intValue(t.kw, lit)
	case kNum:
		return g.numValue(t.kw, lit)
	case kStr:
		return g.strValue(t.kw, lit)
	case kEnum:
		v := t.values[g.r.IntN(len(t.values))]
		if _, isInt := v.(int64); isInt && !g.flags.intInNumber && t.allNums() && !t.allInts() {
			for _, w := range t.values {
				if _, ok := w.(float64); ok {
					return w
				}
			}
		}
		return v
	case kObj:
		m := map[string]any{}
		for i := range g.r.IntN(3) {
			m["k"+strconv.Itoa(i)] = g.strValue(nil, lit)
		}
		return m
	case kList:
		lo, hi := 0, 3
		if t.kw != nil && t.kw.minItems >= 0 {
			lo, hi = t.kw.minItems, t.kw.maxItems
		}
		n := lo + g.r.IntN(hi-lo+1)
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(t.elem, lit, depth+1)
		}
		return out
	case kStruct:
		m := map[string]any{}
		for _, f := range t.fields {
			if f.optional && g.r.IntN(3) == 0 {
				continue
			}
			m[f.name] = g.value(f.t, lit, depth+1)
		}
		return m
	}
	panic("unknown kind")
}

func (g *gen) intValue(kw *keywords, lit bool) any {
	c, a := g.r.IntN(14), int64(g.r.IntN(16)-3)
	var v int64
	switch {
	case c < 9:
		v = a
	case c == 9:
		v = 0
	case c >= 10 && c <= 12 && !g.flags.bigInt:
		v = a + 100
	case c == 10:
		v = 1<<53 + 1
	case c == 11 && a%2 == 0:
		v = math.MaxInt64
	case c == 11:
		v = math.MinInt64
	case c == 12:
		v = -(1 << 53) - 1
	default:
		v = a
		if !lit && g.flags.intAsFloat && kw == nil {
			return raw(strconv.FormatInt(v, 10) + ".0") // an integer, to JSON Schema
		}
	}
	if kw != nil {
		v = clampInt(v, kw)
	}
	return v
}

func clampInt(v int64, kw *keywords) int64 {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if kw.min != nil {
		lo = *kw.min
	}
	if kw.max != nil {
		hi = *kw.max
	}
	if v < lo || v > hi {
		if kw.min != nil {
			return lo
		}
		return hi
	}
	return v
}

func (g *gen) numValue(kw *keywords, lit bool) any {
	c, a := g.r.IntN(12), g.r.IntN(400)-200
	var v any
	switch {
	case c < 3:
		// An integer, or an integral double (2.0), which a reader of
		// JSON may take for an integer.
		switch {
		case g.flags.intInNumber && a%2 == 0:
			v = int64(a / 4)
		case g.flags.intInNumber:
			v = float64(a / 4)
		default:
			v = float64(a/4) + 0.5
		}
	case c < 9:
		v = float64(a)/8 + 0.0625 // never integral
	case c == 9:
		v = 1e20
	case c == 10:
		if !lit && g.flags.bigDigits {
			v = raw("123456789012345678901234567890")
		} else {
			v = 1.2345678901234568e+29
		}
	default:
		v = -0.5
	}
	if kw != nil {
		// Into the bounds, keeping the value's kind.
		f := numFloat(v)
		if kw.min != nil && f < float64(*kw.min) || kw.max != nil && f > float64(*kw.max) {
			var b int64
			if kw.min != nil {
				b = *kw.min
			} else {
				b = *kw.max
			}
			if _, isInt := v.(int64); isInt {
				return b
			}
			if kw.max != nil && float64(b)+0.5 > float64(*kw.max) {
				return float64(b) - 0.5
			}
			return float64(b) + 0.5
		}
	}
	return v
}

func numFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case raw:
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	}
	return 0
}

var sampleStrings = []string{
	"", "a", "hello world", "héllo", "日本語", "😀 emoji", `quote " and \ backslash`,
	"line\nbreak", "tab\tx", "%d %s", "{braces}", "a,b,c", "$5.00", "null", "true", "123",
	"ünïcödé ✓", "RTL \u05d0\u05d1", "zero\u200bwidth",
}

func (g *gen) strValue(kw *keywords, lit bool) any {
	c := g.r.IntN(len(sampleStrings) + 1)
	p := g.r.IntN(1000)
	if kw != nil && kw.pattern >= 0 {
		return patterns[kw.pattern].gen(rand.New(rand.NewPCG(uint64(p), 1)))
	}
	var s string
	if c == len(sampleStrings) {
		if !lit && g.flags.loneSurrogate {
			return raw(`"lone \ud800A"`)
		}
		s = "lone A"
	} else {
		s = sampleStrings[c]
	}
	if kw != nil && kw.minLen >= 0 {
		r := []rune(s)
		for len(r) < kw.minLen {
			r = append(r, 'x')
		}
		if len(r) > kw.maxLen {
			r = r[:kw.maxLen]
		}
		s = string(r)
	}
	return s
}

func (g *gen) anyValue(t *gtype, lit bool, depth int) any {
	c, a := g.r.IntN(8), g.r.IntN(100)
	if t.numeric {
		switch {
		case c == 7 && !lit && g.flags.bigDigits:
			return raw("987654321098765432109876543210")
		case g.flags.anyInt:
			return int64(a)
		}
		return float64(a) + 0.5
	}
	switch c {
	case 0:
		return nil
	case 1:
		return a%2 == 0
	case 2:
		return int64(a)
	case 3:
		return float64(a) + 0.25
	case 4:
		return g.strValue(nil, lit)
	case 5:
		if depth > 2 {
			return "deep"
		}
		return []any{int64(a), "x"}
	case 6:
		return map[string]any{"k": "v", "n": int64(a)}
	}
	if !lit && g.flags.bigDigits {
		return raw("-123456789012345678901234567890")
	}
	return -1.2345678901234568e+29
}

// violate returns a literal that breaks a keyword of t, or v when t has
// none or the data flag is off. It draws one number.
func (g *gen) violate(t *gtype, v any) (any, bool) {
	c := g.r.IntN(4)
	if c != 0 || t.kw == nil && !t.closed || !g.flags.literalSchema {
		return v, false
	}
	kw := t.kw
	if kw == nil {
		kw = &keywords{minLen: -1, maxLen: -1, pattern: -1, minItems: -1, maxItems: -1}
	}
	switch t.kind {
	case kInt, kNum:
		if kw.max != nil {
			return *kw.max + 1, true
		}
		if kw.min != nil {
			return *kw.min - 1, true
		}
	case kStr:
		if kw.pattern >= 0 {
			return patterns[kw.pattern].bad, true
		}
		if kw.maxLen >= 0 {
			return strings.Repeat("y", kw.maxLen+1), true
		}
	case kStruct:
		if m, ok := v.(map[string]any); ok && t.closed {
			m["extra"] = true
			return m, true
		}
	case kList:
		if kw.maxItems >= 0 && t.elem.kind == kInt {
			out := make([]any, kw.maxItems+1)
			for i := range out {
				out[i] = int64(i)
			}
			return out, true
		}
	}
	return v, false
}

// ---- JSON ----

// jsonText writes a value as JSON, with object keys sorted.
func jsonText(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		b.WriteString(floatText(v))
	case string:
		q, _ := json.Marshal(v)
		b.Write(q)
	case raw:
		b.WriteString(string(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, k)
			b.WriteString(": ")
			writeJSON(b, v[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("writeJSON: %T", v))
	}
}

// floatText writes a float so that it reads back as a float: 2.0, not 2.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// ---- JSON Schemas ----

// schemaDoc collects the $defs of one schema document.
type schemaDoc struct {
	defs map[string]any
}

// schemaOf writes t as a JSON Schema, in one of the several ways the
// importer reads as t.
func (g *gen) schemaOf(t *gtype, doc *schemaDoc) any {
	var s map[string]any
	switch t.kind {
	case kAny:
		if g.chance(50) {
			s = map[string]any{}
		} else {
			s = map[string]any{"description": "anything"}
		}
	case kNull:
		s = map[string]any{"type": "null"}
	case kBool:
		s = map[string]any{"type": "boolean"}
	case kInt:
		s = map[string]any{"type": "integer"}
	case kNum:
		if g.chance(20) {
			s = map[string]any{"type": []any{"integer", "number"}}
		} else {
			s = map[string]any{"type": "number"}
		}
	case kStr:
		s = map[string]any{"type": "string"}
	case kObj:
		switch g.r.IntN(3) {
		case 0:
			s = map[string]any{"type": "object"}
		case 1:
			s = map[string]any{"type": "object", "additionalProperties": true}
		default:
			s = map[string]any{"type": "object", "properties": map[string]any{}}
		}
	case kList:
		s = map[string]any{"type": "array", "items": g.schemaOf(t.elem, doc)}
	case kStruct:
		props := map[string]any{}
		var req []any
		for _, f := range t.fields {
			props[f.name] = g.schemaOf(f.t, doc)
			if !f.optional {
				req = append(req, f.name)
			}
		}
		s = map[string]any{"type": "object", "properties": props}
		if len(req) > 0 {
			s["required"] = req
		}
		if t.closed {
			s["additionalProperties"] = false
		}
		if c := g.r.IntN(8); c == 0 {
			delete(s, "type") // properties alone make an object
		} else if c == 1 && doc != nil {
			name := g.name("Def")
			doc.defs[name] = s
			s = map[string]any{"$ref": "#/$defs/" + name}
		}
	case kEnum:
		vals := append([]any(nil), t.values...)
		switch c := g.r.IntN(4); {
		case len(vals) == 1:
			s = map[string]any{"const": vals[0]}
		case c == 0 && t.allStrings():
			s = map[string]any{"type": "string", "enum": vals}
		case c == 1:
			alts := make([]any, len(vals))
			for i, v := range vals {
				alts[i] = map[string]any{"const": v}
			}
			s = map[string]any{"anyOf": alts}
		default:
			s = map[string]any{"enum": vals}
		}
	}
	if kw := t.kw; kw != nil {
		if kw.min != nil {
			s["minimum"] = *kw.min
		}
		if kw.max != nil {
			s["maximum"] = *kw.max
		}
		if kw.pattern >= 0 {
			s["pattern"] = patterns[kw.pattern].re
		}
		if kw.minLen >= 0 {
			s["minLength"], s["maxLength"] = kw.minLen, kw.maxLen
		}
		if kw.minItems >= 0 {
			s["minItems"], s["maxItems"] = kw.minItems, kw.maxItems
		}
	}
	if !t.nullable {
		return s
	}
	// The ways of saying "or null".
	c := g.r.IntN(5)
	if ev, ok := s["enum"].([]any); ok && c < 3 {
		// The enum says it: a type beside it does not count.
		s["enum"] = append(ev, nil)
		if typ, ok := s["type"].(string); ok {
			s["type"] = []any{typ, "null"}
		}
		return s
	}
	if typ, ok := s["type"].(string); ok && c < 2 {
		s["type"] = []any{typ, "null"}
		return s
	}
	_, typ := s["type"]
	_, enum := s["enum"]
	if (typ || enum) && s["anyOf"] == nil && s["const"] == nil && c == 4 {
		s["nullable"] = true // OpenAPI's way
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// docSchema writes t as the root of a schema document, with its $defs.
func (g *gen) docSchema(t *gtype) any {
	doc := &schemaDoc{defs: map[string]any{}}
	s := g.schemaOf(t, doc)
	if len(doc.defs) == 0 {
		return s
	}
	m, ok := s.(map[string]any)
	if !ok || m["$ref"] != nil {
		return map[string]any{"allOf": []any{s}, "$defs": doc.defs}
	}
	m["$defs"] = doc.defs
	return m
}

// inputSchema writes parameters as the input schema of a tool.
func (g *gen) inputSchema(params []*gfield) any {
	doc := &schemaDoc{defs: map[string]any{}}
	props := map[string]any{}
	var req []any
	for _, p := range params {
		ps := g.schemaOf(p.t, doc)
		if p.hasDef {
			if m, ok := ps.(map[string]any); ok {
				m["default"] = p.def
			}
		}
		props[p.name] = ps
		if !p.optional {
			req = append(req, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	if len(doc.defs) > 0 {
		s["$defs"] = doc.defs
	}
	return s
}

// ---- expressions ----

// gexpr is an expression of a generated plan: *litE, *refE, *listE, *objE
// or *celE.
type gexpr interface{ isExpr() }

type litE struct{ v any }

// refE is a plain reference, †input.x.y or †state.s[0].
type refE struct{ text string }

type listE struct{ elems []gexpr }

type objE struct {
	keys []string
	vals []gexpr
}

// celE is CEL text. toNum marks an int expression in a number position:
// without the intInNumber flag it is written double(…).
type celE struct {
	text  string
	toNum bool
}

func (*litE) isExpr()  {}
func (*refE) isExpr()  {}
func (*listE) isExpr() {}
func (*objE) isExpr()  {}
func (*celE) isExpr()  {}

// isLiteral reports whether an expression is a constant: a literal, or a
// list or object of them.
func isLiteral(e gexpr) bool {
	switch e := e.(type) {
	case *litE:
		return true
	case *listE:
		for _, x := range e.elems {
			if !isLiteral(x) {
				return false
			}
		}
		return true
	case *objE:
		for _, x := range e.vals {
			if !isLiteral(x) {
				return false
			}
		}
		return true
	}
	return false
}

// path is something an expression can read: a root (the input, a slot,
// the element of a for each, a comprehension variable) and fields and
// indexes into it.
type path struct {
	text string
	t    *gtype
	// risky paths read an optional field or an index, which the data
	// may not have; absent paths read an optional field, which the
	// checker refuses without has(); nullWalk paths go through a value
	// that may be null.
	risky, absent, nullWalk bool
	// ref is set for a path that can be written as a plain reference;
	// quoted for one with a field that is not an identifier, which CEL
	// cannot select.
	ref, quoted bool
}

// scope is what an expression can read.
type scope struct {
	roots []path
	// vars counts the comprehension variables in scope.
	vars  int
	paths []path // expanded from roots, lazily
}

func (sc *scope) with(p path) *scope {
	return &scope{roots: append(append([]path(nil), sc.roots...), p), vars: sc.vars}
}

func (sc *scope) all() []path {
	if sc.paths == nil {
		var walk func(p path, depth int)
		walk = func(p path, depth int) {
			sc.paths = append(sc.paths, p)
			if depth == 0 {
				return
			}
			switch t := p.t; t.kind {
			case kStruct:
				for _, f := range t.fields {
					q := p
					q.t = f.t
					if lang.IsPlainName(f.name) {
						q.text = p.text + "." + f.name
					} else {
						q.text = p.text + "[" + strconv.Quote(f.name) + "]"
					}
					q.quoted = p.quoted || !lang.IsPlainName(f.name)
					q.risky = p.risky || f.optional
					q.absent = p.absent || f.optional
					q.nullWalk = p.nullWalk || t.nullable
					walk(q, depth-1)
				}
			case kList:
				q := p
				q.t, q.text = t.elem, p.text+"[0]"
				q.risky, q.nullWalk = true, p.nullWalk || t.nullable
				walk(q, depth-1)
			}
		}
		for _, r := range sc.roots {
			walk(r, 3)
		}
		if sc.paths == nil {
			sc.paths = []path{}
		}
	}
	return sc.paths
}

// pick returns a random path that fits, preferring paths that cannot
// fail; nil when none does.
func (g *gen) pick(sc *scope, fits func(p *path) bool, cel bool) *path {
	// Paths that read what the data may lack (an optional field, an
	// index) now and then; paths through a value that may be null, which
	// the checker must refuse, seldom.
	var safe, risky, null []*path
	for i := range sc.all() {
		p := &sc.paths[i]
		if cel && p.quoted || !cel && !p.ref || !fits(p) {
			continue
		}
		switch {
		case p.nullWalk || p.t.nullable || p.absent:
			// Both are refused without a check.
			null = append(null, p)
		case p.risky:
			risky = append(risky, p)
		default:
			safe = append(safe, p)
		}
	}
	c := g.r.IntN(100)
	k := g.r.IntN(1 << 20)
	switch {
	case len(null) > 0 && (c < 4 || len(safe)+len(risky) == 0 && c < 30):
		return null[k%len(null)]
	case len(risky) > 0 && (c < 16 || len(safe) == 0):
		return risky[k%len(risky)]
	case len(safe) > 0:
		return safe[k%len(safe)]
	}
	return nil
}

// assignable says whether the generator may pass a value of type src
// where dst is expected. It is narrower than the checker's rule: an any
// goes only where any is expected, and an int where a number is expected
// only as a whole value, which the plan writes double(…) without the
// intInNumber flag; inside a list or an object it would reach the number
// slot as an int whatever the flag.
func assignable(src, dst *gtype) bool { return assignableAt(src, dst, true) }

func assignableAt(src, dst *gtype, top bool) bool {
	if dst.kind == kAny {
		return true
	}
	if src.kind == kAny {
		return false
	}
	if src.nullable && !dst.nullable {
		return false
	}
	if src.kind == kNull {
		return dst.nullable || dst.kind == kNull
	}
	switch dst.kind {
	case kNum:
		if !top {
			return src.kind == kNum || src.kind == kEnum && src.allNums() && !src.allInts()
		}
		return src.kind == kNum || src.kind == kInt || src.kind == kEnum && src.allNums()
	case kInt:
		return src.kind == kInt || src.kind == kEnum && src.allInts()
	case kStr:
		return src.kind == kStr || src.kind == kEnum && src.allStrings()
	case kBool:
		return src.kind == kBool
	case kEnum:
		if src.kind != kEnum {
			return false
		}
		for _, v := range src.values {
			found := false
			for _, w := range dst.values {
				if v == w {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	case kList:
		return src.kind == kList && assignableAt(src.elem, dst.elem, false)
	case kObj:
		return src.kind == kObj || src.kind == kStruct
	case kStruct:
		if src.kind != kStruct {
			return false
		}
		if dst.closed {
			for _, sf := range src.fields {
				found := false
				for _, df := range dst.fields {
					found = found || df.name == sf.name
				}
				if !found {
					return false
				}
			}
		}
		for _, df := range dst.fields {
			var sf *gfield
			for _, f := range src.fields {
				if f.name == df.name {
					sf = f
				}
			}
			switch {
			case sf == nil && !df.optional:
				return false
			case sf == nil:
			case sf.optional && !df.optional:
				return false
			case !assignableAt(sf.t, df.t, false):
				return false
			}
		}
		return true
	case kNull:
		return false
	}
	return false
}

// celKind is the CEL type of a plan type, in brief: "int", "double",
// "string", "bool", "null", "dyn", "map", "list(…)" or "struct:…".
func celKind(t *gtype) string {
	var s string
	switch t.kind {
	case kAny:
		return "dyn"
	case kNull:
		return "null"
	case kBool:
		s = "bool"
	case kInt:
		s = "int"
	case kNum:
		s = "double"
	case kStr:
		s = "string"
	case kObj:
		s = "map"
	case kList:
		s = "list(" + celKind(t.elem) + ")"
	case kStruct:
		s = fmt.Sprintf("struct:%p", t.fields)
	case kEnum:
		switch {
		case t.allStrings():
			s = "string"
		case t.allInts():
			s = "int"
		case t.allNums():
			s = "double"
		default:
			return "dyn"
		}
	}
	if t.nullable {
		s += "?"
	}
	return s
}

// The CEL types expressions are drawn for.
var (
	cInt    = &gtype{kind: kInt}
	cDouble = &gtype{kind: kNum}
	cString = &gtype{kind: kStr}
	cBool   = &gtype{kind: kBool}
	cAny    = &gtype{kind: kAny}
)

// celTarget returns the CEL type to draw for a position of type t, or nil
// when CEL cannot make a value of t (an enum, null, a struct with no
// path to it).
func celTarget(t *gtype) *gtype {
	switch t.kind {
	case kInt, kNum, kStr, kBool, kAny, kObj:
		return t.nonNull()
	case kList:
		if celTarget(t.elem) == nil || t.elem.nullable {
			return nil
		}
		return t.nonNull()
	}
	return nil
}

// fitsCEL says whether a path's value has the CEL type want, exactly,
// and cannot be null.
func fitsCEL(t, want *gtype) bool {
	if want.kind == kAny {
		return !t.nullable
	}
	return celKind(t) == celKind(want)
}

// cel draws a CEL expression of CEL type want.
func (g *gen) cel(sc *scope, want *gtype, depth int) string {
	for range 4 {
		if s := g.celOnce(sc, want, depth); s != "" {
			return s
		}
	}
	return g.celLeaf(want)
}

// celLeaf is a literal of CEL type want.
func (g *gen) celLeaf(want *gtype) string {
	a := g.r.IntN(20) - 5
	switch want.kind {
	case kInt:
		return strconv.Itoa(a)
	case kNum:
		return floatText(float64(a)/4 + 0.25)
	case kStr:
		return strconv.Quote(sampleStrings[(a+5)%len(sampleStrings)])
	case kBool:
		return strconv.FormatBool(a%2 == 0)
	case kList:
		if a%3 == 0 {
			return "[" + g.celLeaf(want.elem) + "]"
		}
		return "[" + g.celLeaf(want.elem) + ", " + g.celLeaf(want.elem) + "]"
	case kObj:
		return `{"k": ` + strconv.Itoa(a) + `}`
	case kAny:
		return strconv.Itoa(a)
	}
	return ""
}

// celPath returns a path of CEL type want, or "".
func (g *gen) celPath(sc *scope, want *gtype) string {
	p := g.pick(sc, func(p *path) bool { return fitsCEL(p.t, want) }, true)
	if p == nil {
		return ""
	}
	return p.text
}

// nullable paths, guarded: (P != null ? P : d) and the like.
func (g *gen) celGuarded(sc *scope, want *gtype, depth int) string {
	p := g.pick(sc, func(p *path) bool { return p.t.nullable && fitsCEL(p.t.nonNull(), want) }, true)
	if p == nil {
		return ""
	}
	d := g.cel(sc, want, depth-1)
	switch g.r.IntN(3) {
	case 0:
		return fmt.Sprintf("(%s != null ? %s : %s)", p.text, p.text, d)
	case 1:
		return fmt.Sprintf("(%s == null ? %s : %s)", p.text, d, p.text)
	}
	// Unguarded: the checker must refuse it.
	return p.text
}

var listVars = []string{"v", "w", "u", "z"}

// comprehension returns a scope with a comprehension variable over a
// list path, the variable's name and the list's text; ok is false when no
// list is in scope.
func (g *gen) comprehension(sc *scope, depth int, elemFits func(*gtype) bool) (inner *scope, v, list string, elem *gtype, ok bool) {
	p := g.pick(sc, func(p *path) bool {
		return p.t.kind == kList && !p.t.nullable && (elemFits == nil || elemFits(p.t.elem))
	}, true)
	if p == nil || sc.vars >= len(listVars) || sc.vars > 0 && g.r.IntN(4) > 0 {
		return nil, "", "", nil, false
	}
	v = listVars[sc.vars]
	inner = sc.with(path{text: v, t: p.t.elem})
	inner.vars = sc.vars + 1
	return inner, v, p.text, p.t.elem, true
}

func (g *gen) celOnce(sc *scope, want *gtype, depth int) string {
	c := g.r.IntN(100)
	if depth <= 0 {
		if c < 60 {
			if s := g.celPath(sc, want); s != "" {
				return s
			}
		}
		return g.celLeaf(want)
	}
	d := depth - 1
	if c < 25 {
		if s := g.celPath(sc, want); s != "" {
			return s
		}
	}
	if c >= 25 && c < 30 {
		if s := g.celGuarded(sc, want, depth); s != "" {
			return s
		}
	}
	if c >= 30 && c < 36 {
		if want.kind == kAny {
			want = []*gtype{cInt, cDouble, cString, cBool}[c%4]
		}
		return fmt.Sprintf("(%s ? %s : %s)", g.cel(sc, cBool, d), g.cel(sc, want, d), g.cel(sc, want, d))
	}
	if c >= 36 && c < 42 {
		if s := g.celOptional(sc, want, d); s != "" {
			return s
		}
	}
	k := g.r.IntN(100)
	switch want.kind {
	case kInt:
		return g.celInt(sc, k, d)
	case kNum:
		return g.celDouble(sc, k, d)
	case kStr:
		return g.celString(sc, k, d)
	case kBool:
		return g.celBool(sc, k, d)
	case kList:
		return g.celList(sc, want, k, d)
	case kObj:
		if k < 50 {
			return fmt.Sprintf(`{"a": %s, "b": %s}`, g.cel(sc, cInt, d), g.cel(sc, cString, d))
		}
		return ""
	case kStruct:
		// Only paths make a struct; and elements of lists of them.
		if inner, v, list, _, ok := g.comprehension(sc, d, func(e *gtype) bool { return fitsCEL(e, want) }); ok && k < 40 {
			_ = inner
			return fmt.Sprintf("%s.filter(%s, %s)[0]", list, v, g.cel(inner, cBool, d))
		}
		return ""
	case kAny:
		switch {
		case k < 20:
			return "dyn(" + g.cel(sc, cInt, d) + ")"
		case k < 30:
			// Arithmetic on a numeric any.
			if p := g.pick(sc, func(p *path) bool { return p.t.kind == kAny && p.t.numeric }, true); p != nil {
				return fmt.Sprintf("%s * 2.0 + 1.5", p.text)
			}
		case k < 40:
			if p := g.pick(sc, func(p *path) bool { return p.t.kind == kAny && p.t.numeric }, true); p != nil {
				return fmt.Sprintf("double(%s) + 0.5", p.text)
			}
		case k < 55:
			return g.cel(sc, cString, d)
		case k < 70:
			return g.cel(sc, cDouble, d)
		case k < 80:
			return g.cel(sc, &gtype{kind: kList, elem: cInt}, d)
		}
		return g.cel(sc, cBool, d)
	}
	return ""
}

// celOptional reads an optional field with optional syntax or has().
func (g *gen) celOptional(sc *scope, want *gtype, d int) string {
	type opt struct {
		p path
		f *gfield
	}
	var opts []opt
	for _, p := range sc.all() {
		if p.t.kind != kStruct || p.quoted || p.t.nullable || p.nullWalk {
			continue
		}
		for _, f := range p.t.fields {
			if f.optional && lang.IsPlainName(f.name) && fitsCEL(f.t, want) {
				opts = append(opts, opt{p, f})
			}
		}
	}
	c, k := g.r.IntN(3), g.r.IntN(1<<20)
	if len(opts) == 0 {
		return ""
	}
	o := opts[k%len(opts)]
	def := g.cel(sc, want, d)
	switch c {
	case 0:
		return fmt.Sprintf("%s.?%s.orValue(%s)", o.p.text, o.f.name, def)
	case 1:
		return fmt.Sprintf("(has(%s.%s) ? %s.%s : %s)", o.p.text, o.f.name, o.p.text, o.f.name, def)
	}
	// Unguarded: the field may be absent, a data error.
	return o.p.text + "." + o.f.name
}

func (g *gen) celInt(sc *scope, k, d int) string {
	switch {
	case k < 12:
		return fmt.Sprintf("(%s + %s)", g.cel(sc, cInt, d), g.cel(sc, cInt, d))
	case k < 20:
		return fmt.Sprintf("(%s - %s)", g.cel(sc, cInt, d), g.cel(sc, cInt, d))
	case k < 26:
		return fmt.Sprintf("(%s * %s)", g.cel(sc, cInt, d), g.celLeaf(cInt))
	case k < 31:
		return fmt.Sprintf("(%s / %s)", g.cel(sc, cInt, d), g.cel(sc, cInt, d))
	case k < 35:
		return fmt.Sprintf("(%s %% %s)", g.cel(sc, cInt, d), g.cel(sc, cInt, d))
	case k < 47:
		if p := g.pick(sc, func(p *path) bool {
			return !p.t.nullable && (p.t.kind == kList || p.t.kind == kStr || p.t.kind == kObj || p.t.kind == kEnum && p.t.allStrings())
		}, true); p != nil {
			if k%2 == 0 {
				return "size(" + p.text + ")"
			}
			return p.text + ".size()"
		}
	case k < 52:
		return fmt.Sprintf("int(%s)", g.cel(sc, cDouble, d))
	case k < 57:
		return fmt.Sprintf("math.greatest(%s, %s)", g.cel(sc, cInt, d), g.cel(sc, cInt, d))
	case k < 61:
		return fmt.Sprintf("math.abs(%s)", g.cel(sc, cInt, d))
	case k < 66:
		return fmt.Sprintf("%s.indexOf(%s)", g.cel(sc, cString, d), g.celLeaf(cString))
	case k < 72:
		return fmt.Sprintf("%s[%d]", g.cel(sc, &gtype{kind: kList, elem: cInt}, d), k%2)
	case k < 77:
		return fmt.Sprintf("int(string(%s))", g.cel(sc, cInt, d))
	case k < 82:
		return fmt.Sprintf("-%s", g.cel(sc, cInt, d))
	case k < 87:
		if inner, v, list, _, ok := g.comprehension(sc, d, nil); ok {
			return fmt.Sprintf("%s.filter(%s, %s).size()", list, v, g.cel(inner, cBool, d))
		}
	case k < 92:
		return fmt.Sprintf("%s.lastIndexOf(%s)", g.cel(sc, cString, d), g.celLeaf(cString))
	case k < 96:
		// The greatest of a list of ints that may be null: the checker
		// refuses it unless a filter leaves the nulls out.
		if p := g.pick(sc, func(p *path) bool { return !p.t.nullable && celKind(p.t) == "list(int?)" }, true); p != nil {
			if k%3 == 0 {
				return fmt.Sprintf("math.greatest(%s)", p.text)
			}
			return fmt.Sprintf("math.greatest(%s.filter(x, x != null))", p.text)
		}
	}
	return ""
}

func (g *gen) celDouble(sc *scope, k, d int) string {
	switch {
	case k < 15:
		return fmt.Sprintf("(%s + %s)", g.cel(sc, cDouble, d), g.cel(sc, cDouble, d))
	case k < 22:
		return fmt.Sprintf("(%s - %s)", g.cel(sc, cDouble, d), g.cel(sc, cDouble, d))
	case k < 35:
		return fmt.Sprintf("(%s * 2.0)", g.cel(sc, cDouble, d))
	case k < 40:
		return fmt.Sprintf("(%s / %s)", g.cel(sc, cDouble, d), g.cel(sc, cDouble, d))
	case k < 55:
		return fmt.Sprintf("double(%s)", g.cel(sc, cInt, d))
	case k < 62:
		return fmt.Sprintf("math.floor(%s)", g.cel(sc, cDouble, d))
	case k < 68:
		return fmt.Sprintf("math.round(%s)", g.cel(sc, cDouble, d))
	case k < 72:
		return fmt.Sprintf("math.abs(%s)", g.cel(sc, cDouble, d))
	case k < 78:
		return fmt.Sprintf("math.least(%s, %s)", g.cel(sc, cDouble, d), g.cel(sc, cDouble, d))
	case k < 84:
		return fmt.Sprintf("-%s", g.cel(sc, cDouble, d))
	case k < 90:
		return fmt.Sprintf("%s[0]", g.cel(sc, &gtype{kind: kList, elem: cDouble}, d))
	case k < 95:
		return fmt.Sprintf("double(%s)", g.cel(sc, cString, d)) // a data error unless the string is a number
	}
	return ""
}

func (g *gen) celString(sc *scope, k, d int) string {
	switch {
	case k < 15:
		return fmt.Sprintf("(%s + %s)", g.cel(sc, cString, d), g.cel(sc, cString, d))
	case k < 25:
		return fmt.Sprintf("string(%s)", g.cel(sc, cInt, d))
	case k < 30:
		return fmt.Sprintf("string(%s)", g.cel(sc, cDouble, d))
	case k < 34:
		return fmt.Sprintf("string(%s)", g.cel(sc, cBool, d))
	case k < 42:
		return fmt.Sprintf("%s.lowerAscii()", g.cel(sc, cString, d))
	case k < 48:
		return fmt.Sprintf("%s.upperAscii()", g.cel(sc, cString, d))
	case k < 53:
		return fmt.Sprintf("%s.trim()", g.cel(sc, cString, d))
	case k < 58:
		return fmt.Sprintf("%s.replace(%q, %q)", g.cel(sc, cString, d), "a", "b")
	case k < 66:
		return fmt.Sprintf("%s.join(\", \")", g.cel(sc, &gtype{kind: kList, elem: cString}, d))
	case k < 71:
		return fmt.Sprintf("%s.substring(0, 1)", g.cel(sc, cString, d))
	case k < 78:
		return fmt.Sprintf("%q.format([%s, %s])", "%s=%d", g.cel(sc, cString, d), g.cel(sc, cInt, d))
	case k < 82:
		return fmt.Sprintf("%q.format([%s])", "%.2f", g.cel(sc, cDouble, d))
	case k < 86:
		return fmt.Sprintf("strings.quote(%s)", g.cel(sc, cString, d))
	case k < 90:
		return fmt.Sprintf("%s.reverse()", g.cel(sc, cString, d))
	case k < 95:
		return fmt.Sprintf("%s.charAt(0)", g.cel(sc, cString, d))
	}
	return ""
}

func (g *gen) celBool(sc *scope, k, d int) string {
	switch {
	case k < 12:
		ops := []string{"<", "<=", ">", ">=", "==", "!="}
		return fmt.Sprintf("(%s %s %s)", g.cel(sc, cInt, d), ops[k%len(ops)], g.cel(sc, cInt, d))
	case k < 18:
		ops := []string{"<", ">", "<=", ">="}
		return fmt.Sprintf("(%s %s %s)", g.cel(sc, cDouble, d), ops[k%len(ops)], g.cel(sc, cInt, d))
	case k < 24:
		ops := []string{"<", "==", "!="}
		return fmt.Sprintf("(%s %s %s)", g.cel(sc, cString, d), ops[k%len(ops)], g.cel(sc, cString, d))
	case k < 30:
		return fmt.Sprintf("(%s && %s)", g.cel(sc, cBool, d), g.cel(sc, cBool, d))
	case k < 35:
		return fmt.Sprintf("(%s || %s)", g.cel(sc, cBool, d), g.cel(sc, cBool, d))
	case k < 39:
		return fmt.Sprintf("!%s", g.cel(sc, cBool, d))
	case k < 47:
		// has() of an optional field, or of a field of a map.
		for _, p := range sc.all() {
			if p.t.kind == kStruct && !p.quoted && !p.t.nullable && !p.nullWalk {
				for _, f := range p.t.fields {
					if lang.IsPlainName(f.name) && (f.optional || k%2 == 0) {
						return fmt.Sprintf("has(%s.%s)", p.text, f.name)
					}
				}
			}
		}
	case k < 57:
		if inner, v, list, _, ok := g.comprehension(sc, d, nil); ok {
			macro := []string{"exists", "all", "exists_one"}[k%3]
			return fmt.Sprintf("%s.%s(%s, %s)", list, macro, v, g.cel(inner, cBool, d))
		}
	case k < 62:
		return fmt.Sprintf("(%s in %s)", g.cel(sc, cInt, d), g.cel(sc, &gtype{kind: kList, elem: cInt}, d))
	case k < 70:
		fn := []string{"contains", "startsWith", "endsWith"}[k%3]
		return fmt.Sprintf("%s.%s(%s)", g.cel(sc, cString, d), fn, g.cel(sc, cString, d))
	case k < 74:
		return fmt.Sprintf("%s.matches(%q)", g.cel(sc, cString, d), "^[a-z ]*$")
	case k < 80:
		if p := g.pick(sc, func(p *path) bool { return p.t.nullable }, true); p != nil {
			return fmt.Sprintf("(%s == null)", p.text)
		}
	case k < 86:
		// Equality of any two values of one type.
		if p := g.pick(sc, func(p *path) bool { return p.t.kind != kAny }, true); p != nil {
			if q := g.pick(sc, func(q *path) bool { return celKind(q.t) == celKind(p.t) }, true); q != nil {
				return fmt.Sprintf("(%s == %s)", p.text, q.text)
			}
		}
	case k < 92:
		if p := g.pick(sc, func(p *path) bool { return p.t.kind == kObj && !p.t.nullable }, true); p != nil {
			return fmt.Sprintf("(%q in %s)", "k0", p.text)
		}
	}
	return ""
}

func (g *gen) celList(sc *scope, want *gtype, k, d int) string {
	elem := want.elem
	switch {
	case k < 20:
		n := 1 + k%3
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.cel(sc, elem, d)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case k < 40:
		if celTarget(elem) != nil {
			if inner, v, list, _, ok := g.comprehension(sc, d, nil); ok {
				return fmt.Sprintf("%s.map(%s, %s)", list, v, g.cel(inner, elem, d))
			}
		}
	case k < 55:
		if inner, v, list, _, ok := g.comprehension(sc, d, func(e *gtype) bool { return fitsCEL(e, elem) }); ok {
			return fmt.Sprintf("%s.filter(%s, %s)", list, v, g.cel(inner, cBool, d))
		}
	case k < 65:
		return fmt.Sprintf("(%s + %s)", g.cel(sc, want, d), g.cel(sc, want, d))
	case k < 72:
		if elem.kind == kInt || elem.kind == kStr || elem.kind == kNum {
			return fmt.Sprintf("%s.sort()", g.cel(sc, want, d))
		}
	case k < 78:
		return fmt.Sprintf("%s.distinct()", g.cel(sc, want, d))
	case k < 83:
		return fmt.Sprintf("%s.reverse()", g.cel(sc, want, d))
	case k < 88:
		if elem.kind == kInt {
			return fmt.Sprintf("lists.range(%d)", k%4)
		}
		if elem.kind == kStr {
			return fmt.Sprintf("%s.split(\",\")", g.cel(sc, cString, d))
		}
	case k < 92:
		return fmt.Sprintf("%s.slice(0, 1)", g.cel(sc, want, d))
	}
	return ""
}

// arg draws an expression for a position of type t: a literal, a plain
// reference, a list or object of expressions, or CEL.
func (g *gen) arg(sc *scope, t *gtype, depth int) gexpr {
	c := g.r.IntN(100)
	if t.kind == kAny && t.numeric {
		// A number, which expressions that read it compute with.
		switch {
		case c < 30:
			return &litE{g.value(t, true, 0)}
		case c < 60:
			if p := g.pick(sc, func(p *path) bool { return p.t.kind == kAny && p.t.numeric && !p.t.nullable }, false); p != nil {
				return &refE{p.text}
			}
		}
		return &celE{text: g.cel(sc, cDouble, depth)}
	}
	switch {
	case c < 22:
		v := g.value(t, true, 0)
		if g.json {
			v = jsonSafe(v)
		}
		v, _ = g.violate(t, v)
		return &litE{v}
	case c < 55:
		if p := g.pick(sc, func(p *path) bool {
			return assignable(p.t, t) && !(t.kind == kNum && celKind(p.t) == "int" && p.quoted)
		}, false); p != nil {
			if t.kind == kNum && celKind(p.t) == "int" {
				return &celE{text: p.text, toNum: true}
			}
			return &refE{p.text}
		}
	case c < 85:
		if ct := celTarget(t); ct != nil {
			if ct.kind == kNum && g.chance(20) {
				return &celE{text: g.cel(sc, cInt, depth), toNum: true}
			}
			return &celE{text: g.cel(sc, ct, depth)}
		}
	}
	switch {
	case t.nullable && g.chance(30):
		return &litE{nil}
	case t.kind == kList && depth > 0:
		n := g.r.IntN(3)
		if t.kw != nil && t.kw.minItems >= 0 {
			n = t.kw.minItems + g.r.IntN(t.kw.maxItems-t.kw.minItems+1)
		}
		l := &listE{}
		for range n {
			l.elems = append(l.elems, g.arg(sc, t.elem, depth-1))
		}
		return l
	case t.kind == kStruct && depth > 0:
		o := &objE{}
		for _, f := range t.fields {
			if f.optional && g.chance(50) {
				continue
			}
			o.keys = append(o.keys, f.name)
			o.vals = append(o.vals, g.arg(sc, f.t, depth-1))
		}
		return o
	}
	v := g.value(t, true, 0)
	if g.json {
		v = jsonSafe(v)
	}
	return &litE{v}
}

// jsonSafe replaces the strings that the JSON form would read as
// references.
func jsonSafe(v any) any {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, "†") || strings.HasPrefix(v, "$state") || strings.HasPrefix(v, "$input") {
			return "x" + v
		}
	case []any:
		for i := range v {
			v[i] = jsonSafe(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = jsonSafe(v[k])
		}
	}
	return v
}

// ---- plans ----

// gtool is a generated tool or sub-plan.
type gtool struct {
	name   string
	params []*gfield
	result *gtype
	// noResult: the tool declares no result type, so it returns any.
	noResult bool
	effect   string
	// operator tools are defined by a tools file and called through a
	// runtime.Registry, which validates arguments and results against
	// their JSON Schemas; the others are the plan's own, answered by
	// mocks. bare: the plan also declares the operator's tool as `tool
	// name`.
	operator, bare bool
	// fails always fails; flaky fails on its first call.
	fails, flaky bool
	// mock is the result a plan tool's mock gives.
	mock   any
	schema map[string]any // the definition, for an operator tool or a JSON plan's tool message
	sub    *gbody         // a sub-plan's body
}

// gbody is a plan's or a sub-plan's steps, state and output.
type gbody struct {
	state  []*gfield
	steps  []*gstep
	output gexpr
}

type gstep struct {
	label       string
	tool        *gtool
	args        []garg
	each        *geach
	out, errOut string
	when        gexpr
	expects     []gexpr
	retry       int
	fallback    *gcall
	approve     bool
	result      gexpr
}

type garg struct {
	name string
	val  gexpr
}

type gcall struct {
	tool *gtool
	args []garg
}

type geach struct {
	v    string
	list gexpr
	max  int // 0: none
}

// gplan is a generated plan with its tools, input and mocks.
type gplan struct {
	seed   uint64
	flags  dataFlags
	json   bool
	named  []*gtype
	tools  []*gtool
	input  []*gfield
	inputV map[string]any
	mode   string
	policy string
	// approve asks for approval of the whole plan.
	approve bool
	main    *gbody
	// optional are the names of optional fields (see gen.optional).
	optional map[string]bool
}

// generate draws a plan.
func generate(seed uint64, flags dataFlags) *gplan {
	g := newGen(seed, flags)
	p := &gplan{seed: seed, flags: flags, optional: g.optional}
	p.json = g.chance(20)
	g.json = p.json
	// Tools.
	for range 2 + g.r.IntN(5) {
		p.tools = append(p.tools, g.tool(p))
	}
	// Sub-plans, over the tools.
	if !p.json {
		for range g.r.IntN(3) {
			p.tools = append(p.tools, g.subPlan(p))
		}
	}
	// The input.
	for range g.r.IntN(5) {
		f := &gfield{name: g.name("i")}
		if p.json {
			// The JSON form gives the input by value; its type is
			// inferred from the value.
			v := jsonSafe(g.value(g.typ(2), true, 0))
			f.t, f.def, f.hasDef = inferType(v), v, true
		} else {
			f.t = g.typ(2)
			f.optional = g.chance(20)
			if g.chance(20) {
				f.def, f.hasDef = g.value(f.t, true, 0), true
			}
		}
		if f.optional && !f.hasDef {
			g.optional[f.name] = true
		}
		p.input = append(p.input, f)
	}
	p.inputV = map[string]any{}
	for _, f := range p.input {
		present := !f.optional && !f.hasDef || g.chance(50)
		v := g.value(f.t, p.json, 0)
		switch {
		case p.json:
			p.inputV[f.name] = f.def
		case present:
			p.inputV[f.name] = v
		}
	}
	switch g.r.IntN(10) {
	case 0:
		p.mode = "lazy"
	case 1:
		p.mode = "eager"
	}
	switch c := g.r.IntN(10); {
	case c < 4:
		p.policy = "skip"
	case c < 6:
		p.policy = "continue"
	case c < 7:
		p.policy = "abort"
	}
	if g.chance(8) && p.mode != "eager" {
		p.approve = true
	}
	p.main = g.body(p, p.input, 2+g.r.IntN(7), "st", false)
	p.named = g.named
	return p
}

// tool draws a tool: the plan's own or the operator's.
func (g *gen) tool(p *gplan) *gtool {
	t := &gtool{name: g.name("t")}
	switch g.r.IntN(8) {
	case 0:
		t.name = "svc." + t.name
	case 1:
		t.name = "get-" + t.name
	}
	t.operator = g.chance(45)
	g.schema = t.operator || p.json
	defer func() { g.schema = false }()
	for range g.r.IntN(4) {
		f := &gfield{name: g.name("p"), t: g.typ(2), optional: g.chance(25)}
		if g.chance(5) {
			f.name = "x-" + f.name
		}
		if f.optional && g.chance(40) && f.t.kind != kAny {
			f.def, f.hasDef = jsonSafe(g.value(f.t, true, 0)), true
		}
		t.params = append(t.params, f)
	}
	if g.chance(8) {
		t.noResult, t.result = true, &gtype{kind: kAny}
	} else {
		t.result = g.typ(3)
	}
	switch c := g.r.IntN(10); {
	case c < 6:
		t.effect = "pure"
	case c < 8:
		t.effect = "idempotent"
	default:
		t.effect = "irreversible"
	}
	switch c := g.r.IntN(100); {
	case c < 10:
		t.fails = true
	case c < 16:
		t.flaky = true
	}
	t.bare = t.operator && g.chance(20)
	if t.operator || p.json {
		def := map[string]any{"name": t.name, "inputSchema": g.inputSchema(t.params)}
		if !t.noResult {
			def["outputSchema"] = g.docSchema(t.result)
		}
		ann := map[string]any{}
		switch t.effect {
		case "pure":
			ann["readOnlyHint"] = true
		case "idempotent":
			ann["idempotentHint"] = true
			ann["destructiveHint"] = false
		default:
			if g.chance(50) {
				ann["destructiveHint"] = true
			}
		}
		def["annotations"] = ann
		t.schema = def
	}
	t.mock = g.value(t.result, false, 0)
	return t
}

// subPlan draws a sub-plan over the tools drawn so far.
func (g *gen) subPlan(p *gplan) *gtool {
	t := &gtool{name: g.name("sub"), effect: "pure"}
	for range 1 + g.r.IntN(3) {
		t.params = append(t.params, &gfield{name: g.name("q"), t: g.typ(2)})
	}
	t.sub = g.body(p, t.params, 1+g.r.IntN(3), "u"+t.name[3:]+"_", true)
	// The sub-plan's result: its output, of a declared type.
	t.result = g.typ(2)
	sc := g.outputScope(t.params, t.sub)
	t.sub.output = g.arg(sc, t.result, 2)
	for _, s := range t.sub.steps {
		if s.tool.effect == "irreversible" {
			t.effect = "irreversible"
		} else if s.tool.effect == "idempotent" && t.effect == "pure" {
			t.effect = "idempotent"
		}
	}
	return t
}

// outputScope is what an output reads: the input, and the slots of the
// steps (which may be unwritten).
func (g *gen) outputScope(inputs []*gfield, b *gbody) *scope {
	sc := inputScope(inputs)
	for _, st := range b.steps {
		if st.out != "" {
			sc.roots = append(sc.roots, path{text: "†state." + st.out, t: slotType(st), ref: true, risky: true})
		}
	}
	for _, f := range b.state {
		if f.hasDef {
			sc.roots = append(sc.roots, path{text: "†state." + f.name, t: f.t, ref: true})
		}
	}
	return sc
}

func inputScope(inputs []*gfield) *scope {
	sc := &scope{}
	for _, f := range inputs {
		sc.roots = append(sc.roots, path{text: "†input." + f.name, t: f.t, ref: true, risky: f.optional && !f.hasDef, absent: f.optional && !f.hasDef})
	}
	return sc
}

// slotType is the type of the slot a step writes.
func slotType(st *gstep) *gtype {
	if st.each != nil {
		return &gtype{kind: kList, elem: st.tool.result}
	}
	return st.tool.result
}

// body draws the steps, state and output of a plan or a sub-plan.
func (g *gen) body(p *gplan, inputs []*gfield, n int, prefix string, sub bool) *gbody {
	b := &gbody{}
	sc := inputScope(inputs)
	if !p.json && g.chance(25) {
		f := &gfield{name: g.name("d"), t: g.typ(2)}
		f.def, f.hasDef = g.value(f.t, true, 0), true
		b.state = append(b.state, f)
		sc.roots = append(sc.roots, path{text: "†state." + f.name, t: f.t, ref: true})
	}
	var callees []*gtool
	for _, t := range p.tools {
		if !sub || t.sub == nil {
			callees = append(callees, t)
		}
	}
	for i := range n {
		st := g.step(p, sc, callees, fmt.Sprintf("%s%d", prefix, i+1), sub)
		b.steps = append(b.steps, st)
		if st.out != "" {
			t := slotType(st)
			if p.policy == "continue" && st.errOut == "" && !sub {
				// A failed step writes null to its slot.
				t = t.orNull()
			}
			sc = sc.with(path{text: "†state." + st.out, t: t, ref: true})
		}
		if st.errOut != "" {
			sc = sc.with(path{text: "†state." + st.errOut, t: errorType, ref: true})
		}
	}
	// Declared types of some written slots, as a state block says them.
	for _, st := range b.steps {
		if !p.json && st.out != "" && g.chance(12) {
			b.state = append(b.state, &gfield{name: st.out, t: slotType(st), optional: g.chance(30)})
		}
	}
	if !sub && g.chance(70) {
		b.output = g.output(inputs, b)
	}
	return b
}

// errorType is the type of an error slot.
var errorType = &gtype{kind: kStruct, fields: []*gfield{
	{name: "code", t: &gtype{kind: kStr}}, {name: "message", t: &gtype{kind: kStr}},
	{name: "tool", t: &gtype{kind: kStr}}, {name: "step", t: &gtype{kind: kStr}},
}}

// output draws a plan's output: an object whose fields read the slots,
// mostly behind has().
func (g *gen) output(inputs []*gfield, b *gbody) gexpr {
	o := &objE{}
	sc := g.outputScope(inputs, b)
	for i := range 1 + g.r.IntN(4) {
		key := "k" + strconv.Itoa(i)
		var slots []*gstep
		for _, st := range b.steps {
			if st.out != "" {
				slots = append(slots, st)
			}
		}
		c := g.r.IntN(10)
		var e gexpr
		switch {
		case len(slots) > 0 && c < 6:
			st := slots[g.r.IntN(len(slots))]
			one := inputScope(inputs).with(path{text: "†state." + st.out, t: slotType(st), ref: true})
			want := []*gtype{cInt, cDouble, cString, cBool, cInt}[g.r.IntN(5)]
			e = &celE{text: fmt.Sprintf("has(†state.%s) ? %s : %s", st.out, g.cel(one, want, 2), g.celLeaf(want))}
		case len(slots) > 0 && c < 8:
			st := slots[g.r.IntN(len(slots))]
			e = &refE{"†state." + st.out}
		case len(slots) > 0 && c < 9:
			// Unchecked: the checker accepts it only where the slot is
			// surely written, as that of a step guarded by has() of a
			// slot it reads, which it reads most often.
			st := slots[g.r.IntN(len(slots))]
			var guarded []*gstep
			for _, x := range slots {
				if w, ok := x.when.(*celE); ok && strings.Contains(w.text, "has(") {
					guarded = append(guarded, x)
				}
			}
			if len(guarded) > 0 && g.chance(70) {
				st = guarded[g.r.IntN(len(guarded))]
			}
			one := inputScope(inputs).with(path{text: "†state." + st.out, t: slotType(st), ref: true})
			e = &celE{text: g.cel(one, []*gtype{cInt, cString, cBool}[g.r.IntN(3)], 2)}
		default:
			e = &celE{text: g.cel(sc, []*gtype{cInt, cString, cAny}[g.r.IntN(3)], 2)}
		}
		o.keys = append(o.keys, key)
		o.vals = append(o.vals, e)
	}
	return o
}

// guard draws a condition over has() of a slot in scope, which the step
// then reads: alone (true whenever the step is due), joined with another
// condition, or negated (false whenever it is due); or else.
func (g *gen) guard(sc *scope, orElse gexpr) gexpr {
	var slots []string
	for _, p := range sc.roots {
		if strings.HasPrefix(p.text, "†state.") && !p.quoted {
			slots = append(slots, p.text)
		}
	}
	if len(slots) == 0 {
		return orElse
	}
	has := "has(" + slots[g.r.IntN(len(slots))] + ")"
	switch g.r.IntN(5) {
	case 0:
		has += " && " + g.cel(sc, cBool, 1)
	case 1:
		has += " || " + g.cel(sc, cBool, 1)
	case 2:
		has = "!" + has
	}
	return &celE{text: has}
}

// step draws one step.
func (g *gen) step(p *gplan, sc *scope, callees []*gtool, label string, sub bool) *gstep {
	t := callees[g.r.IntN(len(callees))]
	st := &gstep{label: label, tool: t}
	callScope := sc
	if g.chance(20) {
		st.each = g.each(sc)
		callScope = sc.with(path{text: "†" + st.each.v, t: st.each.list.(interface{ elemType() *gtype }).elemType(), ref: true})
	}
	for _, prm := range t.params {
		if prm.optional && g.chance(50) {
			continue
		}
		st.args = append(st.args, garg{prm.name, g.arg(callScope, prm.t, 2)})
	}
	if g.chance(92) {
		st.out = "s" + label
	}
	if st.out != "" && (g.chance(20) || (t.fails || t.sub != nil) && g.chance(40)) {
		st.errOut = "e" + label
	}
	if g.chance(20) {
		st.when = &celE{text: g.cel(sc, cBool, 2)}
		if g.chance(50) {
			st.when = g.guard(sc, st.when)
		}
	}
	if g.chance(12) && st.out != "" {
		own := sc.with(path{text: "†state." + st.out, t: slotType(st), ref: true})
		st.expects = append(st.expects, &celE{text: g.cel(own, cBool, 2)})
	}
	if t.flaky || g.chance(5) {
		st.retry = 1 + g.r.IntN(2)
	}
	if g.chance(10) {
		var fbs []*gtool
		for _, f := range callees {
			if f != t && f.sub == nil && assignable(f.result, t.result) && celKind(f.result) == celKind(t.result) && f.result.numeric == t.result.numeric {
				fbs = append(fbs, f)
			}
		}
		if len(fbs) > 0 {
			f := fbs[g.r.IntN(len(fbs))]
			fc := &gcall{tool: f}
			for _, prm := range f.params {
				if !prm.optional {
					fc.args = append(fc.args, garg{prm.name, g.arg(callScope, prm.t, 1)})
				}
			}
			st.fallback = fc
		}
	}
	st.approve = t.effect == "irreversible" && g.chance(85)
	if st.each == nil && st.fallback == nil && st.retry == 0 && g.chance(5) {
		st.result = g.arg(sc, t.result, 2)
	}
	return st
}

// each draws the for each of a step: over a list in scope, a CEL list,
// or a literal list.
func (g *gen) each(sc *scope) *geach {
	e := &geach{v: g.name("it")}
	if g.chance(60) {
		e.max = 1 + g.r.IntN(4)
	}
	c := g.r.IntN(10)
	// A literal list has an element at least, so that its type is its
	// elements' whether the flag cuts it short or not.
	n, extra := 1+g.r.IntN(3), 1+g.r.IntN(3)
	if c < 5 {
		if p := g.pick(sc, func(p *path) bool { return p.t.kind == kList && !p.t.nullable }, false); p != nil {
			e.list = &eachRef{refE{p.text}, p.t.elem}
			return e
		}
		if p := g.pick(sc, func(p *path) bool { return p.t.kind == kList }, false); p != nil {
			e.list = &eachRef{refE{p.text}, p.t.elem} // may be null: the checker must refuse it
			return e
		}
	}
	elem := []*gtype{cInt, cString, cDouble}[g.r.IntN(3)]
	if c < 8 {
		lt := &gtype{kind: kList, elem: elem}
		e.list = &eachCEL{celE{text: g.cel(sc, lt, 2)}, elem}
		return e
	}
	// The elements are drawn whatever the flag, so that the plan
	// without it draws the same numbers.
	vals := make([]any, 7)
	for i := range vals {
		vals[i] = g.value(elem, true, 0)
	}
	if n, isInt := vals[0].(int64); isInt && elem.kind == kNum {
		// The list is a list of numbers however short it is cut.
		vals[0] = float64(n) + 0.5
	}
	if g.flags.literalFanout && c == 9 && e.max > 0 {
		n = e.max + extra
	} else if e.max > 0 {
		n = min(n, e.max)
	}
	l := &eachList{elem: elem}
	for _, v := range vals[:n] {
		l.elems = append(l.elems, &litE{v})
	}
	e.list = l
	return e
}

// The lists of a for each know their element's type.
type eachRef struct {
	refE
	elem *gtype
}
type eachCEL struct {
	celE
	elem *gtype
}
type eachList struct {
	listE
	elem *gtype
}

func (e *eachRef) elemType() *gtype  { return e.elem }
func (e *eachCEL) elemType() *gtype  { return e.elem }
func (e *eachList) elemType() *gtype { return e.elem }

// inferType is the type the JSON form infers from an input value.
func inferType(v any) *gtype {
	switch v := v.(type) {
	case nil:
		return &gtype{kind: kAny}
	case bool:
		return &gtype{kind: kBool}
	case string:
		return &gtype{kind: kStr}
	case int64:
		return &gtype{kind: kInt}
	case float64:
		return &gtype{kind: kNum}
	case []any:
		if len(v) == 0 {
			return &gtype{kind: kList, elem: &gtype{kind: kAny}}
		}
		var elem *gtype
		for _, e := range v {
			et := inferType(e)
			switch {
			case elem == nil:
				elem = et
			case elem.text() == et.text():
			case (elem.kind == kInt || elem.kind == kNum) && (et.kind == kInt || et.kind == kNum):
				elem = &gtype{kind: kNum}
			default:
				elem = &gtype{kind: kAny}
			}
		}
		return &gtype{kind: kList, elem: elem}
	case map[string]any:
		if len(v) == 0 {
			return &gtype{kind: kObj}
		}
		t := &gtype{kind: kStruct}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.fields = append(t.fields, &gfield{name: k, t: inferType(v[k])})
		}
		return t
	}
	return &gtype{kind: kAny}
}

// ---- rendering ----

// exprText writes an expression in plan text.
func (p *gplan) exprText(e gexpr) string {
	switch e := e.(type) {
	case *litE:
		return lang.FormatExpr(lang.ValueExpr(e.v))
	case *refE:
		return e.text
	case *eachRef:
		return e.text
	case *listE:
		return p.listText(e.elems)
	case *eachList:
		return p.listText(e.elems)
	case *objE:
		parts := make([]string, len(e.keys))
		for i, k := range e.keys {
			if !lang.IsPlainName(k) {
				k = lang.Quote(k)
			}
			parts[i] = k + ": " + p.exprText(e.vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *celE:
		return p.celText(e)
	case *eachCEL:
		return "(" + p.celText(&e.celE) + ")"
	}
	panic(fmt.Sprintf("exprText: %T", e))
}

func (p *gplan) listText(elems []gexpr) string {
	parts := make([]string, len(elems))
	for i, x := range elems {
		parts[i] = p.exprText(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (p *gplan) celText(e *celE) string {
	if e.toNum && !p.flags.intInNumber {
		return "double(" + e.text + ")"
	}
	return e.text
}

func argName(n string) string {
	if lang.IsPlainName(n) {
		return n
	}
	return lang.Quote(n)
}

// Text writes the plan in the plan language.
func (p *gplan) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# soundness seed %d (%s)\n", p.seed, p.flags)
	if p.mode != "" {
		fmt.Fprintf(&b, "mode %s\n", p.mode)
	}
	if p.policy != "" {
		fmt.Fprintf(&b, "on failure %s\n", p.policy)
	}
	if p.approve {
		b.WriteString("approve \"Run the plan?\"\n")
	}
	for _, t := range p.named {
		fmt.Fprintf(&b, "type %s %s\n", t.name, t.bare())
	}
	for _, t := range p.tools {
		switch {
		case t.sub != nil:
			continue
		case t.operator && t.bare:
			fmt.Fprintf(&b, "tool %s\n", t.name)
		case t.operator:
		default:
			b.WriteString(toolDecl(t))
		}
	}
	for _, t := range p.tools {
		if t.sub == nil {
			continue
		}
		parts := make([]string, len(t.params))
		for i, f := range t.params {
			parts[i] = fieldText(f)
		}
		fmt.Fprintf(&b, "plan %s(%s) -> %s {\n", t.name, strings.Join(parts, ", "), t.result.text())
		p.bodyText(&b, t.sub, "  ")
		b.WriteString("}\n")
	}
	if len(p.input) > 0 {
		b.WriteString("input {\n")
		for _, f := range p.input {
			fmt.Fprintf(&b, "  %s\n", fieldText(f))
		}
		b.WriteString("}\n")
	}
	p.bodyText(&b, p.main, "")
	return b.String()
}

func toolDecl(t *gtool) string {
	parts := make([]string, len(t.params))
	for i, f := range t.params {
		parts[i] = fieldText(f)
	}
	s := fmt.Sprintf("tool %s(%s)", t.name, strings.Join(parts, ", "))
	if !t.noResult {
		s += " -> " + t.result.text()
	}
	if t.effect != "irreversible" || len(t.name)%2 == 0 {
		s += " " + t.effect
	}
	return s + "\n"
}

func (p *gplan) bodyText(b *strings.Builder, body *gbody, ind string) {
	if len(body.state) > 0 {
		b.WriteString(ind + "state {\n")
		for _, f := range body.state {
			fmt.Fprintf(b, "%s  %s\n", ind, fieldText(f))
		}
		b.WriteString(ind + "}\n")
	}
	for _, st := range body.steps {
		b.WriteString(ind + st.label + ": ")
		if st.each != nil {
			fmt.Fprintf(b, "for each %s in %s", st.each.v, p.exprText(st.each.list))
			if st.each.max > 0 {
				fmt.Fprintf(b, " max %d", st.each.max)
			}
			b.WriteString(": ")
		}
		b.WriteString(p.callText(st.tool, st.args))
		if st.out != "" {
			b.WriteString(" -> †state." + st.out)
			if st.errOut != "" {
				b.WriteString(" || †state." + st.errOut)
			}
		}
		b.WriteString("\n")
		if st.when != nil {
			fmt.Fprintf(b, "%s  when %s\n", ind, p.exprText(st.when))
		}
		for _, x := range st.expects {
			fmt.Fprintf(b, "%s  expect %s\n", ind, p.exprText(x))
		}
		if st.retry > 0 {
			fmt.Fprintf(b, "%s  retry %d backoff 10ms\n", ind, st.retry)
		}
		if st.fallback != nil {
			fmt.Fprintf(b, "%s  fallback %s\n", ind, p.callText(st.fallback.tool, st.fallback.args))
		}
		if st.approve {
			fmt.Fprintf(b, "%s  approve \"Go ahead?\"\n", ind)
		}
		if st.result != nil {
			fmt.Fprintf(b, "%s  result %s\n", ind, p.exprText(st.result))
		}
	}
	if body.output != nil {
		if o, ok := body.output.(*objE); ok {
			b.WriteString(ind + "output {\n")
			for i, k := range o.keys {
				fmt.Fprintf(b, "%s  %s: %s\n", ind, argName(k), p.exprText(o.vals[i]))
			}
			b.WriteString(ind + "}\n")
		} else {
			fmt.Fprintf(b, "%soutput %s\n", ind, p.exprText(body.output))
		}
	}
}

func (p *gplan) callText(t *gtool, args []garg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = argName(a.name) + ": " + p.exprText(a.val)
	}
	return t.name + "(" + strings.Join(parts, ", ") + ")"
}

// exprJSON writes an expression as the JSON form does.
func (p *gplan) exprJSON(e gexpr) any {
	switch e := e.(type) {
	case *litE:
		return e.v
	case *refE:
		return e.text
	case *eachRef:
		return e.text
	case *listE:
		out := make([]any, len(e.elems))
		for i, x := range e.elems {
			out[i] = p.exprJSON(x)
		}
		return out
	case *eachList:
		return p.exprJSON(&e.listE)
	case *objE:
		out := map[string]any{}
		for i, k := range e.keys {
			out[k] = p.exprJSON(e.vals[i])
		}
		return out
	case *celE:
		return map[string]any{"_expr": p.celText(e)}
	case *eachCEL:
		return map[string]any{"_expr": p.celText(&e.celE)}
	}
	panic(fmt.Sprintf("exprJSON: %T", e))
}

// JSON writes the plan as a context document of the JSON form.
func (p *gplan) JSON() string {
	var msgs []any
	for _, t := range p.tools {
		if !t.operator && t.sub == nil {
			msgs = append(msgs, map[string]any{"type": "tool", "tool": t.schema})
		}
	}
	if len(p.input) > 0 {
		in := map[string]any{"type": "input"}
		for _, f := range p.input {
			in[f.name] = f.def
		}
		msgs = append(msgs, in)
	}
	pm := map[string]any{"type": "plan"}
	if p.mode != "" {
		pm["mode"] = p.mode
	}
	if p.policy != "" {
		pm["onFailure"] = p.policy
	}
	if p.approve {
		pm["approve"] = "Run the plan?"
	}
	var calls []any
	for _, st := range p.main.steps {
		c := p.callJSON(st.tool, st.args)
		c["_id"] = st.label
		if st.out != "" {
			out := "†state." + st.out
			if st.errOut != "" {
				out += " || †state." + st.errOut
			}
			c["_outputPath"] = out
		}
		if st.each != nil {
			c["_forEach"] = p.exprText(st.each.list)
			c["_as"] = st.each.v
			if st.each.max > 0 {
				c["_max"] = st.each.max
			}
		}
		if st.when != nil {
			c["_when"] = p.exprText(st.when)
		}
		if len(st.expects) > 0 {
			c["_expect"] = p.exprText(st.expects[0])
		}
		if st.retry > 0 {
			c["_retry"], c["_backoff"] = st.retry, "10ms"
		}
		if st.fallback != nil {
			c["_fallback"] = p.callJSON(st.fallback.tool, st.fallback.args)
		}
		if st.approve {
			c["_approve"] = "Go ahead?"
		}
		if st.result != nil {
			c["_output"] = p.exprJSON(st.result)
		}
		calls = append(calls, c)
	}
	if calls == nil {
		calls = []any{}
	}
	pm["plan"] = calls
	if p.main.output != nil {
		pm["output"] = p.exprJSON(p.main.output)
	}
	msgs = append(msgs, pm)
	var b strings.Builder
	b.WriteString("[\n")
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("  " + jsonText(m))
	}
	b.WriteString("\n]\n")
	return b.String()
}

func (p *gplan) callJSON(t *gtool, args []garg) map[string]any {
	c := map[string]any{"_tool": t.name}
	for _, a := range args {
		c[a.name] = p.exprJSON(a.val)
	}
	return c
}

// Source is the plan as the test parses it: JSON for a plan of the JSON
// form, else text.
func (p *gplan) Source() (name, text string) {
	if p.json {
		return "soundness.json", p.JSON()
	}
	return "soundness.plan", p.Text()
}

// ToolsFile is the operator's tools file: the definitions of the
// operator's tools, as an MCP tools/list result.
func (p *gplan) ToolsFile() string {
	var defs []any
	for _, t := range p.tools {
		if t.operator {
			defs = append(defs, t.schema)
		}
	}
	if defs == nil {
		defs = []any{}
	}
	return jsonText(map[string]any{"tools": defs})
}

// MocksFile answers the plan's own tools.
func (p *gplan) MocksFile() string {
	m := map[string]any{}
	for _, t := range p.tools {
		if t.operator || t.sub != nil {
			continue
		}
		fail := map[string]any{"code": "injected", "message": "injected failure of " + t.name}
		switch {
		case t.fails:
			m[t.name] = map[string]any{"error": fail}
		case t.flaky:
			m[t.name] = map[string]any{"sequence": []any{map[string]any{"error": fail}, map[string]any{"result": t.mock}}}
		default:
			m[t.name] = map[string]any{"result": t.mock}
		}
	}
	return jsonText(m)
}

// InputJSON is the input the plan runs with.
func (p *gplan) InputJSON() string { return jsonText(p.inputV) }
