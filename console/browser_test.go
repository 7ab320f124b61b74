package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/internal/browsertest"
	"github.com/obelisk-plan/obelisk/vm"
)

// node is the JavaScript test that a step's node in the graph has a
// status.
func node(step, status string) string {
	return fmt.Sprintf(`!!document.querySelector('svg.graph a.node[data-step=%q].s-%s')`, step, status)
}

// TestBrowserApprove: in a real browser, a step's hostile result shows as
// text and runs nothing; a person writes a note and approves the waiting
// gate; the decision is the journal's, and when the run is resumed the
// page, watching, turns its steps and status green.
func TestBrowserApprove(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 900)

	b.Open(base + "/runs/r")
	b.WaitFor("the gate is shown", `!!document.querySelector('form.decide button[value="approve"]') && `+node("b", "waiting"))
	if pwned := browsertest.Eval[bool](b, `window.pwned !== undefined || document.title.includes('pwned')`); pwned {
		t.Fatal("the hostile result ran in the page")
	}
	b.Do("opening step a", chromedp.Click(`svg.graph a.node[data-step="a"]`))
	b.WaitFor("step a's details open", `document.getElementById('step-0').open`)
	result := browsertest.Eval[string](b, `document.querySelector('#step-0 pre.result').textContent`)
	if !strings.Contains(result, "<script>document.title='pwned';window.pwned=1</script><img src=x onerror=") || !strings.Contains(result, `\u202eevil`) {
		t.Errorf("the result does not show as text: %q", result)
	}
	args := browsertest.Eval[string](b, `document.querySelector('form.decide').closest('article').querySelector('pre.args').textContent`)
	if !strings.Contains(args, `"text": "<script>document.title='pwned'`) {
		t.Errorf("the gate does not show the arguments that will be sent: %q", args)
	}
	b.Screenshot("run-waiting")
	b.Resize(390, 844)
	b.Open(base + "/approvals")
	b.Screenshot("approvals-390px")
	b.Resize(1280, 900)
	b.Open(base + "/approvals")
	b.Screenshot("approvals")

	b.Do("writing a note and approving",
		chromedp.SendKeys(`textarea[name="note"]`, "checked the text"),
		chromedp.Click(`form.decide button[value="approve"]`))
	b.WaitFor("the decision is recorded", `location.search.includes('decided=1') && document.querySelector('.flash') !== null`)
	det, err := st.Show("r")
	if err != nil {
		t.Fatal(err)
	}
	if a := det.Approvals[0]; !a.Approved || a.Note != "checked the text" || a.By != "someone at the console (no name given)" {
		t.Fatalf("recorded %+v", a)
	}
	b.Open(base + "/runs/r")
	b.WaitFor("the page watches", `document.getElementById('live').getAttribute('data-state') === 'on'`)
	if res := resumeRun(t, st, "r", gateTools); res.Status != vm.RunCompleted {
		t.Fatalf("resumed: %s %v", res.Status, res.Err)
	}
	b.WaitFor("step b turns green and the run completed", node("b", "completed")+` && !!document.querySelector('#summary .status.s-completed')`)
	if pwned := browsertest.Eval[bool](b, `window.pwned !== undefined`); pwned {
		t.Fatal("the hostile result ran in the page")
	}
	b.Screenshot("run-completed")
}

// gatedTools answers fetch(n) when the test lets call n return: it
// reports each call on arrived, and waits on release.
type gatedTools struct {
	arrived chan int64
	mu      sync.Mutex
	release map[int64]chan struct{}
}

func newGatedTools() *gatedTools {
	return &gatedTools{arrived: make(chan int64, 8), release: map[int64]chan struct{}{}}
}

func (g *gatedTools) gate(n int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release[n] == nil {
		g.release[n] = make(chan struct{})
	}
	return g.release[n]
}

func (g *gatedTools) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	n := args["n"].(int64)
	g.arrived <- n
	select {
	case <-g.gate(n):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return fmt.Sprintf("page %d", n), nil
}

const chain = `tool fetch(n: int, after: string) -> string pure

a: fetch(n: 1, after: "") -> †state.a
b: fetch(n: 2, after: †state.a) -> †state.b
c: fetch(n: 3, after: †state.b) -> †state.c

output [†state.a, †state.b, †state.c]
`

// TestBrowserLive: a run started while the console is open shows up in
// the list of runs without a reload, and its page turns each step from
// running to completed as the run goes.
func TestBrowserLive(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 800)
	b.Open(base + "/")
	b.WaitFor("the page watches", `document.getElementById('live').getAttribute('data-state') === 'on'`)

	p, diags, err := durable.Compile(&planfile.Source{Name: "chain.plan", Text: chain}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	r, err := st.Create(p, "live", durable.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tools := newGatedTools()
	done := make(chan *vm.Result, 1)
	go func() {
		res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: tools})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	b.WaitFor("the run shows up in the list", `!!document.querySelector('tr[data-run="live"]')`)
	b.WaitFor("the filter counts it", `document.querySelector('#filter a[href="/"] .n').textContent === '1' && document.querySelector('#filter a.f-running .n').textContent === '1'`)
	b.Do("opening the run", chromedp.Click(`tr[data-run="live"] a[href="/runs/live"]`))
	b.WaitFor("the page watches", `location.pathname === '/runs/live' && document.getElementById('live').getAttribute('data-state') === 'on'`)
	for i, step := range []string{"a", "b", "c"} {
		n := int64(i + 1)
		if got := <-tools.arrived; got != n {
			t.Fatalf("call %d arrived, want %d", got, n)
		}
		b.WaitFor(step+" runs", node(step, "running"))
		if step == "b" {
			if !browsertest.Eval[bool](b, node("a", "completed")+" && "+node("c", "pending")) {
				t.Errorf("while b runs, a is not completed or c not pending: %s", browsertest.Eval[string](b, `Array.from(document.querySelectorAll('a.node')).map(n => n.dataset.step + ' ' + n.getAttribute('class')).join('; ')`))
			}
			b.Screenshot("run-live")
		}
		close(tools.gate(n))
		b.WaitFor(step+" completes", node(step, "completed"))
	}
	if res := <-done; res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	b.WaitFor("the run is completed and its output shown", `!!document.querySelector('#summary .status.s-completed') && document.querySelector('#output pre') !== null`)
}

// TestBrowserRefusals: in a real browser, a POST of the page without the
// form's token is refused, a form on another origin that posts a decision
// to the console is refused, and a console that is not on loopback
// refuses a page opened without its token; nothing is recorded.
func TestBrowserRefusals(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 800)

	b.Open(base + "/runs/r")
	status := browsertest.Eval[float64](b, `fetch('/runs/r/decide', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'round=0&step=b&decision=approve'}).then(r => r.status)`)
	if status != http.StatusForbidden {
		t.Errorf("a POST without the form's token: %v", status)
	}

	// An attacker's page, on another port of the same host, that posts
	// the decision with the form's fields, the token guessed.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/runs/r/decide">
<input name="csrf" value="guess"><input name="round" value="0"><input name="step" value="b"><input name="decision" value="approve"></form>
<script>document.getElementById('f').submit()</script>`, base)
	}))
	defer evil.Close()
	b.Open(evil.URL)
	b.WaitFor("the console answers the attacker's form", `location.href.startsWith(`+fmt.Sprintf("%q", base)+`) && document.body.innerText.includes('refused:')`)
	text := browsertest.Eval[string](b, `document.body.innerText`)
	if !strings.Contains(text, "refused: the request did not come from a page of this console") {
		t.Errorf("the attacker's form: %s", text)
	}
	if len(pending(t, st, "r")) != 1 {
		t.Fatal("a refused request recorded a decision")
	}

	srv, away := serve(t, st, Options{}, true)
	b.Open(away + "/runs/r")
	text = browsertest.Eval[string](b, `document.body.innerText`)
	if !strings.Contains(text, "refused: this console needs its token") || strings.Contains(text, "fetch") {
		t.Errorf("without the token: %s", text)
	}
	b.Screenshot("token-refused")
	b.Open(away + "/runs/r?token=" + srv.Token())
	b.WaitFor("the page opens with the token", `location.search === '' && `+node("b", "waiting"))
}

// TestBrowserChangeBeforeWatching: what is recorded after a page was
// rendered and before its stream of changes began reaches the page. The
// browser holds the stream's request while the page loads and a step
// starts; once it goes through, the page shows the step running,
// although no change follows.
func TestBrowserChangeBeforeWatching(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 800)
	ctx := b.Context()
	paused := make(chan fetch.RequestID, 8)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/watch*"}}}); err != nil {
		t.Fatal(err)
	}

	p, diags, err := durable.Compile(&planfile.Source{Name: "chain.plan", Text: chain}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	r, err := st.Create(p, "gap", durable.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	b.Open(base + "/runs/gap")
	watch := <-paused
	if browsertest.Eval[bool](b, node("a", "running")) {
		t.Fatal("a runs before the run started")
	}
	tools := newGatedTools()
	done := make(chan *vm.Result, 1)
	go func() {
		res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: tools})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if got := <-tools.arrived; got != 1 {
		t.Fatalf("call %d arrived first", got)
	}
	// The start of a is recorded within vm.GroupDelay of its call.
	for {
		det, err := st.Show("gap")
		if err != nil {
			t.Fatal(err)
		}
		if len(det.Steps) > 0 && det.Steps[0].Status == vm.StatusRunning {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: watch}); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("a runs", node("a", "running"))
	for n := int64(1); n <= 3; n++ {
		close(tools.gate(n))
		if n < 3 {
			<-tools.arrived
		}
	}
	if res := <-done; res.Status != vm.RunCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
}

// fanOutPlan fans out over 3 elements, and stops at a gate.
const fanOutPlan = `tool fetch(n: int) -> string pure
tool send(text: string) -> string irreversible

a: fetch(n: 1) -> †state.a
b: for each n in [1, 2, 3]: fetch(n: †n) -> †state.b
c: send(text: †state.a) -> †state.c
  approve "Send it?"

output [†state.b, †state.c]
`

// TestBrowserTimeline: a run's page draws its timeline: a for each of 3
// elements is one attempt of its step with 3 rows under it (and reads as
// 3 elements, not 3 attempts), the gate's wait is drawn as a wait; once
// the gate is approved and the run resumed, the page, watching, draws
// the gated step's attempt.
func TestBrowserTimeline(t *testing.T) {
	st := openStore(t)
	if res := startRun(t, st, "fan", fanOutPlan, gateTools); res.Status != vm.RunWaiting {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 900)
	b.Open(base + "/runs/fan")
	row := func(step, bar string) string {
		return fmt.Sprintf(`document.querySelectorAll('svg.timeline g.row[data-step=%q] rect.bar%s').length`, step, bar)
	}
	b.WaitFor("the timeline is drawn", `!!document.querySelector('svg.timeline') && `+row("c", ".k-wait")+` === 1`)
	if n := browsertest.Eval[float64](b, row("b", ".k-attempt")); n != 1 {
		t.Errorf("the for each has %v attempt bars, want 1", n)
	}
	subs := browsertest.Eval[string](b, `Array.from(document.querySelectorAll('svg.timeline g.row.sub')).map(g => g.dataset.step).join(' ')`)
	if subs != "b[0] b[1] b[2]" {
		t.Errorf("the rows under steps: %q", subs)
	}
	if s := browsertest.Eval[string](b, `document.querySelector('#step-1 summary').textContent`); !strings.Contains(s, "3 elements") || strings.Contains(s, "attempts") {
		t.Errorf("the for each's summary: %q", s)
	}
	if crit := browsertest.Eval[bool](b, `document.querySelector('svg.timeline g.row[data-step="c"]').classList.contains('crit')`); !crit {
		t.Error("the gated step, last to end, is not marked on the critical path")
	}
	b.Screenshot("run-timeline-waiting")
	b.WaitFor("the page watches", `document.getElementById('live').getAttribute('data-state') === 'on'`)
	b.Do("approving", chromedp.Click(`form.decide button[value="approve"]`))
	b.WaitFor("the decision is recorded", `location.search.includes('decided=1')`)
	b.WaitFor("the page watches", `document.getElementById('live').getAttribute('data-state') === 'on'`)
	if res := resumeRun(t, st, "fan", gateTools); res.Status != vm.RunCompleted {
		t.Fatalf("resumed: %s %v", res.Status, res.Err)
	}
	b.WaitFor("the gated step's attempt is drawn", row("c", ".k-attempt.s-completed")+` === 1 && `+row("c", ".k-wait")+` === 1`)
	b.Screenshot("run-timeline")
	b.Open(base + "/")
	b.WaitFor("the list counts the run", `document.querySelector('#filter a.f-completed .n').textContent === '1'`)
	b.Screenshot("runs")
}
