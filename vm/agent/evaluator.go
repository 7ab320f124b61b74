package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm"
)

// Fact is something a step established, kept for the rest of the goal.
type Fact struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	// Step is the step whose result it was read from.
	Step string `json:"step"`
}

// truthStore is the truth store of seed 000: the facts extracted from step
// results, which go into every later prompt. A key is recorded once: the
// first value stays. It is safe for concurrent use.
type truthStore struct {
	mu    sync.Mutex
	facts map[string]Fact
	// journal, when set, records each new fact; err is its first error.
	journal Journal
	err     error
}

// add records a fact unless its key is known; it reports whether it did.
func (f *truthStore) add(key string, value any, step string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.facts == nil {
		f.facts = map[string]Fact{}
	}
	if _, ok := f.facts[key]; ok {
		return false
	}
	f.facts[key] = Fact{Key: key, Value: value, Step: step}
	if f.journal != nil && f.err == nil {
		if err := f.journal.RecordFact(f.facts[key]); err != nil {
			f.err = fmt.Errorf("the journal cannot be written: %w", err)
		}
	}
	return true
}

// failed returns the journal's first error.
func (f *truthStore) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// list returns the facts sorted by key.
func (f *truthStore) list() []Fact {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Fact, 0, len(f.facts))
	for _, k := range sortedKeys(f.facts) {
		out = append(out, f.facts[k])
	}
	return out
}

// text renders the facts for a prompt, one per line.
func (f *truthStore) text() string {
	var b strings.Builder
	for _, fact := range f.list() {
		v, _ := json.Marshal(fact.Value)
		fmt.Fprintf(&b, "%s = %s  (from step %s)\n", fact.Key, v, fact.Step)
	}
	return b.String()
}

// NewEvaluator returns the step evaluator the agent uses, for a run of a
// plan written beforehand: model judges each result against a criterion
// in words (pass, partial, fail or hitl, with a note), seeing the step's
// tool, arguments and result (its JSON cut at 8000 bytes). goal, when not
// empty, says what the plan is for.
func NewEvaluator(model llm.Model, goal string) vm.Evaluator {
	return &evaluator{model: model, goal: goal, facts: &truthStore{}, maxResult: 8000}
}

// evaluator is seed 000's step evaluator: the cheaper model judges a
// step's result against a criterion stated in words, and extracts facts
// from it into the truth store.
type evaluator struct {
	model llm.Model
	goal  string
	facts *truthStore
	// maxResult bounds the JSON of a result shown to the model, in bytes.
	maxResult int
}

const evaluatorSystem = `You judge one step of a plan that an agent runs to reach a goal. You are given the goal, the step's tool and arguments, its result, and a success criterion. Decide whether the result meets the criterion:

- "pass": the criterion is clearly met;
- "partial": it is partly met; say in the note what is missing;
- "fail": it is not met; say in the note why;
- "hitl": you cannot tell without a person's judgement.

Also extract facts from the result that later steps may need (an identifier, a count, a URL, a decision), as snake_case keys with JSON values. Do not repeat the facts already known.

Answer with one JSON object and nothing else:
{"verdict": "pass" | "partial" | "fail" | "hitl", "note": "…", "facts": {"snake_case_key": value}}`

// factKey is compiled when an evaluator first reads facts, not at
// start-up.
var factKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// Evaluate asks the model for a verdict. An answer that is not a verdict
// is an error, never a default verdict.
func (e *evaluator) Evaluate(ctx context.Context, req vm.EvaluationRequest) (vm.Verdict, error) {
	args, _ := json.Marshal(req.Args)
	result, _ := json.Marshal(req.Result)
	shown := string(result)
	if e.maxResult > 0 && len(shown) > e.maxResult {
		shown = shown[:e.maxResult] + fmt.Sprintf("… (%d bytes in all)", len(result))
	}
	var b strings.Builder
	if e.goal != "" {
		fmt.Fprintf(&b, "Goal: %s\n\n", e.goal)
	}
	fmt.Fprintf(&b, "Step %s calls %s with %s.\n\nResult:\n%s\n\nCriterion: %s\n", req.Step, req.Tool, args, shown, req.Criterion)
	if known := e.facts.text(); known != "" {
		fmt.Fprintf(&b, "\nFacts already known:\n%s", known)
	}
	text, _, err := llm.Collect(ctx, e.model, &llm.Request{System: evaluatorSystem, Messages: []llm.Message{{Role: llm.User, Content: b.String()}}})
	if err != nil {
		return vm.Verdict{}, fmt.Errorf("the evaluator failed: %w", err)
	}
	var answer struct {
		Verdict string         `json:"verdict"`
		Note    string         `json:"note"`
		Facts   map[string]any `json:"facts"`
	}
	dec := json.NewDecoder(strings.NewReader(readJSONAnswer(text)))
	dec.UseNumber()
	if err := dec.Decode(&answer); err != nil {
		return vm.Verdict{}, fmt.Errorf("the evaluator's answer is not the JSON verdict asked for: %v: %.200q", err, text)
	}
	switch answer.Verdict {
	case vm.VerdictPass, vm.VerdictPartial, vm.VerdictFail, vm.VerdictHITL:
	default:
		return vm.Verdict{}, fmt.Errorf("the evaluator's verdict %q is not pass, partial, fail or hitl", answer.Verdict)
	}
	keys := make([]string, 0, len(answer.Facts))
	for k := range answer.Facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if factKey().MatchString(k) {
			e.facts.add(k, normalizeNumbers(answer.Facts[k]), req.Step)
		}
	}
	if answer.Verdict == vm.VerdictPartial && answer.Note != "" {
		e.facts.add(req.Step+".shortfall", answer.Note, req.Step)
	}
	return vm.Verdict{Verdict: answer.Verdict, Note: answer.Note}, nil
}

// normalizeNumbers turns json.Numbers into int64 or float64.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}
