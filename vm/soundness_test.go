package vm_test

// TestSoundness is a generative test of the promise of a clean check: a
// plan that checks clean does not fail at run time on anything the checker
// could have known (types, schemas, limits).
//
// It draws random plans (soundness_gen_test.go) over random tools, in the
// plan language and in the JSON form, checks each with the operator's
// tools, and runs those that check clean (warnings allowed) with mocks and
// Go tools that return random results conforming to the tools' output
// types and JSON Schemas: a quarter of the eager text plans as a stream
// (vm.RunStream), the rest with vm.Run. Every step that fails, and every
// output that cannot be computed, is classified:
//
//   - legitimate: a failure the checker cannot know of, because it depends
//     on data or on the world: a tool error the test injects (and what
//     follows from it: steps canceled when the run aborts); a CEL division
//     or modulus by zero, an integer overflow, a list index out of range
//     (also through a string function or a slice), the greatest of an
//     empty list, a string that is not a number (double("abc")), a double
//     divided by zero, whose infinity or NaN no value holds; a missing
//     key of a map (an `object`, whose keys no type declares); an
//     expectation that is false; a for each over a list from the data that is longer than its max; an
//     argument from the data that breaks a keyword of the parameter's JSON
//     Schema that no type can say (minimum, maximum, pattern, minLength,
//     maxLength, minItems, maxItems).
//   - a bug: anything else. A type error in CEL (no such overload, a field
//     a declared object type lacks, a null where a value is needed, an
//     optional field that is absent, or in an output a slot that was not
//     written, read without has()), a
//     value that does not fit its declared type or the schema the checker
//     accepted it for (a type, a required property, an enum, a closed
//     object), a condition that is not a bool, a run that cannot start, a
//     step the stream's check refuses though the whole plan checked.
//
// The short run is part of go test: 400 plans, 1200 in the full run
// (internal/testsize) unless under -short or the race detector; however
// short, it fails when the generator's plans stop testing much (tooFew).
// OBELISK_SOUNDNESS_N=100000 makes a long run;
// OBELISK_SOUNDNESS_SEED=S starts at seed S, and alone replays that one
// seed, printing its plan, tools, mocks, input and run; and
// OBELISK_SOUNDNESS_DEBUG=TEXT prints the plans whose parse or check errors
// contain TEXT, to tune the generator.

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/internal/testsize"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// soundnessPlans is the number of plans of the full short run: a few
// seconds. By default, and under -short or the race detector, a third.
const soundnessPlans = 1200

// minSoundnessPlans is the least number of plans whose statistics
// tooFew judges.
const minSoundnessPlans = 300

func TestSoundness(t *testing.T) {
	n, start, replay := soundnessPlans/3, uint64(1), false
	if !testing.Short() && !raceEnabled {
		n = testsize.Pick(t, soundnessPlans/3, soundnessPlans)
	}
	if s := os.Getenv("OBELISK_SOUNDNESS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("OBELISK_SOUNDNESS_SEED: %v", err)
		}
		start, n, replay = v, 1, true
	}
	if s := os.Getenv("OBELISK_SOUNDNESS_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("OBELISK_SOUNDNESS_N: %v", err)
		}
		n, replay = v, false
	}
	// OBELISK_SOUNDNESS_DEBUG=TEXT shows plans whose parse or check
	// errors contain TEXT, to tune the generator.
	debug, shown := os.Getenv("OBELISK_SOUNDNESS_DEBUG"), 0
	st := newSoundStats()
	began := time.Now()
	for i := range n {
		seed := start + uint64(i)
		flags := flagsOf(seed)
		o := runPlan(seed, flags)
		st.add(o)
		if replay {
			t.Logf("%s", o.report())
		}
		if debug != "" && shown < 3 && strings.Contains(fmt.Sprint(o.parseErr, o.checkErr), debug) {
			shown++
			t.Logf("%s", o.report())
		}
		for _, f := range o.failures {
			f = innermost(f)
			v, why := classify(o.p, f)
			if v == verdictLegit {
				st.legit[why]++
				continue
			}
			st.bugs++
			sig := signature(f)
			st.bugClasses[sig]++
			if st.bugClasses[sig] <= 2 && st.bugs <= 20 {
				t.Errorf("seed %d: step %s failed with %s: %s\nreplay: OBELISK_SOUNDNESS_SEED=%d go test ./vm -run TestSoundness -v\n%s",
					seed, f.where, f.code, clipMsg(f.msg), seed, o.report())
			}
		}
	}
	t.Logf("soundness: %d plans in %v (seeds %d to %d)\n%s", n, time.Since(began).Round(time.Millisecond), start, start+uint64(n)-1, st)
	if !replay && n >= minSoundnessPlans {
		if msg := st.tooFew(); msg != "" {
			t.Errorf("the generator's plans no longer test much: %s\n%s", msg, st)
		}
	}
}

// tooFew says what a run of many plans had too little of for its lack of
// bugs to mean anything: plans that parse, check clean and run, in both
// forms and as streams. The floors are well below what the generator
// gives (about half the plans check clean, a fifth are JSON, a sixth of
// the runs are streams), so that only a broken generator falls under.
func (s *soundStats) tooFew() string {
	switch {
	case s.plans < minSoundnessPlans:
		return fmt.Sprintf("only %d plans were drawn, fewer than %d", s.plans, minSoundnessPlans)
	case s.parseErrs*100 > s.plans:
		return fmt.Sprintf("%d of %d plans do not parse", s.parseErrs, s.plans)
	case s.clean*100 < s.plans*35:
		return fmt.Sprintf("only %d of %d plans check clean", s.clean, s.plans)
	case s.runs != s.clean:
		return fmt.Sprintf("%d plans ran of the %d that checked clean", s.runs, s.clean)
	case s.json*10 < s.plans:
		return fmt.Sprintf("only %d of %d plans are in the JSON form", s.json, s.plans)
	case s.streams*20 < s.runs:
		return fmt.Sprintf("only %d of %d runs are streams", s.streams, s.runs)
	case s.steps < 2*s.runs:
		return fmt.Sprintf("only %d steps ran in %d runs", s.steps, s.runs)
	}
	return ""
}

// flagsOf turns on each data flag for some seeds.
func flagsOf(seed uint64) dataFlags {
	r := rand.New(rand.NewPCG(seed, 0xf1a9))
	on := func() bool { return r.IntN(2) == 0 }
	return dataFlags{
		intInNumber: on(), intAsFloat: on(), bigInt: on(), anyInt: on(), bigDigits: on(),
		loneSurrogate: on(), literalSchema: on(), literalFanout: on(),
	}
}

// failure is a step that failed, or an output that could not be computed,
// or a run that could not start.
type failure struct {
	where string // the step's ID, "output" or "run"
	code  string
	msg   string
	// step is the result of the step, when it is one.
	step *vm.StepResult
}

// outcome is what became of one plan.
type outcome struct {
	p                  *gplan
	src                string
	parseErr, checkErr lang.Diagnostics
	warnings           int
	res                *vm.Result
	failures           []failure
	steps              int
	// stream is set for a plan run as a stream (vm.RunStream).
	stream bool
}

func (o *outcome) clean() bool { return o.parseErr == nil && o.checkErr == nil }

// runPlan generates the plan of a seed, checks it and, if it checks clean,
// runs it.
func runPlan(seed uint64, flags dataFlags) *outcome {
	p := generate(seed, flags)
	name, src := p.Source()
	o := &outcome{p: p, src: src}
	var f *lang.File
	var diags lang.Diagnostics
	if p.json {
		f, diags = lang.ParseJSON(name, []byte(src))
	} else {
		f, diags = lang.Parse(name, []byte(src))
	}
	if diags.HasErrors() {
		o.parseErr = diags
		return o
	}
	decls, diags := lang.ParseTools("tools.json", []byte(p.ToolsFile()))
	if diags.HasErrors() {
		o.parseErr = diags
		return o
	}
	info, diags := compiler.Check(f, compiler.Config{Tools: decls})
	if diags.HasErrors() {
		for _, d := range diags {
			if d.Severity == lang.SeverityError {
				o.checkErr = append(o.checkErr, d)
			}
		}
		return o
	}
	o.warnings = len(diags)
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		o.failures = append(o.failures, failure{where: "compile", code: "compile", msg: err.Error()})
		return o
	}
	mocks, err := toolkit.ParseMocks([]byte(p.MocksFile()))
	if err != nil {
		o.failures = append(o.failures, failure{where: "mocks", code: "mocks", msg: err.Error()})
		return o
	}
	reg, err := p.registry()
	if err != nil {
		o.failures = append(o.failures, failure{where: "registry", code: "registry", msg: err.Error()})
		return o
	}
	input := f.InputValues
	if !p.json {
		v, err := toolkit.DecodeJSON([]byte(p.InputJSON()))
		if err != nil {
			o.failures = append(o.failures, failure{where: "input", code: "input", msg: err.Error()})
			return o
		}
		input = v.(map[string]any)
	}
	// A bound against a hang; no test asserts a duration.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := vm.Options{
		Tools: toolkit.Chain{Mocks: mocks, Registry: reg},
		Approver: vm.ApproverFunc(func(context.Context, vm.ApprovalRequest) (vm.Decision, error) {
			return vm.Decision{Approved: true}, nil
		}),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Rand:  rand.New(rand.NewPCG(seed, 2)),
		Check: compiler.Config{Tools: decls},
	}
	var res *vm.Result
	if o.stream = !p.json && p.mode != "lazy" && !p.approve && seed%4 == 0; o.stream {
		// Eager mode, as a model writes the plan: each step is checked
		// against what came before it and runs as soon as it can.
		var sd lang.Diagnostics
		res, sd, err = vm.RunStream(ctx, lang.NewStreamParser(name, strings.NewReader(src)), input, opts)
		if sd.HasErrors() {
			// The stream's check refused what the whole plan's check
			// accepted.
			o.failures = append(o.failures, failure{where: "stream", code: "stream-check", msg: sd.Error()})
		}
	} else {
		res, err = vm.Run(ctx, prog, input, opts)
	}
	if err != nil {
		o.failures = append(o.failures, failure{where: "run", code: "run", msg: err.Error()})
		return o
	}
	o.res = res
	o.steps = len(res.Steps)
	for _, s := range res.Steps {
		if s.Status == vm.StatusFailed && s.Error != nil {
			o.failures = append(o.failures, failure{where: s.ID, code: s.Error.Code, msg: s.Error.Message, step: s})
		}
	}
	if res.Err != nil {
		if msg, ok := strings.CutPrefix(res.Err.Error(), "evaluating the output: "); ok {
			o.failures = append(o.failures, failure{where: "output", code: "output", msg: msg})
		}
	}
	return o
}

// registry holds the operator's tools, which return results drawn from
// the seed, the tool's name and the arguments.
func (p *gplan) registry() (*toolkit.Registry, error) {
	reg := toolkit.NewRegistry()
	for _, t := range p.tools {
		if !t.operator {
			continue
		}
		def := toolkit.Definition{Name: t.name, InputSchema: []byte(jsonText(t.schema["inputSchema"]))}
		if os, ok := t.schema["outputSchema"]; ok {
			def.OutputSchema = []byte(jsonText(os))
		}
		switch t.effect {
		case "pure":
			def.Annotations.ReadOnly = true
		case "idempotent":
			no := false
			def.Annotations.Idempotent, def.Annotations.Destructive = true, &no
		}
		if err := reg.Register(def, p.toolFunc(t)); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func (p *gplan) toolFunc(t *gtool) toolkit.ToolFunc {
	var calls atomic.Int64
	return func(ctx context.Context, args map[string]any) (any, error) {
		n := calls.Add(1)
		if t.fails || t.flaky && n == 1 {
			return nil, &toolkit.Error{Code: "injected", Message: "injected failure of " + t.name}
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s\x00%s", p.seed, t.name, jsonText(args))
		v := newGen(h.Sum64(), p.flags).value(t.result, false, 0)
		return toolkit.DecodeJSON([]byte(jsonText(v)))
	}
}

// report describes a plan and its run for a failure message.
func (o *outcome) report() string {
	var b strings.Builder
	how := "vm.Run"
	if o.stream {
		how = "vm.RunStream"
	}
	fmt.Fprintf(&b, "--- plan (seed %d, data flags %s, run with %s)\n%s", o.p.seed, o.p.flags, how, o.src)
	fmt.Fprintf(&b, "--- tools file (the operator's)\n%s\n", o.p.ToolsFile())
	fmt.Fprintf(&b, "--- mocks\n%s\n", o.p.MocksFile())
	if !o.p.json {
		fmt.Fprintf(&b, "--- input\n%s\n", o.p.InputJSON())
	}
	switch {
	case o.parseErr != nil:
		fmt.Fprintf(&b, "--- parse\n%s\n", o.parseErr)
	case o.checkErr != nil:
		fmt.Fprintf(&b, "--- check\n%s\n", o.checkErr)
	case o.res != nil:
		b.WriteString("--- run\n")
		for _, s := range o.res.Steps {
			fmt.Fprintf(&b, "%s %s", s.ID, s.Status)
			if s.Error != nil {
				fmt.Fprintf(&b, " [%s] %s", s.Error.Code, clipMsg(s.Error.Message))
			} else if s.Reason != "" {
				fmt.Fprintf(&b, " (%s)", clipMsg(s.Reason))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "output: %s\n", clipMsg(fmt.Sprint(o.res.Output)))
		if o.res.Err != nil {
			fmt.Fprintf(&b, "error: %s\n", clipMsg(o.res.Err.Error()))
		}
	}
	for _, f := range o.failures {
		if f.step == nil {
			fmt.Fprintf(&b, "%s: [%s] %s\n", f.where, f.code, clipMsg(f.msg))
		}
	}
	return b.String()
}

func clipMsg(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// ---- classification ----

type verdict int

const (
	verdictLegit verdict = iota
	verdictSuspect
)

// dataErrors are the CEL and interpreter messages of errors that depend
// on data the checker cannot know.
var dataErrors = []struct{ re, why string }{
	{`division by zero`, "division by zero"},
	{`modulus by zero`, "modulus by zero"},
	{`overflow`, "integer overflow"},
	{`index out of range|index \d+ is out of range|index out of bounds|cannot slice`, "index out of range"},
	{`argument must not be empty`, "the greatest or least of an empty list"},
	{`no such key`, "missing key of a map"},
	{`range error`, "number out of range of a conversion"},
	{`type conversion error from 'string'|String to double|strconv`, "string that is not a number"},
	{`more than the for each's max`, "for each over a list from the data longer than its max"},
	// A double divided by zero is an infinity, which no JSON Schema
	// validator takes ("invalid jsonType float64").
	{`invalid jsonType float64`, "double divided by zero: an infinity"},
	// The values that enter a slot or a call are refused as well.
	{`which JSON cannot hold`, "double divided by zero: an infinity or NaN"},
	{`NaN values cannot be ordered`, "double divided by zero: NaN"},
}

var (
	noSuchField = regexp.MustCompile(`no such field "([^"]+)"|has no field ([^\s":]+)`)
	notWritten  = regexp.MustCompile(`†state\.([^\s.\[:]+)[^\s:]*: not written`)
	schemaKw    = regexp.MustCompile(`at (/[^:]*): (minimum|maximum|exclusiveMinimum|exclusiveMaximum|minLength|maxLength|minItems|maxItems|.* does not match pattern)\b`)
)

// innerStep finds the step of a sub-plan whose failure failed the call.
var innerStep = regexp.MustCompile(`^(?:element [^:]*: )?sub-plan \S+ failed: step (\S+) failed: `)

// innermost returns the failure of the step of a sub-plan that failed a
// call of it, and other failures as they are.
func innermost(f failure) failure {
	for {
		m := innerStep.FindStringSubmatchIndex(f.msg)
		if m == nil {
			return f
		}
		f = failure{where: f.msg[m[2]:m[3]], code: f.code, msg: f.msg[m[1]:]}
	}
}

// classify says whether a failure is legitimate (and why), or suspect.
func classify(p *gplan, f failure) (verdict, string) {
	msg := f.msg
	switch {
	case strings.Contains(msg, "injected failure"):
		return verdictLegit, "injected tool error"
	case f.code == toolkit.CodeCanceled:
		return verdictLegit, "canceled after another step failed"
	case strings.HasPrefix(msg, "expectation does not hold: "):
		// The expectation is false, or cannot be evaluated: then the
		// message ends with why, in parentheses.
		if st := p.stepByID(f.where); st != nil {
			for _, x := range st.expects {
				crit := "expectation does not hold: " + p.exprText(x)
				if msg == crit {
					return verdictLegit, "expectation false"
				}
				if note, ok := strings.CutPrefix(msg, crit+" ("); ok {
					return classify(p, failure{where: f.where, code: "expect", msg: strings.TrimSuffix(note, ")")})
				}
			}
		}
	}
	if strings.Contains(msg, "more than the for each's max") {
		if st := p.stepByID(f.where); st != nil && st.each != nil {
			if _, lit := st.each.list.(*eachList); lit {
				return verdictSuspect, ""
			}
		}
	}
	for _, d := range dataErrors {
		if regexp.MustCompile(d.re).MatchString(msg) {
			return verdictLegit, d.why
		}
	}
	if m := schemaKw.FindStringSubmatch(msg); m != nil {
		// A keyword no type can say: the data's fault, unless the
		// argument is a literal, which the checker could validate.
		if st := p.stepByID(f.where); st != nil && !st.literalArg(strings.TrimPrefix(m[1], "/")) {
			return verdictLegit, "argument from the data breaks a schema keyword"
		}
	}
	return verdictSuspect, ""
}

// stepByID finds a step of the plan or of a sub-plan by its label.
func (p *gplan) stepByID(id string) *gstep {
	for _, t := range append([]*gtool{{sub: p.main}}, p.tools...) {
		if t.sub == nil {
			continue
		}
		for _, st := range t.sub.steps {
			if st.label == id {
				return st
			}
		}
	}
	return nil
}

func (p *gplan) isSlot(name string) bool {
	for _, t := range append([]*gtool{{sub: p.main}}, p.tools...) {
		if t.sub == nil {
			continue
		}
		for _, st := range t.sub.steps {
			if st.out == name || st.errOut == name {
				return true
			}
		}
	}
	return false
}

// isSubPlanStep reports whether a step calls a sub-plan.
func (p *gplan) isSubPlanStep(id string) bool {
	st := p.stepByID(id)
	return st != nil && (st.tool.sub != nil || st.fallback != nil && st.fallback.tool.sub != nil)
}

// literalArg reports whether the argument at a JSON pointer path is
// written as a literal.
func (st *gstep) literalArg(ptr string) bool {
	name, _, _ := strings.Cut(ptr, "/")
	for _, calls := range [][]garg{st.args, st.fallbackArgs()} {
		for _, a := range calls {
			if a.name == name && isLiteral(a.val) {
				return true
			}
		}
	}
	return false
}

func (st *gstep) fallbackArgs() []garg {
	if st.fallback == nil {
		return nil
	}
	return st.fallback.args
}

// signature is a failure's message with names and numbers taken out, to
// count failures by class.
var sigNames = regexp.MustCompile(`†[^\s:,)]*|"[^"]*"|\b[a-z]+[0-9]+\b|[0-9]+(\.[0-9]+)?`)

func signature(f failure) string {
	s := f.msg
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "evaluating") {
		s = s[i+2:]
	}
	return f.code + ": " + clipMsg(sigNames.ReplaceAllString(s, "_"))
}

// ---- statistics ----

type soundStats struct {
	plans, parseErrs, rejected, clean, json, runs, streams, steps, failed, bugs int
	checkCodes                                                                  map[string]int
	legit, bugClasses                                                           map[string]int
	parseSample                                                                 string
}

func newSoundStats() *soundStats {
	return &soundStats{checkCodes: map[string]int{}, legit: map[string]int{}, bugClasses: map[string]int{}}
}

var checkSig = regexp.MustCompile(`†[^\s:,)]*|"[^"]*"|\b[a-zA-Z]+[0-9]+\b|[0-9]+`)

func (s *soundStats) add(o *outcome) {
	s.plans++
	if o.p.json {
		s.json++
	}
	switch {
	case o.parseErr != nil:
		s.parseErrs++
		if s.parseSample == "" {
			s.parseSample = fmt.Sprintf("seed %d: %s", o.p.seed, o.parseErr)
		}
	case o.checkErr != nil:
		s.rejected++
		d := o.checkErr[0]
		s.checkCodes[string(d.Code)+": "+clipMsg(checkSig.ReplaceAllString(d.Message, "_"))]++
	default:
		s.clean++
		if o.res != nil {
			s.runs++
			s.steps += o.steps
			if o.stream {
				s.streams++
			}
		}
		s.failed += len(o.failures)
	}
}

func (s *soundStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plans %d (JSON form %d): parse errors %d, rejected by check %d, clean %d; runs %d (as a stream %d), steps %d, failures %d: bugs %d\n",
		s.plans, s.json, s.parseErrs, s.rejected, s.clean, s.runs, s.streams, s.steps, s.failed, s.bugs)
	top := func(title string, m map[string]int, n int) {
		if len(m) == 0 {
			return
		}
		type kv struct {
			k string
			v int
		}
		var kvs []kv
		for k, v := range m {
			kvs = append(kvs, kv{k, v})
		}
		slices.SortFunc(kvs, func(a, b kv) int { return cmp.Or(b.v-a.v, strings.Compare(a.k, b.k)) })
		fmt.Fprintf(&b, "%s:\n", title)
		for i, x := range kvs {
			if i == n {
				fmt.Fprintf(&b, "  … %d more\n", len(kvs)-n)
				break
			}
			fmt.Fprintf(&b, "  %6d  %s\n", x.v, x.k)
		}
	}
	top("legitimate failures", s.legit, 20)
	top("bug classes", s.bugClasses, 30)
	top("why check rejected plans (first error)", s.checkCodes, 60)
	if s.parseSample != "" {
		fmt.Fprintf(&b, "first parse error: %s\n", clipMsg(s.parseSample))
	}
	return b.String()
}
