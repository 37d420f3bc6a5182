package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// chromiumPath finds the headless browser the console's tests drive, or
// fails saying how to install it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROME_PATH"), "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("no Chromium found for the console's browser tests: install it (Debian/Ubuntu: apt-get install -y chromium) or point CHROME_PATH at a Chrome or Chromium binary")
	return ""
}

// browser starts a headless Chromium and returns a tab's context.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.Headless, chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return tab
}

// usersFile writes a users file with an operator (ana) and a viewer (vic),
// passwords "ana-secret" and "vic-secret".
func usersFile(t *testing.T) string { return usersFileTB(t) }

func usersFileTB(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, u := range [][2]string{{"ana", "operator"}, {"vic", "viewer"}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u[0]+"-secret"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s\n", u[0], u[1], h)
	}
	path := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// consoleURL is the stack's console under the name localhost, which
// browsers treat as a secure context, so the Secure cookies work over
// plain HTTP.
func consoleURL(s *stack.Stack) string {
	return strings.Replace(s.ConsoleURL, "127.0.0.1", "localhost", 1)
}

// screenshot takes the tab's full page as a PNG. With
// ONCEFLOW_UPDATE_SCREENSHOTS=1 it replaces docs/console/<name>.png (the
// committed screenshots); otherwise it goes to the test's temporary
// directory, so a test run leaves the working tree as it was.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s is not a PNG", name)
	}
	dir := t.TempDir()
	if os.Getenv("ONCEFLOW_UPDATE_SCREENSHOTS") == "1" {
		root, err := stack.Root()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "docs", "console")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// signIn signs in through the form and checks the page names the user.
func signIn(t *testing.T, tab context.Context, base, login string) {
	t.Helper()
	err := chromedp.Do(tab, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css("#login")),
		chromedp.SendKeys(css("#login"), login), chromedp.SendKeys(css("#password"), login+"-secret"),
		chromedp.Click(css("#sign-in")), chromedp.WaitVisible(css("#who")))
	who := text(t, tab, "#who")
	if err != nil || !strings.Contains(who, login) {
		t.Fatalf("sign in as %s: %v (page names %q)", login, err, who)
	}
}

func signOut(t *testing.T, tab context.Context) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Click(css("header form button")), chromedp.WaitVisible(css("#login"))); err != nil {
		t.Fatalf("sign out: %v", err)
	}
}

// post sends a form POST from the page with fetch and returns the status:
// token "" sends none, "page" the page's own CSRF token.
func post(t *testing.T, tab context.Context, path, token string, fields map[string]string) int {
	t.Helper()
	js := `(async () => {
  const body = new URLSearchParams(%s);
  const tok = %q === "page" ? document.querySelector("input[name=_csrf]").value : %q;
  if (tok) body.set("_csrf", tok);
  const r = await fetch(%q, {method: "POST", body, headers: {"Accept": "application/json"}, redirect: "manual"});
  return r.status;
})()`
	args := "{"
	for k, v := range fields {
		args += fmt.Sprintf("%q: %q,", k, v)
	}
	args += "}"
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](fmt.Sprintf(js, args, token, token, path), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return status
}

// figures reads the board's data-figure cells.
func figures(t *testing.T, tab context.Context) map[string]string {
	t.Helper()
	return eval[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll("[data-figure]")].map(e => [e.dataset.figure, e.textContent.trim()]))`)
}

// sessionCookie returns the console's session cookie as the browser holds
// it.
func sessionCookie(t *testing.T, tab context.Context) *network.Cookie {
	t.Helper()
	res, err := chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "console_session" {
			return c
		}
	}
	t.Fatal("no console_session cookie after signing in")
	return nil
}

// css selects by CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// text is the visible text of the first element sel selects ("" when the
// page has none).
func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	return eval[string](t, tab, fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, sel))
}

// attr is an attribute of the first element sel selects.
func attr(t *testing.T, tab context.Context, sel, name string) string {
	t.Helper()
	return eval[string](t, tab, fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) ?? ""`, sel, name))
}
