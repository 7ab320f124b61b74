package agent

import (
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
)

// hintsText lists the operator's routing hints for the context message:
// each hint and what it routes a task to.
func hintsText(hints map[string]compiler.Hint) string {
	if len(hints) == 0 {
		return ""
	}
	names := make([]string, 0, len(hints))
	for n := range hints {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("\n[hints] Who may do a step: a task with `hint NAME` chooses among what the hint routes to (task \"goal\" -> †state.x, then hint NAME on the next line):\n")
	for _, n := range names {
		h := hints[n]
		targets := append([]string(nil), h.Tools...)
		if h.Plan != "" {
			targets = append(targets, "sub-plan "+h.Plan)
		}
		b.WriteString("hint " + n + ": " + strings.Join(targets, ", ") + "\n")
	}
	return b.String()
}
