package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// corpusFiles returns the context documents of the BFCL corpus: each plan
// with the tool definitions of its own case.
func corpusFiles(t *testing.T) []string {
	files, _ := filepath.Glob("../spec/corpus/bfcl/bfcl_plans/*.context.json")
	if len(files) < 60 {
		t.Fatalf("corpus missing: %d context documents", len(files))
	}
	return files
}

func parseCorpus(t *testing.T, path string) *lang.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := lang.ParseJSON(path, src)
	if len(diags) > 0 {
		t.Fatalf("%s: %s", path, diags)
	}
	return f
}

// TestCorpusChecksClean: every plan of the corpus checks without errors
// against its tool definitions.
func TestCorpusChecksClean(t *testing.T) {
	for _, path := range corpusFiles(t) {
		_, diags := Check(parseCorpus(t, path), Config{})
		if diags.HasErrors() {
			t.Errorf("%s:\n%s", path, diagText(diags))
		}
	}
}

// TestCorpusMutations breaks each corpus plan in three ways a model does:
// it drops a required argument, passes a literal of the wrong type, and
// misspells a tool; each must be reported with its code at its place.
func TestCorpusMutations(t *testing.T) {
	counts := map[lang.Code]int{}
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		// Drop a required argument.
		f := parseCorpus(t, path)
		info, _ := Check(f, Config{})
		if s, arg := findArg(info, func(p *Param) bool { return !p.Optional && !p.HasDefault }); s != nil {
			s.Node.Call.Args = removeArg(s.Node.Call.Args, arg)
			expectCode(t, name, f, lang.MissingArgument, s.Node.Call.Span)
			counts[lang.MissingArgument]++
		}
		// Pass a literal of another type.
		f = parseCorpus(t, path)
		info, _ = Check(f, Config{})
		if s, arg := findArg(info, func(p *Param) bool { return p.Type.Kind != KindAny }); s != nil {
			for _, a := range s.Node.Call.Args {
				if a.Name.Name == arg {
					a.Value = wrongLiteral(info, s, arg, a.Value)
					expectCode(t, name, f, lang.TypeMismatch, a.Value.Range())
					counts[lang.TypeMismatch]++
				}
			}
		}
		// Misspell the tool.
		f = parseCorpus(t, path)
		step := lang.Steps(f.Items)[0]
		real := step.Call.Tool.Name
		step.Call.Tool.Name = real[:len(real)-1] + "x" + real[len(real)-1:]
		d := expectCode(t, name, f, lang.UnknownTool, step.Call.Tool.Span)
		if d != nil && !strings.Contains(d.Message, `"`+real+`"`) {
			t.Errorf("%s: unknown-tool does not suggest %s: %s", name, real, d.Message)
		}
		counts[lang.UnknownTool]++
	}
	for _, code := range []lang.Code{lang.MissingArgument, lang.TypeMismatch, lang.UnknownTool} {
		if counts[code] < 50 {
			t.Errorf("only %d plans mutated for %s", counts[code], code)
		}
	}
	t.Logf("mutations checked: %v", counts)
}

// findArg finds a step and one of its literal arguments whose parameter
// satisfies ok.
func findArg(info *Info, ok func(*Param) bool) (*Step, string) {
	for _, s := range info.Main.Steps {
		for _, a := range s.Args {
			if a.Param != nil && ok(a.Param) && a.Value.IsConst() {
				return s, a.Name
			}
		}
	}
	return nil, ""
}

func removeArg(args []*lang.Arg, name string) []*lang.Arg {
	var out []*lang.Arg
	for _, a := range args {
		if a.Name.Name != name {
			out = append(out, a)
		}
	}
	return out
}

// wrongLiteral returns a literal whose type the parameter does not accept.
func wrongLiteral(info *Info, s *Step, arg string, old lang.Expr) lang.Expr {
	var p *Param
	for _, a := range s.Args {
		if a.Name == arg {
			p = a.Param
		}
	}
	span := old.Range()
	switch p.Type.Kind {
	case KindString, KindEnum:
		return &lang.Literal{Span: span, Kind: lang.LitBool, Value: true}
	}
	return &lang.Literal{Span: span, Kind: lang.LitString, Value: "not a " + p.Type.String()}
}

// expectCode checks f and requires a diagnostic with the code at span.
func expectCode(t *testing.T, name string, f *lang.File, code lang.Code, span lang.Span) *lang.Diagnostic {
	t.Helper()
	_, diags := Check(f, Config{})
	for _, d := range diags {
		if d.Code == code && d.Span.Start == span.Start {
			return d
		}
	}
	t.Errorf("%s: want %s at %s, got:\n%s", name, code, span.Start, diagText(diags))
	return nil
}
