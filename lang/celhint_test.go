package lang

import "testing"

// TestFindRefInText: what reads like a reference in a string's text, and
// what does not (prices, shell variables, a root that is not one).
func TestFindRefInText(t *testing.T) {
	for _, tc := range []struct{ text, elem, want string }{
		{"Hello $input.name", "", "$input.name"},
		{"Hello †input.name!", "", "†input.name"},
		{"see $state.items[0].url.", "", "$state.items[0].url"},
		{"costs $5.00", "", ""},
		{"$HOME/bin", "", ""},
		{"$inputs.x", "", ""},
		{"$input", "", ""},
		{"url: $item.url", "item", "$item.url"},
		{"url: $item.url", "", ""},
		{"†item alone", "item", "†item"},
		{"no marker", "", ""},
	} {
		if got := FindRefInText(tc.text, tc.elem); got != tc.want {
			t.Errorf("FindRefInText(%q, %q) = %q, want %q", tc.text, tc.elem, got, tc.want)
		}
	}
}

// TestExplainCELErrorUnknown: a syntax error the explainer does not know
// is left to CEL's message.
func TestExplainCELErrorUnknown(t *testing.T) {
	for _, tc := range []struct {
		text string
		off  int
		msg  string
	}{
		{"a.(b)", 2, "Syntax error: no viable alternative at input '.('"},
		{"a ? b", 5, "Syntax error: mismatched input '<EOF>' expecting ':'"},
		{"", 0, "Syntax error: mismatched input '<EOF>'"},
		{"a @ b", 2, "Syntax error: token recognition error at: '@'"},
	} {
		e := &CELExpr{Text: tc.text}
		if m, ok := ExplainCELError(e, Place{Kind: PlaceArgument, Call: "f", Name: "x"}, tc.off, tc.msg); ok {
			t.Errorf("%q: explained as %q", tc.text, m.Message)
		}
	}
}

// FuzzExplainCELError: any text, offset and message is explained or not,
// without a panic, and an explanation points inside the text.
func FuzzExplainCELError(f *testing.F) {
	f.Add("1 y: 2", 2, "Syntax error: mismatched input 'y' expecting <EOF>", uint8(PlaceArgument))
	f.Add("†state.a = 1", 9, "Syntax error: token recognition error at: '= '", uint8(PlaceStatement))
	f.Add("a +", 3, "Syntax error: mismatched input '<EOF>' expecting", uint8(PlaceField))
	f.Add("[1 2]", 3, "Syntax error: extraneous input '2' expecting <EOF>", uint8(PlaceElement))
	f.Fuzz(func(t *testing.T, text string, off int, msg string, kind uint8) {
		e := &CELExpr{Text: text}
		m, ok := ExplainCELError(e, Place{Kind: PlaceKind(kind % 6), Call: "f", Name: "x"}, off, msg)
		if ok && (m.Offset < 0 || m.End > len(text) || m.Offset > m.End || m.Message == "" || m.InsertAt < 0 || m.InsertAt > len(text)) {
			t.Fatalf("%q at %d: %+v", text, off, m)
		}
	})
}
