package toolkit

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckUniqueKeys(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // a part of the error, "" for none
	}{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]}`, ""},
		{`[1, "a", "a", {"a": "a"}]`, ""},
		{`"a"`, ""},
		{`{"a": 1, "a": 2}`, `line 1: key "a" is given twice`},
		{`{"_tool": "f", "\u005ftool": "g"}`, `key "_tool" is given twice`},
		{"{\n  \"a\": {\"b\": [1, {\"c\": 1,\n  \"c\": 2}]}\n}", `line 3: key "c" is given twice`},
		{`{"a": [], "b": {}, "a": null}`, `key "a"`},
		{`[{"k": 1}, {"k": 1, "k": 1}]`, `key "k"`},
		{`{"a": 1, "b"`, ""}, // malformed: the decoder reports it
		{`{"a": 1,, "a": 2}`, ""},
	} {
		err := CheckUniqueKeys([]byte(tc.src))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.src, err, tc.want)
		}
	}
}

// TestCheckUniqueKeysWide: an object of many keys is checked in time
// proportional to its size (a set per object), and a late repeat is found.
func TestCheckUniqueKeysWide(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i%7) + itoa(i) + `": 1`)
	}
	if err := CheckUniqueKeys([]byte(b.String() + "}")); err != nil {
		t.Fatal(err)
	}
	if err := CheckUniqueKeys([]byte(b.String() + `, "k0": 2}`)); err == nil {
		t.Error("a repeat of the first key after 100000 others was not found")
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestParseMocksDuplicateKeys(t *testing.T) {
	for _, src := range []string{
		`{"pay": {"result": {"ok": true}}, "pay": {"error": {"code": "x", "message": "y"}}}`,
		`{"pay": {"result": {"ok": true}, "result": {"ok": false}}}`,
		`{"pay": {"cases": [{"args": {"amount": 1, "amount": 2}, "result": 1}]}}`,
	} {
		if _, err := ParseMocks([]byte(src)); err == nil || !strings.Contains(err.Error(), "is given twice") {
			t.Errorf("%s: got %v, want a duplicate key error", src, err)
		}
	}
}

func TestDecodeJSONNonFinite(t *testing.T) {
	for _, src := range []string{`1e999`, `-1e999`, `[1, 2e400]`, `{"a": {"b": -1E+999}}`, "1" + strings.Repeat("0", 400)} {
		v, err := DecodeJSON([]byte(src))
		if err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%.40s: got %v, %v; want an out-of-range error", src, v, err)
		}
	}
	for _, src := range []string{`1e308`, `-1.7976931348623157e308`, `1e-999`} {
		if _, err := DecodeJSON([]byte(src)); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	// A tool's output that is not JSON a program can use is kept as text.
	if v := DecodeJSONOrText([]byte("1e999")); v != "1e999" {
		t.Errorf("DecodeJSONOrText(1e999) = %#v, want the text", v)
	}
}

// TestDecodeObject: one JSON object is decoded with its integers as
// int64; a key given twice, malformed JSON and another value are errors.
func TestDecodeObject(t *testing.T) {
	m, err := DecodeObject([]byte(`{"n": 9007199254740993, "s": "x"}`))
	if err != nil || m["n"] != int64(9007199254740993) || m["s"] != "x" {
		t.Errorf("got %v, %v", m, err)
	}
	if _, err := DecodeObject([]byte(`{"a": 1, "a": 2}`)); err == nil || !strings.Contains(err.Error(), `key "a" is given twice`) {
		t.Errorf("a key twice: %v", err)
	}
	if _, err := DecodeObject([]byte(`{"a": `)); err == nil || !strings.HasPrefix(err.Error(), "not JSON: ") {
		t.Errorf("malformed: %v", err)
	}
	if _, err := DecodeObject([]byte(`[1]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("an array: %v", err)
	}
}
