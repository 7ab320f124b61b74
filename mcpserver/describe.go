package mcpserver

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
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
const instructions = `Obelisk runs plans of tool calls. Instead of calling tools one at a time, write one plan: it is checked against the tools' signatures before anything runs, its independent calls run in parallel, and only its output comes back. Call ` + toolPrimer + ` once to learn the language, ` + toolSearch + ` to find tools, then ` + toolRun + ` (it checks the plan first).`

// primer returns the text that teaches a model to write plans for the
// tools of c: how to work with the server, and the language.
func primer(c *catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Obelisk plan mode

Write one plan, a data-flow graph of tool calls in the Obelisk language, instead of calling tools one by one.

1. Find tools with %[1]s: it answers with their signatures (tool lines). Call a tool by that name with those parameters; its result has the type after ->.
2. Write the plan without declaring the tools or mode. Declare what you pass as %[4]s's input in an input block; end with an output that gives just what you need.
3. %[4]s it. When the plan has errors nothing runs, and the answer is the diagnostics (message, position, often a fix): repair the plan and run it again. %[2]s only checks; %[3]s simulates.
4. A call of an irreversible tool needs an approval gate: approve "question" on its step, or approve at the top of the plan. A person decides, never you: if the run waits, give them the command the answer names, then %[5]s it. A long run goes on; %[6]s gives its result.

Tools: %[7]d (%[8]s).

The language, quoted from its reference:
`, toolSearch, toolCheck, toolDryRun, toolRun, toolResume, toolStatus, len(c.tools), c.summary())
	b.WriteString(languagePrimer())
	return b.String()
}

// The primer comes in parts. Its workflow, a complete plan and the shape
// of a step are what get_primer answers by default: a model that writes a
// small plan needs no more, and every byte it reads it carries in every
// later request. The other sections of the language come by name, as a
// plan needs them (a for each, options, CEL), or all at once.
const (
	// primerAll asks for the whole primer.
	primerAll = "all"
	// primerShort are the sections of the default answer.
	primerShortSections = "a complete plan|shape"
)

// primerSections returns the sections of the language primer by name
// (their heading, in lower case, without backticks), and their names in
// the primer's order.
func primerSections() (map[string]string, []string) {
	sections := map[string]string{}
	var names []string
	for _, part := range strings.Split("\n"+languagePrimer(), "\n## ")[1:] {
		heading, _, _ := strings.Cut(part, "\n")
		name := sectionName(heading)
		sections[name] = "## " + strings.TrimRight(part, "\n") + "\n"
		names = append(names, name)
	}
	return sections, names
}

// sectionName is how get_primer names a section of the primer: its
// heading in lower case, without backticks or spaces around it.
func sectionName(heading string) string {
	return strings.ToLower(strings.TrimSpace(strings.ReplaceAll(heading, "`", "")))
}

// shortPrimer returns what get_primer answers by default: the workflow
// and the tools, a complete plan, the shape of a step, and the names of
// the other sections.
func shortPrimer(full string, sections map[string]string, names []string) string {
	workflow, _, _ := strings.Cut(full, "The language, quoted from its reference:")
	var b strings.Builder
	b.WriteString(workflow)
	short := strings.Split(primerShortSections, "|")
	for _, name := range short {
		b.WriteString(sections[name])
		b.WriteString("\n")
	}
	var more []string
	for _, name := range names {
		if !slices.Contains(short, name) {
			more = append(more, name)
		}
	}
	fmt.Fprintf(&b, "More of the language when a plan needs it: %s with section set to one of %s, or %s.\n", toolPrimer, strings.Join(more, ", "), primerAll)
	return b.String()
}

// serverCheck is what the server's checks say of its runs: they have no
// model to fill holes or choose for tasks, and no evaluator to judge
// criteria in words.
func serverCheck() compiler.Config { return compiler.Config{NoFiller: true} }

// languagePrimer is agent.Primer, of what the server's plans may use,
// without the comment that says how it is generated, which means nothing
// to a model.
func languagePrimer() string {
	p := agent.Primer(serverCheck())
	if strings.HasPrefix(p, "<!--") {
		if _, rest, ok := strings.Cut(p, "-->"); ok {
			return strings.TrimLeft(rest, "\n")
		}
	}
	return p
}

// descriptions returns the description of each of the server's tools.
// Every byte of them sits in the model's context: they are short.
func (s *Server) descriptions() map[string]string {
	wait := s.opts.Wait.Round(time.Second) / time.Second
	return map[string]string{
		toolPrimer: "How to write a plan: the workflow, a complete plan and the shape of a step. Read it once, before your first plan; section gives more of the language.",
		toolSearch: fmt.Sprintf("Finds the tools a plan may call, by name or by words of their descriptions, and answers with their signatures. %d tools: %s.",
			len(s.catalog.tools), s.catalog.summary()),
		toolCheck:  "Checks a plan against the tools' signatures, running nothing: answers with its diagnostics as `obelisk check --format json` prints them (severity, code, message, range, excerpt, often a fix).",
		toolDryRun: "Simulates a plan, calling no tool: its schedule, the values each step would produce (invented from the result types), its output, its approval gates and the problems found.",
		toolRun: fmt.Sprintf("Checks a plan and, when it has no errors, runs it with the real tools: answers with its output and a summary, or with the diagnostics. A step of an irreversible tool waits for a person's approval, asked through this client when it can ask; you cannot approve. A run longer than wait seconds (default %d) goes on: %s gives its result.",
			wait, toolStatus),
		toolStatus: "A run's status, by its ID: its output once it has ended, the approvals it waits for, or how far it has got; with wait, follows it that many seconds. It changes nothing.",
		toolResume: "Continues a run that stopped (a person has recorded the decision it waited for, or its process ended); finished steps do not run again. It approves nothing.",
	}
}
