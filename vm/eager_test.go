package vm

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/lang"
)

// TestEagerDispatchesBeforeStreamEnds: the first call runs while the
// writer is still writing, and its result is in the state before the
// stream is closed.
func TestEagerDispatchesBeforeStreamEnds(t *testing.T) {
	pr, pw := io.Pipe()
	first := make(chan struct{})
	tools := newFakeTools().on("echo", func(ctx context.Context, args map[string]any) (any, error) {
		if args["x"] == "one" {
			close(first)
		}
		return args["x"], nil
	})
	rec := &recorder{}
	o := opts(tools, rec)
	done := make(chan *Result)
	var rejected lang.Diagnostics
	go func() {
		res, diags, err := RunStream(context.Background(), lang.NewStreamParser("s.plan", pr), nil, o)
		if err != nil {
			t.Error(err)
		}
		rejected = diags
		done <- res
	}()
	io.WriteString(pw, "tool echo(x: any) -> any pure\necho(x: \"one\") -> †state.a;\n")
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call did not run before the stream went on")
	}
	rec.observe(Event{Type: "writer-continues"})
	io.WriteString(pw, "echo(x: [†state.a, \"two\"]) -> †state.b\noutput †state.b\n")
	pw.Close()
	res := <-done
	if len(rejected) > 0 {
		t.Fatalf("rejected: %v", rejected)
	}
	if order := strings.Join(rec.trace(StepStarted, "writer-continues"), ","); res.Status != RunCompleted || !strings.HasPrefix(order, "step-started echo,writer-continues ") {
		t.Errorf("status %s, events %v", res.Status, order)
	}
	if got := res.Output.([]any); len(got) != 2 || got[0] != "one" {
		t.Errorf("output %v", res.Output)
	}
}

// TestEagerHoldsAndRejects: a step that reads a slot no step writes yet
// waits for its writer; a step with a type error is rejected without
// stopping the others; a step still waiting at the end is reported.
func TestEagerHoldsAndRejects(t *testing.T) {
	src := `tool echo(x: any) -> any pure
tool num(n: int) -> int pure
echo(x: †state.later) -> †state.early
num(n: "not a number") -> †state.bad
echo(x: 1) -> †state.later
echo(x: †state.never) -> †state.orphan
echo(x: "known") -> †state.given
  result "from the model"
`
	var mu sync.Mutex
	var calls []string
	tools := newFakeTools().on("echo", func(ctx context.Context, args map[string]any) (any, error) {
		mu.Lock()
		calls = append(calls, strings.TrimSpace(strings.Trim(strings.ReplaceAll(strings.ReplaceAll(describe(args["x"]), "\"", ""), " (int64)", ""), " ")))
		mu.Unlock()
		return args["x"], nil
	})
	res, diags, err := RunStream(context.Background(), lang.NewStreamParser("s.plan", strings.NewReader(src)), nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.State["early"] != int64(1) {
		t.Errorf("the held step did not run after its writer: state %v", res.State)
	}
	if res.State["given"] != "from the model" {
		t.Errorf("the given result was not used: %v", res.State["given"])
	}
	codes := map[lang.Code]int{}
	for _, d := range diags {
		codes[d.Code]++
	}
	if codes[lang.TypeMismatch] != 1 || codes[lang.UndefinedReference] != 1 || len(diags) != 2 {
		t.Errorf("diagnostics:\n%s", diags)
	}
	for _, c := range calls {
		if c == "known" {
			t.Error("a step with a given result called its tool")
		}
	}
}

// TestEagerLateWriterRefused: a writer that arrives after a reader of its
// slot already ran cannot change what the reader saw.
func TestEagerLateWriterRefused(t *testing.T) {
	pr, pw := io.Pipe()
	ran := make(chan struct{}, 4)
	tools := newFakeTools().on("echo", func(ctx context.Context, args map[string]any) (any, error) {
		ran <- struct{}{}
		return args["x"], nil
	})
	done := make(chan lang.Diagnostics)
	go func() {
		_, diags, _ := RunStream(context.Background(), lang.NewStreamParser("s.plan", pr), nil, opts(tools, nil))
		done <- diags
	}()
	io.WriteString(pw, "tool echo(x: any) -> any pure\necho(x: 1) -> †state.a;\necho(x: †state.a) -> †state.b;\n")
	<-ran
	<-ran
	io.WriteString(pw, "echo(x: 2) -> †state.a;\n")
	pw.Close()
	diags := <-done
	if len(diags) != 1 || diags[0].Code != lang.ConflictingSlot || !strings.Contains(diags[0].Message, "already read") {
		t.Errorf("diagnostics: %v", diags)
	}
}

// TestEagerBatchSameAsOneByOne: the steps of a stream that arrive
// together are checked together, with the outcome of checking them one
// by one as they arrived: the same steps admitted in the same order, the
// same held, the same rejected with the same diagnostics.
func TestEagerBatchSameAsOneByOne(t *testing.T) {
	src := `tool echo(x: any) -> any pure
tool num(n: int) -> int pure
echo(x: †state.later) -> †state.early
num(n: "not a number") -> †state.bad
echo(x: 1) -> †state.later
echo(x: †state.early) -> †state.afterEarly
echo(x: †state.never) -> †state.orphan
a: echo(x: †state.b) -> †state.a
echo(x: 2) -> †state.c
b: echo(x: †state.c) -> †state.b
num(n: 3) -> †state.n
num(n: †state.n) -> †state.n2
echo(x: †state.n2) -> †state.last
num(n: †state.later) -> †state.n3
output †state.last
`
	newStream := func() *stream {
		o := opts(newFakeTools(), nil)
		o.defaults()
		r := &runner{opts: o, start: time.Now(), emitMu: &sync.Mutex{}}
		return &stream{r: r, input: nil, file: &lang.File{Name: "s.plan"}, labels: map[string]bool{}, numbered: map[string]int{}, ctx: context.Background()}
	}
	items := func() []lang.Item {
		sp := lang.NewStreamParser("s.plan", strings.NewReader(src))
		var out []lang.Item
		for {
			it, _, err := sp.Next(context.Background())
			if err != nil {
				return out
			}
			out = append(out, it)
		}
	}
	summary := func(s *stream) string {
		var b strings.Builder
		for _, st := range s.steps {
			b.WriteString("admitted " + st.Label.Name + "\n")
		}
		for _, st := range s.held {
			b.WriteString("held " + st.Label.Name + "\n")
		}
		s.diags.Sort()
		for _, d := range s.diags {
			fmt.Fprintln(&b, d)
		}
		return b.String()
	}

	one := newStream()
	for _, it := range items() {
		one.add(it)
	}
	all := newStream()
	var steps []*lang.Step
	for _, it := range items() {
		if st, ok := it.(*lang.Step); ok {
			steps = append(steps, st)
			continue
		}
		all.offerAll(steps)
		steps = nil
		all.add(it)
	}
	all.offerAll(steps)
	want, got := summary(one), summary(all)
	if got != want {
		t.Errorf("checked together:\n%s\none by one:\n%s", got, want)
	}
	for _, s := range []string{"admitted echo2\nadmitted echo\n", "held echo4\n", "type-mismatch", "admitted b\nadmitted a\n", "admitted num4\n"} {
		if !strings.Contains(want, s) {
			t.Errorf("the stream does not test what it should: no %q in\n%s", s, want)
		}
	}
}
