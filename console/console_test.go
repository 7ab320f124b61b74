package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/console/consoletest"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/vm"
)

// gatePlan fetches a value, then sends it behind an approval gate.
const gatePlan = `tool fetch(n: int) -> string pure
tool send(text: string) -> string irreversible

a: fetch(n: 1) -> †state.a
b: send(text: †state.a) -> †state.b
  approve "Send it?"

output †state.b
`

// hostile is a result a tool could return to attack the page: a script,
// an element with a handler, and a right-to-left override that would
// reorder the text after it.
const hostile = "<script>document.title='pwned';window.pwned=1</script><img src=x onerror=\"window.pwned=2\">\u202eevil"

// operatorTools are the operator's definitions of the tools of the plans:
// fetch only reads; send, which declares no effect, cannot be undone.
const operatorTools = `{"tools": [
  {"name": "fetch", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
   "outputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}},
  {"name": "send", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
   "outputSchema": {"type": "string"}}
]}`

// callerFunc adapts a function to vm.Caller.
type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

// gateTools answer the gate plan: fetch returns the hostile text, send
// says what it sent.
var gateTools = callerFunc(func(ctx context.Context, name string, args map[string]any) (any, error) {
	switch name {
	case "fetch":
		return hostile, nil
	case "send":
		return "sent: " + args["text"].(string), nil
	}
	return nil, fmt.Errorf("no tool %s", name)
})

func openStore(t *testing.T) *durable.Store {
	t.Helper()
	st, err := durable.Open(t.TempDir(), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startRun records and executes a run of a plan until it ends or waits.
func startRun(t *testing.T, st *durable.Store, id, text string, tools vm.Caller) *vm.Result {
	t.Helper()
	src := &planfile.Source{Name: id + ".plan", Text: text, Tools: []planfile.File{{Name: "tools.json", Text: operatorTools}}}
	p, diags, err := durable.Compile(src, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	r, err := st.Create(p, id, durable.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// resumeRun resumes a run in this process, as obelisk resume does.
func resumeRun(t *testing.T, st *durable.Store, id string, tools vm.Caller) *vm.Result {
	t.Helper()
	r, err := st.Resume(id, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), durable.ExecOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// elsewhere is a listener that says it is on an address that is not
// loopback, though it is: the tests reach it on loopback only.
type elsewhere struct{ net.Listener }

func (e elsewhere) Addr() net.Addr {
	a := *e.Listener.Addr().(*net.TCPAddr)
	a.IP = net.ParseIP("192.0.2.10")
	return &a
}

// serve serves a console of st on loopback for the test and returns it
// and the address to reach it at.
func serve(t *testing.T, st *durable.Store, opts Options, notLoopback bool) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var l net.Listener = ln
	if notLoopback {
		l = elsewhere{ln}
	}
	if opts.Poll == 0 {
		opts.Poll = 20_000_000 // 20ms
	}
	srv, err := New(st, l, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, base
}

// pending returns the approvals run id waits for.
func pending(t *testing.T, st *durable.Store, id string) []*durable.Approval {
	t.Helper()
	p, err := st.Pending(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitingRun starts a run of the gate plan that waits for the approval
// of b.
func waitingRun(t *testing.T, st *durable.Store, id string) {
	t.Helper()
	if res := startRun(t, st, id, gatePlan, gateTools); res.Status != vm.RunWaiting {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
}

func decideForm(csrf, decision, note string) url.Values {
	return url.Values{"csrf": {csrf}, "round": {"0"}, "step": {"b"}, "decision": {decision}, "note": {note}}
}

// TestHeaders: every page has a Content-Security-Policy that lets it run
// only its own script, no inline script, and be framed by nobody.
func TestHeaders(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	for _, path := range []string{"/", "/runs/r", "/approvals", "/plan"} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		code, h, body := c.Do(req)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy": contentSecurityPolicy, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
			"Referrer-Policy": "no-referrer", "Content-Type": "text/html; charset=utf-8",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("GET %s: %s is %q, want %q", path, k, got, want)
			}
		}
		if !strings.Contains(contentSecurityPolicy, "script-src 'self';") || strings.Contains(contentSecurityPolicy, "unsafe") {
			t.Errorf("the policy allows inline script: %s", contentSecurityPolicy)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Errorf("GET %s: the page has inline script or style", path)
		}
	}
}

// TestHostileValuesEscaped: a step result that holds a script, an element
// with a handler and a right-to-left override is shown as text: escaped
// for HTML, the override written as an escape.
func TestHostileValuesEscaped(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	for _, path := range []string{"/runs/r", "/approvals"} {
		code, body := c.Get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		if strings.Contains(body, "<script>document") || strings.Contains(body, "<img src=x") || strings.ContainsRune(body, '\u202e') {
			t.Errorf("GET %s: the hostile value reached the page unescaped", path)
		}
		if !strings.Contains(body, `&lt;script&gt;document.title=&#39;pwned&#39;`) || !strings.Contains(body, `\u202eevil`) {
			t.Errorf("GET %s: the hostile value is not shown as text", path)
		}
	}
}

// TestLoopbackHostOnly: a console on loopback answers a request addressed
// to another name (a web page that points its own name at 127.0.0.1, DNS
// rebinding) with a refusal, and records nothing.
func TestLoopbackHostOnly(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/runs/r")
	for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.evil.example"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/runs/r", nil)
		req.Host = host
		code, _, body := c.Do(req)
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, "refused: this console answers only at localhost or a loopback address") || strings.Contains(body, "fetch") {
			t.Errorf("Host %s: %d\n%s", host, code, body)
		}
		req, _ = http.NewRequest(http.MethodPost, base+"/runs/r/decide", strings.NewReader(decideForm(csrf, "approve", "").Encode()))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if code, _, _ := c.Do(req); code != http.StatusMisdirectedRequest {
			t.Errorf("POST with Host %s: %d", host, code)
		}
	}
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]:99"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Host = host
		if code, _, _ := c.Do(req); code != http.StatusOK {
			t.Errorf("Host %s: %d", host, code)
		}
	}
	if len(pending(t, st, "r")) != 1 {
		t.Error("a decision was recorded")
	}
}

// TestTokenRequired: a console on an address that is not loopback has a
// token, generated when none is given, and refuses every request without
// it, a decision's included; the address it gives opens it.
func TestTokenRequired(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	srv, base := serve(t, st, Options{}, true)
	if len(srv.Token()) < minToken || !strings.Contains(srv.URL(), "?token="+srv.Token()) {
		t.Fatalf("token %q, address %s", srv.Token(), srv.URL())
	}
	c := consoletest.New(t, base)
	for _, path := range []string{"/", "/runs/r", "/approvals", "/plan", "/watch", "/static/console.css", "/?token=wrong-token-wrong-token"} {
		code, body := c.Get(path)
		if code != http.StatusUnauthorized || !strings.HasPrefix(body, "refused: ") || strings.Contains(body, "fetch") {
			t.Errorf("GET %s without the token: %d\n%s", path, code, body)
		}
	}
	if code, body := c.Post("/runs/r/decide", decideForm("x", "approve", ""), nil); code != http.StatusUnauthorized {
		t.Errorf("POST without the token: %d\n%s", code, body)
	}
	if len(pending(t, st, "r")) != 1 {
		t.Fatal("a decision was recorded without the token")
	}
	// The address with the token sets the cookie, and sends the browser
	// on without the token in the address.
	req, _ := http.NewRequest(http.MethodGet, base+"/runs/r?token="+url.QueryEscape(srv.Token()), nil)
	code, h, _ := c.Do(req)
	if code != http.StatusSeeOther || h.Get("Location") != "/runs/r" {
		t.Fatalf("GET with the token: %d, to %q", code, h.Get("Location"))
	}
	if code, _ := c.Get("/runs/r"); code != http.StatusOK {
		t.Errorf("GET with the cookie: %d", code)
	}
	bearer := consoletest.New(t, base)
	req, _ = http.NewRequest(http.MethodGet, base+"/", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	if code, _, _ := bearer.Do(req); code != http.StatusOK {
		t.Errorf("GET with the bearer token: %d", code)
	}
	if _, err := New(st, elsewhere{mustListen(t)}, Options{Token: "short"}); err == nil || !strings.Contains(err.Error(), "give at least 16") {
		t.Errorf("a short token: %v", err)
	}
}

func mustListen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestCSRF: a decision without the form's session token, with another
// session's, from another origin, or by GET is refused, and nothing is
// recorded; the page's own form records it.
func TestCSRF(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/runs/r")
	other := consoletest.New(t, base).CSRF("/runs/r")
	for name, tc := range map[string]struct {
		form   url.Values
		header map[string]string
		want   string
	}{
		"no token":           {decideForm("", "approve", ""), nil, "refused: the form carries no valid session token"},
		"another session's":  {decideForm(other, "approve", ""), nil, "refused: the form carries no valid session token"},
		"cross-site":         {decideForm(csrf, "approve", ""), map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "refused: the request did not come from a page of this console"},
		"same-site":          {decideForm(csrf, "approve", ""), map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}, "refused: the request did not come from a page of this console"},
		"other origin alone": {decideForm(csrf, "approve", ""), map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": ""}, "refused: the request did not come from a page of this console"},
	} {
		code, body := c.Post("/runs/r/decide", tc.form, tc.header)
		if code != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d\n%s", name, code, body)
		}
	}
	if code, _ := c.Get("/runs/r/decide"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of the decision: %d", code)
	}
	if len(pending(t, st, "r")) != 1 {
		t.Fatal("a refused request recorded a decision")
	}
	code, body := c.Post("/runs/r/decide", decideForm(csrf, "approve", "looks right"), nil)
	if code != http.StatusSeeOther {
		t.Fatalf("the page's form: %d\n%s", code, body)
	}
	det, err := st.Show("r")
	if err != nil {
		t.Fatal(err)
	}
	a := det.Approvals[0]
	if !a.Decided() || !a.Approved || a.Note != "looks right" || a.By != "someone at the console (no name given)" {
		t.Errorf("recorded %+v", a)
	}
}

// TestDecideOnce: a decision is recorded once: a second one, from the same
// page or another, is refused with the first, which stays; and the run,
// resumed, takes it.
func TestDecideOnce(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/approvals")
	form := decideForm(csrf, "reject", "not today")
	form.Set("from", "approvals")
	if code, body := c.Post("/runs/r/decide", form, nil); code != http.StatusSeeOther {
		t.Fatalf("first: %d\n%s", code, body)
	}
	code, body := c.Post("/runs/r/decide", decideForm(csrf, "approve", "changed my mind"), nil)
	if code != http.StatusConflict || !strings.Contains(body, "the approval of step b of run r was decided already (rejected by someone at the console (no name given),") || !strings.Contains(body, "nothing was recorded") {
		t.Errorf("second: %d\n%s", code, body)
	}
	res := resumeRun(t, st, "r", gateTools)
	if res.Status == vm.RunCompleted {
		t.Fatalf("the rejected run completed")
	}
	var b *vm.StepResult
	for _, s := range res.Steps {
		if s.ID == "b" {
			b = s
		}
	}
	if b == nil || b.Error == nil || !strings.Contains(b.Error.Message, "not today") {
		t.Fatalf("step b: %+v", b)
	}
	_, page := c.Get("/runs/r")
	if !strings.Contains(page, "not today") || !strings.Contains(page, "a person rejected b: not today") {
		t.Error("the run's page does not show the note of the rejection")
	}
	if code, body := c.Post("/runs/r/decide", decideForm(csrf, "approve", ""), nil); code != http.StatusConflict {
		t.Errorf("after the run: %d\n%s", code, body)
	}
	if code, body := c.Post("/runs/nope/decide", decideForm(csrf, "approve", ""), nil); code != http.StatusNotFound {
		t.Errorf("no such run: %d\n%s", code, body)
	}
}

// planGate asks for the approval of the whole plan.
const planGate = `mode lazy
approve "Run it?"

tool fetch(n: int) -> string pure
tool send(text: string) -> string irreversible

a: fetch(n: 1) -> †state.a
b: send(text: †state.a) -> †state.b

output †state.b
`

// TestEditAndApprove: the approval of a whole plan may be given to an
// edited plan, which must check against the run's tools: one that does
// not is refused with its diagnostics, and nothing is recorded; the
// approval of a step cannot be edited.
func TestEditAndApprove(t *testing.T) {
	st := openStore(t)
	if res := startRun(t, st, "p", planGate, gateTools); res.Status != vm.RunWaiting {
		t.Fatalf("status %s", res.Status)
	}
	waitingRun(t, st, "s")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/approvals")
	edit := func(run, step, plan string) (int, string) {
		return c.Post("/runs/"+run+"/decide", url.Values{"csrf": {csrf}, "round": {"0"}, "step": {step}, "decision": {"edit"}, "plan": {plan}}, nil)
	}
	code, body := edit("p", "", strings.Replace(planGate, "fetch(n: 1)", "fetch(n: \"one\")", 1))
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "the edited plan does not check, and nothing was recorded") || !strings.Contains(body, "edited.plan:7:") {
		t.Errorf("a plan that does not check: %d\n%s", code, body)
	}
	code, body = edit("p", "", strings.Replace(planGate, "tool send(text: string) -> string irreversible", "tool send(text: string) -> string pure", 1))
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "tool-mismatch") {
		t.Errorf("a plan that weakens a tool's effect: %d\n%s", code, body)
	}
	if code, body := edit("s", "b", gatePlan); code != http.StatusBadRequest || !strings.Contains(body, "an edited plan replaces the whole plan") {
		t.Errorf("editing a step's approval: %d\n%s", code, body)
	}
	if len(pending(t, st, "p")) != 1 || len(pending(t, st, "s")) != 1 {
		t.Fatal("a refused edit recorded a decision")
	}
	edited := strings.Replace(planGate, "b: send", "c: fetch(n: 3) -> †state.c\nb: send", 1)
	if code, body := edit("p", "", edited); code != http.StatusSeeOther {
		t.Fatalf("a plan that checks: %d\n%s", code, body)
	}
	det, _ := st.Show("p")
	if a := det.Approvals[0]; !a.Approved || a.Edit != edited {
		t.Errorf("recorded %+v", a)
	}
	// The run's page draws the plan the run runs: the edited one.
	if res := resumeRun(t, st, "p", gateTools); res.Status != vm.RunCompleted {
		t.Fatalf("resumed: %s %v", res.Status, res.Err)
	}
	_, page := c.Get("/runs/p")
	if !strings.Contains(page, `data-step="c" data-status="completed"`) || !strings.Contains(page, "The plan as a person edited and approved it") {
		t.Errorf("the run's page does not show the edited plan")
	}
}

// TestWatch: a page that watches a run hears of a decision another
// process records.
func TestWatch(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	req, _ := http.NewRequest(http.MethodGet, base+"/watch?run=r", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	buf := make([]byte, 4096)
	read := func() string {
		n, err := resp.Body.Read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	if got := read(); !strings.Contains(got, "event: ready") {
		t.Fatalf("first: %q", got)
	}
	other, err := durable.OpenExisting(st.Dir(), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ap, err := other.Choose("r", "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Decide("r", ap, durable.Decision{Approved: true, By: "another process"}); err != nil {
		t.Fatal(err)
	}
	for got := ""; !strings.Contains(got, "event: change"); got += read() {
	}
}

// TestPlanPage: a plan pasted on the plan page is checked, drawn,
// estimated and dry-run; one with errors gets its diagnostics; and its
// imports read no file of the server's.
func TestPlanPage(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/plan")
	code, body := c.Post("/plan", url.Values{"csrf": {csrf}, "plan": {gatePlan}}, nil)
	for _, want := range []string{"The plan checks clean", `data-step="a"`, `data-step="b"`, "Estimates", "critical path", "Dry run", "Approval gates the run stops at", "Schedule"} {
		if !strings.Contains(body, want) {
			t.Errorf("a good plan: %d, no %q", code, want)
		}
	}
	code, body = c.Post("/plan", url.Values{"csrf": {csrf}, "plan": {"a: fetch(n: 1) -> †state.a\n"}}, nil)
	if code != http.StatusOK || !strings.Contains(body, "pasted.plan:1:4: error: unknown tool") {
		t.Errorf("a plan with an error: %d\n%s", code, body)
	}
	code, body = c.Post("/plan", url.Values{"csrf": {csrf}, "plan": {"import \"/etc/passwd.json\"\nimport \"../../x.json\"\n\na: echo(value: 1) -> †state.a\n"}}, nil)
	if code != http.StatusOK || !strings.Contains(body, "error:") || strings.Contains(body, "The plan checks clean") || strings.Contains(body, "root:") {
		t.Errorf("a plan that imports files: %d\n%s", code, body)
	}
	if code, body := c.Post("/plan", url.Values{"plan": {gatePlan}}, nil); code != http.StatusForbidden {
		t.Errorf("without the form's token: %d\n%s", code, body)
	}
	if code, body := c.Post("/plan", url.Values{"csrf": {csrf}, "plan": {strings.Repeat("#", maxBody)}}, nil); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "refused: the form is larger than 8 MiB") {
		t.Errorf("a form too large: %d\n%.300s", code, body)
	}
	// A plan file opened in the page comes as a multipart form.
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	w.WriteField("csrf", csrf)
	w.WriteField("plan", "")
	fw, _ := w.CreateFormFile("file", "mine.plan")
	fw.Write([]byte("a: nothere(n: 1) -> †state.a\n"))
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/plan", &mp)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Origin", base)
	code, _, body = c.Do(req)
	if code != http.StatusOK || !strings.Contains(body, "mine.plan:1:4: error: unknown tool") {
		t.Errorf("a plan file: %d\n%s", code, body)
	}
}

// inputPlan needs an input: a dry run without one does not fit the plan.
const inputPlan = `tool fetch(n: int) -> string pure

input {
  n: int
}

a: fetch(n: †input.n) -> †state.a

output †state.a
`

// textarea is the text a page's textarea shows, as the browser reads it.
func textarea(t *testing.T, body, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<textarea id="`+id+`"`)
	if !ok {
		t.Fatalf("no textarea %s", id)
	}
	_, rest, _ = strings.Cut(rest, ">")
	text, _, _ := strings.Cut(rest, "</textarea>")
	return html.UnescapeString(text)
}

// TestPlanPageLineEnds: the plan page shows the form's text again with
// the lines a browser sent ("\r\n") ended by "\n", not by the two
// characters \r, so the form can be sent a second time as it is.
func TestPlanPageLineEnds(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/plan")
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	form := url.Values{"csrf": {csrf}, "plan": {crlf(inputPlan)}, "input": {crlf("{\n  \"n\": 3\n}")}, "mocks": {"\r"}}
	for i := range 2 {
		code, body := c.Post("/plan", form, nil)
		if code != http.StatusOK || !strings.Contains(body, "The plan checks clean") || strings.Contains(body, "not JSON") || !strings.Contains(body, "<h3>Output</h3>") {
			t.Fatalf("submit %d: %d\n%s", i+1, code, body)
		}
		for _, id := range []string{"plan-text", "plan-input", "plan-mocks"} {
			if got := textarea(t, body, id); strings.Contains(got, `\r`) || strings.Contains(got, "\r") {
				t.Errorf("submit %d: %s shows %q", i+1, id, got)
			}
		}
		if got, want := textarea(t, body, "plan-input"), "{\n  \"n\": 3\n}"; got != want {
			t.Errorf("submit %d: the input shows %q, want %q", i+1, got, want)
		}
		// The browser sends the boxes again as they are shown.
		form = url.Values{"csrf": {csrf}, "plan": {crlf(textarea(t, body, "plan-text"))}, "input": {crlf(textarea(t, body, "plan-input"))}, "mocks": {crlf(textarea(t, body, "plan-mocks"))}}
	}
}

// TestPlanPageInputFile: a plan file opened with its NAME.input.json
// takes its input from it, as obelisk run does; an input typed in the
// form wins; another plan's input file is not taken.
func TestPlanPageInputFile(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	csrf := c.CSRF("/plan")
	post := func(input string, files ...string) string {
		t.Helper()
		var mp bytes.Buffer
		w := multipart.NewWriter(&mp)
		w.WriteField("csrf", csrf)
		w.WriteField("plan", "")
		w.WriteField("input", input)
		for i := 0; i < len(files); i += 2 {
			fw, _ := w.CreateFormFile("file", files[i])
			fw.Write([]byte(files[i+1]))
		}
		w.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/plan", &mp)
		req.Header.Set("Content-Type", w.FormDataContentType())
		req.Header.Set("Origin", base)
		code, _, body := c.Do(req)
		if code != http.StatusOK {
			t.Fatalf("%d\n%s", code, body)
		}
		return body
	}
	// The input file may come first, as a file picker lists them.
	body := post("", "mine.input.json", "{\"n\": 7}\r\n", "mine.plan", inputPlan)
	if !strings.Contains(body, "read from <code>mine.input.json</code>") || textarea(t, body, "plan-input") != "{\"n\": 7}\n" || !strings.Contains(body, "<h3>Output</h3>") {
		t.Errorf("a plan with its input file:\n%s", body)
	}
	body = post(`{"n": 2}`, "mine.plan", inputPlan, "mine.input.json", `{"n": 7}`)
	if strings.Contains(body, "read from") || textarea(t, body, "plan-input") != `{"n": 2}` || !strings.Contains(body, "<h3>Output</h3>") {
		t.Errorf("an input typed and an input file:\n%s", body)
	}
	body = post("", "mine.plan", inputPlan, "other.input.json", `{"n": 7}`)
	if strings.Contains(body, "read from") || !strings.Contains(body, "the input does not fit the plan") {
		t.Errorf("another plan's input file:\n%s", body)
	}
}

// TestWaitingNotAnError: a run that waits for a decision is shown as
// waiting, on its page and in the list, and nowhere as an error.
func TestWaitingNotAnError(t *testing.T) {
	st := openStore(t)
	waitingRun(t, st, "r")
	_, base := serve(t, st, Options{}, false)
	c := consoletest.New(t, base)
	_, page := c.Get("/runs/r")
	if !strings.Contains(page, `<h1>Run <code>r</code> <span class="status s-waiting">`) || !strings.Contains(page, `<p class="muted">waiting for approval of b</p>`) {
		t.Errorf("the run page does not show the run as waiting:\n%s", page)
	}
	_, list := c.Get("/")
	if !strings.Contains(list, `<tr class="r-waiting" data-run="r">`) || !strings.Contains(list, `<div class="muted small">waiting for approval of b</div>`) {
		t.Errorf("the list does not show the run as waiting:\n%s", list)
	}
	_, approvals := c.Get("/approvals")
	for name, body := range map[string]string{"the run page": page, "the list": list, "the approvals": approvals} {
		if strings.Contains(body, `class="problem"`) || strings.Contains(body, `class="err`) || strings.Contains(body, "s-failed\"><span") {
			t.Errorf("%s shows the waiting run as an error:\n%s", name, body)
		}
	}
}
