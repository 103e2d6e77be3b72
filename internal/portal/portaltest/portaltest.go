// Package portaltest drives the portal in a real headless Chromium, as a person would: it opens
// pages, fills fields by their labels, presses buttons by their names, types on the keyboard,
// takes screenshots into the test's artefact folder and runs axe-core on the page. Whatever the
// page reports to its console as an error (an exception, a console.error, a resource that did
// not load, a Content-Security-Policy violation) fails the test, unless the test said it
// expects it.
//
// The API's own answers are not the page's errors: a 401 or a 404 from /v1 is a value the page
// handles, and tests assert those statuses themselves (WaitAnswer, Fetch).
//
// A page's test reads as its steps:
//
//	b := portaltest.New(t, serverURL)
//	b.Go("/signin")
//	b.Fill("Email", "ada@example.com")
//	b.Fill("Password", "a long password")
//	b.Click("Sign in")
//	b.WaitTitle("Tests · Barrage")
//	b.Inspect("license") // 1280 and 390 px: no sideways scroll, a screenshot, axe
package portaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/barrage-load/barrage/internal/report/reporttest"
)

// ArtifactsEnv names the folder CI keeps after a run: screenshots go to its portal/ folder.
const ArtifactsEnv = "BARRAGE_ARTIFACTS"

// Timeout bounds each step: a page that has not shown what a step waits for by then fails.
const Timeout = 30 * time.Second

// Screen is a window the portal must work in.
type Screen struct {
	Name          string // in the screenshots' names
	Width, Height int64
	Scale         float64
	Mobile        bool // device emulation: a phone's viewport, touch and scale
}

var (
	// Desktop is a laptop's window, 1280 px wide: where a Browser starts.
	Desktop = Screen{Name: "1280", Width: 1280, Height: 900, Scale: 1}
	// Phone is a phone's screen, 390 px wide (an iPhone 12's).
	Phone = Screen{Name: "390", Width: 390, Height: 844, Scale: 3, Mobile: true}
	// Screens are the screens Inspect looks at each page on.
	Screens = []Screen{Desktop, Phone}
)

// Browser is a headless Chromium with one tab, for one test.
type Browser struct {
	t      testing.TB
	ctx    context.Context
	base   string
	dir    string
	screen Screen

	mu       sync.Mutex
	changed  chan struct{} // closed, and replaced, whenever a problem or an answer arrives
	problems []string
	expected []*Expectation
	requests map[network.RequestID]string // "METHOD url"
	answers  []answer
	// inflight are the requests not yet answered in full, but live streams, which last as long
	// as their page, each with the loader of the page that sent it.
	inflight map[network.RequestID]cdp.LoaderID
}

type answer struct {
	request string // "METHOD url"
	status  int
	taken   bool
}

// Expectation is a problem a test expects the page to report: a CSP violation it provokes, say.
type Expectation struct {
	b    *Browser
	text string
	seen bool
}

// cspBinding is the function the page calls, through the DevTools protocol, for each
// securitypolicyviolation event; the script that listens for them runs before the page's own.
const cspBinding = "__portaltestCSP"

const cspListener = `document.addEventListener("securitypolicyviolation", (e) => ` + cspBinding +
	`("Content Security Policy violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber + " (" + e.sample + ")"), true);`

// New starts a headless Chromium whose pages are at base (the portal's server, e.g.
// http://127.0.0.1:port), in a Desktop window. The test is skipped when there is no Chromium
// (failed when reporttest.RequireEnv is set). Chromium's proxy refuses every connection: pages
// reach loopback addresses alone, which Chromium never proxies.
func New(t testing.TB, base string) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(reporttest.Chromium(t)),
		chromedp.WindowSize(int(Desktop.Width), int(Desktop.Height)),
		chromedp.ProxyServer("127.0.0.1:1"),
		chromedp.DisableGPU,
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to start as root
	}
	b := &Browser{t: t, base: strings.TrimSuffix(base, "/"), dir: artifactDir(t), screen: Desktop,
		changed: make(chan struct{}), requests: map[network.RequestID]string{}, inflight: map[network.RequestID]cdp.LoaderID{}}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(b.event))
	b.ctx = ctx
	t.Cleanup(func() {
		b.check()
		cancel()
		cancelAlloc()
	})
	// The first run starts Chromium: no timeout on it, which would end the browser with it.
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, runtime.AddBinding, runtime.AddBindingParams{Name: cspBinding}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspListener})
		return err
	}), emulate(Desktop))
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// artifactDir is where a test's screenshots go: $BARRAGE_ARTIFACTS/portal/<test>, else a
// folder of the test's own.
func artifactDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv(ArtifactsEnv)
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, "portal", regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// event runs in chromedp's loop for each event of the tab, in order: it must return fast.
func (b *Browser) event(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		b.problem(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, text))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			b.problem("console." + string(ev.Type) + ": " + argsText(ev.Args))
		}
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		// The API's answers are the page's values, not its errors; and /favicon.ico is
		// Chromium's own request, which the page did not make (the portal names no icon).
		answer := e.Source == cdplog.EntrySourceNetwork && (strings.HasPrefix(e.URL, b.base+"/v1/") || strings.HasSuffix(e.URL, "/favicon.ico"))
		if e.Level == cdplog.EntryLevelError && !answer {
			b.problem(fmt.Sprintf("%s error: %s (%s)", e.Source, e.Text, e.URL))
		}
	case *runtime.EventBindingCalled:
		if ev.Name == cspBinding {
			b.problem(ev.Payload)
		}
	case *network.EventRequestWillBeSent:
		b.requests[ev.RequestID] = ev.Request.Method + " " + ev.Request.URL
		if accept, _ := ev.Request.Headers["Accept"].(string); accept != "text/event-stream" {
			b.inflight[ev.RequestID] = ev.LoaderID
		}
	case *page.EventFrameNavigated:
		if ev.Frame.ParentID == "" {
			// A page opened in the tab: the last page's requests end unreported.
			maps.DeleteFunc(b.inflight, func(_ network.RequestID, l cdp.LoaderID) bool { return l != ev.Frame.LoaderID })
			b.notify()
		}
	case *network.EventResponseReceived:
		b.answers = append(b.answers, answer{request: b.requests[ev.RequestID], status: int(ev.Response.Status)})
		b.notify()
	case *network.EventLoadingFinished:
		delete(b.inflight, ev.RequestID)
		b.notify()
	case *network.EventLoadingFailed:
		delete(b.inflight, ev.RequestID)
		b.notify()
	}
}

// problem records what the page reported, unless a test expects it. b.mu is held.
func (b *Browser) problem(text string) {
	expected := false
	for _, e := range b.expected {
		if strings.Contains(text, e.text) {
			e.seen, expected = true, true
		}
	}
	if !expected {
		b.problems = append(b.problems, text)
	}
	b.notify()
}

// notify wakes whoever waits for a problem or an answer. b.mu is held.
func (b *Browser) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// await waits until cond, evaluated under b.mu, holds; it fails the test at the deadline.
func (b *Browser) await(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok, changed := cond(), b.changed
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			b.t.Fatalf("waited %s for %s\n%s", Timeout, what, b.state())
		}
	}
}

func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		var s string
		switch {
		case a.Type == runtime.RemoteObjectTypeString && json.Unmarshal(a.Value, &s) == nil:
		case len(a.Value) > 0:
			s = string(a.Value)
		default:
			s = a.Description
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// check fails the test when the page reported a problem no test expected.
func (b *Browser) check() {
	b.t.Helper()
	b.mu.Lock()
	problems := b.problems
	b.problems = nil
	b.mu.Unlock()
	if len(problems) > 0 {
		b.t.Fatalf("the page reported:\n  %s", strings.Join(problems, "\n  "))
	}
}

// Expect says the page will report a problem containing text (a CSP violation the test
// provokes, a CORS refusal): each such report is taken as expected from now on, not as a
// failure. Wait waits for the first.
func (b *Browser) Expect(text string) *Expectation {
	e := &Expectation{b: b, text: text}
	b.mu.Lock()
	b.expected = append(b.expected, e)
	b.mu.Unlock()
	return e
}

// Wait waits until the page reported the expected problem.
func (e *Expectation) Wait() {
	e.b.t.Helper()
	e.b.await("the page to report "+js(e.text), func() bool { return e.seen })
}

// run runs an action on the tab within Timeout and returns its value, then fails the test on
// any problem the page reported meanwhile.
func run[T any](b *Browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.state())
	}
	b.check()
	return v
}

// state is what the page showed and the answers it had, for a step that failed: what it waited
// for is then plain to see beside what came instead.
func (b *Browser) state() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		text = "(unreadable: " + err.Error() + ")"
	}
	const most = 4000
	if len(text) > most {
		text = text[:most] + "…"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var answers []string
	for _, a := range b.answers[max(0, len(b.answers)-10):] {
		answers = append(answers, fmt.Sprintf("%d %s", a.status, a.request))
	}
	var inflight []string
	for id := range b.inflight {
		inflight = append(inflight, b.requests[id])
	}
	return fmt.Sprintf("the page showed:\n%s\nits last answers:\n  %s\nrequests in flight:\n  %s", text, strings.Join(answers, "\n  "), strings.Join(inflight, "\n  "))
}

// do runs actions on the tab, in order, as run does.
func (b *Browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	run(b, what, chromedp.Steps(actions...))
}

// Eval evaluates a JavaScript expression in the page (awaiting it when it is a promise) and
// returns its value as T. The DevTools protocol runs it, outside the page's CSP: what it
// inserts into the page is still subject to it.
func Eval[T any](b *Browser, expression string) T {
	b.t.Helper()
	return run(b, "evaluate "+expression, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
}

// URL is path on the portal's server; an absolute URL stays as it is.
func (b *Browser) URL(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return b.base + path
}

// Go opens path (on the portal's server, or an absolute URL) and waits for it to load.
func (b *Browser) Go(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.URL(path)))
}

// js quotes s as a JavaScript string.
func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// name is the JavaScript that reads an element's accessible name, near enough: its aria-label,
// else the text of its first label, else its text.
const name = `((e) => (e.getAttribute("aria-label") || (e.labels && e.labels.length ? e.labels[0].textContent : e.textContent) || "").replace(/\s+/g, " ").trim())`

// named is a selector for the first element matching css whose accessible name is n.
func named(css, n string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll(%s)].find((e) => %s(e) === %s)`, js(css), name, js(n)))
}

// control is the selector of the form control labelled label.
func control(label string) chromedp.JSPath {
	return named("input, select, textarea", label)
}

// Fill types value into the field labelled label, replacing what it held.
func (b *Browser) Fill(label, value string) {
	b.t.Helper()
	sel := control(label)
	// Selected, what the field held is replaced by the first key typed (or deleted).
	keys := value
	if keys == "" {
		keys = kb.Delete
	}
	b.do("fill "+label, chromedp.Focus(sel), chromedp.Evaluate[chromedp.Void](`document.activeElement.select()`), chromedp.KeyEvent(keys))
	if got := b.Value(label); got != value {
		b.t.Fatalf("the field %q holds %q after typing %q", label, got, value)
	}
}

// Choose picks, in the list labelled label, the option that reads option, as a person's pick
// does: the list's value changes and it tells the page (a change event).
func (b *Browser) Choose(label, option string) {
	b.t.Helper()
	sel := control(label)
	what := fmt.Sprintf("choose %q in the list %s", option, label)
	b.answered(what)
	b.do(what, chromedp.Poll[chromedp.Void](fmt.Sprintf(`((s, text) => {
		const o = s && [...s.options].find((o) => o.text === text);
		if (!o) return false;
		s.value = o.value;
		s.dispatchEvent(new Event("change", { bubbles: true }));
		return true;
	})(%s, %s)`, sel, js(option)), chromedp.WithPollingTimeout(Timeout)))
}

// Value is the value of the field labelled (or aria-labelled) label.
func (b *Browser) Value(label string) string {
	b.t.Helper()
	return run(b, "read the field "+label, chromedp.Value(control(label)))
}

// Click clicks the button whose accessible name is text (its aria-label, else its text),
// once it is shown.
func (b *Browser) Click(text string) {
	b.t.Helper()
	b.click("click the button "+text, named(`button, input[type=submit], [role=button]`, text))
}

// Follow clicks the link whose accessible name is text.
func (b *Browser) Follow(text string) {
	b.t.Helper()
	b.click("follow the link "+text, named("a[href]", text))
}

// answered waits until the page has no request in flight but its live streams, before it does
// what: an answer on its way may yet move or replace what it acts on.
func (b *Browser) answered(what string) {
	b.t.Helper()
	b.await("the page's requests to be answered, to "+what, func() bool { return len(b.inflight) == 0 })
}

// click clicks the element sel, as a person's pointer does, at where it is shown, once the page
// has settled: its requests answered (but its live streams) and the element still for two
// frames. A click sent while an answer is on its way lands where the element was before the
// answer moved it (a field it inserts before a button), on something else or on nothing.
func (b *Browser) click(what string, sel chromedp.JSPath) {
	b.t.Helper()
	b.do(what, chromedp.WaitVisible(sel))
	b.answered(what)
	// Polled at each frame: still when its box is the one it had at the frame before.
	still := fmt.Sprintf(`((e) => {
		const r = e.getBoundingClientRect(), box = [r.x, r.y, r.width, r.height].join();
		const still = window.__portaltestBox === box;
		window.__portaltestBox = box;
		return still;
	})(%s)`, sel)
	b.do(what, chromedp.Evaluate[chromedp.Void](`window.__portaltestBox = undefined`),
		chromedp.Poll[chromedp.Void](still, chromedp.WithPollingTimeout(Timeout)), chromedp.Click(sel))
}

// Keys types keys into whatever has the focus: text, and kb.Tab, kb.Enter and the like
// (github.com/chromedp/chromedp/kb).
func (b *Browser) Keys(keys string) {
	b.t.Helper()
	b.do("type", chromedp.KeyEvent(keys))
}

// Focused is the accessible name of the element that has the focus.
func (b *Browser) Focused() string {
	b.t.Helper()
	return Eval[string](b, name+`(document.activeElement)`)
}

// WaitFor waits until the JavaScript expression is truthy in the page.
func (b *Browser) WaitFor(expression string) {
	b.t.Helper()
	b.do("wait for "+expression, chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingTimeout(Timeout)))
}

// WaitText waits until the page shows text (in its rendered text, as a person reads it).
func (b *Browser) WaitText(text string) {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf(`document.body && document.body.innerText.includes(%s)`, js(text)))
}

// WaitTitle waits until the document's title is title.
func (b *Browser) WaitTitle(title string) {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf(`document.title === %s`, js(title)))
}

// Title is the document's title.
func (b *Browser) Title() string {
	b.t.Helper()
	return Eval[string](b, `document.title`)
}

// Text is the page's rendered text.
func (b *Browser) Text() string {
	b.t.Helper()
	return Eval[string](b, `document.body ? document.body.innerText : ""`)
}

// Use switches the tab to screen: its viewport, scale and, for a phone, touch and mobile
// emulation.
func (b *Browser) Use(screen Screen) {
	b.t.Helper()
	b.do("use the "+screen.Name+" px screen", emulate(screen))
	b.screen = screen
}

func emulate(s Screen) chromedp.Action[chromedp.Void] {
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(s.Scale), chromedp.EmulatePortrait}
	if s.Mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	return chromedp.EmulateViewport(s.Width, s.Height, opts...)
}

// Shot saves a screenshot of the whole page as <name>-<screen>.png in the artefact folder.
func (b *Browser) Shot(name string) {
	b.t.Helper()
	png := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.dir, name+"-"+b.screen.Name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// Inspect looks at the page on each of Screens: nothing wider than the screen, no serious
// accessibility violation (Axe), and a screenshot (Shot); then it returns to the screen it
// was on.
func (b *Browser) Inspect(name string) {
	b.t.Helper()
	was := b.screen
	for _, s := range Screens {
		b.Use(s)
		if wide := Eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth`); wide {
			b.Shot(name)
			b.t.Fatalf("%s is wider than the %s px screen: it scrolls sideways", name, s.Name)
		}
		b.Shot(name)
		b.Axe()
	}
	b.Use(was)
}

// Cookies are the cookies the browser would send to url, HttpOnly ones too: what a script of
// the page cannot read, the test can.
func (b *Browser) Cookies(url string) []*network.Cookie {
	b.t.Helper()
	return run(b, "read the cookies", func(ctx context.Context, t *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{URLs: []string{b.URL(url)}})
	}).Cookies
}

// Fetch sends a request from the page with fetch(), its cookies with it, as the portal's
// script would; with csrf, the X-CSRF-Token header holds the barrage_csrf cookie as the
// portal sends it. It returns the answer's status and body.
func (b *Browser) Fetch(method, path, body string, csrf bool) (int, string) {
	b.t.Helper()
	res := Eval[struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}](b, fmt.Sprintf(`(async (method, path, body, csrf) => {
		const headers = { Accept: "application/json" };
		if (body) headers["Content-Type"] = "application/json";
		if (csrf) headers["X-CSRF-Token"] = decodeURIComponent((document.cookie.match(/(?:^|; )barrage_csrf=([^;]*)/) || [])[1] || "");
		const r = await fetch(path, { method, headers, credentials: "same-origin", body: body || undefined });
		return { status: r.status, body: await r.text() };
	})(%s, %s, %s, %t)`, js(method), js(path), js(body), csrf))
	return res.Status, res.Body
}

// WaitAnswer waits for the browser to receive the answer to a request (method and absolute
// url), whoever sent it (a form, a script of another origin, a navigation), and returns its
// status. Each answer is returned once.
func (b *Browser) WaitAnswer(method, url string) int {
	b.t.Helper()
	status := 0
	b.await("an answer to "+method+" "+url, func() bool {
		for i, a := range b.answers {
			if !a.taken && a.request == method+" "+url {
				b.answers[i].taken, status = true, a.status
				return true
			}
		}
		return false
	})
	return status
}

// Toggle clicks the checkbox or radio button labelled label.
func (b *Browser) Toggle(label string) {
	b.t.Helper()
	b.click("toggle "+label, control(label))
}
