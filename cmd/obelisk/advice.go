package main

import (
	"io"
	"regexp"
	"strings"
	"sync"
)

// The library's errors and diagnostics name what a limit, a grant or a
// setting is by its Go name, in parentheses: "(vm.Options.RunTimeout)",
// "(permission.NetOptions.Allow)", "(compiler.Config.Tools)" (spec/README.md
// lists them). This command's user sets them with flags, so what the
// command prints to people says the flag instead: advise rewrites each
// name, with the words around it where the flag reads better in other
// words, into the flag's advice ("run again with --allow-net=HOST").

// adviceRule rewrites the text a pattern matches; repl may refer to the
// pattern's groups ($1).
type adviceRule struct {
	pattern *regexp.Regexp
	repl    string
}

// adviceRules are applied in order: the rules for a name in its usual
// words before the rule for the name alone. They are compiled when a text
// first holds a mark, not at start-up.
var adviceRules = sync.OnceValue(func() []adviceRule {
	rules := []struct{ pattern, repl string }{
		// The grants (permission.Denial's Grant).
		{`the network is off: allow (\S+) to reach it \(permission\.NetOptions\.Allow\)`, `the network is off: run again with --allow-net=$1 to reach it`},
		{`is not among the allowed hosts: allow (\S+) \(permission\.NetOptions\.Allow\)`, `is not in --allow-net: run again with --allow-net=$1`},
		{`: allow (\S+) \(permission\.NetOptions\.Allow\)`, `: run again with --allow-net=$1`},
		{`is denied by the network's deny list \(permission\.NetOptions\.Deny: `, `is denied by --deny-net (`},
		{`which the network's deny list denies \(permission\.NetOptions\.Deny: `, `which --deny-net denies (`},
		{`\(permission\.NetOptions\.AnyPublic\)`, `(bare --allow-net)`},
		{`the environment grant lacks ([^:]*): allow (\S+) \(permission\.EnvOptions\.Allow\)`, `--allow-env does not grant $1: run again with --allow-env=$2`},
		{`the environment's deny list denies (.*?) \(permission\.EnvOptions\.Deny\)`, `--deny-env denies $1`},
		{` \(permission\.ClientOptions\.Redirects\)`, ``},
		// The checker's configuration.
		{`give the checker the file as the operator's tools \(compiler\.Config\.Tools\)`, `give the file with --tools`},
		{`give the checker a tools file that provides it \(compiler\.Config\.Tools\)`, `pass a tools file with --tools`},
		{`given by the operator \(compiler\.Config\.Tools\)`, `--tools`},
		{`a tools file the operator gives \(compiler\.Config\.Tools\)`, `a --tools file`},
		{`the operator's \(compiler\.Config\.Tools\)`, `--tools`},
		{`\(compiler\.Config\.Tools\)`, `(--tools)`},
		{`\(compiler\.Config\.Hints: the checker's messages list them\)`, `(obelisk check --hints FILE lists them in its messages)`},
		{`\(compiler\.Config\.Hints\)`, `(--hints)`},
		{`\(an error in strict mode: compiler\.Config\.Strict\)`, `(an error with --strict)`},
		{`\(compiler\.Limits\.MaxSteps\)`, `(--max-steps)`},
		{`\(compiler\.Limits\.MaxForEach\)`, `(--max-fanout)`},
		{`\(compiler\.Limits\.MaxCost\)`, `(--max-cost)`},
		// The engine's limits and settings.
		{`\((?:vm|agent)\.Options\.RunTimeout\)`, `(--run-timeout)`},
		{`\(vm\.Options\.MaxOutputBytes\)`, `(--max-output)`},
		{`\(vm\.Options\.MaxCost\)`, `(--max-cost)`},
		{`\(vm\.Options\.MaxFills\)`, `(--max-fills)`},
		{`\(vm\.Options\.Filler\)`, `(--model or --fills)`},
		{`only an evaluator model judges a criterion in words \(obelisk agent, or vm\.Options\.Evaluator\)`, `only an evaluator judges a criterion in words (run with --evaluator model or --evaluator RULES.json, or use obelisk agent)`},
		{`\(obelisk agent, or vm\.Options\.Evaluator in Go\)`, `(obelisk run --evaluator model or --evaluator RULES.json, or obelisk agent)`},
		{`\(vm\.Options\.Evaluator\)`, `(--evaluator)`},
		{`\(toolset\.Config\.Mocks\)`, `(--mocks)`},
		{`\(fill\.Settings\.Fills\)`, `(--fills, or NAME.fills.json beside the plan)`},
		{`no approver is configured \(vm\.Options\.Approver\)`, `no approver is configured (use --approve to be asked, or --yes to approve everything)`},
		// The journal.
		{`\(the runs may be in another state directory\)`, `(--state-dir or OBELISK_STATE_DIR names another directory)`},
		{`resume it with force \(the force argument of Resume\)`, `resume with --force`},
		// The model provider's settings (llm.Settings).
		{`\(or llm\.Settings\.BaseURL for`, `(or --base-url for`},
		{`give its name \(llm\.Settings\.Model, or OBELISK_MODEL\)`, `give --model NAME (or OBELISK_MODEL)`},
		{`OPENAI_BASE_URL=URL OBELISK_MODEL=…   `, `--base-url URL --model NAME           `},
		{`fill in the Settings left empty: BaseURL, Provider, Model and EvalModel`, `may replace the flags --base-url, --provider, --model and --eval-model`},
	}
	out := make([]adviceRule, len(rules))
	for i, r := range rules {
		out[i] = adviceRule{regexp.MustCompile(r.pattern), r.repl}
	}
	return out
})

// adviceMarks are what a text holds when a rule may apply: most writes
// hold none, and are left as they are.
var adviceMarks = []string{"(permission.", "compiler.Config.", "compiler.Limits.", "Options.", "fill.Settings.", "toolset.Config.", "state directory)", "force argument", "llm.Settings", "OBELISK_MODEL=", "Settings left empty"}

// advise rewrites the Go names of limits, grants and settings in s into
// the flags that set them.
func advise(s string) string {
	marked := false
	for _, m := range adviceMarks {
		if strings.Contains(s, m) {
			marked = true
			break
		}
	}
	if !marked {
		return s
	}
	for _, r := range adviceRules() {
		s = r.pattern.ReplaceAllString(s, r.repl)
	}
	return s
}

// advisingWriter writes text for people with advise applied. Each Write
// is advised by itself: write whole lines, as escapingWriter wants.
type advisingWriter struct{ w io.Writer }

// Write writes p advised, and returns len(p) when all of it is written.
func (a advisingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(a.w, advise(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
