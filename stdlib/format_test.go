package stdlib

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit"
)

func format(t *testing.T, reg *toolkit.Registry, tmpl string, values map[string]any) (any, error) {
	t.Helper()
	return reg.Call(context.Background(), "text.format", map[string]any{"template": tmpl, "values": values})
}

// list returns a list of n small strings.
func list(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = "x"
	}
	return l
}

// TestFormatAttacks: templates that would run the process out of memory,
// or work for minutes without writing, are refused with limit-exceeded
// before or soon after they start; a template that can call itself is
// refused when it is read.
func TestFormatAttacks(t *testing.T) {
	reg := registry(t, Options{MaxBodyBytes: 1 << 20})
	long := strings.Repeat("a", 1<<19)
	doubling := `{{$x := "0123456789"}}` + strings.Repeat(`{{$x = print $x $x}}`, 40) + `{{len $x}}`
	for _, tc := range []struct {
		name, template string
		values         map[string]any
		code, message  string
	}{
		{"nested ranges writing", `{{range .l}}{{range $.l}}{{range $.l}}xxxxxxxx{{end}}{{end}}{{end}}`, map[string]any{"l": list(1000)},
			toolkit.CodeLimitExceeded, ""}, // the text's bound or the work's, whichever comes first
		{"range over a large number", `{{range 1000000000}}{{end}}`, nil,
			toolkit.CodeLimitExceeded, "more than 10000000 steps of work, stopped at a range over 1000000000"},
		{"range over a large number in the values", `{{range .n}}{{end}}`, map[string]any{"n": int64(1) << 40},
			toolkit.CodeLimitExceeded, "stopped at a range over 1099511627776"},
		{"range over many keys", `{{range .l}}{{range $.m}}{{end}}{{end}}`, map[string]any{"l": list(1000), "m": map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10, "k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18, "s": 19, "t": 20, "u": 21, "v": 22, "w": 23, "x": 24, "y": 25, "z": 26}},
			"", ""}, // 26,000 elements: allowed
		{"output over the limit", `{{range .l}}{{$.s}}{{end}}`, map[string]any{"l": list(10), "s": long},
			toolkit.CodeLimitExceeded, "the text is longer than 1048576 bytes"},
		{"a string that doubles", doubling, nil,
			toolkit.CodeLimitExceeded, "print could make more text than the 1048576 bytes"},
		{"printf padding", `{{printf "` + strings.Repeat("%1000000d", 100) + `"}}`, nil,
			toolkit.CodeLimitExceeded, "printf could make more text"},
		{"printf padding from an argument", `{{printf "%*d%*d" 1000000 1 1000000 1}}`, nil,
			toolkit.CodeLimitExceeded, "printf could make more text"},
		{"printf repeating an argument", `{{printf "%[1]s%[1]s%[1]s" .s}}`, map[string]any{"s": long},
			toolkit.CodeLimitExceeded, "printf could make more text"},
		{"printf quoting", `{{printf "%q" .s}}{{printf "%q" .s}}`, map[string]any{"s": long},
			toolkit.CodeLimitExceeded, "printf could make more text"},
		{"html escaping", `{{html .s}}{{html .s}}{{html .s}}`, map[string]any{"s": strings.Repeat(`"`, 1<<17)},
			toolkit.CodeLimitExceeded, "html could make more text"},
		{"blocks nested deep", strings.Repeat("{{if 1}}", 300_000) + strings.Repeat("{{end}}", 300_000), nil,
			toolkit.CodeLimitExceeded, "more than 10000 {{if}}, {{range}}, {{with}} and {{else}} actions"},
		{"an else-if chain", "{{if 0}}" + strings.Repeat("{{- \n else if 0}}", 20_000) + "{{end}}", nil,
			toolkit.CodeLimitExceeded, "more than 10000 {{if}}, {{range}}, {{with}} and {{else}} actions"},
		{"define and template", `{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}`, nil,
			toolkit.CodeInvalidArguments, "{{define}}, {{block}} and {{template}} are not offered"},
		{"the template itself", `{{template "format" .}}`, nil,
			toolkit.CodeInvalidArguments, "{{define}}, {{block}} and {{template}} are not offered"},
		{"block", `{{block "b" .}}{{template "b" .}}{{end}}`, nil,
			toolkit.CodeInvalidArguments, "{{define}}, {{block}} and {{template}} are not offered"},
		{"define unused", `{{define "x"}}x{{end}}y`, nil,
			toolkit.CodeInvalidArguments, "are not offered"},
		{"a hook by name", `{{range .l | _obeliskRange0}}{{end}}`, map[string]any{"l": list(1)},
			toolkit.CodeInvalidArguments, `function "_obeliskRange0" not defined`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := format(t, reg, tc.template, tc.values)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *toolkit.Error
			if !errors.As(err, &re) || re.Code != tc.code || !re.NotRetryable || !strings.Contains(re.Message, tc.message) {
				t.Fatalf("got %v; want %s with %q", err, tc.code, tc.message)
			}
		})
	}
}

// TestFormatWork: templates that write nothing, but range over and over
// or compare long strings, are stopped when their work passes the bound
// (here a hundredth of text.format's, to keep the test short), whether
// the lists are long or their nesting deep.
func TestFormatWork(t *testing.T) {
	f := formatter{max: 1 << 20, work: maxFormatWork / 100}
	long := strings.Repeat("a", 1<<19)
	other := strings.Repeat("a", 1<<19) // equal, not the same memory
	for _, tc := range []struct {
		template string
		values   map[string]any
		message  string
	}{
		{`{{range .l}}{{range $.l}}{{range $.l}}{{end}}{{end}}{{end}}`, map[string]any{"l": list(1000)}, "more than 100000 steps of work, stopped at a range over 1000 elements"},
		{`{{range .l}}{{range $.l}}{{range $.l}}{{range $.l}}{{range $.l}}{{range $.l}}{{end}}{{end}}{{end}}{{end}}{{end}}{{end}}`, map[string]any{"l": list(20)}, "stopped at a range over 20 elements"},
		{`{{range $a := .l}}{{range $b := $.l}}{{range $c := $.l}}{{if eq $a $b $c}}{{end}}{{end}}{{end}}{{end}}`, map[string]any{"l": list(1000)}, "more than 100000 steps of work"},
		{`{{range .l}}{{if eq $.a $.b}}{{end}}{{end}}`, map[string]any{"l": list(10_000), "a": long, "b": other}, "stopped at a comparison or an index"},
		{`{{range .l}}{{if $.a | eq $.b}}{{end}}{{end}}`, map[string]any{"l": list(10_000), "a": long, "b": other}, "stopped at a comparison or an index"},
		{`{{range .l}}{{index $.m $.a}}{{end}}`, map[string]any{"l": list(10_000), "a": long, "m": map[string]any{long: "v"}}, "stopped at a comparison or an index"},
	} {
		_, err := f.call(context.Background(), map[string]any{"template": tc.template, "values": tc.values})
		var re *toolkit.Error
		if !errors.As(err, &re) || re.Code != toolkit.CodeLimitExceeded || !re.NotRetryable || !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s: got %v; want limit-exceeded with %q", tc.template, err, tc.message)
		}
	}
}

// TestFormatStopsWhenCanceled: a template that is charged for work stops
// when its call is canceled.
func TestFormatStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := formatter{max: 1 << 20, work: maxFormatWork}.call(ctx, map[string]any{"template": `{{range 3}}x{{end}}`})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v; want context.Canceled", err)
	}
}

// TestFormatFeatures: the template language a plan uses works as it did:
// ranges with variables, else, break, comparisons, index, the string
// functions, and its errors name no hook.
func TestFormatFeatures(t *testing.T) {
	reg := registry(t, Options{})
	values := map[string]any{
		"name":  "Ada",
		"items": []any{map[string]any{"n": "a", "qty": int64(2)}, map[string]any{"n": "b", "qty": int64(0)}},
		"tags":  map[string]any{"x": "1", "y": "2"},
		"empty": []any{},
		"t":     3.25,
		"rows":  list(5000),
	}
	for _, tc := range []struct{ template, want string }{
		{`Dear {{.name}}: {{range $i, $e := .items}}{{if $i}}, {{end}}{{$e.n}}×{{$e.qty}}{{end}}`, "Dear Ada: a×2, b×0"},
		{`{{range .empty}}x{{else}}none{{end}}`, "none"},
		{`{{range $k, $v := .tags}}{{$k}}={{$v}};{{end}}`, "x=1;y=2;"},
		{`{{range .items}}{{if eq .n "b"}}{{break}}{{end}}{{.n}}{{end}}`, "a"},
		{`{{range .items}}{{if gt .qty 0}}{{.n}}{{end}}{{end}}`, "a"},
		{`{{range 3}}{{.}}{{end}}`, "012"},
		{`{{index .items 1 | printf "%v"}}`, "map[n:b qty:0]"},
		{`{{(index .items 0).n}} {{index .tags "y"}} {{len .items}} {{slice .name 1}}`, "a 2 2 da"},
		{`{{printf "%.1f|%5s|%-3d|%q|%[1]v" .t .name 7 .name}}`, `3.2|  Ada|7  |"Ada"|3.25`},
		{`{{print .name 1 2}} {{html "<a>"}} {{js "'"}} {{urlquery "a b"}} {{.name | printf "%s!"}}`, `Ada1 2 &lt;a&gt; \' a+b Ada!`},
		{`{{with .name}}{{.}}{{end}}{{with .missing_ok}}{{end}}`, "Ada"},
		{`{{$n := 0}}{{range .rows}}{{$n = len $.rows}}{{end}}{{$n}}`, "5000"},
		{``, ""},
		{`{{/* a comment */}}`, ""},
	} {
		values["missing_ok"] = nil
		v, err := format(t, reg, tc.template, values)
		if err != nil || v != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.template, v, err, tc.want)
		}
	}
	for _, tc := range []struct{ template, want string }{
		{`{{.missing}}`, `map has no entry for key "missing"`},
		{`{{if eq .name 1}}{{end}}`, `at <eq .name 1>: error calling eq: incompatible types for comparison`},
		{`{{range .items}}{{.n | eq 1}}{{end}}`, `at <eq 1>: error calling eq: incompatible types for comparison`},
		{`{{range .name}}{{end}}`, `at <.name>: range can't iterate over Ada`},
		{`{{index .items 5}}`, `at <index .items 5>: error calling index: index out of range: 5`},
	} {
		_, err := format(t, reg, tc.template, values)
		var re *toolkit.Error
		if !errors.As(err, &re) || re.Code != toolkit.CodeInvalidArguments || !strings.Contains(re.Message, tc.want) || strings.Contains(re.Message, "_obelisk") {
			t.Errorf("%s: got %v; want invalid-arguments with %q", tc.template, err, tc.want)
		}
	}
}
