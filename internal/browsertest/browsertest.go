// Package browsertest drives headless Chromium from Go tests, through the
// DevTools protocol (github.com/chromedp/chromedp): a test opens pages of
// a server it started on loopback, clicks and types as a person would,
// waits for what the page shows, and saves screenshots.
//
// Chromium is Debian's chromium package, which CI installs (.ci/run). A
// test on a machine without it is skipped with a message that says how
// to install it, unless the environment variable CI is set: there a
// missing browser fails the test, so that CI never passes by skipping.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScreenshotsEnv names the environment variable of the directory
// screenshots are saved in; without it, they go to a directory of the
// test's own (t.TempDir), which the test logs.
const ScreenshotsEnv = "OBELISK_SCREENSHOTS"

// browsers are the names Chromium is installed under.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"}

// Browser is a headless Chromium tab of a test.
type Browser struct {
	t   testing.TB
	ctx context.Context
	dir string
}

// New starts a headless Chromium with one tab of width × height pixels,
// which the test's end closes.
func New(t testing.TB, width, height int) *Browser {
	t.Helper()
	exe := ""
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		msg := "no Chromium is installed (looked for " + strings.Join(browsers, ", ") + "): install Debian's chromium package (apt-get install -y chromium) to run the browser tests"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // the tests run as root in CI; the pages are the test's own
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	// A bound on the whole test, so that a page that never shows what
	// is awaited fails it instead of hanging: not a measure of speed.
	ctx, cancelTime := context.WithTimeout(context.Background(), 4*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTime()
	})
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &Browser{t: t, ctx: bctx}
	if dir := os.Getenv(ScreenshotsEnv); dir != "" {
		b.dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	} else {
		b.dir = filepath.Join(t.TempDir(), "screenshots")
	}
	return b
}

// Context returns the tab's context, for chromedp's actions.
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs actions in the tab, failing the test with what was being done.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// Open goes to a page and waits until it is loaded.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.Do("opening "+url, chromedp.Navigate(url), chromedp.WaitReady("body"))
}

// WaitFor waits until a JavaScript expression is true in the page, as
// often as the page changes, through navigations. It gives up after a
// minute and a half, to fail a test that would hang, not to measure it.
func (b *Browser) WaitFor(what, expr string) {
	b.t.Helper()
	give := time.Now().Add(90 * time.Second)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(2*time.Second)))
		if err == nil {
			return
		}
		if b.ctx.Err() != nil || time.Now().After(give) {
			b.t.Fatalf("waiting until %s: %v\nthe page's text:\n%s", what, err, b.text())
		}
		// A navigation ends a poll, and so does its own timeout: poll
		// again, the new page if there is one.
		time.Sleep(25 * time.Millisecond)
	}
}

// Eval evaluates a JavaScript expression in the page and returns its value.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text is the page's text, for a failure's message.
func (b *Browser) text() string {
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// Screenshot saves a screenshot of the whole page as name.png and logs
// where.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	// A page being laid out again (a live update replacing its content)
	// may measure 0 wide for a moment: Chromium then refuses the shot.
	for try := 0; err != nil && strings.Contains(err.Error(), "0 width") && try < 20; try++ {
		time.Sleep(100 * time.Millisecond)
		png, err = chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	}
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// Resize sets the tab's viewport.
func (b *Browser) Resize(width, height int) {
	b.t.Helper()
	b.Do("resizing the viewport", chromedp.EmulateViewport(int64(width), int64(height)))
}
