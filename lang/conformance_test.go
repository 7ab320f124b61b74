package lang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/obelisk-plan/obelisk/spec"
)

// diagText renders diagnostics one per line without the file name, the form
// the conformance files hold.
func diagText(diags Diagnostics) []byte {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%s: %s: %s [%s]\n", d.Span.Start, d.Severity, d.Message, d.Code)
	}
	return []byte(b.String())
}

// parseInput parses a conformance input in its form.
func parseInput(name string, text []byte) (*File, Diagnostics) {
	if strings.HasSuffix(name, ".json") {
		return ParseJSON(name, text)
	}
	return Parse(name, text)
}

// astOptions compare trees up to layout: spans, comments, the source text
// of literals and the one-line/multi-line choice.
var astOptions = cmp.Options{
	cmpopts.IgnoreTypes(Span{}, Comments{}),
	cmpopts.IgnoreFields(Literal{}, "Raw"),
	cmpopts.IgnoreFields(Call{}, "Multiline"),
	cmpopts.IgnoreFields(ListExpr{}, "Multiline"),
	cmpopts.IgnoreFields(ObjectExpr{}, "Multiline"),
	cmpopts.IgnoreFields(ObjectType{}, "Multiline"),
	cmpopts.IgnoreFields(File{}, "Name", "Trailing", "InputValues", "JSON"),
	cmpopts.IgnoreFields(PlanDecl{}, "Closing"),
	cmpopts.IgnoreFields(ToolDecl{}, "InputSchema", "OutputSchema", "MultilineParams"),
	cmpopts.IgnoreFields(PlanDecl{}, "MultilineParams"),
	cmpopts.EquateEmpty(),
}

// exactOptions compare trees parsed from text, which must survive a
// format round trip with comments and layout intact.
var exactOptions = cmp.Options{
	cmpopts.IgnoreTypes(Span{}),
	cmpopts.IgnoreFields(Literal{}, "Raw"),
	cmpopts.IgnoreFields(File{}, "Name"),
	cmpopts.EquateEmpty(),
}

func TestConformanceSyntax(t *testing.T) {
	for _, c := range spec.Cases(t, "../spec/conformance") {
		t.Run(c.Name, func(t *testing.T) {
			name, text, ok := c.Input()
			if !ok {
				t.Skip("no input section")
			}
			f, diags := parseInput(name, text)
			owned := strings.HasPrefix(c.Name, "syntax/")
			c.Golden(t, "parse", diagText(diags), *update && owned, owned)
			if diags.HasErrors() {
				return
			}
			out := Format(f)
			c.Golden(t, "format", out, *update && owned, owned)
			checkRoundTrip(t, name, f, out)
		})
	}
}

// checkRoundTrip asserts that formatted output parses without diagnostics
// to the same tree and formats to itself.
func checkRoundTrip(t *testing.T, name string, f *File, out []byte) {
	t.Helper()
	g, diags := Parse(name+".formatted", out)
	if len(diags) > 0 {
		t.Fatalf("formatted output does not parse:\n%s\n%s", diags, out)
	}
	opts := exactOptions
	if strings.HasSuffix(name, ".json") {
		opts = astOptions
	}
	if diff := cmp.Diff(f, g, opts); diff != "" {
		t.Errorf("parse(format(tree)) differs from tree (-before +after):\n%s", diff)
	}
	if again := Format(g); string(again) != string(out) {
		t.Errorf("format is not idempotent:\n--- first\n%s\n--- second\n%s", out, again)
	}
}
