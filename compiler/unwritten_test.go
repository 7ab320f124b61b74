package compiler

import (
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// guardedPlan is a step guarded by has() of a slot it waits for, whose
// writer WRITER has no condition and no error slot unless the case gives
// it one, and an output that reads the guarded step's slot.
const guardedPlan = `tool lookup(id: string) -> {name: string, nick?: string} pure
tool greet(name: string) -> string pure
input {
  known: bool
}
WRITER
greeting: greet(name: †state.user.name) -> †state.greeting
  when GUARD
output †state.greeting + "!"
`

func guarded(writer, guard string) string {
	return strings.NewReplacer("WRITER", writer, "GUARD", guard).Replace(guardedPlan)
}

// TestGuardOfAWaitedSlot: a step's has() of a slot it reads is true
// whenever its condition is evaluated, since the step is due only once
// what it reads is written; such a condition is no condition of its slot,
// so the output reads it without a check. It was refused as a
// type-mismatch.
func TestGuardOfAWaitedSlot(t *testing.T) {
	for _, guard := range []string{
		"has(†state.user)",
		"has(†state.user) && true",
		"has(†state.user) || †input.known",
		"!(!has(†state.user))",
		"true",
	} {
		info, diags := checkSource("p.plan", []byte(guarded(`lookup(id: "a1") -> †state.user`, guard)), Config{})
		if len(diags) > 0 {
			t.Errorf("when %s:\n%s", guard, diagText(diags))
			continue
		}
		if got := info.Main.OutputType.String(); got != "string" {
			t.Errorf("when %s: output type %s, want string", guard, got)
		}
	}
	// In a sub-plan, has() reads its own state.
	src := `tool lookup(id: string) -> {name: string} pure
tool greet(name: string) -> string pure
plan hello(id: string) -> string {
  lookup(id: †input.id) -> †state.user
  greet(name: †state.user.name) -> †state.greeting
    when has(†state.user)
  output †state.greeting + "!"
}
hello(id: "a1") -> †state.r
output †state.r
`
	if _, diags := checkSource("p.plan", []byte(src), Config{}); len(diags) > 0 {
		t.Errorf("sub-plan:\n%s", diagText(diags))
	}
	// A for each writes its list once it completes.
	src = `tool lookup(id: string) -> {name: string} pure
tool greet(names: [string]) -> string pure
for each id in ["a1", "b2"] max 2: lookup(id: †id) -> †state.users
greet(names: †state.users.map(u, u.name)) -> †state.greeting
  when has(†state.users)
output †state.greeting + "!"
`
	if _, diags := checkSource("p.plan", []byte(src), Config{}); len(diags) > 0 {
		t.Errorf("for each:\n%s", diagText(diags))
	}
}

// TestGuardJSON: the JSON form's _when is a guard alike, and the fix of
// a read that may find its slot unwritten speaks of the JSON form.
func TestGuardJSON(t *testing.T) {
	const plan = `[{"type": "tool", "tool": {"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "outputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}, "annotations": {"readOnlyHint": true}}},
 {"type": "tool", "tool": {"name": "greet", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
  "outputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}}},
 {"type": "plan", "plan": [
   {"_tool": "lookup", "id": "a1", "_outputPath": "$state.user"},
   {"_tool": "greet", "name": "$state.user.name", "_when": "GUARD", "_outputPath": "$state.greeting"}
 ], "output": {"_expr": "$state.greeting + '!'"}}]`
	if _, diags := checkSource("p.json", []byte(strings.Replace(plan, "GUARD", "has($state.user)", 1)), Config{}); len(diags) > 0 {
		t.Errorf("guarded:\n%s", diagText(diags))
	}
	_, diags := checkSource("p.json", []byte(strings.Replace(plan, "GUARD", "has($state.user) && 1 > 2", 1)), Config{})
	if len(diags) != 1 || diags[0].Code != lang.MaybeUnwritten || diags[0].Fix == nil || !strings.Contains(diags[0].Fix.Message, `{"type": "state", "greeting": …}`) {
		t.Errorf("conditional:\n%s", diagText(diags))
	}
}

// TestGuardKeepsWhatMayBeUnwritten: a guard that is no condition of its
// own still leaves the step's slot unwritten when what it waits for may
// be; so does a guard that checks anything else. Reading such a slot in
// the output is a maybe-unwritten error, with a fix that fits the cause.
func TestGuardKeepsWhatMayBeUnwritten(t *testing.T) {
	const writer = `lookup(id: "a1") -> †state.user`
	cases := []struct {
		name, src, why, fix string
	}{
		{"writer with a condition", guarded(writer+"\n  when †input.known", "has(†state.user)"),
			"step lookup, which it waits for, runs only when †input.known", "state { greeting: string = … }"},
		{"writer with an error slot", guarded(`lookup(id: "a1") -> †state.user || †state.err
report: greet(name: †state.err.message) -> †state.report`, "has(†state.user)"),
			"step lookup, which it waits for, writes †state.err instead when it fails", "has(†state.greeting) ? … : †state.err.message"},
		{"on failure skip", "on failure skip\n" + guarded(writer, "has(†state.user)"),
			"under on failure skip, step lookup, which it waits for, is skipped when it fails", "state { greeting: string = … }"},
		{"another condition", guarded(writer, "has(†state.user) && †input.known"),
			"step greeting, which writes it, runs only when has(†state.user) && †input.known", "has(†state.greeting) ? … : …"},
		{"an optional field", guarded(writer, "has(†state.user.nick)"),
			"runs only when has(†state.user.nick)", "has(†state.greeting) ? … : …"},
		{"a for each with a condition", `tool lookup(id: string) -> {name: string} pure
tool greet(names: [string]) -> string pure
input {
  known: bool
}
for each id in ["a1", "b2"] max 2: lookup(id: †id) -> †state.users
  when †input.known
greet(names: †state.users.map(u, u.name)) -> †state.greeting
  when has(†state.users)
output †state.greeting + "!"
`, "runs only when †input.known", "has(†state.greeting) ? … : …"},
		{"a sub-plan's writer with a condition", `tool lookup(id: string) -> {name: string} pure
tool greet(name: string) -> string pure
plan hello(id: string, known: bool) -> string {
  lookup(id: †input.id) -> †state.user
    when †input.known
  greet(name: †state.user.name) -> †state.greeting
    when has(†state.user)
  output †state.greeting + "!"
}
hello(id: "a1", known: true) -> †state.r
output †state.r
`, "step lookup, which it waits for, runs only when †input.known", "has(†state.greeting) ? … : …"},
	}
	for _, c := range cases {
		_, diags := checkSource("p.plan", []byte(c.src), Config{})
		var found *lang.Diagnostic
		for _, d := range diags {
			if d.Code == lang.TypeMismatch {
				t.Errorf("%s: an unwritten read is a type-mismatch:\n%s", c.name, diagText(diags))
			}
			if d.Code == lang.MaybeUnwritten && strings.Contains(d.Message, "†state.greeting may be unwritten") && found == nil {
				found = d
			}
		}
		switch {
		case found == nil:
			t.Errorf("%s: no maybe-unwritten error for †state.greeting:\n%s", c.name, diagText(diags))
		case found.Severity != lang.SeverityError || !strings.Contains(found.Message, c.why+")"):
			t.Errorf("%s: %s: %s, want the reason %q", c.name, found.Severity, found.Message, c.why)
		case found.Fix == nil || !strings.Contains(found.Fix.Message, c.fix):
			t.Errorf("%s: fix %+v, want it to say %q", c.name, found.Fix, c.fix)
		}
	}
}

// TestGuardNeverTrue: !has() of a slot a step reads is false whenever the
// step's condition is evaluated, so the step never runs.
func TestGuardNeverTrue(t *testing.T) {
	_, diags := checkSource("p.plan", []byte(guarded(`lookup(id: "a1") -> †state.user`, "!has(†state.user)")), Config{})
	var got []string
	for _, d := range diags {
		if d.Code == lang.Unreachable {
			got = append(got, d.Message)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "step greeting never runs: its condition is false whenever it is evaluated") {
		t.Errorf("unreachable warnings %q:\n%s", got, diagText(diags))
	}
}
