package agents_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/targettest"
)

// A test with a baseline judges its later runs against it: a run against the same target slowed
// by half is marked regressed (in its summary, the list of runs, the trend, the JUnit file, and
// the exit status CI reads), and a run as fast as the baseline is not.
func TestABaselineCatchesARegression(t *testing.T) {
	f := newFleet(t, notifyEnv...)
	var delay atomic.Int64
	delay.Store(int64(20 * time.Millisecond))
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		targettest.Work(r, time.Duration(delay.Load()))
	}))
	t.Cleanup(target.Close)
	path := f.scriptFile("checkout", `version: 1
name: checkout
session:
  groups:
    - name: buy
      requests:
        - { name: get cart, url: "`+target.URL+`/cart", assert: [ { status: 200 } ] }
load:
  vus: 4
  duration: 6s
thresholds:
  - p99 < 5s
`)
	test := strings.TrimSpace(e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "push", path))
	dir := t.TempDir()
	// The team hears of regressions and failed thresholds on a webhook.
	hook := newReceiver(t, http.StatusOK)
	created := strings.Fields(e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "create", "team", "--webhook", hook.URL,
		"--event", "run.regressed", "--event", "run.thresholds_failed"))
	require.Len(t, created, 2, "the channel's id and its secret")
	hook.setSecret(created[1])

	// start runs the test to its end as CI does and returns the run's id, what the CLI printed,
	// its exit status and the JUnit file it wrote.
	start := func(name string) (string, string, int, junitDoc) {
		t.Helper()
		file := filepath.Join(dir, name+".xml")
		out, errOut, err := e2etest.CLI(t, f.p, f.cfg, "", "runs", "start", "--test", test, "--wait", "--junit", file)
		code := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		id := e2etest.RunIDLine.FindStringSubmatch(out)
		require.NotNil(t, id, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, errOut, "run "+id[1]+": finished", "--wait says the run's states as they change")
		require.NotContains(t, errOut, "vus", "--wait prints no live lines")
		raw, err := os.ReadFile(file)
		require.NoError(t, err, "stderr: %s", errOut)
		var doc junitDoc
		require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
		return id[1], out, code, doc
	}

	base, out, code, junit := start("base")
	require.Zero(t, code, out)
	// A steady target at a steady load: nothing of the target's to look at.
	var findings struct {
		Insights []struct {
			Kind string `json:"kind"`
		} `json:"insights"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/runs/"+base+"/summary", &findings))
	for _, in := range findings.Insights {
		require.NotContains(t, []string{"knee", "errors_from_load", "dominant_request", "correlated_metric"}, in.Kind)
	}
	require.NotContains(t, out, "against the test's baseline", "the test has no baseline yet")
	require.Zero(t, junit.Failures, "%+v", junit)
	require.Equal(t, []string{"run", "thresholds", "checks"}, junit.suiteNames())

	// The baseline, held on the median and the rate with tolerances wide enough for a loaded
	// machine's noise and narrow enough for half as slow again; a loaded machine's tails are
	// not the target's (a CI run's p99 went from 27 to 49 ms at the same target).
	set := e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--run", base,
		"--max-p50-regression", "25", "--max-p95-regression", "500", "--max-p99-regression", "1000", "--max-rps-regression", "20")
	require.Contains(t, set, "Run "+base+" is the baseline")
	_, shown, err := e2etest.CLI(t, f.p, f.cfg, "", "tests", "show", test)
	require.NoError(t, err)
	require.Contains(t, shown, "baseline: run "+base+" (p50 +25%, p95 +500%, p99 +1000%, requests/s -20%, errors +1 point)")

	delay.Store(int64(30 * time.Millisecond))
	slow, out, code, junit := start("slow")
	require.Equal(t, 99, code, "a regression fails the CI job: %s", out)
	require.Contains(t, out, "against the test's baseline, run "+base)
	require.Regexp(t, `verdict: regressed \(.*p50_ms of all requests`, out)
	require.Positive(t, junit.Failures)
	regressions := junit.failures("baseline")
	require.Contains(t, regressions, "all requests: p50_ms", "%+v", junit)
	require.Empty(t, junit.failures("thresholds"))
	// The webhook heard of it, signed, with the figures that regressed.
	regressed := hook.next(t, time.Minute)
	require.Equal(t, "run.regressed", regressed.header.Get("Barrage-Event"))
	var told struct {
		Event   string `json:"event"`
		Message string `json:"message"`
		Run     struct {
			ID       string `json:"id"`
			Baseline struct {
				RunID       string   `json:"run_id"`
				Verdict     string   `json:"verdict"`
				Regressions []string `json:"regressions"`
			} `json:"baseline"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal(regressed.body, &told))
	require.Equal(t, slow, told.Run.ID)
	require.Equal(t, base, told.Run.Baseline.RunID)
	require.Contains(t, told.Run.Baseline.Regressions, "p50_ms of all requests")
	require.Contains(t, told.Message, "regressed against its test's baseline, run "+base)

	delay.Store(int64(20 * time.Millisecond))
	fast, out, code, junit := start("fast")
	require.Zero(t, code, "as fast as the baseline: %s", out)
	require.Contains(t, out, "against the test's baseline, run "+base)
	require.NotContains(t, out, "verdict: regressed")
	require.Zero(t, junit.Failures, "%+v", junit)
	require.Equal(t, []string{"run", "thresholds", "checks", "baseline"}, junit.suiteNames())

	// The trend shows the three runs, oldest first, the baseline and the regression marked.
	var trend struct {
		Baseline string `json:"baseline_run_id"`
		Runs     []struct {
			RunID    string `json:"run_id"`
			Baseline bool   `json:"baseline"`
			Verdict  string `json:"verdict"`
			Total    struct {
				P50MS float64 `json:"p50_ms"`
			} `json:"total"`
			Requests []struct {
				Name string `json:"name"`
			} `json:"requests"`
		} `json:"runs"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/tests/"+test+"/trend", &trend))
	require.Equal(t, base, trend.Baseline)
	require.Len(t, trend.Runs, 3)
	for i, want := range []struct {
		id, verdict string
		baseline    bool
	}{{base, "", true}, {slow, "regressed", false}, {fast, "unchanged", false}} {
		r := trend.Runs[i]
		require.Equal(t, want.id, r.RunID)
		require.Equal(t, want.baseline, r.Baseline)
		require.Equal(t, want.verdict, r.Verdict, "run %d", i)
		require.Equal(t, "get cart", r.Requests[0].Name)
	}
	require.Greater(t, trend.Runs[1].Total.P50MS, 1.3*trend.Runs[0].Total.P50MS)
	printed := e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "trend", test)
	require.Regexp(t, `(?m)^`+base+`\s.*\sBASELINE$`, printed)
	require.Regexp(t, `(?m)^`+slow+`\s.*\sregressed$`, printed)

	// The list of runs says it in brief; the JUnit file of an ended run is there for later.
	var list struct {
		Items []struct {
			ID      string `json:"id"`
			Outcome struct {
				BaselineVerdict string `json:"baseline_verdict"`
			} `json:"outcome"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/runs?test_id="+test, &list))
	verdicts := map[string]string{}
	for _, r := range list.Items {
		verdicts[r.ID] = r.Outcome.BaselineVerdict
	}
	require.Equal(t, map[string]string{base: "", slow: "regressed", fast: "unchanged"}, verdicts)
	require.Equal(t, 1, hook.count(), "the other runs regressed nothing and failed no threshold: the channel wants neither's end")
	later := filepath.Join(dir, "later.xml")
	e2etest.MustCLI(t, f.p, f.cfg, "", "runs", "report", "--junit", later, slow)
	raw, err := os.ReadFile(later)
	require.NoError(t, err)
	require.Contains(t, string(raw), `type="regression"`)

	// A baseline is a finished run of the test: anything else is refused on run_id (who may set
	// one is the API's tenancy test's).
	_, errOut, err := e2etest.CLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--run", test)
	require.Error(t, err)
	require.Contains(t, errOut, "run_id")
	e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--clear")
	var cleared struct {
		Baseline *string `json:"baseline_run_id"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/tests/"+test+"/trend", &cleared))
	require.Nil(t, cleared.Baseline)
}

// junitDoc is what CI reads of a JUnit file.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func (d junitDoc) suiteNames() []string {
	var names []string
	for _, s := range d.Suites {
		names = append(names, s.Name)
	}
	return names
}

// failures are the names of the failed cases of suite.
func (d junitDoc) failures(suite string) []string {
	var names []string
	for _, s := range d.Suites {
		for _, c := range s.Cases {
			if s.Name == suite && c.Failure != nil {
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// notifyEnv lets serve's notifications reach a receiver on 127.0.0.1 and try a failed delivery
// again after 200 ms, then 400 ms: three attempts in all.
var notifyEnv = []string{"BARRAGE_NOTIFY_ALLOW=127.0.0.1", "BARRAGE_NOTIFY_BACKOFF=200ms", "BARRAGE_NOTIFY_ATTEMPTS=3"}

// A channel's deliveries are signed; a receiver that fails gets each again with backoff, the
// attempts show in the delivery log, and after three deliveries in a row fail every attempt the
// channel is paused and says why, until it is resumed.
func TestNotificationsAreSignedRetriedLoggedAndPaused(t *testing.T) {
	f := newFleet(t, notifyEnv...)
	good, bad := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusInternalServerError)
	create := func(name string, r *receiver) string {
		out := strings.Fields(e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "create", name, "--webhook", r.URL))
		require.Len(t, out, 2)
		r.setSecret(out[1])
		return out[0]
	}
	goodID, badID := create("good", good), create("bad", bad)

	// A test delivery reaches the good receiver, signed; the log says it was delivered.
	e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "test", goodID)
	got := good.next(t, 30*time.Second)
	require.Equal(t, "channel.test", got.header.Get("Barrage-Event"))
	deliveries := func(id string) []struct {
		State      string `json:"state"`
		Attempts   int    `json:"attempts"`
		LastStatus *int   `json:"last_status"`
		LastError  string `json:"last_error"`
	} {
		var list struct {
			Items []struct {
				State      string `json:"state"`
				Attempts   int    `json:"attempts"`
				LastStatus *int   `json:"last_status"`
				LastError  string `json:"last_error"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/notification-channels/"+id+"/deliveries", &list))
		return list.Items
	}
	e2etest.Eventually(t, 30*time.Second, "the test delivery logged as delivered", func() bool {
		d := deliveries(goodID)
		return len(d) == 1 && d[0].State == "delivered" && d[0].Attempts == 1 && *d[0].LastStatus == 200
	})

	// A failing receiver gets three attempts, each later than the last by more.
	e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "test", badID)
	e2etest.Eventually(t, time.Minute, "three attempts, then the delivery failed", func() bool {
		d := deliveries(badID)
		return len(d) == 1 && d[0].State == "failed"
	})
	d := deliveries(badID)[0]
	require.Equal(t, 3, d.Attempts)
	require.Equal(t, 500, *d.LastStatus)
	require.Equal(t, "the receiver answered 500 Internal Server Error", d.LastError)
	at := bad.times()
	require.Len(t, at, 3)
	first, second := at[1].Sub(at[0]), at[2].Sub(at[1])
	t.Logf("attempts %s and %s apart", first, second)
	require.GreaterOrEqual(t, first, 200*time.Millisecond)
	require.GreaterOrEqual(t, second, 400*time.Millisecond, "the backoff doubles")
	printed := e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "deliveries", badID)
	require.Regexp(t, `channel\.test\s+failed\s+3\s+500\s`, printed)

	// Two more deliveries that fail: the channel is paused, and says why; the good one is not.
	for range 2 {
		e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "test", badID)
	}
	e2etest.Eventually(t, time.Minute, "the failing channel paused", func() bool {
		return strings.Contains(e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "show", badID), "PAUSED")
	})
	shown := e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "show", badID)
	require.Contains(t, shown, "PAUSED: paused after 3 deliveries in a row failed every attempt; the last: the receiver answered 500 Internal Server Error")
	list := e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "list")
	require.Regexp(t, goodID+`\s+good\s+webhook\s+http://127\.0\.0\.1:\d+\s+\S+\s+active`, list)
	require.NotContains(t, list, strings.TrimPrefix(bad.URL, "http://127.0.0.1")+"/", "a list shows a URL's host alone")

	// A run's end reaches the good channel and not the paused one, which is active again once
	// resumed.
	path := f.script("told", "vus: 1\n  duration: 2s")
	out := e2etest.MustCLI(t, f.p, f.cfg, "", "runs", "start", "--file", path, "--wait")
	run := e2etest.RunIDLine.FindStringSubmatch(out)[1]
	finished := good.next(t, time.Minute)
	require.Equal(t, "run.finished", finished.header.Get("Barrage-Event"))
	require.Contains(t, string(finished.body), `"id":"`+run+`"`)
	// The run's end made its deliveries in one go: the paused channel got none.
	require.Len(t, deliveries(badID), 3)
	require.Equal(t, 9, bad.count(), "no attempt while paused")
	e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "resume", badID)
	require.Contains(t, e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "show", badID), "state:   active\n")

	// Bad input is refused on its field, and nothing is stored.
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"x", "--webhook", "http://10.0.0.1/hook"}, "--notify-allow"},
		{[]string{"x", "--webhook", "ftp://example.com/hook"}, "want an absolute http(s) URL"},
		{[]string{"x", "--email", "ops@example.com"}, "this server sends no email"},
		{[]string{"x", "--webhook", "https://example.com/h", "--event", "run.exploded"}, "events[0]"},
	} {
		_, errOut, err := e2etest.CLI(t, f.p, f.cfg, "", append([]string{"notifications", "create"}, bad.args...)...)
		require.Error(t, err, "%v", bad.args)
		require.Contains(t, errOut, bad.says, "%v", bad.args)
	}
	require.Equal(t, 2, strings.Count(e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "list"), "webhook"))

	// An agent that goes silent is told of once, on a channel that wants it.
	watch := newReceiver(t, http.StatusOK)
	out = e2etest.MustCLI(t, f.p, f.cfg, "", "notifications", "create", "fleet", "--webhook", watch.URL, "--event", "agent.offline")
	watch.setSecret(strings.Fields(out)[1])
	require.NoError(t, f.agents[1].Cmd.Process.Kill())
	<-f.agents[1].Done
	offline := watch.next(t, time.Minute)
	require.Equal(t, "agent.offline", offline.header.Get("Barrage-Event"))
	require.Contains(t, string(offline.body), `"name":"two"`)
	require.Contains(t, string(offline.body), `Agent \"two\" went offline`)
	e2etest.Eventually(t, 30*time.Second, "the agent listed offline", func() bool {
		return strings.Count(e2etest.MustCLI(t, f.p, f.cfg, "", "agents", "list"), " online ") == 1
	})
	require.Equal(t, 1, watch.count(), "told once")
}

// receiver is a webhook receiver on 127.0.0.1 that answers status and keeps what it got, each
// delivery's signature checked against its secret.
type receiver struct {
	*httptest.Server
	secret []byte
	got    chan delivered
	mu     sync.Mutex
	at     []time.Time
}

type delivered struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{got: make(chan delivered, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.at = append(r.at, time.Now())
		secret := r.secret
		r.mu.Unlock()
		if !validSignature(secret, req.Header.Get("Barrage-Signature"), body) {
			t.Errorf("a delivery whose signature does not verify: %q", req.Header.Get("Barrage-Signature"))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.got <- delivered{header: req.Header, body: body}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// next is the next delivery the receiver took.
func (r *receiver) next(t *testing.T, within time.Duration) delivered {
	t.Helper()
	select {
	case d := <-r.got:
		return d
	case <-time.After(within):
		t.Fatalf("no delivery within %s", within)
		return delivered{}
	}
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = []byte(s)
}

func (r *receiver) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

func (r *receiver) count() int { return len(r.times()) }

// validSignature checks a Barrage-Signature as a receiver would: t=<unix>,v1=<hex HMAC-SHA256 of
// "<t>.<body>">, in constant time, and t within five minutes of now.
func validSignature(secret []byte, header string, body []byte) bool {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(t, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(mac.Sum(nil), want)
}
