package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/targettest"
)

// recorder is a target that remembers a query parameter of every request.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (rc *recorder) handler(param string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.seen = append(rc.seen, r.URL.Query().Get(param))
		rc.mu.Unlock()
	}
}

func load(t *testing.T, dir, target, src string) *script.Script {
	t.Helper()
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(src, "${target}", target)), 0o644))
	s, err := script.Load(path, script.ParseOptions{})
	require.NoError(t, err)
	return s
}

// writeUsers writes dir/users.csv, a column "name" of n rows user00, user01..., and returns the
// rows.
func writeUsers(t *testing.T, dir string, n int) []string {
	t.Helper()
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf("user%02d", i))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.csv"), []byte("name\n"+strings.Join(rows, "\n")+"\n"), 0o644))
	return rows
}

func TestDataFileOrders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := writeUsers(t, dir, 50)

	for _, order := range []string{"sequential", "circular", "random"} {
		t.Run(order, func(t *testing.T) {
			rc := &recorder{}
			srv := httptest.NewServer(rc.handler("u"))
			defer srv.Close()
			iterations := "iterations: 40"
			if order == "sequential" {
				iterations = "duration: 30s" // runs until the rows are used up
			}
			s := load(t, dir, srv.URL, `
version: 1
name: data
variables:
  data:
    - file: users.csv
      order: `+order+`
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/?u=${name}" }
load:
  vus: 8
  `+iterations+`
`)
			res := runScript(t, s, engine.Options{})
			rc.mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
			defer rc.mu.Unlock()
			require.Zero(t, stats(t, res, "r").Failed())
			switch order {
			case "sequential":
				// Each row exactly once across all VUs, then the run ends by itself.
				got := append([]string(nil), rc.seen...)
				sort.Strings(got)
				require.Equal(t, rows, got)
				require.Equal(t, run.Completed, res.Stop.Reason)
				require.Contains(t, res.Exhausted, "users.csv", "ended by its rows, not its 30 s")
			case "circular":
				require.Len(t, rc.seen, 40)
				counts := map[string]int{}
				for _, u := range rc.seen {
					counts[u]++
				}
				require.Len(t, counts, 40, "the first 40 rows, each once")
			case "random":
				require.Len(t, rc.seen, 40)
				for _, u := range rc.seen {
					require.Contains(t, rows, u)
				}
			}
		})
	}
}

func TestThinkTimesPaceIterations(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: think
session:
  groups:
    - name: g
      think: { fixed: 300ms }
      requests:
        - { name: r, url: "${target}/", think: { uniform: [100ms, 200ms] } }
load:
  vus: 2
  iterations: 6
`)
	res := runScript(t, s, engine.Options{})
	require.EqualValues(t, 6, stats(t, res, "r").Requests)
	require.EqualValues(t, 6, hits.Load())
	// The group's time holds its request's pause of 100-200 ms; the group's own 300 ms follows
	// it. Each iteration is paced by 400 ms at least, timers never waking early: a VU that ran
	// three of the six (one of the two did) ran for 800 ms at least, where an unpaced loop
	// takes a few.
	require.GreaterOrEqual(t, statsOf(t, res, metrics.GroupKey("g")).Latency.Min(), 100*time.Millisecond)
	require.GreaterOrEqual(t, res.Elapsed, 800*time.Millisecond)
}

func TestRampUpStartsVUsGradually(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: ramp
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", think: { fixed: 50ms } }
load:
  vus: 8
  ramp_up: 4s
  duration: 5s
  graceful_stop: 1s
`)
	var mu sync.Mutex
	var ends []time.Duration // each second's end, from the run's start
	res := runScript(t, s, engine.Options{OnSecond: func(sec run.Second) {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, sec.Elapsed)
	}})
	mu.Lock()
	defer mu.Unlock()
	// VU i starts at i × 0.5 s: a second holds no more VUs than were due by its end, as late as
	// a busy machine made that end (at the end of the first second, two or three of eight), and
	// all eight by the end of the fourth. The fifth second ends with the run, as VUs leave, so
	// the fourth and later are taken at their highest.
	require.GreaterOrEqual(t, len(res.Seconds), 5)
	require.Len(t, ends, len(res.Seconds))
	for i, sec := range res.Seconds {
		due := min(int64(ends[i]/(500*time.Millisecond))+1, 8)
		require.LessOrEqual(t, sec.Health.ActiveVUs, due, "second %d, ended %s in: not every VU starts at once", i, ends[i])
	}
	require.Positive(t, res.Seconds[0].Health.ActiveVUs)
	var most int64
	for _, sec := range res.Seconds[3:] {
		most = max(most, sec.Health.ActiveVUs)
	}
	require.EqualValues(t, 8, most)
}

func TestRedirectsAreOffByDefault(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusFound) })
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "arrived") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: redirects
session:
  groups:
    - name: g
      requests:
        - { name: not followed, url: "${target}/old", assert: [ { status: 302 } ] }
        - { name: followed, url: "${target}/old", redirects: 3, assert: [ { status: 200 }, { body_contains: arrived } ] }
load:
  vus: 1
  iterations: 2
`)
	res := runScript(t, s, engine.Options{})
	require.Zero(t, stats(t, res, "not followed").Failed())
	require.Zero(t, stats(t, res, "followed").Failed())
}

func TestTimeoutsAreCountedAndTheRunEndsOnTime(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t)
	s := parse(t, srv.URL, `
version: 1
name: timeouts
session:
  groups:
    - name: g
      requests:
        - { name: hang, url: "${target}/", timeout: 300ms }
load:
  vus: 2
  duration: 1s
  graceful_stop: 200ms
`)
	res := runScript(t, s, engine.Options{})
	st := stats(t, res, "hang")
	require.Positive(t, st.Errors[metrics.ErrTimeout])
	require.Equal(t, st.Requests, st.Errors[metrics.ErrTimeout])
	// Held, the run would have waited for the target until the test's minute ended it.
	require.Equal(t, run.Completed, res.Stop.Reason, "a hanging target does not hold the run")
}

// A keep-alive connection's deadline follows each request's: a slow answer within its timeout
// succeeds on a connection a request with a shorter timeout used before, and a request with a
// shorter timeout than the one before it times out at its own, no sooner.
func TestTimeoutsHoldOnReusedConnections(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		targettest.Work(r, time.Duration(ms)*time.Millisecond)
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: deadlines
session:
  groups:
    - name: g
      requests:
        - { name: quick, url: "${target}/?ms=0", timeout: 300ms }
        - { name: slow, url: "${target}/?ms=600", timeout: 3s }
        - { name: late, url: "${target}/?ms=1000", timeout: 300ms }
load:
  vus: 1
  iterations: 2
`)
	res := runScript(t, s, engine.Options{})
	require.Zero(t, stats(t, res, "quick").Failed())
	require.Zero(t, stats(t, res, "slow").Failed(), "its connection's deadline was the quick request's")
	late := stats(t, res, "late")
	require.EqualValues(t, 2, late.Errors[metrics.ErrTimeout], "it took the slow request's deadline")
	require.GreaterOrEqual(t, late.Latency.Min(), 300*time.Millisecond, "timed out before its timeout")
}

func TestConnectErrorsAreClassified(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := parse(t, "http://"+addr, `
version: 1
name: refused
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  vus: 1
  iterations: 3
`)
	res := runScript(t, s, engine.Options{})
	require.EqualValues(t, 3, stats(t, res, "r").Errors[metrics.ErrConnect])
}

func TestSourceAddressesAreSeenByTheTarget(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	peers := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		peers[host]++
		mu.Unlock()
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: sources
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  vus: 6
  iterations: 60
  source_addresses: "127.0.0.2-127.0.0.4"
`)
	res := runScript(t, s, engine.Options{})
	mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
	defer mu.Unlock()
	require.Zero(t, stats(t, res, "r").Failed())
	require.Len(t, peers, 3)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		require.Positive(t, peers[ip], "%s not seen: %v", ip, peers)
	}
}

func TestAbortingThresholdStopsTheRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: abort
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", think: { fixed: 10ms } }
load:
  vus: 2
  duration: 30s
thresholds:
  - { check: "error_rate < 10%", abort: true }
  - p99 < 10s
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, s, engine.Options{})
	require.ErrorIs(t, err, run.ErrThresholds)
	require.Equal(t, run.AbortedThreshold, res.Stop.Reason)
	require.Contains(t, res.Stop.Detail, "error_rate < 10%")
	require.Less(t, res.Elapsed, 30*time.Second, "cut short of the script's 30 s")
	require.False(t, res.Thresholds[0].Passed)
	require.True(t, res.Thresholds[1].Passed)
}

func TestOpenModelRunsAtTheArrivalRate(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: open
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  rate: 50/s
  duration: 2s
  max_vus: 20
`)
	res := runScript(t, s, engine.Options{})
	// 50/s for 2 s is 100 arrivals, each sent: a VU was free for every one of them, or the run
	// says this machine was too loaded for it to keep its schedule. Every request the target
	// saw is counted.
	requireArrivals(t, res, 100, 2*time.Second)
	if res.Dropped > 0 {
		require.True(t, res.Verdict.GeneratorLimited, "%d dropped with VUs to spare: %+v", res.Dropped, res.Verdict)
	}
	require.Equal(t, hits.Load(), stats(t, res, "r").Requests)
}

// A target that stalls for a second: the closed model would just wait, politely sending less;
// the open model keeps the schedule, so the stall shows as the latency of every request sent
// into it, and as dropped iterations once every VU is stuck.
func TestOpenModelExposesAStalledTarget(t *testing.T) {
	t.Parallel()
	var stalled atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalled.Load() {
			targettest.Work(r, time.Second)
		}
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: stall
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  rate: 100/s
  duration: 3s
  max_vus: 20
`)
	// The target stalls through the run's second second, as the run's own seconds tell.
	res := runScript(t, s, engine.Options{OnSecond: func(sec run.Second) { stalled.Store(sec.Index == 0) }})
	st := stats(t, res, "r")
	require.Greater(t, res.Dropped, int64(20), "iterations due during the stall found no VU")
	require.GreaterOrEqual(t, st.Latency.Max(), 900*time.Millisecond)
	require.Greater(t, st.Latency.Quantile(0.95), 500*time.Millisecond, "the stall is in the tail, not hidden")
	// VUs starved by a stalled target are the target's verdict, unless this (loaded) machine
	// also made the generator late, which is then the verdict: either way they are reported
	// (TestTheVerdictTellsTheTargetsLimitFromTheTools holds which, exactly).
	if res.Verdict.GeneratorLimited {
		require.Contains(t, res.Verdict.Reasons[len(res.Verdict.Reasons)-1], "iterations dropped because every VU was busy")
	} else {
		require.True(t, res.Verdict.TargetLimited, "starved VUs are reported")
		require.Contains(t, res.Verdict.TargetReasons[0], "every VU was waiting on the target")
	}
}

// The open model's response times are the target's: measured from each request's send, they
// hold the stalls of a target that stalls 100 ms in every second as the target itself saw them
// (its own p99 within 20% and 5 ms, and what this machine made its goroutines wait for a core
// during the run: a CI machine whose two cores other suites kept busy stretched a 91 ms p99 to
// 132 ms, the client's wait for a core after the answer came); the latency from the schedule is
// kept apart, and what the generator delivered is accounted for: every arrival due, started or
// dropped, and how late.
func TestOpenModelMeasuresTheTargetApartFromTheSchedule(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var mu sync.Mutex
	var seen []time.Duration // as the target saw each request: its time in the handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		if phase := time.Since(start) % time.Second; phase < 100*time.Millisecond {
			targettest.Work(r, 100*time.Millisecond-phase) // stalled until the window ends
		}
		mu.Lock()
		seen = append(seen, time.Since(began))
		mu.Unlock()
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: stalls
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  rate: 200/s
  duration: 4s
  max_vus: 100
`)
	noise := wakeNoise()
	res := runScript(t, s, engine.Options{})
	late := noise()
	st := stats(t, res, "r")
	mu.Lock()
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	truth := seen[len(seen)*99/100]
	mu.Unlock()
	got := st.Latency.Quantile(0.99)
	require.InDelta(t, float64(truth), float64(got), float64(truth)/5+float64(5*time.Millisecond+late),
		"p99 %s, the target saw %s; goroutines woke up to %s late", got, truth, late)

	sched := res.Total.Labels[metrics.ScheduleKey]
	require.NotNil(t, sched, "the open model keeps the latency from the schedule")
	require.Equal(t, st.Requests, sched.Requests)
	require.GreaterOrEqual(t, sched.Latency.Quantile(0.5), st.Latency.Quantile(0.5), "the schedule's latency holds the response time")

	d := res.Verdict.Delivery
	require.Equal(t, res.Iterations+res.Dropped+res.Interrupted, d.Scheduled, "every arrival due was started or dropped")
	require.EqualValues(t, 800, d.Scheduled, "200/s for 4 s")
	require.Positive(t, d.BusyTime)
	require.Greater(t, d.TargetShare(), 0.5, "VUs waited on the target most of their time")
}

// A stage ramping from zero brings the area under its rate: 0 to 100/s over 2 s is 100
// iterations, and the run lasts the stages' duration.
func TestOpenModelRampFromZero(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: ramp
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  stages:
    - { ramp_to: 100/s, duration: 2s }
    - { rate: 20/s, duration: 1s }
  max_vus: 20
`)
	res := runScript(t, s, engine.Options{})
	requireArrivals(t, res, 120, 3*time.Second)
}

// requireArrivals checks that an open model's run of one request brought its schedule's due
// arrivals, each sent or dropped, and lasted the schedule's length: its last arrival is due at
// its very end, and a timer never fires early.
func requireArrivals(t *testing.T, res *run.Result, due int64, lasts time.Duration) {
	t.Helper()
	require.Equal(t, due, res.Verdict.Delivery.Scheduled)
	require.Equal(t, due, res.Iterations+res.Dropped+res.Interrupted)
	require.GreaterOrEqual(t, stats(t, res, "r").Requests, res.Iterations)
	require.GreaterOrEqual(t, res.Elapsed, lasts)
}

// Stages given for one run replace the script's load, whatever its model: the same ramp as
// TestOpenModelRampFromZero's, over a closed-model script, with --vus as the max VUs.
func TestStagesOverrideTheScriptsLoad(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: closed
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  vus: 2
  iterations: 5
`)
	stages := []barrage.Stage{{To: 100, Ramp: true, Duration: 2 * time.Second}, {To: 20, Duration: time.Second}}
	w := run.Workload(s, barrage.LoadOverrides{VUs: 20, Stages: stages})
	require.Equal(t, script.Open, w.Model)
	require.Equal(t, []script.Stage{{From: 0, To: 100, Duration: 2 * time.Second}, {From: 20, To: 20, Duration: time.Second}}, w.Stages)
	require.Equal(t, 3*time.Second, w.Duration)
	require.Equal(t, 20, w.MaxVUs)
	require.Zero(t, w.Iterations, "the iteration budget was the closed model's")
	require.Equal(t, 100, run.Workload(s, barrage.LoadOverrides{Stages: stages}).MaxVUs, "without --vus, at least 100")

	res := runScript(t, s, engine.Options{VUs: 20, Stages: stages})
	require.Equal(t, script.Open, res.Model)
	requireArrivals(t, res, 120, 3*time.Second)
}

// A destination the agent's policy refuses ends the run at once, saying why: every iteration
// would be refused alike, before sending anything, as fast as the CPU goes.
func TestARefusedDestinationEndsTheRun(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: refused
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/" }
load:
  vus: 4
  duration: 50s
`)
	res := runScript(t, s, engine.Options{Targets: &netpolicy.Policy{}})
	require.Regexp(t, `^request r: .*the agent's policy refuses this destination`, res.Exhausted)
	require.LessOrEqual(t, stats(t, res, "r").Requests, int64(8), "a refusal or two per VU, not a loop")
	require.Zero(t, hits.Load())
}

// The target reads the path the script wrote: the engine does not collapse `//`, resolve `..`
// nor decode `%2F` (fasthttp normalises paths unless told not to).
func TestThePathGoesAsWritten(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.RequestURI:
		default:
		}
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: path
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}//a//b/../c/./d%2Fe?x=//y" }
load:
  vus: 1
  iterations: 1
`)
	runScript(t, s, engine.Options{})
	require.Equal(t, "//a//b/../c/./d%2Fe?x=//y", <-got)
}

// A run says why requests failed: the first distinct reasons of each request and class, counted.
func TestARunSaysWhyRequestsFailed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	ln.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: refused, url: "http://`+closed+`/" }
        - { name: down, url: "${target}/down" }
        - { name: wrong, url: "${target}/", assert: [ { body_contains: goodbye } ] }
load: { vus: 2, iterations: 6 }
`)
	res := runScript(t, s, engine.Options{})
	byLabel := map[string]metrics.ErrorSample{}
	for _, e := range res.ErrorSamples {
		byLabel[e.Label] = e
	}
	require.Len(t, res.ErrorSamples, 3, "%v", res.ErrorSamples)
	require.Equal(t, "connect", byLabel["refused"].Class)
	require.Contains(t, byLabel["refused"].Message, "connection refused")
	require.Equal(t, metrics.ErrorSample{Label: "down", Class: "5xx", Message: "status 503 not accepted", Count: 6}, byLabel["down"])
	require.Equal(t, metrics.ErrorSample{Label: "wrong", Class: "assertion", Message: `body does not contain "goodbye"`, Count: 6}, byLabel["wrong"])
}

// Stages of VUs ramp the closed model up and down: VUs join as the level rises and leave as it
// falls, and the peak is the stages' highest level.
func TestClosedStagesRampTheVUs(t *testing.T) {
	t.Parallel()
	s := parse(t, targettest.Slow(t, 20*time.Millisecond), `
version: 1
session: { groups: [ { name: g, requests: [ { name: r, url: "${target}/" } ] } ] }
load:
  stages:
    - { ramp_to: 6, duration: 2s }
    - { vus: 6, duration: 2s }
    - { ramp_to: 0, duration: 2s }
`)
	require.Equal(t, script.Closed, s.Load.Model)
	require.Equal(t, 6, s.Load.VUs)
	var mu sync.Mutex
	vus := map[int64]int64{}
	var firstEnd time.Duration
	res := runScript(t, s, engine.Options{OnSecond: func(sec run.Second) {
		mu.Lock()
		vus[sec.Index] = sec.Health.ActiveVUs
		if sec.Index == 0 {
			firstEnd = sec.Elapsed
		}
		mu.Unlock()
	}})
	mu.Lock()
	defer mu.Unlock()
	// Ramping up, VU i joins at (i+1)/3 s: the first second holds those due by its end, as late
	// as a busy machine made it (three of six at 1 s).
	require.LessOrEqual(t, vus[0], min(int64(3*firstEnd.Seconds()), 6), "ramping up, the first second ended %s in: %v", firstEnd, vus)
	require.Equal(t, int64(6), vus[2], "holding: %v", vus)
	require.Equal(t, int64(6), vus[3], "holding: %v", vus)
	require.LessOrEqual(t, vus[5], int64(3), "ramping down: %v", vus)
	require.Positive(t, stats(t, res, "r").Requests)
}

// A batch's requests go at once, each on a connection of its own, as a browser fetches a page's
// assets; what they extract is there for the requests after the batch.
func TestABatchGoesAtOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var inFlight, peak int64
	all := make(chan struct{}) // closed when three are in flight at once
	conns := sync.Map{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Store(r.RemoteAddr, true)
		mu.Lock()
		inFlight++
		if inFlight > peak {
			peak = inFlight
			if peak == 3 {
				close(all)
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		if r.URL.Path != "/" {
			// An asset waits for the others: sent together, all three are in flight at once;
			// sent one after the other, none would ever see the third, and the request's
			// timeout would end the wait.
			select {
			case <-all:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "asset %s", strings.TrimPrefix(r.URL.Path, "/"))
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: page
      requests:
        - { name: html, url: "${target}/" }
        - batch:
            - { name: css, url: "${target}/css", extract: [ { var: css, regex: "asset (\\w+)" } ] }
            - { name: js, url: "${target}/js" }
            - { name: logo, url: "${target}/logo" }
        - { name: after, url: "${target}/?got=${css}", assert: [ { body_contains: asset } ] }
load: { vus: 1, iterations: 2 }
`)
	res := runScript(t, s, engine.Options{})
	for _, name := range []string{"html", "css", "js", "logo", "after"} {
		st := stats(t, res, name)
		require.Equal(t, int64(2), st.Requests, name)
		require.Zero(t, st.Failed(), "%s: %v", name, res.ErrorSamples)
	}
	mu.Lock()
	require.Equal(t, int64(3), peak, "the three assets were in flight together")
	mu.Unlock()
	n := 0
	conns.Range(func(any, any) bool { n++; return true })
	require.GreaterOrEqual(t, n, 3, "each on a connection of its own")
}

// Two scenarios run side by side, each its own session under its own load: a ramping closed
// model browsing, an open model buying; each VU runs its scenario's groups alone.
func TestScenariosRunSideBySide(t *testing.T) {
	t.Parallel()
	var browse, buy atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/browse", func(w http.ResponseWriter, r *http.Request) { browse.Add(1) })
	mux.HandleFunc("/buy", func(w http.ResponseWriter, r *http.Request) { buy.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
scenarios:
  browsers:
    tags: { kind: browse }
    session: { groups: [ { name: catalogue, requests: [ { name: list, url: "${target}/browse" } ], think: 50ms } ] }
    load: { stages: [ { ramp_to: 3, duration: 1s }, { vus: 3, duration: 1s } ] }
  buyers:
    session: { cookies: false, groups: [ { name: checkout, requests: [ { name: pay, url: "${target}/buy" } ] } ] }
    load: { rate: 10/s, duration: 2s, max_vus: 5 }
`)
	require.Equal(t, script.Closed, s.Load.Model)
	require.Equal(t, 8, s.Load.VUs, "3 VUs and at most 5")
	res := runScript(t, s, engine.Options{})
	require.Equal(t, stats(t, res, "list").Requests, browse.Load())
	require.Equal(t, stats(t, res, "pay").Requests, buy.Load())
	// The open scenario's 20 arrivals are due whatever the other does: each started, or
	// dropped when a loaded machine kept its VUs busy.
	require.InDelta(t, 20, res.Scenarios[1].Iterations+res.Dropped+res.Interrupted, 1)
	require.Positive(t, browse.Load())
	require.Len(t, res.Scenarios, 2)
	require.Equal(t, "browsers", res.Scenarios[0].Name)
	require.Equal(t, map[string]string{"kind": "browse"}, res.Scenarios[0].Tags)
	require.Equal(t, []string{"list"}, res.Scenarios[0].Requests)
	require.Equal(t, script.Open, res.Scenarios[1].Model)
	require.Equal(t, res.Iterations, res.Scenarios[0].Iterations+res.Scenarios[1].Iterations)
	require.Equal(t, buy.Load(), res.Scenarios[1].Iterations)

	_, err := engine.Run(t.Context(), s, engine.Options{VUs: 3})
	require.ErrorContains(t, err, "a script of scenarios takes each scenario's load")
}

// The open model's arrivals due, started and dropped count iterations, whatever an iteration
// holds: a think time's wake-up is neither an arrival nor lateness of the schedule. 20/s for
// 2s is 40 arrivals, run alone and split across two shards whose health is judged together,
// as the server judges its agents'.
func TestOpenModelCountsIterationsNotWakeUps(t *testing.T) {
	t.Parallel()
	target := idle(t)
	for name, c := range map[string]struct {
		session  string
		arrivals int64
	}{
		"think times between several requests": {arrivals: 40, session: `
session:
  groups:
    - name: g
      think: 50ms
      requests:
        - { name: a, url: "${target}/a", think: 100ms }
        - { name: b, url: "${target}/b", think: 20ms }
        - { name: c, url: "${target}/c" }
load: { rate: 20/s, duration: 2s, max_vus: 100 }`},
		"a batch and a think time": {arrivals: 40, session: `
session:
  groups:
    - name: g
      requests:
        - { name: page, url: "${target}/", think: 100ms }
        - batch:
            - { name: css, url: "${target}/app.css" }
            - { name: js, url: "${target}/app.js" }
        - { name: after, url: "${target}/after" }
load: { rate: 20/s, duration: 2s, max_vus: 100 }`},
		"two open scenarios side by side": {arrivals: 40 + 20, session: `
scenarios:
  readers:
    session:
      groups:
        - name: read
          requests:
            - { name: list, url: "${target}/list", think: 100ms }
            - { name: item, url: "${target}/item" }
    load: { rate: 20/s, duration: 2s, max_vus: 50 }
  writers:
    session:
      groups:
        - name: write
          think: 100ms
          requests:
            - { name: post, url: "${target}/post", think: 50ms }
            - { name: check, url: "${target}/check" }
    load: { rate: 10/s, duration: 2s, max_vus: 50 }`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := parse(t, target, "version: 1\nname: open\n"+c.session+"\n")
			check := func(t *testing.T, d run.Delivery, iterations, dropped, interrupted int64) {
				t.Helper()
				require.Equal(t, c.arrivals, d.Scheduled, "arrivals due")
				require.Equal(t, d.Scheduled, iterations+dropped+interrupted, "every arrival was started or dropped")
				require.Equal(t, d.Dropped, dropped)
				require.LessOrEqual(t, d.Late, d.Scheduled)
			}
			t.Run("locally", func(t *testing.T) {
				res := runScript(t, s, engine.Options{})
				check(t, res.Verdict.Delivery, res.Iterations, res.Dropped, res.Interrupted)
			})
			t.Run("merged from two shards", func(t *testing.T) {
				var healths []run.Health
				var iterations, dropped, interrupted int64
				for _, res := range runShards(t, s, run.Split(2)) {
					for _, sec := range res.Seconds {
						healths = append(healths, sec.Health)
					}
					iterations, dropped, interrupted = iterations+res.Iterations, dropped+res.Dropped, interrupted+res.Interrupted
				}
				check(t, run.Judge(healths).Delivery, iterations, dropped, interrupted)
			})
		})
	}
}

// A secret's value is sent as the script says, and reads *** wherever the run shows it: the
// debug trace (as written, in a URL and in JSON), the error samples and the stop reason.
func TestSecretsAreSentAndMaskedWhereverTheRunShowsThem(t *testing.T) {
	t.Parallel()
	const value = "pa ss/\"w&<rd>\t9é"
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo": %q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: secretive
session:
  groups:
    - name: g
      requests:
        - name: r
          url: "${target}/"
          query: { q: "${secret.PW}" }
          headers: { Authorization: "Basic ${secret.PW}" }
          body: { json: { pw: "${secret.PW}" } }
          assert: [ { json: "$.echo", equals: nope } ]
        - name: path
          url: "${target}/p/${secret.PW}/end"
          body: { json: { nested: "${secret.PW}" } }
          assert: [ { json: "$.echo", equals: nope }, { body_contains: "${secret.PW}!" } ]
load: { vus: 1, iterations: 2 }
`)
	require.Equal(t, []string{"PW"}, s.Secrets)
	_, err := engine.Start(t.Context(), s, engine.Options{})
	require.ErrorContains(t, err, "the script reads secrets it was not given: PW")

	var shown strings.Builder
	err = engine.Debug(t.Context(), s, engine.Options{Secrets: map[string]string{"PW": value}, Trace: func(ev run.TraceEvent) {
		fmt.Fprintf(&shown, "%s %v %s %s %v %v\n", ev.URL, ev.RequestHeader, ev.RequestBody, ev.ResponseBody, ev.Failures, ev.Vars)
	}})
	require.NoError(t, err)
	require.Equal(t, "Basic "+value, got.Load(), "sent as written")
	res := runScript(t, s, engine.Options{Secrets: map[string]string{"PW": value}})
	require.NotEmpty(t, res.ErrorSamples)
	for _, e := range res.ErrorSamples {
		shown.WriteString(e.Message + "\n")
	}
	text := shown.String()
	require.Contains(t, text, "Basic ***")
	require.Contains(t, text, `json $.echo was "Basic ***", wanted "nope"`)
	quoted, _ := json.Marshal(value)
	for _, form := range []string{"pa ss", "pa+ss", "pa%20ss", `w&<rd>`, `w\u0026\u003crd`, string(quoted[1 : len(quoted)-1])} {
		require.NotContains(t, text, form)
	}
}

// A request that could not be sent (a variable an earlier request failed to extract) is traced
// as far as it renders: the variables that are set, and ${name} for the one that is not.
func TestDebugShowsAnUnsentRequestAsFarAsItRenders(t *testing.T) {
	t.Parallel()
	target := idle(t)
	s := parse(t, target, `
version: 1
name: unsent
variables:
  constants: { base: "${target}" }
session:
  groups:
    - name: g
      requests:
        - { name: login, url: "${target}/login", extract: [ { var: token, json: "$.token" } ] }
        - { name: account, url: "${base}/account/${token}" }
load: { vus: 1, iterations: 1 }
`)
	var urls []string
	err := engine.Debug(t.Context(), s, engine.Options{Trace: func(ev run.TraceEvent) { urls = append(urls, ev.URL) }})
	require.NoError(t, err)
	require.Equal(t, []string{target + "/login", target + "/account/${token}"}, urls)
}

// Each assertion is tallied as k6 users read checks: the responses it judged, passed and failed,
// counted apart from the request's errors (one failed check of three fails the request once);
// the status check a request gets when it gives none is not tallied; a WebSocket receive's
// assertions are tallied under its step.
func TestChecksAreTalliedPerAssertion(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// qty is 3 on two responses of three, 2 on the third.
		qty := 3
		if n.Add(1)%3 == 0 {
			qty = 2
		}
		fmt.Fprintf(w, `{"qty": %d, "ok": true}`, qty)
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - name: cart
          url: "${target}/cart"
          assert:
            - status: [200, 3xx]
            - { json: "$.qty", equals: 3 }
            - { name: answered ok, json: "$.ok" }
            - { json: "$.error", exists: false }
        - { name: plain, url: "${target}/plain" }
load: { vus: 1, iterations: 30 }
`)
	require.Equal(t, []script.Check{
		{Request: "cart", Name: "status 200, 3xx"}, {Request: "cart", Name: "json $.qty equals 3"},
		{Request: "cart", Name: "answered ok"}, {Request: "cart", Name: "json $.error exists false"},
	}, s.Session.Checks())
	res := runScript(t, s, engine.Options{})
	require.Equal(t, s.Session.Checks(), res.Checks)
	tally := func(c script.Check) (int64, int64) {
		st := res.Total.Labels[metrics.CheckKey(c.Label())]
		require.NotNil(t, st, c.Label())
		return st.Requests, st.Errors[metrics.ErrAssertion]
	}
	cartN, plainN := res.Total.Labels[metrics.RequestKey("cart")].Requests, res.Total.Labels[metrics.RequestKey("plain")].Requests
	require.Equal(t, int64(30), cartN)
	for _, c := range res.Checks {
		judged, failed := tally(c)
		require.Equal(t, cartN, judged, c.Label())
		if c.Name == "json $.qty equals 3" {
			// Responses 3, 6, ... of the target, which cart and plain share: count cart's.
			require.Positive(t, failed)
			require.Equal(t, res.Total.Labels[metrics.RequestKey("cart")].Errors[metrics.ErrAssertion], failed)
		} else {
			require.Zero(t, failed, c.Label())
		}
	}
	require.Equal(t, int64(30), plainN)
	for k := range res.Total.Labels {
		require.False(t, k.Kind == metrics.Check && strings.HasPrefix(k.Name, "plain"), "the implied status check is not tallied: %s", k)
	}
}
