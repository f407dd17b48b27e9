package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
)

// pageScreenshot is the operator page as docs/operations.md shows it,
// written by TestOperatorPage with -update.
const pageScreenshot = "../docs/operator-page.png"

// The operator page, driven in headless Chromium as an operator would: a
// malformed message and a payment whose handler fails for good appear
// with their reasons; once the handler is fixed, a click on Redrive
// charges the payment once, and Discard drops the malformed one. The
// page's screenshots go to the test's artifact directory (and, with
// -update, to docs/).
func TestOperatorPage(t *testing.T) {
	chromium := chromiumPath(t)
	var off atomic.Bool
	off.Store(true)
	a := startDomain(t, testdomain.Domain(switchedOff(&off)), seams{}, testLogger(t), "ADMIN_API_KEYS="+operatorKey+":alice")
	flowtest.PostOK(t, a, "pay-refused")
	if err := a.transport.Publisher().Publish(testdomain.TopicRequested, message.NewMessage(uuid.NewString(), []byte(`{"id": 7`))); err != nil {
		t.Fatal(err)
	}
	c := &admin.Client{BaseURL: a.ops, APIKey: operatorKey}
	var refused, malformed string
	waitFor(t, "both messages parked", func() bool {
		p, err := c.Poisoned(t.Context(), poison.Filter{})
		if err != nil || len(p.Messages) != 2 {
			return false
		}
		for _, m := range p.Messages {
			if m.Class == poison.Malformed {
				malformed = m.ID
			} else {
				refused = m.ID
			}
		}
		return true
	})

	browser := newBrowser(t, chromium)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(browser, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}

	do("signing in with a wrong key",
		chromedp.Navigate(a.ops+admin.PageRoot),
		chromedp.SendKeys(chromedp.CSS(`input[name=key]`), "not-the-key-0123456789"),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`.error`)))
	if got := text(".error"); !strings.Contains(got, "not valid") {
		t.Errorf("a wrong key shows %q", got)
	}
	do("signing in",
		chromedp.SendKeys(chromedp.CSS(`input[name=key]`), operatorKey),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages`)))
	page := text("main")
	if got := text("header .who"); !strings.Contains(got, "alice") {
		t.Errorf("the header shows %q, not the operator", got)
	}
	for _, want := range []string{"malformed", "permanent",
		"refused for good: the charge handler is switched off", "malformed event", testdomain.TopicRequested} {
		if !strings.Contains(text("body"), want) {
			t.Errorf("the overview does not show %q:\n%s", want, page)
		}
	}
	if got := text("#outcomes"); !strings.Contains(got, testdomain.ChargeRoute) {
		t.Errorf("the outcomes show no %s:\n%s", testdomain.ChargeRoute, got)
	}
	screenshot(t, browser, "overview.png", *update)

	off.Store(false) // the fix is deployed
	do("redriving the refused payment",
		chromedp.Click(chromedp.CSS(`tr[data-id="`+refused+`"] form[action$="/redrive"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#message`)))
	if got := text("#message"); !strings.Contains(got, "redriven") || !strings.Contains(got, "alice") {
		t.Errorf("after the redrive the message shows:\n%s", got)
	}
	waitFor(t, "the payment charged", func() bool { return flowtest.Tally(t, a).Charges.Rows == 1 })

	do("discarding the malformed message",
		chromedp.Navigate(a.ops+"/admin/page/messages/"+malformed),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	if got := text("#payload"); got != `{"id": 7` {
		t.Errorf("the payload shows %q", got)
	}
	do("discarding", chromedp.Click(chromedp.CSS(`#discard`)), chromedp.WaitVisible(chromedp.CSS(`.note`)))
	if got := text("#message"); !strings.Contains(got, "discarded") {
		t.Errorf("after the discard the message shows:\n%s", got)
	}
	do("back to the overview", chromedp.Navigate(a.ops+admin.PageRoot), chromedp.WaitVisible(chromedp.CSS(`#groups`)))
	if got := text("#groups"); !strings.Contains(got, "No message is parked") {
		t.Errorf("the overview still shows parked messages:\n%s", got)
	}
	screenshot(t, browser, "after.png", false)

	if got := flowtest.Tally(t, a).Charges; got.Rows != 1 || got.IDs != 1 {
		t.Errorf("charges = %+v, want the payment once", got)
	}
}

// chromiumPath is Debian's chromium, which .ci/run installs.
func chromiumPath(t *testing.T) string {
	t.Helper()
	testenv.Integration(t)
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.UnreachableHow(t, "Chromium", "PATH", exec.ErrNotFound, "install Debian's chromium")
	return ""
}

// newBrowser starts a headless Chromium for t, closed when t ends.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelTimeout := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// screenshot writes the page as name in t's artifact directory, and to
// pageScreenshot too when docs is set.
func screenshot(t *testing.T, browser context.Context, name string, docs bool) {
	t.Helper()
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if docs {
		if err := os.WriteFile(pageScreenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
