package lang

import "testing"

func TestClosest(t *testing.T) {
	cases := []struct {
		s     string
		cands []string
		want  string
	}{
		{"qeury", []string{"query", "limit"}, "query"}, // a swap is one edit
		{"issueRefnd", []string{"issueRefund", "escalate"}, "issueRefund"},
		{"Query", []string{"query"}, "query"},                     // case is ignored
		{"weather.forecast", []string{"text.format", "echo"}, ""}, // too far to be a typo
		{"ab", []string{"xy"}, ""},
		{"a", []string{"b"}, "b"},
		{"slot", nil, ""},
		{"reciept", []string{"receipt", "recipe"}, "receipt"},
	}
	for _, c := range cases {
		if got := Closest(c.s, c.cands); got != c.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", c.s, c.cands, got, c.want)
		}
	}
}
