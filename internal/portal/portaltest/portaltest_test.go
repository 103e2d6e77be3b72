package portaltest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/portal"
)

// testPage serves a small page under the portal's CSP: a labelled field and a button that greets
// whoever is named (console.error for "error"), and at /bad a field without a label.
func testPage(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", portal.CSP)
		switch r.URL.Path {
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.querySelector("form").addEventListener("submit", (e) => {
				e.preventDefault();
				const n = document.getElementById("n").value;
				if (n === "error") console.error("boom");
				document.getElementById("out").textContent = "Hello, " + n;
			});`)
		case "/bad":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Bad</title><main><h1>Bad</h1><input></main></html>`)
		default:
			fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>Harness</title><script src="/app.js" defer></script></head>
<body><main><h1>Harness</h1><form><label for="n">Name</label> <input id="n"> <button type="submit">Greet</button></form>
<p id="out"></p></main></body></html>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// failing runs f with a Browser on a testing.TB whose Fatalf ends f rather than the test, and
// returns what it said.
func failing(t *testing.T, url string, f func(b *Browser)) string {
	t.Helper()
	rec := &recorder{TB: t}
	b := New(rec, url)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(b)
	}()
	<-done
	return rec.failed
}

type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestBrowserFillsClicksTypesAndShoots(t *testing.T) {
	b := New(t, testPage(t))
	b.Go("/")
	b.WaitTitle("Harness")
	b.Fill("Name", "Ada")
	b.Click("Greet")
	b.WaitText("Hello, Ada")
	b.Fill("Name", "")
	require.Empty(t, b.Value("Name"))

	b.Go("/")
	b.Keys(kb.Tab)
	require.Equal(t, "Name", b.Focused())
	b.Keys("Bo" + kb.Enter)
	b.WaitText("Hello, Bo")

	b.Inspect("harness")
	for _, s := range Screens {
		_, err := os.Stat(filepath.Join(b.dir, "harness-"+s.Name+".png"))
		require.NoError(t, err)
	}
	require.Equal(t, Desktop, b.screen, "Inspect returns to the screen it was on")
}

func TestBrowserFailsOnWhatThePageReports(t *testing.T) {
	url := testPage(t)
	b := New(t, url)
	b.Go("/")
	// Injected HTML is the page's: its CSP refuses the inline handler and script.
	csp := b.Expect("Content Security Policy")
	Eval[struct{}](b, `document.body.insertAdjacentHTML("beforeend", '<img src="data:," onerror="window.__xss=1">');
		const s = document.createElement("script"); s.textContent = "window.__xss=1"; document.body.append(s)`)
	csp.Wait()
	require.True(t, Eval[bool](b, `window.__xss === undefined`))

	said := failing(t, url, func(b *Browser) {
		b.Go("/")
		b.Fill("Name", "error")
		b.Click("Greet")
		b.WaitText("Hello, error")
	})
	require.Contains(t, said, "console.error: boom")
}

func TestAxeFindsAnUnlabelledField(t *testing.T) {
	url := testPage(t)
	b := New(t, url)
	b.Go("/bad")
	var ids []string
	for _, v := range b.Violations() {
		ids = append(ids, v.ID+" "+v.Impact)
	}
	require.Contains(t, ids, "label critical")

	said := failing(t, url, func(b *Browser) {
		b.Go("/bad")
		b.Axe()
	})
	require.Contains(t, said, "label (critical)")
}
