// Package browsertest drives Debian's headless chromium through chromedp
// for the tests of pages flock serves (the viewer's, and the end-to-end
// tests of the binary that open it).
package browsertest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/sandbox/browser"
)

// Chromium returns Debian's chromium (or $FLOCK_CHROMIUM). Under
// scripts/test.sh, which installs it (FLOCK_TEST_REQUIRE_BINARIES=1
// unless it could not), a missing chromium fails the test; in a plain go
// test it skips.
func Chromium(tb testing.TB) string {
	tb.Helper()
	p, err := browser.FindChromium(os.Getenv("FLOCK_CHROMIUM"))
	if err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			tb.Fatalf("this browser test needs chromium, which scripts/test.sh installs: %v", err)
		}
		tb.Skipf("this browser test needs chromium (apt-get install chromium): %v", err)
	}
	return p
}

// NewTab starts a headless chromium with a 1400×1000 window and returns
// its tab's context; the browser is stopped when the test ends.
func NewTab(tb testing.TB) context.Context {
	tb.Helper()
	exe := Chromium(tb)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	tb.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Do runs browser actions under a deadline of 20 s.
func Do(tb testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(cctx, actions...); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](tb testing.TB, ctx context.Context, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Wait polls expr in the page until it is truthy and returns its value;
// on a timeout the test fails with the start of the page's text (its
// #app element's).
func Wait[T any](tb testing.TB, ctx context.Context, what, expr string, timeout time.Duration) T {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(timeout)))
	// A poll started as a navigation replaces the page loses its
	// context; poll again in the new one.
	for err != nil && strings.Contains(err.Error(), "Cannot find context") && time.Now().Before(deadline) {
		v, err = chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
	}
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('app') ? document.getElementById('app').innerText.slice(0, 2000) : ''`))
		tb.Fatalf("waiting for %s (%s): %v\npage: %s", what, expr, err, page)
	}
	return v
}
