package agent

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

var update = flag.Bool("update", false, "rewrite generated files instead of comparing with them")

// primerSections are the parts of the language reference the primer
// quotes: a section (by its heading, without the #s) and which of its
// blocks: the first ```text block (the syntax), the first ```plan block
// (an example), the first table.
var primerSections = []struct {
	heading, title string
	parts          []string
}{
	{"1. Overview", "A complete plan", []string{"plan"}},
	{"4.10 `output`", "", []string{"text"}},
	{"5.1 Type forms", "", []string{"table"}},
	{"6.1 Shape", "", []string{"text"}},
	{"6.3 `for each`", "", []string{"text", "plan"}},
	{"6.5 Output paths", "", []string{"text", "plan"}},
	{"6.6 Options", "", []string{"table", "plan"}},
	{"6.8 Holes: arguments a model fills when the step runs", "Holes", []string{"text", "table", "plan"}},
	{"6.9 Tasks: a goal and the tools a model chooses among", "Tasks", []string{"text", "plan"}},
	{"7.2 References", "", []string{"text"}},
	{"7.5 CEL expressions", "", []string{"plan"}},
}

const primerHeader = `<!-- The primer of the planning prompt, generated from spec/README.md by
TestPrimer. Do not edit: run go test ./vm/agent -run TestPrimer -update -->
`

// makePrimer quotes the chosen parts of the language reference.
func makePrimer(spec string) (string, error) {
	var b strings.Builder
	b.WriteString(primerHeader)
	for _, s := range primerSections {
		body, err := section(spec, s.heading)
		if err != nil {
			return "", err
		}
		title := s.title
		if title == "" {
			title = regexp.MustCompile(`^[0-9.]+ `).ReplaceAllString(s.heading, "")
		}
		fmt.Fprintf(&b, "\n## %s\n", title)
		for _, part := range s.parts {
			block, err := firstBlock(body, part)
			if err != nil {
				return "", fmt.Errorf("section %q: %w", s.heading, err)
			}
			// References to the source documents mean nothing to a model.
			block = regexp.MustCompile(` \(seeds? [^)]*\)| \(seed [0-9]+ [^)]*\)`).ReplaceAllString(block, "")
			if part == "plan" {
				if block, err = asAnswer(block); err != nil {
					return "", fmt.Errorf("section %q: %w", s.heading, err)
				}
			}
			b.WriteString("\n" + block)
		}
	}
	return b.String(), nil
}

// asAnswer splits a plan example of the reference into what the context
// messages give a model (its tools, input and state) and the answer it
// writes (steps, output, types and sub-plans), and leaves out the settings
// the agent chooses (mode, on failure, a plan-level approve): the primer's
// examples follow the rules of an answer.
func asAnswer(block string) (string, error) {
	text := strings.TrimSuffix(strings.TrimPrefix(block, "```plan\n"), "```\n")
	f, diags := lang.Parse("example.plan", []byte(text))
	if diags.HasErrors() {
		return "", fmt.Errorf("an example does not parse: %v", diags)
	}
	var context, answer []lang.Item
	for _, it := range f.Items {
		switch it.(type) {
		case *lang.ToolDecl, *lang.InputDecl, *lang.StateDecl, *lang.ImportDecl:
			context = append(context, it)
		case *lang.ModeDecl, *lang.PolicyDecl, *lang.ApproveDecl:
		default:
			answer = append(answer, it)
		}
	}
	var b strings.Builder
	if len(context) > 0 {
		b.WriteString("Context:\n```plan\n" + string(lang.Format(&lang.File{Items: context})) + "```\nAnswer:\n")
	}
	b.WriteString("```plan\n" + string(lang.Format(&lang.File{Items: answer})) + "```\n")
	return b.String(), nil
}

// section returns the text of a section: from its heading to the next
// heading of the same or a higher level.
func section(spec, heading string) (string, error) {
	lines := strings.SplitAfter(spec, "\n")
	for i, l := range lines {
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level == 0 || strings.TrimSpace(l[level:]) != heading {
			continue
		}
		var b strings.Builder
		fenced := false
		for _, m := range lines[i+1:] {
			if strings.HasPrefix(m, "```") {
				fenced = !fenced
			}
			if n := len(m) - len(strings.TrimLeft(m, "#")); !fenced && n > 0 && n <= level && strings.HasPrefix(m[n:], " ") {
				break
			}
			b.WriteString(m)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("spec/README.md has no section %q", heading)
}

// firstBlock returns the first fenced block of a language ("text",
// "plan"), fences included, or the first table.
func firstBlock(body, kind string) (string, error) {
	lines := strings.SplitAfter(body, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case kind == "table" && strings.HasPrefix(l, "|"):
			j := i
			for j < len(lines) && strings.HasPrefix(lines[j], "|") {
				j++
			}
			return strings.Join(lines[i:j], ""), nil
		case strings.HasPrefix(l, "```"):
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
				j++
			}
			if strings.TrimSpace(l) == "```"+kind {
				return strings.Join(lines[i:min(j+1, len(lines))], ""), nil
			}
			i = j
		}
	}
	return "", fmt.Errorf("no %s block", kind)
}

// TestPrimer checks that primer.md is what the language reference gives
// today, and that each example is an answer that follows the rules: it
// checks against the declarations of its context, with no error, under
// the rules of an eager turn (the strictest) and of generate.
func TestPrimer(t *testing.T) {
	spec, err := os.ReadFile("../../spec/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := makePrimer(string(spec))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("primer.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, primer); diff != "" {
		t.Errorf("primer.md is out of date; run go test ./vm/agent -run TestPrimer -update (-want +got):\n%s", diff)
	}
	// Each variant's examples check as its plans are checked: without a
	// model to fill holes, without an evaluator, with both.
	for _, variant := range []compiler.Config{{HasEvaluator: true}, {NoFiller: true}, {NoFiller: true, HasEvaluator: true}, {}} {
		examples := primerExamples(primerFor(variant))
		if len(examples) < 5 {
			t.Fatalf("the primer has %d plan examples, want at least 5", len(examples))
		}
		for _, ex := range examples {
			f, diags := lang.Parse("context.plan", []byte(ex.context))
			if diags.HasErrors() {
				t.Fatalf("a context does not parse:\n%s\n%s", ex.context, diags)
			}
			c := ContextOf(f)
			cfg := variant
			cfg.Tools = c.Tools
			for _, rules := range []checkRules{{}, {settings: true, approve: true}} {
				ch := checkAnswer("example", ex.answer, c.prelude(nil, nil), &c, cfg, rules)
				if ch.diags.HasErrors() {
					t.Errorf("a primer example does not check against its context (%+v):\n%s\n%s\n%s", variant, ex.context, ex.answer, ch.diags)
				}
				for _, d := range ch.diags {
					if d.Code == lang.UnjudgedCriterion || d.Code == lang.NoFiller {
						t.Errorf("a primer example for %+v teaches what its plans cannot use:\n%s\n%s", variant, ex.answer, d)
					}
				}
			}
		}
	}
	if strings.Contains(primerFor(compiler.Config{}), `expect "`) || !strings.Contains(primerFor(compiler.Config{HasEvaluator: true}), `expect "sentence"`) {
		t.Error("criteria in words are taught where no evaluator judges them, or not where one does")
	}
}

type primerExample struct{ context, answer string }

// primerExamples reads the examples of the primer: each answer block,
// with the context block before it, if any.
func primerExamples(primer string) []primerExample {
	var out []primerExample
	re := regexp.MustCompile("(?s)(?:Context:\n```plan\n(.*?)```\nAnswer:\n)?```plan\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(primer, -1) {
		out = append(out, primerExample{context: m[1], answer: m[2]})
	}
	return out
}
