package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

// docs are the documents whose commands TestDocCommands runs, and whose
// links TestDocLinks follows; every Markdown file under docs/ is one too
// (docFiles).
var docs = []string{"README.md", "SECURITY.md", "spec/README.md", "examples/README.md", "temporal/README.md"}

// docsWithoutCommands are the documents that show no command, with why:
// any other that shows none is one the test does not read as it should.
var docsWithoutCommands = map[string]string{
	"docs/ARCHITECTURE.md": "it draws the packages",
}

// docFiles returns the documents of docs and every Markdown file under
// docs/, as paths from the repository's root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("docs/ holds no Markdown file")
	}
	out := slices.Clone(docs)
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// docExpect says what a command of the docs does other than exit 0 with
// nothing in particular to check, as the docs say it. match is a regular
// expression on the command as the doc shows it (continuation lines
// joined by a space).
var docExpect = []struct {
	match  string
	exit   int
	stderr string // what stderr must say
	check  func(t *testing.T, args []string, stdout string)
	why    string
}{
	{match: `^go run \./cmd/obelisk generate --goal "Refund the customer's last order\."$`, exit: exitUsage,
		stderr: "obelisk generate: no model provider is configured",
		why:    `docs/models.md: "With nothing configured, the commands say how to configure a provider and exit with status 2"`},
	{match: `^/tmp/obelisk run --state-dir \$S --run-id refund-1 examples/refund\.plan$`, exit: exitWaiting,
		stderr: "run refund-1 is saved, waiting for a decision",
		why:    `docs/journal.md: a run that reaches an approval gate with nobody to ask "exits with status 3 and says what to run next"`},
	{match: `^/tmp/obelisk resume --state-dir \$S refund-1$`, check: outputHas(`"confirmationId": "RF-2025-0611-48213"`),
		why: "docs/journal.md: the approved run, resumed, completes"},
	{match: `^go run \./cmd/obelisk version$`, check: outputHas("obelisk "), why: "docs/cli.md: version prints the versions"},
	{match: `^go run \./cmd/obelisk fmt examples/[a-z-]+\.plan$`, check: printsFileUnchanged,
		why: `examples/README.md: "the .plan files are written in it, so this prints them unchanged"`},
	{match: `^go run \./cmd/obelisk fmt -l examples/\*\.plan$`, check: outputIs(""),
		why: `examples/README.md: "prints the files that are not" canonical: none`},
	{match: `^/tmp/obelisk run --yes examples/payment-failure\.(plan|json)$`, check: outputHas(`"status": "Failed"`),
		why: `examples/README.md: payment-failure's "output is {status: "Failed", message} and the run completes (exit 0)"`},
	{match: `^/tmp/obelisk run --yes examples/research-briefing\.plan$`, check: outputHas(`"url": "https://briefings.example.com/rag-2023"`),
		why: `examples/README.md: research-briefing's output, with the library's papers summarized by the sub-plan`},
	{match: `^/tmp/obelisk dry-run examples/booking-fallback\.plan$`, check: outputHas("problems:\n  none found"),
		why: `examples/README.md: a dry run "exits 0 when it reports problems: none found"`},
	{match: `^OPENAI_API_KEY=\S+ go run \./cmd/obelisk generate .* -o /tmp/refund\.plan$`, check: wroteRefundPlan,
		why: "docs/models.md: generate writes the plan that checks to -o (run against the fake OpenAI server)"},
	{match: `^ANTHROPIC_API_KEY=\S+ go run \./cmd/obelisk agent `, check: outputHas(`"status": "completed"`),
		why: "docs/models.md: the agent completes the goal (run against the fake Anthropic server)"},
	{match: `--no-mocks --allow-env=WEATHER_URL,WEATHER_TOKEN --allow-net=127\.0\.0\.1:8787 --allow-commands examples/weather\.plan$`,
		check: outputHas(`"city": "Oslo"`), why: "examples/README.md: the output is the made-up forecast for Oslo, from the demo service"},
}

// docNotRun are the commands of the docs the test does not run, each
// with the reason.
var docNotRun = map[string]string{
	"go test ./...": "the whole test suite, this test among it",
	"go test ./toolkit/llm/... ./vm/agent ./cmd/obelisk":       "tests that hold this one",
	"go test ./lang -update":                                   "it rewrites the conformance suite's files",
	"go test ./console -run Browser":                           "part of the whole test suite, which runs the browser tests",
	"go test ./cmd/obelisk -run TestAttacks":                   "part of the whole test suite, this test's package",
	"go build -o /tmp/obelisk-temporal ./cmd/obelisk-temporal": "the Temporal module's command, built and run by that module's own tests (cd temporal && go test ./...)",
}

// TestDocCommands runs every command shown in a code block of the docs
// (docFiles), in the order of each document, from the repository's root,
// as a reader would: a command of the docs must do what they say. A
// command is a line (with its continuation lines) that starts, after
// NAME=VALUE assignments, with go, obelisk and the name of a command,
// /tmp/obelisk, /tmp/toolserver or kill. It exits 0 unless docExpect
// says otherwise, and docNotRun lists those not run, with why. So a
// command added to a doc is tested without more ado, and one the test
// cannot run fails it until it is listed. A go doc command must print
// the documentation it names.
//
// The docs' /tmp/obelisk and go run ./cmd/obelisk are this test binary
// run as obelisk; go build -o /tmp/toolserver builds the demo tool server
// once; its address 127.0.0.1:8787 is a free loopback port; every other
// /tmp/ path is in a directory of the test's, S=$(mktemp -d) is a
// directory of its own, and runs are journaled in a state directory of the
// test's. The commands that need a model provider (an OPENAI_API_KEY or
// ANTHROPIC_API_KEY before them) reach fake servers on loopback
// (toolkit/llm/llmtest) that answer with a plan for the refund example.
func TestDocCommands(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	openAI := llmtest.NewOpenAI(func(*llmtest.Request) llmtest.Reply {
		return llmtest.Text(generatedRefundPlan, llm.Usage{Input: 1600, Output: 105})
	})
	defer openAI.Close()
	anthropic := llmtest.NewAnthropic(func(*llmtest.Request) llmtest.Reply {
		return llmtest.Text(agentRefundPlan, llm.Usage{Input: 1500, Output: 70})
	})
	defer anthropic.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(root, ".obelisk"))
	hadState := err == nil
	matched := map[string]bool{}
	for _, doc := range docFiles(t, root) {
		cmds, err := docCommands(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := docsWithoutCommands[doc]; ok != (len(cmds) == 0) {
			if ok {
				t.Errorf("%s shows commands: take it out of docsWithoutCommands", doc)
			} else {
				t.Errorf("%s shows no command: the test does not read it as it should", doc)
			}
		}
		t.Run(strings.ReplaceAll(doc, "/", "_"), func(t *testing.T) {
			r := &docRunner{t: t, doc: doc, root: root, exe: exe, tmp: t.TempDir(), vars: map[string]string{},
				providers: map[string][]string{
					// A server given by its URL needs a model named: the
					// documented default.
					"OPENAI_API_KEY":    {"OPENAI_BASE_URL=" + openAI.URL + "/v1", "OBELISK_MODEL=gpt-5.5"},
					"ANTHROPIC_API_KEY": {"ANTHROPIC_BASE_URL=" + anthropic.URL},
				}}
			defer r.stopServer()
			for _, c := range cmds {
				r.run(c, matched)
			}
		})
	}
	for _, e := range docExpect {
		if !matched[e.match] {
			t.Errorf("no command of the docs matches %q (%s): update the test", e.match, e.why)
		}
	}
	for c := range docNotRun {
		if !matched[c] {
			t.Errorf("no command of the docs is %q: update docNotRun", c)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".obelisk")); err == nil && !hadState {
		t.Errorf("the docs' commands made %s: they must journal in the test's directory", filepath.Join(root, ".obelisk"))
	}
}

// generatedRefundPlan is the fake OpenAI server's answer to generate: a
// plan for the refund goal that checks, with the 3 steps generate asks
// for at least.
const generatedRefundPlan = `history: checkBillingHistory(customerId: †input.customerId) -> †state.history
refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund
  when †state.history.orders > 0
  approve "Issue this refund?"
ticket: escalateToSupervisor(customerId: †input.customerId, reason: "no orders to refund") -> †state.ticket
  when †state.history.orders == 0
output {
  confirmationId: has(†state.refund) ? †state.refund.confirmationId : ""
  ticketId: has(†state.ticket) ? †state.ticket.ticketId : ""
}
`

// agentRefundPlan is the fake Anthropic server's answer to agent.
const agentRefundPlan = `history: checkBillingHistory(customerId: †input.customerId) -> †state.billingHistory
refund: issueRefund(customerId: †input.customerId, amount: †input.amount) -> †state.refund
  when †state.billingHistory.orders > 0
  approve "Issue this refund?"
output {confirmationId: †state.refund.confirmationId}
`

// docCommand is a command shown in a code block of a doc.
type docCommand struct {
	line int    // where it starts
	text string // as shown, continuation lines joined by a space
}

// docCommands reads the lines of a Markdown file's code blocks, fenced or
// indented, that are commands.
func docCommands(path string) ([]docCommand, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var out []docCommand
	inFence, inIndented, prevBlank := false, false, true
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			inFence, inIndented, prevBlank = !inFence, false, false
			continue
		}
		code := inFence
		if !inFence {
			if strings.HasPrefix(l, "    ") && trimmed != "" && (prevBlank || inIndented) {
				inIndented, code = true, true
			} else if trimmed != "" {
				inIndented = false
			}
			prevBlank = trimmed == ""
		}
		if !code || trimmed == "" {
			continue
		}
		start := i
		text := trimmed
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSpace(strings.TrimSuffix(text, `\`)) + " " + strings.TrimSpace(lines[i])
		}
		if isCommand(text) {
			out = append(out, docCommand{line: start + 1, text: text})
		}
	}
	return out, nil
}

var (
	envAssign = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	mktemp    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\(mktemp -d\)$`)
)

// isCommand reports whether a line of a code block is a command the test
// runs or must list in docNotRun.
func isCommand(text string) bool {
	if mktemp.MatchString(text) {
		return true
	}
	words := strings.Fields(stripComment(text))
	for len(words) > 0 && envAssign.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "go", "/tmp/obelisk", "/tmp/toolserver", "kill":
		return true
	case "obelisk":
		return len(words) > 1 && slices.ContainsFunc(commands(), func(c *command) bool { return c.Name == words[1] })
	}
	return false
}

// stripComment cuts a shell comment (" # ...") outside quotes.
func stripComment(text string) string {
	var quote rune
	for i, r := range text {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && text[i-1] == ' ':
			return strings.TrimSpace(text[:i])
		}
	}
	return text
}

// unquotedOperator returns the first of the shell's operators in text
// outside quotes, which the test does not run; "" when there is none.
func unquotedOperator(text string) string {
	var quote rune
	for _, r := range text {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case r == '\'' || r == '"':
			quote = r
		case strings.ContainsRune("|;<>&`", r):
			return string(r)
		}
	}
	return ""
}

// docRunner runs the commands of one doc, in order.
type docRunner struct {
	t         *testing.T
	doc       string
	root, exe string
	tmp       string              // stands for /tmp
	vars      map[string]string   // set by NAME=$(mktemp -d)
	providers map[string][]string // an API key's variable: the variables that point its client at a fake server
	port      string              // stands for 8787
	server    *exec.Cmd           // the demo tool server started in the background
	toolsrv   string              // the demo tool server's binary, once built
}

func (r *docRunner) run(c docCommand, matched map[string]bool) {
	t := r.t
	where := fmt.Sprintf("%s:%d: %s", r.doc, c.line, c.text)
	if why, ok := docNotRun[c.text]; ok {
		matched[c.text] = true
		t.Logf("%s: not run: %s", where, why)
		return
	}
	if m := mktemp.FindStringSubmatch(c.text); m != nil {
		r.vars[m[1]] = r.mkdir()
		return
	}
	text := stripComment(c.text)
	background := strings.HasSuffix(text, " &")
	text = strings.TrimSuffix(text, " &")
	if op := unquotedOperator(text); op != "" {
		t.Errorf("%s: the test does not run the shell's %s: show the command without it, or list it in docNotRun with the reason", where, op)
		return
	}
	words, err := splitArgs(text)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	var environ []string
	for len(words) > 0 && envAssign.MatchString(words[0]) {
		environ = append(environ, r.expand(words[0]))
		name, _, _ := strings.Cut(words[0], "=")
		if p, ok := r.providers[name]; ok {
			environ = append(environ, p...)
		}
		words = words[1:]
	}
	var args []string
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/obelisk":
		args = words[3:]
	case words[0] == "/tmp/obelisk" || words[0] == "obelisk":
		args = words[1:]
	case len(words) >= 3 && words[0] == "go" && words[1] == "doc":
		r.goDoc(where, words[2:])
		return
	case slices.Equal(words, []string{"go", "build", "-o", "/tmp/obelisk", "./cmd/obelisk"}):
		return // the test binary is the command
	case slices.Equal(words, []string{"go", "build", "-o", "/tmp/toolserver", "./examples/toolserver"}):
		r.buildToolServer(where)
		return
	case words[0] == "/tmp/toolserver" && background:
		r.startServer(where, words[1:])
		return
	case slices.Equal(words, []string{"kill", "%1"}):
		r.stopServer()
		return
	default:
		t.Errorf("%s: the test does not know how to run this: teach it, or list the command in docNotRun with the reason", where)
		return
	}
	if background {
		t.Errorf("%s: obelisk in the background is not run by the test", where)
		return
	}
	for i, a := range args {
		args[i] = r.expand(a)
	}
	args = r.glob(args)
	want := struct {
		exit   int
		stderr string
		check  func(*testing.T, []string, string)
	}{exit: exitOK}
	for _, e := range docExpect {
		if regexp.MustCompile(e.match).MatchString(c.text) {
			matched[e.match] = true
			want.exit, want.stderr, want.check = e.exit, e.stderr, e.check
			break
		}
	}
	cmd := exec.Command(r.exe, args...)
	cmd.Dir = r.root
	cmd.Env = append(docEnviron(r.tmp), environ...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if code != want.exit || !strings.Contains(stderr.String(), want.stderr) {
		t.Errorf("%s: exit %d, want %d (and %q on stderr)\nstdout:\n%s\nstderr:\n%s", where, code, want.exit, want.stderr, stdout.String(), stderr.String())
		return
	}
	if want.check != nil {
		t.Run(fmt.Sprintf("line%d", c.line), func(t *testing.T) { want.check(t, args, stdout.String()) })
	}
}

// docEnviron is the environment of the docs' commands: the test's,
// without the settings of model providers and of obelisk, with runs
// journaled in a directory of the test's, and the test binary acting as
// obelisk.
func docEnviron(tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OBELISK_") || strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "ANTHROPIC_") || name == "WEATHER_URL" || name == "WEATHER_TOKEN" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "OBELISK_TEST_MAIN=1", "OBELISK_STATE_DIR="+filepath.Join(tmp, "state"))
	if os.Getenv("GORACE") == "" {
		// Built with -race, a process sleeps a second as it exits, for
		// reports of other goroutines: many commands would take long.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// expand puts the test's stand-ins for the docs' variables, /tmp paths
// and the tool server's port.
func (r *docRunner) expand(s string) string {
	// /tmp/ first: the stand-ins are paths under it themselves.
	s = strings.ReplaceAll(s, "/tmp/", r.tmp+string(filepath.Separator))
	for name, v := range r.vars {
		s = strings.ReplaceAll(s, "${"+name+"}", v)
		s = strings.ReplaceAll(s, "$"+name, v)
	}
	if r.port != "" {
		s = strings.ReplaceAll(s, "127.0.0.1:8787", "127.0.0.1:"+r.port)
	}
	return s
}

// glob expands the arguments with a * as the shell would, from the root.
func (r *docRunner) glob(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.Contains(a, "*") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(r.root, a))
		if err != nil || len(m) == 0 {
			r.t.Errorf("%s matches no file", a)
		}
		for _, p := range m {
			rel, _ := filepath.Rel(r.root, p)
			out = append(out, rel)
		}
	}
	return out
}

func (r *docRunner) mkdir() string {
	d, err := os.MkdirTemp(r.tmp, "S")
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// goDoc runs go doc as the docs show it: it must find what it names and
// print its documentation.
func (r *docRunner) goDoc(where string, args []string) {
	cmd := exec.Command("go", append([]string{"doc"}, args...)...)
	cmd.Dir = r.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		r.t.Errorf("%s: %v, printing %q\n%s", where, err, out, stderr.String())
	}
}

// buildToolServer builds the demo tool server, once.
func (r *docRunner) buildToolServer(where string) {
	if r.toolsrv != "" {
		return
	}
	bin := r.expand("/tmp/toolserver")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/toolserver")
	cmd.Dir = r.root
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("%s: %v\n%s", where, err, out)
	}
	r.toolsrv = bin
}

// startServer starts the demo tool server in the background, on a free
// loopback port that stands for the docs' 8787, and waits until it says
// it listens.
func (r *docRunner) startServer(where string, args []string) {
	if r.toolsrv == "" {
		r.t.Fatalf("%s: the tool server is started before it is built", where)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	_, r.port, _ = net.SplitHostPort(ln.Addr().String())
	ln.Close()
	for i, a := range args {
		args[i] = r.expand(a)
	}
	cmd := exec.Command(r.toolsrv, args...)
	cmd.Env = docEnviron(r.tmp)
	// The server's stderr is a pipe of the test's own, read to the line
	// that says it listens, then to its end (the requests it logs).
	pr, pw, err := os.Pipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stderr = pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		r.t.Fatalf("%s: %v", where, err)
	}
	r.server = cmd
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "serving the weather API on http://127.0.0.1:"+r.port) {
			go func() {
				io.Copy(io.Discard, pr)
				pr.Close()
			}()
			return
		}
	}
	pr.Close()
	r.t.Fatalf("%s: the tool server stopped before it listened: %v", where, cmd.Wait())
}

func (r *docRunner) stopServer() {
	if r.server == nil {
		return
	}
	r.server.Process.Kill()
	r.server.Wait()
	r.server, r.port = nil, ""
}

func outputHas(want string) func(*testing.T, []string, string) {
	return func(t *testing.T, _ []string, stdout string) {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output does not say %q:\n%s", want, stdout)
		}
	}
}

func outputIs(want string) func(*testing.T, []string, string) {
	return func(t *testing.T, _ []string, stdout string) {
		if stdout != want {
			t.Errorf("the output is %q, want %q", stdout, want)
		}
	}
}

// printsFileUnchanged: fmt prints the file it is given as it is.
func printsFileUnchanged(t *testing.T, args []string, stdout string) {
	b, err := os.ReadFile(filepath.Join("../..", args[len(args)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(b) {
		t.Errorf("fmt changes %s", args[len(args)-1])
	}
}

// wroteRefundPlan: generate wrote the fake model's plan, complete, to the
// file of -o, and the plan checks.
func wroteRefundPlan(t *testing.T, args []string, stdout string) {
	out := args[slices.Index(args, "-o")+1]
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "tool escalateToSupervisor(") || !strings.Contains(string(b), "ticket: escalateToSupervisor(") {
		t.Errorf("the plan written is not the model's, complete:\n%s", b)
	}
	if code, _, stderr := runHere(t, "", "check", out); code != exitOK {
		t.Errorf("the plan written does not check: exit %d\n%s", code, stderr)
	}
}

// TestDocLinks follows every relative link of the docs (docFiles and
// BENCHMARKS.md): the file it names must exist, and its #fragment must be
// a heading of the Markdown file it names, as GitHub makes anchors of
// headings. So a chapter that moves, or a heading that changes, cannot
// leave a link behind.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // by file, from the root
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = headingAnchors(string(b))
		return anchors[file]
	}
	links := 0
	for _, doc := range append(docFiles(t, root), "BENCHMARKS.md") {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(b)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(l.target, "#")
			target := doc
			if file != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					t.Errorf("%s:%d: the link to %s names no file: %v", doc, l.line, l.target, err)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[frag] {
				t.Errorf("%s:%d: the link to %s names no heading of %s", doc, l.line, l.target, target)
			}
		}
	}
	if links < 50 {
		t.Errorf("the docs have %d relative links: the test does not read them as it should", links)
	}
}

// docLink is a link of a Markdown file, outside code.
type docLink struct {
	line   int
	target string
}

var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// markdownLinks returns the targets of the inline links of a Markdown
// text, outside fenced code blocks and code spans.
func markdownLinks(text string) []docLink {
	var out []docLink
	inFence := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range linkTarget.FindAllStringSubmatch(withoutCodeSpans(l), -1) {
			out = append(out, docLink{line: i + 1, target: m[1]})
		}
	}
	return out
}

// withoutCodeSpans blanks the code spans of a line of Markdown.
func withoutCodeSpans(l string) string {
	parts := strings.Split(l, "`")
	for i := 1; i < len(parts); i += 2 {
		if i < len(parts)-1 {
			parts[i] = ""
		}
	}
	return strings.Join(parts, "`")
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, punctuation other than - and _ dropped,
// spaces made -, and -1, -2, … after a repeated one.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		anchor := a.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		out[anchor] = true
	}
	return out
}

// TestDocGoQuotes holds the Go code the docs show to the examples it
// quotes: the lines of every go code block of README.md and docs/*.md
// must be lines of one Example file (example_test.go, example_*_test.go),
// one after the other (indentation aside), so the code the docs show is
// compiled and run by go test, and changes with it.
func TestDocGoQuotes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var examples []string // each file's lines, trimmed, joined by \n
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if name := d.Name(); !d.IsDir() && (name == "example_test.go" || strings.HasPrefix(name, "example_") && strings.HasSuffix(name, "_test.go")) {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples = append(examples, "\n"+strings.Join(trimmedLines(string(b)), "\n")+"\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	quotes := 0
	for _, doc := range docFiles(t, root) {
		if doc != "README.md" && !strings.HasPrefix(doc, "docs/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range goBlocks(string(b)) {
			quotes++
			want := "\n" + strings.Join(trimmedLines(q.text), "\n") + "\n"
			if !slices.ContainsFunc(examples, func(e string) bool { return strings.Contains(e, want) }) {
				t.Errorf("%s:%d: the Go code is not quoted from an Example file:\n%s", doc, q.line, q.text)
			}
		}
	}
	if quotes == 0 {
		t.Error("README.md shows no Go code: the test does not read it as it should")
	}
}

// docBlock is a fenced code block of a Markdown file.
type docBlock struct {
	line int // of its first line of code
	text string
}

// goBlocks returns the fenced code blocks of a Markdown text tagged go.
func goBlocks(text string) []docBlock {
	var out []docBlock
	var cur []string
	start, in := 0, false
	for i, l := range strings.Split(text, "\n") {
		switch trimmed := strings.TrimSpace(l); {
		case !in && trimmed == "```go":
			in, start, cur = true, i+2, nil
		case in && trimmed == "```":
			in = false
			out = append(out, docBlock{line: start, text: strings.Join(cur, "\n")})
		case in:
			cur = append(cur, l)
		}
	}
	return out
}

// trimmedLines returns the lines of a text that are not blank, without
// their indentation.
func trimmedLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
