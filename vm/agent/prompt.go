package agent

import (
	"fmt"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
)

// The modes of the planning prompt.
const (
	// Eager: steps run while the model writes; it sees the new state and
	// goes on (seed 003's default).
	Eager = "eager"
	// Lazy: the model writes the whole plan, which is checked and then
	// run.
	Lazy = "lazy"
	// whole: a plan to be written to a file (obelisk generate).
	whole = "whole"
)

const systemIntro = `You are the planner of an agent. You reach a goal by writing a plan in Obelisk, a language of tool-call plans, and the plan runs.

A plan is a data-flow graph. Each step calls a tool with named arguments and may write its result to a state slot (-> †state.name). A step that reads a slot (†state.name) runs after the step that writes it; steps that share no slot run in parallel. †input.name reads the input, and $ may be written for †. A step that fails stops the plan, unless its error goes to an error slot (-> †state.ok || †state.err) that another step reads.

The language, quoted from its reference. In its examples, a Context block stands for what the context messages give you (the tools, the input, the state), and the Answer block after it is what you would write:
`

// systemPrompt is the planner's system prompt for a mode and an answer
// form: the language primer, of what plans checked with cfg may use,
// and how to answer.
func systemPrompt(mode string, minSteps, maxSteps int, form string, cfg compiler.Config) string {
	var b strings.Builder
	b.WriteString(systemIntro)
	b.WriteString(primerFor(cfg))
	b.WriteString("\nHow to answer:\n")
	if form == FormJSON {
		b.WriteString(jsonRules)
	} else {
		b.WriteString(`- Answer with plan text only: no prose and no Markdown fences. Comments (# …) are fine.
- The tools, the input and the state are declared in the context. Call the tools with the argument names and types of their signatures, read the input and the state; do not declare them again. You may declare types (type Name T) and sub-plans.
- Give every step a label (label: tool(…)) and write each result you need to a state slot.
- When a step's success is not obvious, give it a success criterion: expect "a sentence" for an evaluator to judge, or a CEL expect on its result.
- Every tool states its effect: pure (it only reads), idempotent (it changes something, and calling it again changes nothing more) or irreversible (it changes something for good). Put approve "question" on each step whose tool is irreversible.
`)
	}
	switch {
	case mode == Eager && form == FormJSON:
		b.WriteString(`
Your answer runs while you write it: each call starts as soon as its JSON is complete and the slots it reads are written. Write first the calls that can run now. When you know the result of the goal, give "output" (usually {"_expr": "{…}"} reading †state slots): it is computed once the calls are done, and it ends the goal. With "output": null, you get the new state when the calls are done, and you write the next calls.
`)
	case mode == Eager:
		b.WriteString(`- Do not write mode, on failure or a plan-level approve.

Your answer runs while you write it: each step starts as soon as its text is complete and the slots it reads are written. Write first the steps that can run now. When you know the result of the goal, write output EXPR (usually an object that reads †state slots): it is computed once the steps are done, and it ends the goal. If you write no output, you get the new state when the steps are done, and you write the next steps. A step whose result you already know may give it with result VALUE instead of calling its tool.
`)
	case mode == Lazy && form == FormJSON:
		b.WriteString(`
Write the whole plan, with an "output" that gives the result of the goal. It is checked before it runs: if it has errors, you get the checker's report and answer with the whole corrected plan.
`)
	case mode == Lazy:
		b.WriteString(`- Do not write mode or on failure.

Write the whole plan, with an output that gives the result of the goal. It is checked before it runs: if it has errors, you get the checker's report and answer with the whole corrected plan. You may answer in JSON instead of plan text: {"calls": [{"_tool": "f", "x": "†input.x", "_outputPath": "†state.r"}], "output": {…}}.
`)
	case form == FormJSON:
		fmt.Fprintf(&b, `
Write the whole plan: between %d and %d calls, each one with one bounded outcome, and an "output" that gives the result of the goal. A call with "_forEach" counts as one toward the %[2]d, and as one for each element of its list toward the %[1]d. It is checked: if it has errors, you get the checker's report and answer with the whole corrected plan.
`, minSteps, maxSteps)
	default:
		fmt.Fprintf(&b, `
Write the whole plan: between %d and %d steps, each one call with one bounded outcome, and an output that gives the result of the goal. A for each counts as one step toward the %[2]d, and as one for each element of its list toward the %[1]d. It is checked: if it has errors, you get the checker's report and answer with the whole corrected plan. You may answer in JSON instead of plan text: {"calls": [{"_tool": "f", "x": "†input.x", "_outputPath": "†state.r"}], "output": {…}}.
`, minSteps, maxSteps)
	}
	return b.String()
}

// jsonRules say how to answer in the JSON form, held to a schema.
const jsonRules = `- Answer with one JSON object, the plan in Obelisk's JSON form: {"calls": [CALL, …], "output": OUTPUT}. It is held to a JSON Schema of the tools you may call.
- A call is {"_tool": "name", "_id": "label", ARGUMENTS, "_outputPath": "†state.slot", OPTIONS}: the tool, a label, the arguments by the names of the tool's signature, the slot its result goes to ("†state.ok || †state.err" sends a failure to an error slot), and the options "_when", "_expect" (CEL), "_criterion" (a sentence for an evaluator), "_approve" (a question), "_retry", "_timeout", "_forEach", "_as" and "_max". Give null for an option you do not use and for an optional argument you leave out.
- An argument is a value of its type, a reference written as a string ("†input.name", "†state.slot.field", "†item.url" in a for each), or {"_expr": "EXPR"}: an expression in plan syntax or CEL, such as "†state.refund.amount * 0.5" or "{name: †state.customer.name}". An object of any fields is written as an expression.
- "output" is a reference, {"_expr": "…"}, or null.
- The tools, the input and the state are declared in the context: call the tools, read the input and the state.
- Every tool states its effect: pure (it only reads), idempotent (it changes something, and calling it again changes nothing more) or irreversible (it changes something for good). Give "_approve": "question" to each call whose tool is irreversible.
`

// turnInfo is what a prompt says about the goal's progress.
type turnInfo struct {
	goal  string
	state map[string]any
	// types are the types the writers of the state's slots declared.
	types map[string]*compiler.Type
	// plan is the last answer's steps and output with what became of
	// each step, or the context's plan.
	plan string
	// facts is the truth store.
	facts *truthStore
	// failure, when set, asks for a replan.
	failure *failure
	// rejected is the report of statements that did not check.
	rejected string
	// note is a last word: how many steps remain, or that the last
	// answer did nothing.
	note string
}

// failure is the state of the goal at the failure that asks for a replan:
// what failed, and the steps that completed.
type failure struct {
	what      string
	completed []string
	// refused is set when what failed is a change of an irreversible
	// step that ran, refused: other arguments are not the way out.
	refused bool
}

// contextMessage renders seed 003's context messages and the goal: the
// tools as signatures, the input, the state, the plan so far, the facts.
func contextMessage(c *Context, t *turnInfo) string {
	var b strings.Builder
	b.WriteString("Context:\n\n[tools] The tools you may call:\n")
	b.WriteString(c.toolsText())
	types := ""
	for _, d := range c.Decls {
		if _, ok := d.(*lang.TypeDecl); ok {
			types += formatItem(d)
		}
	}
	if types != "" {
		b.WriteString("\n[types] Declared types (use them; do not declare them again):\n" + types)
	}
	if d := c.inputDecl(); d != nil {
		b.WriteString("\n[input] The input, read as †input.NAME:\n")
		b.WriteString(formatItem(d))
	}
	if d := c.stateDecl(t.state, t.types); d != nil {
		b.WriteString("\n[state] The state: slots written so far (with their values) and declared slots, read as †state.NAME:\n")
		b.WriteString(formatItem(d))
	}
	for _, d := range c.Decls {
		if _, ok := d.(*lang.PlanDecl); ok {
			b.WriteString("\n[sub-plan] Declared (call it like a tool; do not declare it again):\n" + formatItem(d))
		}
	}
	b.WriteString(hintsText(c.Hints))
	if t.plan != "" {
		b.WriteString("\n[plan] The plan so far (# says what became of each step):\n")
		b.WriteString(t.plan)
	}
	if facts := t.facts.text(); facts != "" {
		b.WriteString("\n[facts] What earlier steps established:\n")
		b.WriteString(facts)
	}
	if f := t.failure; f != nil {
		fmt.Fprintf(&b, "\n[failure] %s\n", f.what)
		if len(f.completed) > 0 {
			fmt.Fprintf(&b, "The completed steps (%s) are kept: their results are in the state, and they do not run again.\n", strings.Join(f.completed, ", "))
		}
		if f.refused {
			b.WriteString("Write a new plan for the remaining work only: a step that ran is kept, so write it again exactly or leave it out, and give a new call a label and a slot of its own.\n")
		} else {
			b.WriteString("Write a new plan for the remaining work only, and change approach: do not repeat what failed in the same way (use another tool, other arguments, or an extra step that removes the cause).\n")
		}
	}
	if t.rejected != "" {
		b.WriteString("\n[rejected] These statements of your last answer did not check and did not run (the checker's report; lines and columns are in your answer):\n")
		b.WriteString(t.rejected + "\n")
	}
	fmt.Fprintf(&b, "\nGoal: %s\n", t.goal)
	if t.note != "" {
		b.WriteString(t.note + "\n")
	}
	return b.String()
}

// repairMessage asks for a corrected plan, in the form the answer is
// asked for.
func repairMessage(name, text string, diags lang.Diagnostics, form string) string {
	how := "plan text only"
	if form == FormJSON {
		how = "in the JSON form"
	}
	return "Your plan does not check. The checker's report (JSON: each diagnostic has a code, a message, a range of lines and columns in your answer, an excerpt of its line, and sometimes a fix; errors come first, and \"omitted\" counts the diagnostics left out):\n" +
		report(name, text, diags) + "\n\nAnswer with the whole corrected plan, " + how + "."
}

// annotate renders an answer's steps and output with what became of each
// step, as comments: the [plan] context message of the next turn. Without
// results, the steps have not run yet.
func annotate(items []lang.Item, results map[string]*vm.StepResult) string {
	var b strings.Builder
	for _, it := range items {
		switch it.(type) {
		case *lang.Step, *lang.OutputDecl:
		default:
			continue
		}
		text := strings.TrimRight(lang.FormatItem(it), "\n")
		if st, ok := it.(*lang.Step); ok {
			status := "# did not run"
			if results == nil {
				status = "# not run yet"
			} else if r := results[label(st)]; r != nil {
				status = "# " + describe(r)
			}
			lines := strings.SplitN(text, "\n", 2)
			lines[0] += "  " + status
			text = strings.Join(lines, "\n")
		}
		b.WriteString(text + "\n")
	}
	return b.String()
}

func label(st *lang.Step) string {
	if st.Label == nil {
		return ""
	}
	return st.Label.Name
}

// describe says what became of a step in a few words: of a step written
// again as it ran in an earlier turn, that it already ran, and what became
// of it then.
func describe(r *vm.StepResult) string {
	if r.Repeats != nil {
		return fmt.Sprintf("already ran (%s), not run again: %s", r.Repeats, outcomeOf(r))
	}
	return outcomeOf(r)
}

// outcomeOf says what became of a step in a few words.
func outcomeOf(r *vm.StepResult) string {
	switch {
	case r.Status == vm.StatusCompleted:
		s := "completed"
		for _, v := range r.Verdicts {
			if v.Verdict != vm.VerdictPass {
				s += fmt.Sprintf("; %s: %s", v.Verdict, v.Criterion)
			}
		}
		return s
	case r.Status == vm.StatusFailed && r.Error != nil:
		msg := r.Error.Message
		if r.Handled {
			return "failed into its error slot: " + msg
		}
		return fmt.Sprintf("%s: %s [%s]", strings.TrimPrefix(failedVerb(r), "was "), msg, r.Error.Code)
	case r.Status == vm.StatusSkipped:
		return "skipped: " + r.Reason
	}
	return string(r.Status)
}
