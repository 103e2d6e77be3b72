package journey_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// A tester's day in the portal, in Chromium, against real processes: serve with its demo agent,
// the demo shop, and an agent of the tester's own that the test kills mid-run. They sign up with
// a code, write a test in the wizard, pick what to extract and assert from a debugged response,
// mend an error the editor shows at its line, debug it on the demo agent against the shop, run
// it, run it again on both agents and watch it live (the charts move, the stream survives a cut,
// the killed agent is reported lost), open the finished run, compare it with the first, run a
// concurrency sweep, and sign out. Each page is inspected on a laptop's screen and a phone's, by
// axe and a screenshot.
func TestPortalTesterJourneyInChromium(t *testing.T) {
	shop := e2etest.StartDemoShop(t)
	s := e2etest.NewPortalUser(t, "BARRAGE_DEMO_AGENT=true", "BARRAGE_DEMO_AGENT_ALLOW="+strings.TrimPrefix(shop, "http://"))
	b := portaltest.New(t, s.Server.URL)

	b.Go("/signup")
	b.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(b, s.Code, "grace@example.com", "Grace Hopper", "graces long password")
	b.WaitTitle("Tests · Barrage")
	b.WaitText("No tests yet.")
	b.Inspect("tests-empty")

	// Her own agent, registered and started from the command line: the portal runs on it too.
	cfg := t.TempDir()
	e2etest.MustCLI(t, s.Server, cfg, "graces long password\n", "login", "--email", "grace@example.com")
	laptop := e2etest.OwnAgent(t, s.Server, cfg, "laptop")

	// The wizard writes the test: the shop's products, two users for the time the form says.
	b.Follow("Use the wizard")
	b.WaitTitle("New test in the wizard · Barrage")
	b.Fill("Test name", "shop products")
	b.Fill("URL", shop+"/api/products")
	b.Fill("Virtual users", "2")
	b.Inspect("wizard")
	b.Click("Save test")
	b.WaitTitle("shop products in the wizard · Barrage")

	// Debugged from the wizard on the demo agent: the shop's answer as a tree, whose first
	// product's id she extracts and whose status she asserts, saved as the next revision.
	b.Click("Run one iteration")
	b.WaitText("coffee beans")
	b.Click("Extract $.items[0].id")
	b.Click("Assert status 200")
	b.Inspect("wizard-picked")
	b.Click("Save revision")
	b.WaitText("Saved revision 2.")

	// The editor shows the YAML the wizard wrote; an error is shown at its line as she types,
	// and goes when she mends it.
	b.Go(strings.TrimSuffix(portaltest.Eval[string](b, `location.pathname`), "/wizard") + "/edit")
	b.WaitTitle("Edit shop products · Barrage")
	b.WaitText("The script is valid.")
	script := b.Value("Script (YAML or JSON)")
	require.Contains(t, script, "json: $.items[0].id")
	require.Contains(t, script, "status: 200")
	b.Fill("Script (YAML or JSON)", strings.Replace(script, "url:", "ur:", 1))
	b.WaitFor(`document.querySelector("#source-errors li")`)
	require.Regexp(t, `line \d+`, b.Text(), "the error names its line")
	b.Inspect("editor-error")
	b.Fill("Script (YAML or JSON)", strings.Replace(script, "duration: 30s", "duration: 20s", 1))
	b.WaitText("The script is valid.")
	b.Click("Save revision")
	b.WaitTitle("shop products · Barrage")
	testURL := portaltest.Eval[string](b, `location.pathname`)
	b.WaitText("Revision 3")
	b.Inspect("test")

	// Debug: one iteration on the demo agent, its exchange shown as a network panel shows it,
	// with the variable the wizard's extractor took.
	b.Follow("Debug one iteration")
	b.WaitTitle("Debug shop products · Barrage")
	b.Click("Run one iteration")
	b.WaitText("Variables extracted")
	require.Contains(t, b.Text(), "p-100") // the first product's id
	require.Contains(t, b.Text(), "passed")
	b.Inspect("debug")

	// A first run, short, on whichever agent is free.
	launch(b, testURL, "Virtual users for a time (closed model)", "Virtual users", "2", "Duration in seconds", "3")
	b.WaitText("Your license allows 100 virtual users")
	b.Inspect("launch")
	b.Click("Start the run")
	b.WaitTitle("Run of shop products · Barrage")
	first := portaltest.Eval[string](b, `location.pathname`)
	waitLong(t, b, 90*time.Second, `document.body.innerText.includes("HTML report")`) // ended: the results

	// A refusal is shown on its field: more VUs than the license allows.
	launch(b, testURL, "Virtual users for a time (closed model)", "Virtual users", "5000", "Duration in seconds", "30")
	b.Click("Start the run")
	b.WaitText("5000 asked")
	require.True(t, portaltest.Eval[bool](b, `[...document.querySelectorAll("input[aria-invalid]")].some((e) => e.labels[0].textContent === "Virtual users")`))

	// The second run, on both agents, watched live; her agent is killed while it runs.
	b.WaitFor(`document.querySelector('input[id^="agent-"]:not([disabled])')`)
	b.Toggle("laptop")
	b.Toggle("demo")
	b.Fill("Virtual users", "4")
	b.Fill("Duration in seconds", "25")
	b.Click("Start the run")
	b.WaitTitle("Run of shop products · Barrage")
	second := portaltest.Eval[string](b, `location.pathname`)
	require.NotEqual(t, first, second)
	// Watched through a proxy that the test cuts, as a network blip would: the page reconnects
	// with Last-Event-ID and draws every second once, none missing.
	blip := newBlipProxy(t, s.Server.URL)
	b.Go(blip.srv.URL + second)
	b.WaitTitle("Run of shop products · Barrage")
	drawn := `Number((document.querySelector("section[data-seconds]") || { dataset: { seconds: 0 } }).dataset.seconds)`
	waitLong(t, b, 60*time.Second, drawn+" >= 3")
	elapsed := `document.querySelector(".live-status").innerText`
	was := portaltest.Eval[string](b, elapsed)
	require.Contains(t, was, "elapsed")
	waitLong(t, b, 30*time.Second, elapsed+` !== `+fmt.Sprintf("%q", was)) // the clock and the charts move
	require.True(t, portaltest.Eval[bool](b, `document.querySelectorAll(".chart canvas").length >= 2`))
	b.Inspect("live")
	before := portaltest.Eval[int](b, drawn)
	broken := b.Expect("ERR_INCOMPLETE_CHUNKED_ENCODING") // the stream cut short, as the browser says
	blip.cut()
	broken.Wait()
	waitLong(t, b, 30*time.Second, fmt.Sprintf("%s > %d", drawn, before+2))
	require.True(t, portaltest.Eval[bool](b, `(() => { const d = document.querySelector("section[data-seconds]").dataset; return Number(d.seconds) === Number(d.last) + 1; })()`),
		"every second drawn once: as many as the last one's index and one")
	ids := blip.lastEventIDs()
	require.GreaterOrEqual(t, len(ids), 2, "the stream was opened again")
	require.Empty(t, ids[0], "the first connection starts at the run's start")
	require.NotEmpty(t, ids[len(ids)-1], "the page resumed after the last second it drew")
	require.NoError(t, laptop.Cmd.Process.Signal(syscall.SIGKILL))
	waitLong(t, b, 40*time.Second, `[...document.querySelectorAll("td")].some((td) => td.innerText.startsWith("lost"))`)
	b.Shot("live-lost")

	// Ended: the results, as the report has them, with the lost agent's share said incomplete.
	waitLong(t, b, 90*time.Second, `document.body.innerText.includes("HTML report")`)
	b.WaitText("incomplete")
	b.WaitText("list products") // the request's row
	b.Inspect("run")
	// Its HTML report, sandboxed on the portal's origin, draws its charts.
	report := portaltest.Eval[string](b, `document.querySelector('a[href$="/report"]').href`)
	runPage := portaltest.Eval[string](b, `location.href`)
	b.Go(report)
	b.WaitFor(`Number(document.documentElement.dataset.charts) > 0`)
	b.Go(runPage)
	b.WaitText("HTML report")

	// Compared with the first run.
	b.Click("Compare with it")
	b.WaitTitle("Compare runs · Barrage")
	b.WaitText("Overall:")
	require.Contains(t, b.Text(), "All requests")
	b.Inspect("compare")

	// A concurrency sweep: its levels, the curve fitted to them, the knee.
	launch(b, testURL, "A concurrency sweep: levels of virtual users, one after the other", "Levels of virtual users", "1, 2, 4", "Seconds at each level", "2")
	b.Click("Start the run")
	b.WaitTitle("Run of shop products · Barrage")
	waitLong(t, b, 90*time.Second, `document.body.innerText.includes("Levels (CSV)")`)
	b.WaitText("Successful requests/s by VUs")
	require.Contains(t, b.Text(), "sweep 1, 2, 4 VUs")
	b.Inspect("sweep")

	b.Follow("Runs")
	b.WaitTitle("Runs · Barrage")
	b.WaitText("shop products")
	b.Inspect("runs")
	b.Follow("Tests")
	b.WaitTitle("Tests · Barrage")
	b.WaitText("shop products")
	b.Inspect("tests")

	b.Click("Sign out")
	b.WaitTitle("Sign in · Barrage")
}

// launch opens the launch page of the journey's test (at testURL), chooses the load model and
// fills each field, given as its label then its value.
func launch(b *portaltest.Browser, testURL, model string, fields ...string) {
	b.Go(testURL + "/run")
	b.WaitTitle("Run shop products · Barrage")
	b.Toggle(model)
	for i := 0; i+1 < len(fields); i += 2 {
		b.Fill(fields[i], fields[i+1])
	}
}

// waitLong waits, longer than a step's timeout, until the JavaScript expression holds in the
// page: a run's end, which its load's length decides.
func waitLong(t *testing.T, b *portaltest.Browser, within time.Duration, expression string) {
	t.Helper()
	e2etest.Eventually(t, within, expression, func() bool { return portaltest.Eval[bool](b, "Boolean("+expression+")") })
}

// blipProxy is the server seen through a proxy whose streams the test can cut at once, as a
// network blip cuts them; it notes the Last-Event-ID of each request for a run's live stream.
type blipProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	cancels map[*http.Request]context.CancelFunc
	ids     []string
}

func newBlipProxy(t *testing.T, server string) *blipProxy {
	t.Helper()
	target, err := url.Parse(server)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // each event as it comes
	rp.ErrorLog = log.New(io.Discard, "", 0)
	bp := &blipProxy{cancels: map[*http.Request]context.CancelFunc{}}
	bp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		bp.mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/live") {
			bp.ids = append(bp.ids, r.Header.Get("Last-Event-ID"))
		}
		bp.cancels[r] = cancel
		bp.mu.Unlock()
		defer func() {
			bp.mu.Lock()
			delete(bp.cancels, r)
			bp.mu.Unlock()
			cancel()
		}()
		rp.ServeHTTP(w, r.WithContext(ctx))
		if ctx.Err() != nil {
			panic(http.ErrAbortHandler) // cut: the client sees its connection drop, not an end
		}
	}))
	t.Cleanup(bp.srv.Close)
	return bp
}

// cut ends every request in flight through the proxy.
func (bp *blipProxy) cut() {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	for _, cancel := range bp.cancels {
		cancel()
	}
}

func (bp *blipProxy) lastEventIDs() []string {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return slices.Clone(bp.ids)
}
