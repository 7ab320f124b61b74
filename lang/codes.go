package lang

import "slices"

// Code identifies the kind of a Diagnostic. Codes are stable: programs that
// feed diagnostics back to a model, and tests, may match on them.
type Code string

// The diagnostic codes. Each is documented, with an example plan that
// produces it, by CodeDocs; `obelisk explain CODE` prints that text.
const (
	ParseError         Code = "parse-error"
	ImportError        Code = "import-error"
	DuplicateDecl      Code = "duplicate-declaration"
	UnknownType        Code = "unknown-type"
	UnknownTool        Code = "unknown-tool"
	UnknownArgument    Code = "unknown-argument"
	MissingArgument    Code = "missing-argument"
	DuplicateArgument  Code = "duplicate-argument"
	TypeMismatch       Code = "type-mismatch"
	UndefinedReference Code = "undefined-reference"
	ConflictingSlot    Code = "conflicting-slot"
	Cycle              Code = "cycle"
	InvalidOption      Code = "invalid-option"
	LimitExceeded      Code = "limit-exceeded"
	UnusedSlot         Code = "unused-slot"
	UnusedResult       Code = "unused-result"
	Unreachable        Code = "unreachable"
	UnhandledError     Code = "unhandled-error"
	UnapprovedEffect   Code = "unapproved-effect"
	MultipleWriters    Code = "multiple-writers"
	ExpectFailed       Code = "expect-failed"
	ToolMismatch       Code = "tool-mismatch"
	DuplicateKey       Code = "duplicate-key"
	EmptyPlan          Code = "empty-plan"
	UnjudgedCriterion  Code = "unjudged-criterion"
	ReferenceInString  Code = "reference-in-string"
	RoutingHint        Code = "routing-hint"
	NoFiller           Code = "no-filler"
	// ChangedIrreversible is the code of a step refused when it runs (the
	// checker cannot know what ran before): see vm.History.
	ChangedIrreversible Code = "changed-irreversible-step"
	MaybeUnwritten      Code = "maybe-unwritten"
)

// CodeDoc documents a diagnostic code.
type CodeDoc struct {
	Code     Code
	Severity Severity
	Summary  string
	// Example is a plan that produces the code when checked: its JSON
	// form when it starts with [ or {, else .plan text.
	Example string
	// Fix says how to repair a plan that has the problem.
	Fix string
}

// CodeDocs returns the documentation of every code, sorted by code.
func CodeDocs() []CodeDoc {
	docs := []CodeDoc{
		{ParseError, SeverityError,
			"the text is not a well-formed plan: a token is missing or out of place, or a reference or output path is malformed",
			"tool f(x: int) -> int\nf(x: 1) -> †state.\n",
			"Write the statement as the grammar says; the message names what was expected."},
		{ImportError, SeverityError,
			"a tools file named by `import` or given by the operator (compiler.Config.Tools) cannot be read, is not a tool list, or has a wrong http or command block; or a plan imports a file it may not (outside its own directory, not a regular .json file, over 4 MiB)",
			"import \"missing-tools.json\"\n",
			"Check the path (it is relative to the plan file, and stays inside its directory), that the file holds MCP or OpenAI tool definitions, and what the message says of the block. A problem inside an imported file is shown by position only: give the checker the file as the operator's tools (compiler.Config.Tools) to see it."},
		{DuplicateDecl, SeverityError,
			"a type, tool, sub-plan, label, input field or state slot is declared twice, or a sub-plan takes the name of a tool the operator defines",
			"tool f() -> int\ntool f() -> string\n",
			"Rename or remove one of the declarations."},
		{UnknownType, SeverityError,
			"a type name is neither built in nor declared with `type`",
			"tool f(x: Strng) -> int\n",
			"Use a built-in type (string, int, number, bool, null, any, object) or declare the type."},
		{UnknownTool, SeverityError,
			"a call names a tool or sub-plan that is not declared, imported or provided",
			"tool issueRefund(amount: number) -> object\nissueRefnd(amount: 5) -> †state.receipt\n",
			"Call one of the available tools; the message suggests the closest name."},
		{UnknownArgument, SeverityError,
			"a call passes an argument the tool does not declare",
			"tool f(x: int) -> int\nf(x: 1, y: 2) -> †state.r\n",
			"Remove the argument or use the parameter name the tool declares."},
		{MissingArgument, SeverityError,
			"a call omits a required parameter",
			"tool f(x: int, y: int) -> int\nf(x: 1) -> †state.r\n",
			"Pass the parameter; parameters declared with `?` may be omitted."},
		{DuplicateArgument, SeverityError,
			"a call passes the same argument twice",
			"tool f(x: int) -> int\nf(x: 1, x: 2) -> †state.r\n",
			"Pass each argument once."},
		{TypeMismatch, SeverityError,
			"a value's type does not fit where it is used: an argument against its parameter, a field the slot's type does not have, or a CEL expression that does not type-check",
			"tool f(x: int) -> int\nf(x: \"one\") -> †state.r\n",
			"Pass a value of the parameter's type, or follow only fields the slot's type declares."},
		{UndefinedReference, SeverityError,
			"a reference reads a state slot that no call writes, or an input field the input does not declare",
			"tool f(x: int) -> int\nf(x: †state.missing) -> †state.r\n",
			"Write the slot with some call's output path, declare the input field, or fix the spelling."},
		{ConflictingSlot, SeverityError,
			"two writers give one slot incompatible types, or a slot's declared state type disagrees with its writer's output type",
			"tool f() -> int\ntool g() -> string\nf() -> †state.v\ng() -> †state.v\n",
			"Write each slot with one type: rename one of the slots or change the declared type."},
		{Cycle, SeverityError,
			"calls depend on each other in a loop, so none of them can start",
			"tool f(x: int) -> int\na: f(x: †state.b) -> †state.a\nb: f(x: †state.a) -> †state.b\n",
			"Break the loop: a call may not read, directly or through others, a slot it writes."},
		{InvalidOption, SeverityError,
			"a call option or plan setting has a value out of range or conflicts with the plan's mode",
			"tool f() -> int\nf() -> †state.r\n  retry -1\n",
			"Use a value in range: retry counts and limits are non-negative, durations positive."},
		{LimitExceeded, SeverityError,
			"the plan is larger than the configured limits for untrusted plans (steps, fan-out, nesting, expression cost)",
			"",
			"Write the calls of one tool that differ only in their arguments as one `for each` (one step, however many elements), leave out steps the goal does not need, lower the `max` of a `for each` or split its list, or raise the limit if the plan is trusted."},
		{UnusedSlot, SeverityWarning,
			"a slot is written but nothing reads it (only reported when the plan has an `output` that defines its result)",
			"tool f() -> int pure\nf() -> †state.r\noutput 1\n",
			"Read the slot. Otherwise, for a call with an effect (idempotent or irreversible), drop the output path: the call still runs for its effect. For a pure call, remove the step: a pure call whose result nobody reads does nothing."},
		{UnusedResult, SeverityWarning,
			"a pure call's result is written nowhere, so the call does nothing (a call with an effect needs no output path: the effect is the point)",
			"tool f() -> int pure\nf()\n",
			"Write the result to a slot that something reads (-> †state.name), or remove the step."},
		{Unreachable, SeverityWarning,
			"a call can never run: its `when` condition is constant false, or false whenever it is evaluated (!has() of a slot it reads, which is written by then), or it only reads the error slot of a call that cannot fail",
			"tool f() -> int\nf() -> †state.r\n  when false\n",
			"Remove the call or fix its condition."},
		{UnhandledError, SeverityWarning,
			"a call sends its error to a slot (a || b) that nothing reads, so a failure would pass unnoticed",
			"tool f() -> int\ntool g(x: int) -> int\nf() -> †state.ok || †state.err\ng(x: †state.ok) -> †state.r\n",
			"Read the error slot (report or recover from the failure) or drop the `|| †state.err` alternative."},
		{UnapprovedEffect, SeverityWarning,
			"an irreversible call has no approval gate before it (an error in strict mode: compiler.Config.Strict)",
			"tool pay(amount: number) -> object irreversible\npay(amount: 5) -> †state.receipt\n",
			"Add `approve` to the call or to a call it depends on, or `approve` the whole plan. A tool's effect is the operator's to declare: a plan cannot make a tool less dangerous than its definition says."},
		{ToolMismatch, SeverityError,
			"a plan's declaration of a tool the operator defines (a tools file the operator gives (compiler.Config.Tools), an MCP server, a built-in tool), or an imported file's, does not agree with the operator's definition: a parameter it lacks or types otherwise, a required parameter left out or made optional, a result that does not fit, or a weaker effect",
			"tool http.request(url: string, method?: string, body?: any) -> any pure\nhttp.request(url: \"https://bank.example/transfer\", method: \"POST\") -> †state.r\n",
			"Drop the declaration (`tool name` alone takes the operator's signature), or declare what the operator's definition says: its parameters and types, and an effect at least as strong (pure < idempotent < irreversible)."},
		{MultipleWriters, SeverityWarning,
			"two unconditional calls write the same slot, so the slot's value depends on which finishes last",
			"tool f() -> int\nf() -> †state.v\nf() -> †state.v\n",
			"Write each slot once, or guard the writers with exclusive `when` conditions."},
		{DuplicateKey, SeverityError,
			"an object of a JSON plan or tools file (a call, a message, an argument, a schema) has the same key twice, which JSON readers take differently: most keep the last value, some the first",
			"[{\"_tool\": \"lookupOrder\", \"id\": 7, \"_tool\": \"deleteOrder\"}]\n",
			"Give each key once. A program that wrote the plan and a person or filter who read it may have seen different values; check which one was meant."},
		{EmptyPlan, SeverityError,
			"the plan has no steps and no output, so it does nothing: often a model's answer that lost its plan, or an empty file",
			"tool f() -> int pure\n",
			"Write the steps (tool(arg: value) -> †state.slot) and, if the plan has a result, an output; in JSON, the calls go in the plan message's \"plan\" array or in a bare array of calls."},
		{UnjudgedCriterion, SeverityWarning,
			"a step has a criterion in words (`expect \"…\"`), which only an evaluator model judges, and none is configured: the run records it as unjudged",
			"tool f() -> string pure\nf() -> †state.r\n  expect \"the answer is polite\"\noutput †state.r\n",
			"Run the plan where an evaluator judges it (obelisk agent, or vm.Options.Evaluator in Go), or state the criterion as a CEL condition on the result: expect size(†state.r) > 0."},
		{ReferenceInString, SeverityWarning,
			"a string holds what looks like a reference (\"Hello $input.name\"), which stays text: a string is never read as a reference",
			"tool greet(text: string) -> string pure\ninput {\n  name: string\n}\ngreet(text: \"Hello $input.name\") -> †state.r\noutput †state.r\n",
			"Write the reference outside the quotes and join the parts with +: \"Hello \" + †input.name. In the JSON form, an argument that is a reference alone is the string \"†input.name\"; one that joins text is {\"_expr\": \"'Hello ' + †input.name\"}."},
		{RoutingHint, SeverityWarning,
			"a step's hint is not one the operator declares: a near miss is taken as the closest hint (or an alias the operator declares), anything else is dropped; or a hint routes elsewhere than the step goes",
			"tool f() -> string pure\nf() -> †state.r\n  hint researcher\noutput †state.r\n",
			"Name a hint the operator declares (compiler.Config.Hints: the checker's messages list them), or remove the hint; a hint never stops a plan, and a dropped one routes nothing."},
		{NoFiller, SeverityError,
			"a hole (`? \"…\"`) or a task is left for a model to complete when it runs, and the plan is checked for a run that has no model to complete it",
			"",
			"Write the value: a reference or CEL when it comes from a result, a constant when it is known; call one tool instead of a task, with `when` on each branch if a rule decides. Or run the plan where a model fills it (vm.Options.Filler)."},
		{ChangedIrreversible, SeverityError,
			"a step of a later turn of an agent, or of a replanned plan, would change a step whose tool is irreversible and which already ran: it writes the same slot, or has the same label and tool, but is another call (other arguments, or another tool); it is refused when it would run, and its tool is not called",
			"",
			"Keep the step that ran: its result is in the state. Repeat it exactly (the same tool, arguments and slot: it is that step, answered from what was recorded, and not called again) or leave it out; to make another call on purpose, give it a label and a slot of its own. A pure or idempotent step may be changed: it runs again with the new arguments."},
		{MaybeUnwritten, SeverityError,
			"the output reads, in an expression, a slot that may be unwritten when the run ends: the step that writes it may be skipped (its `when` is false, it reads what a skipped step did not write, or it fails under on failure skip), or write its error slot instead",
			"tool lookup(id: string) -> {name: string} pure\ninput {\n  known: bool\n}\nlookup(id: \"a1\") -> †state.user\n  when †input.known\noutput †state.user.name + \"!\"\n",
			"Check the slot first, as in has(†state.user) ? †state.user.name : \"nobody\"; read it with a plain reference, which gives null when it is unwritten; give it a value it keeps when no step writes it (state { user: T = … }); or, for a step with an error slot, read the error on the other branch: has(†state.ok) ? … : †state.err.message. A `when has(†state.x)` of a slot the step reads is no condition: the step runs only once what it reads is written."},
		{ExpectFailed, SeverityWarning,
			"a dry run found an `expect` criterion that does not hold on the simulated values",
			"",
			"Check the criterion against the tool's output type; the simulated values follow it."},
	}
	slices.SortFunc(docs, func(a, b CodeDoc) int {
		if a.Code < b.Code {
			return -1
		}
		if a.Code > b.Code {
			return 1
		}
		return 0
	})
	return docs
}
