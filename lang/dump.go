package lang

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"time"
)

// DumpJSON encodes a syntax tree as indented JSON: each node is an object
// whose "node" member names its type, with its span and its non-empty
// fields, in declaration order. It is what `obelisk parse` prints; the
// output is deterministic.
func DumpJSON(n Node) []byte {
	var b bytes.Buffer
	dumpValue(&b, reflect.ValueOf(n), 0)
	b.WriteByte('\n')
	return b.Bytes()
}

var (
	spanType     = reflect.TypeOf(Span{})
	commentsType = reflect.TypeOf(Comments{})
	durationType = reflect.TypeOf(time.Duration(0))
)

func dumpIndent(b *bytes.Buffer, n int) {
	b.WriteByte('\n')
	for range n {
		b.WriteString("  ")
	}
}

func dumpValue(b *bytes.Buffer, v reflect.Value, ind int) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		dumpStruct(b, v, ind)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // raw JSON schemas
			if v.Len() == 0 {
				b.WriteString("null")
			} else {
				var out bytes.Buffer
				if json.Compact(&out, v.Bytes()) == nil {
					b.Write(out.Bytes())
				} else {
					b.WriteString(strconv.Quote(string(v.Bytes())))
				}
			}
			return
		}
		if v.Len() == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			dumpIndent(b, ind+1)
			dumpValue(b, v.Index(i), ind+1)
		}
		dumpIndent(b, ind)
		b.WriteByte(']')
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			dumpIndent(b, ind+1)
			b.WriteString(strconv.Quote(k.String()) + ": ")
			dumpValue(b, v.MapIndex(k), ind+1)
		}
		if len(keys) > 0 {
			dumpIndent(b, ind)
		}
		b.WriteByte('}')
	default:
		if v.Type() == durationType {
			b.WriteString(strconv.Quote(time.Duration(v.Int()).String()))
			return
		}
		enc, err := json.Marshal(v.Interface())
		if err != nil {
			enc = []byte(strconv.Quote(err.Error()))
		}
		b.Write(enc)
	}
}

func dumpStruct(b *bytes.Buffer, v reflect.Value, ind int) {
	t := v.Type()
	b.WriteByte('{')
	first := true
	member := func(name string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		dumpIndent(b, ind+1)
		b.WriteString(strconv.Quote(name) + ": ")
	}
	if t != spanType && t != reflect.TypeOf(Pos{}) && t != reflect.TypeOf(Comment{}) {
		member("node")
		b.WriteString(strconv.Quote(t.Name()))
	}
	for i := range t.NumField() {
		f := t.Field(i)
		fv := v.Field(i)
		if !f.IsExported() {
			continue
		}
		switch {
		case f.Anonymous && f.Type == spanType:
			member("span")
			dumpPlain(b, fv.Interface())
			continue
		case f.Anonymous && f.Type == commentsType:
			if !fv.IsZero() {
				member("comments")
				dumpValue(b, fv, ind+1)
			}
			continue
		case t == spanType || t == reflect.TypeOf(Pos{}):
			member(lowerFirst(f.Name))
			dumpValue(b, fv, ind+1)
			continue
		}
		if fv.IsZero() {
			continue
		}
		member(lowerFirst(f.Name))
		dumpValue(b, fv, ind+1)
	}
	if !first {
		dumpIndent(b, ind)
	}
	b.WriteByte('}')
}

// dumpPlain writes a small value (a span) on one line.
func dumpPlain(b *bytes.Buffer, v any) {
	s := v.(Span)
	b.WriteString(`{"start": "` + s.Start.String() + `", "end": "` + s.End.String() +
		`", "offsets": [` + strconv.Itoa(s.Start.Offset) + ", " + strconv.Itoa(s.End.Offset) + "]}")
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []byte(s)
	if r[0] >= 'A' && r[0] <= 'Z' {
		r[0] += 'a' - 'A'
	}
	return string(r)
}
