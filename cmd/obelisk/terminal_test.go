package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/obelisk-plan/obelisk/internal/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/vm"
)

// runHere runs obelisk in this process, with stdin, and returns the exit
// status and what it wrote.
func runHere(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &env{Env: cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb},
		getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// hidingText is what a plan or a tool may put in text that a terminal
// shows: a sequence that erases the line, a bare carriage return that goes
// back to its start, a C1 control sequence introducer (as UTF-8 and as a
// lone byte) and a right-to-left override.
var hidingText = []string{"\x1b", "\r", "\u009b", "\x9b", "\u202e"}

// assertNoneRaw fails when text holds a character of hidingText as it is.
func assertNoneRaw(t *testing.T, what, text string) {
	t.Helper()
	for _, h := range hidingText {
		if strings.Contains(text, h) {
			t.Errorf("%s holds %q raw:\n%s", what, h, text)
		}
	}
	for i, r := range text {
		if r == utf8.RuneError && !strings.HasPrefix(text[i:], "\ufffd") {
			t.Errorf("%s holds a byte that is not UTF-8 at %d:\n%q", what, i, text)
			break
		}
	}
}

// TestApprovalPromptEscapes: the approval prompt shows a step's message
// and arguments, and a plan's text and diff, with their control
// characters escaped, so that none can erase or reorder what is approved.
func TestApprovalPromptEscapes(t *testing.T) {
	for _, req := range []vm.ApprovalRequest{
		{Step: "pay\x1b[2K", Tool: "http.request", Message: "small refund\x1b[2K\r\u009b1A\u202e",
			Args: map[string]any{"amount": "1\x1b[2K\r9999", "to\u202e": "acct\u009b2J", "note": "\x9b"}},
		{Message: "the whole plan\r\x1b[1A", Plan: "tool pay(amount: number) -> object irreversible\n# \x1b[1A\x1b[2K\npay(amount: 9999) -> †state.r \u202e\n"},
		{Round: 1, Changed: []string{"pay"}, Diff: "+ pay(amount: 9999)\x1b[1A\x1b[2K\r\n"},
	} {
		var out bytes.Buffer
		a := &terminalApprover{in: bufio.NewReader(strings.NewReader("n\n")), out: &out}
		dec, err := a.Approve(context.Background(), req)
		if err != nil || dec.Approved {
			t.Fatalf("decision %+v, %v; want a rejection", dec, err)
		}
		got := out.String()
		assertNoneRaw(t, "the prompt", got)
		for _, want := range []string{`\x1b`, `Approve? [y/n] `} {
			if !strings.Contains(got, want) {
				t.Errorf("the prompt does not show %q:\n%s", want, got)
			}
		}
		if req.Step != "" {
			for _, want := range []string{`Step pay\x1b[2K (http.request) asks for approval: small refund\x1b[2K\r\u009b1A\u202e`,
				`"amount": "1\u001b[2K\r9999"`, `"to\u202e": "acct\u009b2J"`, `"note": "\ufffd"`} {
				if !strings.Contains(got, want) {
					t.Errorf("the prompt does not show %q:\n%s", want, got)
				}
			}
		}
	}
}

// TestApprovalPromptEscapesInRun: a plan whose approval message and
// arguments hold control characters, run with --approve: what the person
// sees on standard error holds none of them raw.
func TestApprovalPromptEscapesInRun(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "pay.plan")
	writeFile(t, plan, "pay: echo(value: {amount: \"1\x1b[2K\r9999\", to: \"acct\\u202e\"}) -> †state.r\n  approve \"refund \x1b[1A\x1b[2K\\u009b\"\n\noutput †state.r\n")
	code, stdout, stderr := runHere(t, "n\n", "run", "--no-journal", "--approve", plan)
	if code == exitOK {
		t.Fatalf("a rejected step: exit %d\n%s", code, stdout)
	}
	assertNoneRaw(t, "standard error", stderr)
	for _, want := range []string{`asks for approval: refund \x1b[1A\x1b[2K\u009b`, `"amount": "1\u001b[2K\r9999"`, `"to": "acct\u202e"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("standard error does not show %q:\n%s", want, stderr)
		}
	}
}

// TestToolErrorEscapes: json.select fails with a message that quotes the
// plan's path, escape sequence and all; neither run's failure line nor
// show's table writes it raw.
func TestToolErrorEscapes(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	plan := filepath.Join(dir, "select.plan")
	writeFile(t, plan, "s: json.select(value: {a: 1}, path: \"zz\x1b[2K\r\\u009b\\u202e\") -> †state.s\n\noutput †state.s\n")
	code, stdout, stderr := runHere(t, "", "run", "--state-dir", state, "--run-id", "sel", plan)
	if code != exitInput {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInput, stdout, stderr)
	}
	assertNoneRaw(t, "run's standard error", stderr)
	if !strings.Contains(stderr, `s failed: path "zz\x1b[2K\r\u009b\u202e": no field zz\x1b [invalid-arguments]`) {
		t.Errorf("run's failure line is not shown escaped:\n%s", stderr)
	}

	code, stdout, stderr = runHere(t, "", "show", "--state-dir", state, "sel")
	if code != exitOK {
		t.Fatalf("show: exit %d\n%s", code, stderr)
	}
	assertNoneRaw(t, "show's output", stdout)
	if !strings.Contains(stdout, `no field zz\x1b [invalid-arguments]`) {
		t.Errorf("show does not show the error escaped:\n%s", stdout)
	}
	code, stdout, _ = runHere(t, "", "show", "--state-dir", state, "--events", "sel")
	if code != exitOK {
		t.Fatalf("show --events: exit %d", code)
	}
	assertNoneRaw(t, "show --events", stdout)

	// In JSON, the message is escaped as JSON, and reads back the same.
	for _, args := range [][]string{{"show", "--state-dir", state, "--format", "json", "sel"}, {"show", "--state-dir", state, "--format", "json", "--events", "sel"}} {
		code, stdout, _ = runHere(t, "", args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d", args, code)
		}
		assertNoneRaw(t, strings.Join(args, " "), stdout)
		if !strings.Contains(stdout, `no field zz\u001b"`) {
			t.Errorf("%s: the message is not in it, escaped as JSON:\n%s", args, stdout)
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v", args, err)
			}
		}
	}
	code, stdout, _ = runHere(t, "", "runs", "--state-dir", state)
	if code != exitOK || !strings.Contains(stdout, "sel") {
		t.Fatalf("runs: exit %d\n%s", code, stdout)
	}
	assertNoneRaw(t, "runs", stdout)
}

// TestOutputJSONEscapes: a run's output that holds C1 controls and format
// characters is printed as JSON with them escaped, and decodes to the same
// value.
func TestOutputJSONEscapes(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "out.plan")
	want := "a\u009b2J\u202eb\u200d\u2066\x7f\x1b"
	writeFile(t, plan, "output {text: \"a\\u009b2J\\u202eb\\u200d\\u2066\\u007f\\u001b\"}\n")
	code, stdout, stderr := runHere(t, "", "run", "--no-journal", plan)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	assertNoneRaw(t, "the output", stdout)
	var got struct{ Text string }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Text != want {
		t.Errorf("the output reads back as %q, %v; want %q\n%s", got.Text, err, want, stdout)
	}
}

// TestCheckExcerptEscapes: check quotes a plan line with an escape
// sequence escaped.
func TestCheckExcerptEscapes(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "bad.plan")
	writeFile(t, plan, "tool f(x: string) -> int\nf(x: \"\x1b[2K\r\u202e\", y: 1) -> †state.r\n")
	code, _, stderr := runHere(t, "", "check", plan)
	if code != exitInput {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	assertNoneRaw(t, "check's diagnostics", stderr)
	if !strings.Contains(stderr, `f(x: "\x1b[2K\r\u202e", y: 1)`) {
		t.Errorf("the line is not quoted escaped:\n%s", stderr)
	}
}

// TestDuplicateKeysRefused: a JSON plan, an input, a mocks file or a tools
// file with a key given twice is refused before anything runs.
func TestDuplicateKeysRefused(t *testing.T) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(files, "out.txt")
	writeFile(t, filepath.Join(dir, "dup.json"), `[{"_tool": "echo", "value": "hi", "_tool": "file.write", "path": "out.txt", "content": "x"}]`)
	writeFile(t, filepath.Join(dir, "write.plan"), "input {\n  path: string\n}\n\nfile.write(path: †input.path, content: \"x\") -> †state.w\nask(q: \"?\") -> †state.a\n\noutput †state.w\n")
	writeFile(t, filepath.Join(dir, "write.plan.tools.json"), `{"tools": [{"name": "ask", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}, "annotations": {"readOnlyHint": true}}]}`)
	writeFile(t, filepath.Join(dir, "dup.tools.json"), `{"tools": [{"name": "ask", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}, "annotations": {"readOnlyHint": false, "readOnlyHint": true}}]}`)
	writeFile(t, filepath.Join(dir, "ok.mocks.json"), `{"ask": {"result": "yes"}}`)
	writeFile(t, filepath.Join(dir, "dup.mocks.json"), `{"ask": {"result": "yes"}, "ask": {"result": "no"}}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plan", []string{"run", "--no-journal", "--files", files, filepath.Join(dir, "dup.json")}, `key "_tool" is given twice in one object [duplicate-key]`},
		{"input", []string{"run", "--no-journal", "--files", files, "--tools", filepath.Join(dir, "write.plan.tools.json"), "--mocks", filepath.Join(dir, "ok.mocks.json"),
			"--input", `{"path": "elsewhere.txt", "path": "out.txt"}`, filepath.Join(dir, "write.plan")}, `key "path" is given twice`},
		{"mocks", []string{"run", "--no-journal", "--files", files, "--tools", filepath.Join(dir, "write.plan.tools.json"), "--mocks", filepath.Join(dir, "dup.mocks.json"),
			"--input", `{"path": "out.txt"}`, filepath.Join(dir, "write.plan")}, `key "ask" is given twice`},
		{"tools file", []string{"run", "--no-journal", "--files", files, "--tools", filepath.Join(dir, "dup.tools.json"), "--mocks", filepath.Join(dir, "ok.mocks.json"),
			"--input", `{"path": "out.txt"}`, filepath.Join(dir, "write.plan")}, `key "readOnlyHint" is given twice in one object [duplicate-key]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHere(t, "", tc.args...)
			if code == exitOK || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want a refusal with %q\n%s%s", code, tc.want, stdout, stderr)
			}
			if _, err := os.Stat(written); err == nil {
				t.Fatal("the plan ran: out.txt was written")
			}
		})
	}
	// The same plan, input and mocks without repeats run and write.
	code, _, stderr := runHere(t, "", "run", "--no-journal", "--files", files, "--tools", filepath.Join(dir, "write.plan.tools.json"), "--mocks", filepath.Join(dir, "ok.mocks.json"),
		"--input", `{"path": "out.txt"}`, filepath.Join(dir, "write.plan"))
	if code != exitOK {
		t.Fatalf("the control run: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(written); err != nil {
		t.Errorf("the control run wrote nothing: %v", err)
	}
}

// TestReviewOutputsEscape: what dry-run and plan print for a person to
// review (the steps with their comments, approval gates, values) shows a
// plan's control characters escaped, and plan -o writes a planfile
// without them raw.
func TestReviewOutputsEscape(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "review.plan")
	writeFile(t, plan, "# refund a small amount\x1b[1A\x1b[2K\r\u202e\npay: echo(value: \"9999\x1b[2K\u009b\") -> †state.r\n  approve \"small\x1b[2K refund\"\n\noutput {r: †state.r, note: \"\x1b]0;title\\u0007\"}\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"dry-run", plan}, []string{`step pay: small\x1b[2K refund`, `"note": "\u001b]0;title\u0007"`}},
		{[]string{"dry-run", "--format", "json", plan}, []string{`"note": "\u001b]0;title\u0007"`}},
		{[]string{"plan", "-o", filepath.Join(dir, "review.planfile"), plan}, []string{`# refund a small amount\x1b[1A\x1b[2K\r\u202e`, `echo(value: "9999\u001b[2K\u009b")`}},
	} {
		code, stdout, stderr := runHere(t, "", tc.args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", tc.args, code, stderr)
		}
		assertNoneRaw(t, tc.args[0]+"'s output", stdout)
		assertNoneRaw(t, tc.args[0]+"'s standard error", stderr)
		for _, want := range tc.want {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: %q is not shown:\n%s", tc.args, want, stdout)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "review.planfile"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoneRaw(t, "the planfile", string(b))
	code, _, stderr := runHere(t, "", "apply", "--no-journal", "--yes", filepath.Join(dir, "review.planfile"))
	if code != exitOK {
		t.Errorf("the escaped planfile does not apply: exit %d\n%s", code, stderr)
	}
}
