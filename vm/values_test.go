package vm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/toolkit/cmdtool"
	"github.com/obelisk-plan/obelisk/toolkit/httptool"
	"github.com/obelisk-plan/obelisk/toolkit/mcp"
	"github.com/obelisk-plan/obelisk/toolkit/mcp/mcptest"
	"github.com/obelisk-plan/obelisk/toolkit/permission"
	"github.com/obelisk-plan/obelisk/toolkit/replay"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/journal"
)

// The tests of this file give a plan the same value through every
// boundary where a value enters a run (a Go tool, mocks, a recording, an
// MCP server, an HTTP tool, a command tool, a sub-plan, the journal of an
// earlier process, the input, a replan) and check that every expression
// the checker accepts over it evaluates: JSON says 3 where the type says
// number, and CEL must see 3.0.

// reading is the JSON of the value of type A every boundary gives: an
// integer in every place typed number.
const reading = `{"v": 3, "n": 4, "xs": [1, 2.5], "o": {"w": 2}, "e": 1, "q": 7}`

// readsA declares A and the tool use, and reads †state.a of type A with
// expressions that need CEL to see a double in every number: arithmetic
// with a double, the conversions, math, map, comparisons, and a literal
// list of an int and a number.
const readsA = `
type A {v: number, n: int, xs: [number], o: {w: number}, e: 1 | 2.5, q: number?}
tool use(x: any) -> any pure
r1: use(x: †state.a.v * 2.0) -> †state.r1
r2: use(x: double(†state.a.v)) -> †state.r2
r3: use(x: int(†state.a.v)) -> †state.r3
r4: use(x: string(†state.a.v)) -> †state.r4
r5: use(x: math.ceil(†state.a.v)) -> †state.r5
r6: use(x: †state.a.xs.map(e, e / 2.0)) -> †state.r6
r7: use(x: †state.a.o.w + 0.5) -> †state.r7
r8: use(x: †state.a.e * 2.0) -> †state.r8
r9: use(x: †state.a.n + 1) -> †state.r9
r10: use(x: †state.a.v > 2.5 && †state.a.v == 3.0 && (†state.a.q != null ? †state.a.q / 2.0 == 3.5 : false)) -> †state.r10
r11: for each x in [†state.a.n, 2.5]: use(x: †x * 2.0) -> †state.r11
output {r1: †state.r1, r2: †state.r2, r3: †state.r3, r4: †state.r4, r5: †state.r5, r6: †state.r6, r7: †state.r7, r8: †state.r8, r9: †state.r9, r10: †state.r10, r11: †state.r11}
`

// readsAWant is the output of readsA.
var readsAWant = map[string]any{
	"r1": 6.0, "r2": 3.0, "r3": int64(3), "r4": "3", "r5": 3.0,
	"r6": []any{0.5, 1.25}, "r7": 2.5, "r8": 2.0, "r9": int64(5), "r10": true,
	"r11": []any{8.0, 5.0},
}

// getA is a plan that reads A from the tool get.
const getA = "tool get() -> A pure\nget: get() -> †state.a\n" + readsA

// compileText checks and compiles a plan.
func compileText(t *testing.T, src string) *compiler.Program {
	t.Helper()
	f, diags := lang.Parse("values.plan", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, diags := compiler.Check(f, compiler.Config{})
	if diags.HasErrors() {
		t.Fatalf("the plan does not check:\n%s", diags)
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// router calls get (and any other tool it is given) on its caller, and
// answers use with its argument.
type router map[string]vm.Caller

func (r router) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if name == "use" {
		return args["x"], nil
	}
	if c, ok := r[name]; ok {
		return c.Call(ctx, name, args)
	}
	return nil, fmt.Errorf("no tool %s", name)
}

// runClean runs a program and fails the test unless every step
// completed.
func runClean(t *testing.T, prog *compiler.Program, input map[string]any, o vm.Options) *vm.Result {
	t.Helper()
	if o.MaxParallel == 0 {
		o.MaxParallel = 4
	}
	res, err := vm.Run(context.Background(), prog, input, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		if s.Status != vm.StatusCompleted {
			t.Errorf("step %s: %s %+v", s.ID, s.Status, s.Error)
		}
	}
	if res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	return res
}

// wantOutput compares a run's output with readsAWant.
func wantOutput(t *testing.T, got any) {
	t.Helper()
	if diff := cmp.Diff(readsAWant, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func decode(t *testing.T, text string) any {
	t.Helper()
	v, err := toolkit.DecodeJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestValuesReproduction: the number of a mock, an integer in a slot
// typed number, reaches CEL as a double: †state.a.v * 2.0, double(),
// int() and string() of it evaluate.
func TestValuesReproduction(t *testing.T) {
	prog := compileText(t, `tool echo2(value: number) -> {v: number} pure
tool echo(value: any) -> any pure
echo2(value: 1) -> †state.a
echo(value: †state.a.v * 2.0) -> †state.b
echo(value: double(†state.a.v)) -> †state.c
echo(value: int(†state.a.v)) -> †state.d
echo(value: string(†state.a.v)) -> †state.e
output [†state.b, †state.c, †state.d, †state.e]
`)
	mocks, err := toolkit.ParseMocks([]byte(`{"echo2": {"result": {"v": 3}}, "echo": {"result": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	tools := vm.Caller(callerFunc(func(ctx context.Context, name string, a map[string]any) (any, error) {
		if name == "echo" {
			args = append(args, a["value"])
		}
		return mocks.Call(ctx, name, a)
	}))
	runClean(t, prog, nil, vm.Options{Tools: tools, MaxParallel: 1})
	if diff := cmp.Diff([]any{6.0, 3.0, int64(3), "3"}, args); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
}

type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

// TestValuesFromTools: the value comes from a Go tool of a registry (as
// JSON-shaped values, and as a Go struct the registry encodes), from
// mocks (a result, and a sequence that fails first), from a recording,
// from an HTTP tool and from a command tool.
func TestValuesFromTools(t *testing.T) {
	anyDef := toolkit.Definition{Name: "get", InputSchema: json.RawMessage(`{"type": "object"}`)}
	shaped := toolkit.NewRegistry()
	shaped.MustRegister(anyDef, toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) {
		return decode(t, reading), nil
	}))
	type o struct {
		W int `json:"w"`
	}
	type goA struct {
		V  int       `json:"v"`
		N  int       `json:"n"`
		Xs []float64 `json:"xs"`
		O  o         `json:"o"`
		E  int       `json:"e"`
		Q  *int      `json:"q"`
	}
	q := 7
	structs := toolkit.NewRegistry()
	structs.MustRegister(anyDef, toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) {
		return goA{V: 3, N: 4, Xs: []float64{1, 2.5}, O: o{W: 2}, E: 1, Q: &q}, nil
	}))
	mocks, err := toolkit.ParseMocks([]byte(`{"get": {"result": ` + reading + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	sequence, err := toolkit.ParseMocks([]byte(`{"get": {"sequence": [{"error": {"code": "busy", "message": "try again"}}, {"result": ` + reading + `}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	recording := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := os.WriteFile(recording, []byte(`{"tool": "get", "args": {}, "result": `+reading+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replayer, err := replay.Load(recording)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reading)
	}))
	defer srv.Close()
	net, err := permission.NewNet(permission.NetOptions{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	web, err := httptool.New(anyDef, []byte(`{"url": "`+srv.URL+`/a"}`), httptool.Options{Net: net})
	if err != nil {
		t.Fatal(err)
	}
	httpReg := toolkit.NewRegistry()
	httpReg.MustRegister(anyDef, web)
	block, _ := json.Marshal(map[string]any{"argv": []string{"sh", "-c", "cat >/dev/null; echo '" + reading + "'"}})
	cmd, err := cmdtool.New(anyDef, block, cmdtool.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmdReg := toolkit.NewRegistry()
	cmdReg.MustRegister(anyDef, cmd)

	for _, c := range []struct {
		name  string
		tools vm.Caller
		retry bool
	}{
		{"go tool", shaped, false},
		{"go struct", structs, false},
		{"mock", mocks, false},
		{"mock sequence", sequence, true},
		{"replay", replayer, false},
		{"http tool", httpReg, false},
		{"command tool", cmdReg, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := getA
			if c.retry {
				src = strings.Replace(src, "get: get() -> †state.a\n", "get: get() -> †state.a\n  retry 1 backoff 1ms\n", 1)
			}
			res := runClean(t, compileText(t, src), nil, vm.Options{Tools: router{"get": c.tools}})
			wantOutput(t, res.Output)
			if a := res.State["a"].(map[string]any); a["v"] != 3.0 || a["n"] != int64(4) {
				t.Errorf("the slot holds %#v", a)
			}
		})
	}
}

// TestValuesFromMCP: a number of an MCP server's result (calc's add, whose
// sum is a number the SDK encodes as 3) is a double in the plan.
func TestValuesFromMCP(t *testing.T) {
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcptest.NewServer("calc").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	s, err := mcp.Connect(ctx, "calc", ct, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := toolkit.NewRegistry()
	for _, b := range mcp.Bind([]*mcp.Server{s}, nil) {
		if b.Definition.Name == "add" {
			reg.MustRegister(b.Definition, b)
		}
	}
	prog := compileText(t, `tool add(a: number, b: number) -> {sum: number} pure
tool use(x: any) -> any pure
add(a: 1, b: 2) -> †state.s
r1: use(x: †state.s.sum * 2.0) -> †state.r1
r2: use(x: [double(†state.s.sum), string(†state.s.sum), math.floor(†state.s.sum)]) -> †state.r2
output [†state.r1, †state.r2]
`)
	res := runClean(t, prog, nil, vm.Options{Tools: router{"add": reg}})
	if diff := cmp.Diff([]any{6.0, []any{3.0, "3", 3.0}}, res.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// TestValuesFromSubPlan: a sub-plan's output, whose integers are written
// in it, is its caller's value of type A.
func TestValuesFromSubPlan(t *testing.T) {
	prog := compileText(t, `plan inner(e: 1 | 2.5) -> A {
  output {v: 3, n: 4, xs: [1, 2.5], o: {w: 2}, e: †input.e, q: 7}
}
get: inner(e: 1) -> †state.a
`+readsA)
	res := runClean(t, prog, nil, vm.Options{Tools: router{}})
	wantOutput(t, res.Output)
}

// TestValuesFromJournal: a run resumed in a new process takes the result
// of get from the journal, where it is JSON again (3, not 3.0), and the
// steps that read it evaluate.
func TestValuesFromJournal(t *testing.T) {
	db, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := &planfile.Source{Name: "values.plan", Text: getA}
	r, err := db.Create(journal.NewRun{ID: "v1", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	prog, diags, err := src.Compile()
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	// The first process stops once get has completed: the observer hears
	// of it before the steps that read it start. (Canceled from within
	// the call, get itself could be canceled.)
	ctx, cancel := context.WithCancel(context.Background())
	first := router{"get": callerFunc(func(context.Context, string, map[string]any) (any, error) {
		return decode(t, reading), nil
	})}
	// Canceled once get's outcome is recorded, not from inside the call,
	// which could cancel the call itself.
	stop := func(e vm.Event) {
		if e.Type == vm.StepCompleted && e.Step == "get" {
			cancel()
		}
	}
	res, err := vm.Run(ctx, prog, nil, vm.Options{Tools: first, MaxParallel: 1, Journal: r, RunID: r.ID, Restore: r.Restore, Observer: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(res); err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.RunCanceled || res.Steps[0].Status != vm.StatusCompleted {
		t.Fatalf("the first process: %s %v, get %s", res.Status, res.Err, res.Steps[0].Status)
	}
	r2, st, err := db.Resume("v1", false)
	if err != nil {
		t.Fatal(err)
	}
	prog, _, err = st.Source.Compile()
	if err != nil {
		t.Fatal(err)
	}
	second := router{"get": callerFunc(func(context.Context, string, map[string]any) (any, error) {
		return nil, errors.New("get was called again")
	})}
	res = runClean(t, prog, st.Input, vm.Options{Tools: second, Journal: r2, RunID: r2.ID, Restore: r2.Restore})
	wantOutput(t, res.Output)
}

// TestValuesFromInput: the input, from JSON (--input, NAME.input.json),
// from a JSON plan's input message and from defaults, conforms to the
// input's types.
func TestValuesFromInput(t *testing.T) {
	const plan = `input {
  a: A
  d: number = 3
  ds: [number] = [1, 2]
}
r12: use(x: [double(†input.d), †input.ds[0] * 1.5]) -> †state.r12
` + readsA
	readsFromInput := strings.ReplaceAll(plan, "†state.a.", "†input.a.")
	prog := compileText(t, readsFromInput)
	res := runClean(t, prog, map[string]any{"a": decode(t, reading)}, vm.Options{Tools: router{}})
	out := res.Output.(map[string]any)
	if diff := cmp.Diff([]any{3.0, 1.5}, res.State["r12"]); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	wantOutput(t, out)

	// The JSON form: the input message gives a and infers its type.
	f, diags := lang.ParseJSON("values.json", []byte(`[
  {"type": "input", "v": 3, "xs": [1, 2.5]},
  {"type": "tool", "tool": {"name": "use", "inputSchema": {"type": "object", "properties": {"x": {}}}}},
  {"type": "plan", "plan": [{"_tool": "use", "x": {"_expr": "[†input.v * 2, †input.xs[0] / 2.0]"}, "_outputPath": "†state.r"}], "output": "†state.r"}
]`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, diags := compiler.Check(f, compiler.Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res = runClean(t, prog, f.InputValues, vm.Options{Tools: router{}})
	if diff := cmp.Diff([]any{int64(6), 0.5}, res.Output); diff != "" {
		t.Errorf("JSON form (-want +got):\n%s", diff)
	}
}

// TestValuesInitialAndKnown: a state block's initial values and a step's
// known result, written as integers in places typed number, are doubles.
func TestValuesInitialAndKnown(t *testing.T) {
	prog := compileText(t, `state {
  t: number = 0
  a: A
}
tool get() -> A pure
get: get() -> †state.a
  result {v: 3, n: 4, xs: [1, 2.5], o: {w: 2}, e: 1, q: 7}
r0: use(x: [†state.t + 0.5, double(†state.t)]) -> †state.r0
`+readsA)
	res := runClean(t, prog, nil, vm.Options{Tools: router{}})
	wantOutput(t, res.Output)
	if diff := cmp.Diff([]any{0.5, 0.0}, res.State["r0"]); diff != "" {
		t.Errorf("initial value (-want +got):\n%s", diff)
	}
}

// TestValuesAcrossReplan: the state a replan carries into the new plan
// keeps the rule: the new plan reads A's numbers as doubles.
func TestValuesAcrossReplan(t *testing.T) {
	prog := compileText(t, "on failure replan\ntool fail(x: any) -> any pure\ntool get() -> A pure\n"+
		"type A {v: number, n: int, xs: [number], o: {w: number}, e: 1 | 2.5, q: number?}\n"+
		"get: get() -> †state.a\nfail: fail(x: †state.a) -> †state.f\n")
	next := strings.Replace(readsA, "type A {v: number, n: int, xs: [number], o: {w: number}, e: 1 | 2.5, q: number?}\n", "", 1)
	tools := router{
		"get":  callerFunc(func(context.Context, string, map[string]any) (any, error) { return decode(t, reading), nil }),
		"fail": callerFunc(func(context.Context, string, map[string]any) (any, error) { return nil, errors.New("down") }),
	}
	res, err := vm.Run(context.Background(), prog, nil, vm.Options{Tools: tools, Replanner: replanTo(next), MaxParallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	// fail failed, the new plan's steps all completed.
	if res.Status != vm.RunPartial || res.Replans != 1 || res.Completed != 1+11 {
		for _, s := range res.Steps {
			t.Logf("%s %s %+v", s.ID, s.Status, s.Error)
		}
		t.Fatalf("status %s, %d replans, %d completed: %v", res.Status, res.Replans, res.Completed, res.Err)
	}
	wantOutput(t, res.Output)
}

// replanTo replans with a plan's text.
type replanTo string

func (p replanTo) Replan(context.Context, *vm.ReplanRequest) (*lang.File, error) {
	f, diags := lang.Parse("replan.plan", []byte(p))
	if diags.HasErrors() {
		return nil, diags
	}
	return f, nil
}

// TestValuesInDryRun: a dry run with mocks reads the mocked integers as
// the run does.
func TestValuesInDryRun(t *testing.T) {
	mocks, err := toolkit.ParseMocks([]byte(`{"get": {"result": ` + reading + `}, "use": {"result": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := vm.Simulate(context.Background(), compileText(t, getA), nil, vm.SimOptions{Mocks: mocks})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems: %+v", res.Problems)
	}
	for _, s := range res.Steps {
		if s.Status != vm.StatusCompleted {
			t.Errorf("step %s: %s %+v", s.ID, s.Status, s.Error)
		}
	}
}

// TestValuesMisfit: a value that does not fit its type fails its step
// with invalid-output and a message that says where, rather than reach
// CEL: a fraction in an int, an integer a double may have rounded, a
// string in a number; and a result of any written to a slot another step
// types.
func TestValuesMisfit(t *testing.T) {
	for _, c := range []struct {
		result, want string
	}{
		{`{"v": 3, "n": 4.5, "xs": [], "o": {"w": 2}, "e": 1, "q": null}`, "at n: 4.5 is not an integer"},
		{`{"v": 3, "n": 4, "xs": [1, "2"], "o": {"w": 2}, "e": 1, "q": null}`, `xs[1]: the string "2" is not a number`},
		{`{"v": 3, "n": 1e17, "xs": [], "o": {"w": 2}, "e": 1, "q": null}`, "beyond 2^53, which may have been rounded"},
		{`{"v": 3, "n": 123456789012345678901234567890, "xs": [], "o": {"w": 2}, "e": 1, "q": null}`, "beyond the range of an int (64-bit)"},
		{`{"v": 3, "n": 4, "xs": [], "o": {"w": 2}, "e": 2, "q": null}`, "e: the number 2 is not one of 1 | 2.5"},
	} {
		t.Run(c.want, func(t *testing.T) {
			tools := router{"get": callerFunc(func(context.Context, string, map[string]any) (any, error) { return decode(t, c.result), nil })}
			res, err := vm.Run(context.Background(), compileText(t, getA), nil, vm.Options{Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			get := res.Steps[0]
			if get.Status != vm.StatusFailed || get.Error.Code != toolkit.CodeInvalidOutput || !strings.Contains(strings.Replace(get.Error.Message, ": n:", ": at n:", 1), strings.TrimPrefix(c.want, "at ")) {
				t.Errorf("get: %s %+v", get.Status, get.Error)
			}
		})
	}
	// A step that writes any to a slot another step types number.
	prog := compileText(t, `tool num() -> number pure
tool anything() -> any pure
tool use(x: any) -> any pure
num() -> †state.x
  when false
anything() -> †state.x
use(x: †state.x * 2.0) -> †state.y
`)
	for _, c := range []struct {
		result any
		want   string
	}{
		{int64(3), ""},
		{"three", `the result of anything does not fit †state.x, of type number: the string "three" is not a number`},
	} {
		tools := router{"anything": callerFunc(func(context.Context, string, map[string]any) (any, error) { return c.result, nil })}
		res, err := vm.Run(context.Background(), prog, nil, vm.Options{Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if res.State["y"] != 6.0 {
				t.Errorf("%v: state %v, steps %+v", c.result, res.State, res.Steps[1].Error)
			}
			continue
		}
		if s := res.Steps[1]; s.Status != vm.StatusFailed || s.Error.Message != c.want {
			t.Errorf("%v: %s %+v", c.result, s.Status, s.Error)
		}
	}
}

// TestValuesInCEL: arithmetic mixes ints and doubles (the int is taken as
// a double), over typed values and over any, which CEL sees as dyn; the
// math functions that take a double take an int too; int / int stays
// integer division. A value CEL computes that JSON cannot hold (an
// infinity, a uint beyond int64) fails its step with a message, instead
// of reaching a tool or the journal.
func TestValuesInCEL(t *testing.T) {
	prog := compileText(t, `on failure continue
tool get() -> any pure
tool use(x: any) -> any pure
get: get() -> †state.a
ok: use(x: [1 + 0.5, 3 / 2, 2.0 * 3, †state.a.i * 2.0, †state.a.d * 2, 7 - †state.a.d, †state.a.i / 2.0, 1u + 0.5]) -> †state.ok
math: use(x: [math.ceil(†state.a.i), math.floor(†state.a.i), math.round(†state.a.i), math.trunc(†state.a.i), math.isFinite(†state.a.i), math.isNaN(†state.a.i), math.isInf(†state.a.i)]) -> †state.math
compare: use(x: [†state.a.i == 3.0, †state.a.d > 2, †state.a.i in [3.0], double(†state.a.i), int(†state.a.d), string(†state.a.i)]) -> †state.compare
inf: use(x: 1.0 / (†state.a.d - 2.5)) -> †state.inf
big: use(x: uint(†state.a.i) * 4611686018427387904u) -> †state.big
`)
	tools := router{"get": callerFunc(func(context.Context, string, map[string]any) (any, error) {
		return decode(t, `{"i": 3, "d": 2.5}`), nil
	})}
	res, err := vm.Run(context.Background(), prog, nil, vm.Options{Tools: tools, MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ok":      []any{1.5, int64(1), 6.0, 6.0, 5.0, 4.5, 1.5, 1.5},
		"math":    []any{3.0, 3.0, 3.0, 3.0, true, false, false},
		"compare": []any{true, true, true, 3.0, int64(2), "3"},
	}
	for slot, w := range want {
		if diff := cmp.Diff(w, res.State[slot]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", slot, diff)
		}
	}
	for _, s := range res.Steps {
		switch s.ID {
		case "inf":
			if s.Status != vm.StatusFailed || !strings.Contains(s.Error.Message, "+Inf, which JSON cannot hold") {
				t.Errorf("inf: %s %+v", s.Status, s.Error)
			}
		case "big":
			if s.Status != vm.StatusFailed || !strings.Contains(s.Error.Message, "13835058055282163712u is beyond the range of an int (64-bit)") {
				t.Errorf("big: %s %+v", s.Status, s.Error)
			}
		}
	}
}
