package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/vm/agent"
)

// What a model reads of the server: its instructions, the primer, and the
// descriptions of its tools. The language is quoted from its reference
// (agent.Primer, generated from spec/README.md); the counts, names and
// defaults come from the tools and the options. TestDescriptions checks
// that each says what the server does.

// The server's tools, by name.
const (
	toolPrimer = "get_primer"
	toolSearch = "search_tools"
	toolCheck  = "check_plan"
	toolDryRun = "dry_run_plan"
	toolRun    = "run_plan"
	toolStatus = "run_status"
	toolResume = "resume_run"
)

// The resources and the prompt.
const (
	primerURI     = "obelisk://primer"
	toolsURI      = "obelisk://tools"
	toolURIPrefix = "obelisk://tools/"
	promptName    = "write_plan"
)

// instructions are what the server tells a client about itself when it
// connects.
const instructions = `Obelisk runs plans of tool calls. Instead of calling tools one at a time, write one plan: it is checked against the tools' signatures before anything runs, its independent calls run in parallel, and only its output comes back. Call ` + toolPrimer + ` once to learn the language, ` + toolSearch + ` to find tools, ` + toolCheck + ` until the plan is clean, then ` + toolRun + `.`

// primer returns the text that teaches a model to write plans for the
// tools of c: how to work with the server, and the language.
func primer(c *catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Obelisk plan mode

Write one plan, a data-flow graph of tool calls in the Obelisk language, instead of calling tools one at a time. The server checks it against the tools' signatures before anything runs, runs its independent calls in parallel, and answers with the plan's output alone: the results in between never reach you.

1. Find the tools with %[1]s (a few words, or a name). It answers with their signatures as tool lines: call a tool by that name with those parameters; its result has the type after ->.
2. Write the plan. You need not declare the tools or write mode. Declare what you pass with %[4]s's input argument in an input block, and end with an output that gives just what you need.
3. %[2]s it, and repair it from the diagnostics (each has a message, a position and often a fix) until ok is true. %[3]s shows the schedule on invented values and calls nothing.
4. %[4]s it. A call of an irreversible tool needs an approval gate: approve "question" on its step, or approve at the top of the plan. A person decides, never you: if the run waits, tell them the command the answer gives, then %[5]s it. A run that takes long goes on; %[6]s gives its result.

The tools: %[7]d (%[8]s).

The language, quoted from its reference:
`, toolSearch, toolCheck, toolDryRun, toolRun, toolResume, toolStatus, len(c.tools), c.summary())
	b.WriteString(agent.Primer())
	return b.String()
}

// descriptions returns the description of each of the server's tools.
func (s *Server) descriptions() map[string]string {
	wait := s.opts.Wait.Round(time.Second) / time.Second
	return map[string]string{
		toolPrimer: "How to write an Obelisk plan: how to work with this server, and the language, quoted from its reference. Read it once, before your first plan.",
		toolSearch: fmt.Sprintf("Finds the tools a plan may call by their names or by words of their descriptions, and answers with their signatures as tool lines (parameters, result type, effect). There are %d (%s): search instead of guessing names; an empty query lists them all.",
			len(s.catalog.tools), s.catalog.summary()),
		toolCheck:  "Checks a plan (plan text, or its JSON form) against the tools' signatures, running nothing. Answers with its diagnostics as JSON, as `obelisk check --format json` prints them: ok, then each problem's severity, code, message, range, excerpt and often a fix. Repair the plan and check it again until ok is true.",
		toolDryRun: "Simulates a plan without calling any tool: the schedule, the values each step would produce (invented from the tools' result types), the output, the approval gates it would stop at, the choices left to the run, and the problems found.",
		toolRun: fmt.Sprintf("Runs a plan with the real tools, and answers with its output and a one-line summary; the steps' results stay in the run's journal. A step of an irreversible tool waits for a person's approval: asked through this client when it can ask, otherwise the run is saved as waiting and the answer says how the person decides. You cannot approve. A run longer than wait seconds (default %d) goes on, and %s gives its result.",
			wait, toolStatus),
		toolStatus: fmt.Sprintf("Answers with a run's status by its ID: its output and summary once it has ended, the approvals it waits for, or how far it has got. With wait, follows it up to that many seconds (default 0). It changes nothing; %s continues a run that stopped.", toolResume),
		toolResume: fmt.Sprintf("Continues a run that stopped: one that waited for a decision a person has since recorded, or whose process ended. Steps that finished do not run again. It approves nothing: a gate still undecided asks the person again, or waits. Waits like %s.", toolRun),
	}
}
