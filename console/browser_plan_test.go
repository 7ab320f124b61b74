package console

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/obelisk-plan/obelisk/internal/browsertest"
)

// TestBrowserPlanPage: a plan pasted on the plan page is checked, drawn,
// estimated and dry-run, in the page.
func TestBrowserPlanPage(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1280, 900)
	b.Open(base + "/plan")
	b.Do("pasting a plan and checking it",
		chromedp.SetValue(`#plan-text`, chain),
		chromedp.Click(`form.plan-form button[type="submit"]`))
	b.WaitFor("the plan is drawn and dry-run", node("c", "pending")+` && document.body.innerText.includes('The plan checks clean') && document.body.innerText.includes('Schedule')`)
	b.Screenshot("plan")
}

// TestBrowserPlanPageTwice: a plan and its input typed on several lines
// are checked, and the form sent again as the page shows it is checked
// the same (the browser sends a textarea's lines ended by "\r\n"); a long
// diagnostic wraps in the page rather than running off its side.
func TestBrowserPlanPageTwice(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	b := browsertest.New(t, 1000, 900)
	b.Open(base + "/plan")
	b.Do("typing a plan and its input, and checking them",
		chromedp.SetValue(`#plan-text`, inputPlan),
		chromedp.Click(`details summary`),
		chromedp.SetValue(`#plan-input`, "{\n  \"n\": 3\n}"),
		chromedp.Click(`form.plan-form button[type="submit"]`))
	dryRun := `document.body.innerText.includes('The plan checks clean') && !!document.querySelector('pre.json') && !document.querySelector('pre.problem')`
	b.WaitFor("the first submit is dry-run", dryRun)
	if got := browsertest.Eval[string](b, `document.getElementById('plan-input').value`); got != "{\n  \"n\": 3\n}" {
		t.Errorf("after one submit the input box holds %q", got)
	}
	browsertest.Eval[bool](b, `document.body.setAttribute('data-second', '1'), true`)
	b.Do("sending the form again", chromedp.Click(`form.plan-form button[type="submit"]`))
	b.WaitFor("the second submit is dry-run", `!document.body.hasAttribute('data-second') && `+dryRun)
	if got := browsertest.Eval[string](b, `document.getElementById('plan-input').value`); got != "{\n  \"n\": 3\n}" {
		t.Errorf("after two submits the input box holds %q", got)
	}

	long := "a: nothere(n: 1, text: \"" + strings.Repeat("long ", 80) + "\") -> †state.a\n"
	b.Do("checking a plan with a long line",
		chromedp.SetValue(`#plan-text`, long),
		chromedp.Click(`form.plan-form button[type="submit"]`))
	b.WaitFor("the diagnostics are shown", `!!document.querySelector('pre.diags') && document.readyState === 'complete'`)
	if wide := browsertest.Eval[bool](b, `(() => { const p = document.querySelector("pre.diags"); return p.scrollWidth > p.clientWidth + 1 })()`); wide {
		t.Log(browsertest.Eval[string](b, `(() => { const p = document.querySelector("pre.diags"); return p.scrollWidth + " " + p.clientWidth + " " + getComputedStyle(p).whiteSpace + " " + document.documentElement.scrollWidth })()`))
		t.Error("a long diagnostic runs off the side of its box")
	}
	b.Screenshot("plan-diagnostics")
}

// TestBrowserPlanPageInputFile: a plan file opened in the page together
// with its NAME.input.json is dry-run with that input, which the input
// box then shows.
func TestBrowserPlanPageInputFile(t *testing.T) {
	st := openStore(t)
	_, base := serve(t, st, Options{}, false)
	dir := t.TempDir()
	plan, input := filepath.Join(dir, "mine.plan"), filepath.Join(dir, "mine.input.json")
	if err := os.WriteFile(plan, []byte(inputPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(input, []byte("{\"n\": 7}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t, 1000, 900)
	b.Open(base + "/plan")
	b.Do("opening the plan and its input file, and checking them",
		chromedp.SetUploadFiles(`#plan-file`, []string{input, plan}),
		chromedp.Click(`form.plan-form button[type="submit"]`))
	b.WaitFor("the plan is dry-run with the file's input", `document.body.innerText.includes('read from mine.input.json') && !!document.querySelector('pre.json') && !document.querySelector('pre.problem')`)
	if got := browsertest.Eval[string](b, `document.getElementById('plan-input').value`); got != "{\"n\": 7}\n" {
		t.Errorf("the input box holds %q", got)
	}
}
