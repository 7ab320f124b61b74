package mcpserver

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/vm/agent"
)

// TestDescriptions checks that what a model reads of the server says what
// the server does: the language is the reference's (agent.Primer, which
// TestPrimer keeps in line with spec/README.md), the counts and names are
// the tools', every tool named exists, the defaults are the options', and
// a plan written as the primer says checks.
func TestDescriptions(t *testing.T) {
	h := start(t, Options{Wait: 7 * time.Second}, nil)
	s := h.server
	if !strings.HasSuffix(agent.Primer(serverCheck()), languagePrimer()) || !strings.HasSuffix(s.Primer(), languagePrimer()) || len(languagePrimer()) < len(agent.Primer(serverCheck()))-300 {
		t.Errorf("the primer does not end with the language primer")
	}
	if strings.Contains(s.Primer(), "## Holes") || strings.Contains(s.Primer(), "## Tasks") || strings.Contains(s.Primer(), "`hint NAME`") || strings.Contains(s.Primer(), `expect "`) || !strings.Contains(agent.Primer(compiler.Config{}), "## Holes") || !strings.Contains(agent.Primer(compiler.Config{HasEvaluator: true}), `expect "sentence"`) {
		t.Errorf("the server's primer teaches holes, tasks or criteria in words, which its runs cannot fill or judge")
	}
	if want := fmt.Sprintf("Tools: %d (%s).", len(s.catalog.tools), s.catalog.summary()); !strings.Contains(s.Primer(), want) || s.catalog.summary() != "charge (1), lookup (1), slow (1)" {
		t.Errorf("the primer does not say %q", want)
	}
	names := map[string]bool{}
	descs := map[string]string{}
	for tool, err := range h.client.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
		descs[tool.Name] = tool.Description
	}
	texts := map[string]string{"instructions": instructions, "primer": strings.TrimSuffix(s.Primer(), languagePrimer())}
	for name, d := range descs {
		texts[name] = d
		if d != s.descriptions()[name] {
			t.Errorf("%s: the client reads another description", name)
		}
	}
	mentioned := regexp.MustCompile(`\b[a-z]+_[a-z_]+\b`)
	for where, text := range texts {
		for _, m := range mentioned.FindAllString(text, -1) {
			if !names[m] {
				t.Errorf("%s names %s, which is not a tool of the server", where, m)
			}
		}
	}
	if !strings.Contains(descs[toolRun], "(default 7)") {
		t.Errorf("run_plan's description does not give the default wait: %s", descs[toolRun])
	}
	if !strings.Contains(descs[toolSearch], "3 tools: charge (1), lookup (1), slow (1).") {
		t.Errorf("search_tools's description does not count the tools: %s", descs[toolSearch])
	}
	// The primer says how to write a gate and an input; a plan written so
	// checks, and one without the gate does not.
	for _, claim := range []string{`approve "question" on its step`, "in an input block", "without declaring the tools or mode"} {
		if !strings.Contains(s.Primer(), claim) {
			t.Errorf("the primer no longer says %q", claim)
		}
	}
	if c := s.compile(refund); !c.ok() {
		t.Errorf("a plan written as the primer says does not check: %s", c.report(nil))
	}
}
