package agent

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	{"4.10 `output`", "", []string{"text", "plan"}},
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
			b.WriteString("\n" + block)
		}
	}
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
// today, and that its plan examples parse.
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
	n := 0
	for _, m := range regexp.MustCompile("(?s)```plan\n(.*?)```").FindAllStringSubmatch(primer, -1) {
		n++
		if _, diags := lang.Parse("primer.plan", []byte(m[1])); diags.HasErrors() {
			t.Errorf("a primer example does not parse:\n%s\n%s", m[1], diags)
		}
	}
	if n < 5 {
		t.Errorf("the primer has %d plan examples, want at least 5", n)
	}
}
