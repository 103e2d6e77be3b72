package replicas_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
)

// The load both tests run: an open model at a fixed rate, split over two agents, long enough
// for a replica to go and come back while it runs.
const (
	rate     = 150
	duration = 30
)

// One replica killed with SIGKILL in the middle of a run: the agents and the watchers go on
// through the other, the run finishes, its summary counts every request the target served, and
// the work of its end (the summary, the notification) is done once.
func TestRunsSurviveAReplicaKilledMidRun(t *testing.T) {
	c := newCluster(t)
	c.survive(t, func(watch *liveReader) {
		// The replica the watcher's stream comes from goes, so that the watcher must resume on
		// the other.
		victim := c.replicaOf(watch.replica())
		killed := time.Now()
		c.kill(t, victim)
		c.failover(t, watch, killed)
		// An orchestrator starts it again; the front takes it back once it is ready.
		c.restart(t, victim)
	})
}

// Both replicas restarted in turn during a run, as a deploy does (SIGTERM, the next started
// once the first is ready): nothing is lost, nothing is done twice.
func TestARollingRestartLosesNothing(t *testing.T) {
	c := newCluster(t)
	c.survive(t, func(watch *liveReader) {
		first := c.replicaOf(watch.replica())
		stopped := time.Now()
		c.stop(t, first)
		c.failover(t, watch, stopped)
		c.restart(t, first)
		second := 1 - first
		c.awaitSeconds(t, watch, 3)
		stopped = time.Now()
		c.stop(t, second)
		c.failover(t, watch, stopped)
		c.restart(t, second)
	})
}

// cluster is two serve replicas on one PostgreSQL behind a front, two agents of Ada's and a
// target that counts what it serves.
type cluster struct {
	env      [2][]string
	data     [2]string
	replicas [2]*e2etest.Server
	gone     []*e2etest.Server // every process a replica ran as: their logs are read at the end
	front    *e2etest.Front
	cfg      string
	token    string
	target   *e2etest.CountingTarget
	hook     *hook
	channel  string
	agents   []*e2etest.Agent
}

func newCluster(t *testing.T) *cluster {
	pg := e2etest.StartPostgres(t)
	c := &cluster{cfg: t.TempDir(), target: e2etest.NewCountingTarget(t)}
	env := []string{"DATABASE_URL=" + pg.DSN(), "BARRAGE_NOTIFY_ALLOW=127.0.0.1", "BARRAGE_NOTIFY_BACKOFF=200ms", "BARRAGE_METRICS_ADDR=127.0.0.1:0"}
	c.data = [2]string{e2etest.ReachableDir(t), e2etest.ReachableDir(t)}
	c.env[0] = env
	// The second replica signs and seals with the first's keys, as every replica must.
	c.env[1] = append(env[:len(env):len(env)], "BARRAGE_JWT_KEY_FILE="+filepath.Join(c.data[0], "jwt-ed25519.pem"),
		"BARRAGE_SECRET_KEYS_FILE="+filepath.Join(c.data[0], "secret-keys"))
	c.replicas[0] = e2etest.StartServe(t, c.data[0], nil, c.env[0]...)
	c.replicas[1] = e2etest.StartServe(t, c.data[1], nil, c.env[1]...)
	c.front = e2etest.NewFront(t, c.replicas[0], c.replicas[1])

	// Everything from here goes through the front, as it would behind a balancer.
	code := e2etest.CodeLine.FindStringSubmatch(c.replicas[0].Stdout.String())
	require.NotNil(t, code, "the first start prints the first-admin code")
	e2etest.MustCLI(t, c.front.Endpoint, c.cfg, e2etest.AdminPassword+"\n", "signup", "--code", code[1], "--email", "ada@example.com", "--name", "Ada")
	e2etest.MustCLI(t, c.front.Endpoint, c.cfg, e2etest.AdminPassword+"\n", "login", "--email", "ada@example.com")
	c.token = strings.TrimSpace(c.cli(t, "tokens", "create", "--name", "e2e", "--scopes", "read,write"))
	for _, name := range []string{"one", "two"} {
		c.agents = append(c.agents, e2etest.StartAgent(t, c.front.Endpoint, strings.TrimSpace(c.cli(t, "agents", "create", name))))
	}
	e2etest.Eventually(t, time.Minute, "both agents online", func() bool {
		return strings.Count(c.cli(t, "agents", "list"), " online ") == 2
	})
	c.hook = newHook(t)
	c.channel = strings.Fields(c.cli(t, "notifications", "create", "ops", "--webhook", c.hook.URL, "--event", "run.finished"))[0]
	return c
}

func (c *cluster) cli(t *testing.T, args ...string) string {
	t.Helper()
	return e2etest.MustCLI(t, c.front.Endpoint, c.cfg, "", args...)
}

// replicaOf is the place of the replica at url.
func (c *cluster) replicaOf(url string) int {
	for i, r := range c.replicas {
		if r.URL == url {
			return i
		}
	}
	panic("no replica at " + url)
}

// kill ends replica i with SIGKILL: no goodbye, its connections cut.
func (c *cluster) kill(t *testing.T, i int) {
	t.Helper()
	r := c.replicas[i]
	require.NoError(t, r.Cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, <-r.Done, "killed")
	t.Logf("replica %d (%s) killed", i, r.URL)
	c.gone = append(c.gone, r)
}

// stop ends replica i with SIGTERM, the graceful way, and requires it to exit 0.
func (c *cluster) stop(t *testing.T, i int) {
	t.Helper()
	r := c.replicas[i]
	r.Stop(t)
	t.Logf("replica %d (%s) stopped", i, r.URL)
	c.gone = append(c.gone, r)
}

// restart starts replica i again on its data folder, waits for it to be ready (/readyz) and
// puts it back in the front's pool.
func (c *cluster) restart(t *testing.T, i int) {
	t.Helper()
	began := time.Now()
	c.replicas[i] = e2etest.StartServe(t, c.data[i], nil, c.env[i]...)
	c.front.Set(i, c.replicas[i].URL)
	t.Logf("replica %d back at %s, ready in %s", i, c.replicas[i].URL, time.Since(began).Round(time.Millisecond))
}

// failover waits for the watcher to have a second from the live stream after since, and says
// how long it took.
func (c *cluster) failover(t *testing.T, watch *liveReader, since time.Time) {
	t.Helper()
	got := watch.secondAfter(t, since, time.Minute)
	t.Logf("the watcher had its next second %s after the replica went, from %s", got.Sub(since).Round(time.Millisecond), watch.replica())
}

// awaitSeconds waits for n more seconds of the run on the watcher.
func (c *cluster) awaitSeconds(t *testing.T, watch *liveReader, n int) {
	t.Helper()
	from := watch.count()
	watch.await(t, "more seconds", time.Minute, func() bool { return watch.count() >= from+n })
}

// survive starts a run through the front, watched by `barrage runs start --watch` and by an SSE
// reader that resumes with Last-Event-ID, calls disrupt while the run is in its middle, and
// checks the run's end: finished, every request the target served counted once, its live
// stream the same from both replicas, its end told once.
func (c *cluster) survive(t *testing.T, disrupt func(watch *liveReader)) {
	began := time.Now()
	script := filepath.Join(t.TempDir(), "steady.yaml")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf(`version: 1
name: steady
session:
  groups:
    - name: g
      requests:
        - { name: home, url: "%s/" }
load: { rate: %d/s, duration: %ds, max_vus: 100 }
`, c.target.Srv.URL, rate, duration)), 0o644))

	// --watch follows the run from its start, in the background, as a person would.
	type watched struct {
		out, errOut string
		err         error
	}
	cliDone := make(chan watched, 1)
	go func() {
		out, errOut, err := e2etest.CLI(t, c.front.Endpoint, c.cfg, "", "runs", "start", "--file", script, "--agents", "2", "--watch")
		cliDone <- watched{out, errOut, err}
	}()
	var id string
	e2etest.Eventually(t, time.Minute, "the run created", func() bool {
		var list struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, c.front.Endpoint, c.token, "/v1/runs", &list))
		if len(list.Items) == 1 {
			id = list.Items[0].ID
		}
		return id != ""
	})
	// Readers of the live stream: one through the front that resumes where it broke, one on
	// each replica that does not.
	watch := startLive(t, c.token, id, func() string { return c.front.URL }, true)
	direct := [2]*liveReader{}
	for i, r := range c.replicas {
		direct[i] = startLive(t, c.token, id, func() string { return r.URL }, false)
	}
	// Early enough that a slow machine restarts both replicas in turn before the run ends: each
	// disruption waits for the run's next second after it, which a run already over never gives.
	watch.await(t, "the run's sixth second", 2*time.Minute, func() bool { return watch.count() >= 6 })
	disrupt(watch)

	var w watched
	select {
	case w = <-cliDone:
	case <-time.After(3 * time.Minute):
		t.Fatal("runs start --watch did not end with the run")
	}
	require.NoError(t, w.err, "stdout: %s\nstderr: %s", w.out, w.errOut)
	require.Equal(t, id, e2etest.RunIDLine.FindStringSubmatch(w.out)[1])
	watch.await(t, "the run's end on the resuming reader", time.Minute, watch.ended)

	var r e2etest.RunDoc
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, c.front.Endpoint, c.token, "/v1/runs/"+id, &r))
	require.Equal(t, "finished", r.State, r.Reason)
	for _, sh := range r.Shards {
		require.Equal(t, "finished", sh.State, "shard of agent %s: %s", sh.AgentID, sh.Reason)
	}
	var sum struct {
		Total struct {
			Count int64 `json:"count"`
		} `json:"total"`
		Seconds int `json:"seconds"`
		Verdict struct {
			Delivery struct {
				Scheduled int64 `json:"scheduled"`
				Dropped   int64 `json:"dropped"`
			} `json:"delivery"`
		} `json:"verdict"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, c.front.Endpoint, c.token, "/v1/runs/"+id+"/summary", &sum))
	served := c.target.Hits.Load()
	t.Logf("the target served %d, the summary counts %d (%d due, %d dropped)", served, sum.Total.Count,
		sum.Verdict.Delivery.Scheduled, sum.Verdict.Delivery.Dropped)
	require.Equal(t, served, sum.Total.Count, "the summary counts every request the target served, once")
	require.Equal(t, int64(rate*duration), sum.Verdict.Delivery.Scheduled, "every arrival due was scheduled")
	require.Equal(t, sum.Verdict.Delivery.Scheduled-sum.Verdict.Delivery.Dropped, sum.Total.Count, "each arrival started made one request")

	// --watch followed the run to its end, each second once and in order, resuming when its
	// stream broke.
	var secs []int
	for _, m := range regexp.MustCompile(`(?m)^ +(\d+)s  vus`).FindAllStringSubmatch(w.errOut, -1) {
		n, _ := strconv.Atoi(m[1])
		secs = append(secs, n)
	}
	require.NotEmpty(t, secs, w.errOut)
	for i := 1; i < len(secs); i++ {
		require.Greater(t, secs[i], secs[i-1], "each second once, in order: %v\n%s", secs, w.errOut)
	}
	require.GreaterOrEqual(t, secs[len(secs)-1], duration-1, "--watch went on to the run's end: %s", w.errOut)
	require.Contains(t, w.out, "finished")

	// The reader through the front had every second, once, in order, across its breaks.
	idx := watch.indexes()
	for i, n := range idx {
		require.Equal(t, int64(i), n, "the resuming reader's seconds: %v", idx)
	}
	t.Logf("the resuming reader: %d seconds, %d reconnections; --watch: %d live lines, %d resumptions; the front sent %d requests on after a failed dial",
		len(idx), watch.breaks(), len(secs), strings.Count(w.errOut, "the live stream broke"), c.front.Failovers.Load())

	// Each replica's stream, while it lasted, gave the same seconds in the same order; read
	// again now from each replica, the run's stream is the same, event for event.
	for i := range direct {
		got := direct[i].indexes()
		for j, n := range got {
			require.Equal(t, int64(j), n, "replica %d's stream: %v", i, got)
		}
	}
	a, b := replay(t, c.replicas[0].URL, c.token, id), replay(t, c.replicas[1].URL, c.token, id)
	require.Len(t, b, len(a), "the live stream of a run is the same from either replica")
	for i := range a {
		require.Equal(t, a[i], b[i], "the live stream of a run is the same from either replica: event %d", i)
	}
	require.Len(t, a, sum.Seconds+1, "each second of the run, then its end")
	require.Equal(t, "end", a[len(a)-1].event)

	// The run ended once, on one replica, and its end was told once.
	endedLine := regexp.MustCompile(`msg="run ended" .*run_id=` + id)
	ended := 0
	for _, p := range append(c.gone, c.replicas[:]...) {
		ended += len(endedLine.FindAllString(p.Stderr.String(), -1))
	}
	require.Equal(t, 1, ended, "the run's end written once")
	c.hook.await(t, id)
	var deliveries struct {
		Items []struct {
			Event string `json:"event"`
			State string `json:"state"`
		} `json:"items"`
	}
	e2etest.Eventually(t, time.Minute, "the delivery recorded as delivered", func() bool {
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, c.front.Endpoint, c.token, "/v1/notification-channels/"+c.channel+"/deliveries", &deliveries))
		return len(deliveries.Items) > 0 && deliveries.Items[0].State == "delivered"
	})
	require.Len(t, deliveries.Items, 1, "one delivery of the run's end")
	require.Equal(t, 1, c.hook.count(id), "the run's end told once")
	for i, p := range c.replicas {
		c.logCosts(t, i, p)
	}
	var failed []int
	for _, a := range c.agents {
		failed = append(failed, strings.Count(a.Stderr.String(), "report failed"))
	}
	t.Logf("the agents' reports that failed and were sent again: %v; from the run's start to these checks: %s", failed, time.Since(began).Round(time.Second))
}

var metricsLine = regexp.MustCompile(`msg="serving metrics" addr=(http://127\.0\.0\.1:\d+/metrics)`)

// logCosts says what the agents' reports cost replica i since it started, from its metrics:
// their number and mean time to answer, and the database connections they took (docs/operations.md
// reads its rule of connections per agent from these figures).
func (c *cluster) logCosts(t *testing.T, i int, p *e2etest.Server) {
	t.Helper()
	m := metricsLine.FindStringSubmatch(p.Stderr.String())
	require.NotNil(t, m, "serve says where its metrics are")
	res, err := http.Get(m[1])
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	sum := func(re string) float64 {
		total := 0.0
		for _, m := range regexp.MustCompile(`(?m)^`+re+`(?:\{.*\})? ([0-9.e+-]+)$`).FindAllStringSubmatch(string(body), -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			total += v
		}
		return total
	}
	report := `\{.*route="/v1/agent/shards/\{id\}/report".*\}`
	reports := sum(`barrage_http_requests_total` + report)
	seconds := sum(`barrage_http_request_duration_seconds_sum` + report)
	if reports > 0 {
		t.Logf("replica %d: %.0f reports answered in %.1f ms on average; %.0f requests in all; %.0f connections taken from its pool of %.0f, %.0f of them after a wait",
			i, reports, 1000*seconds/reports, sum(`barrage_http_requests_total`), sum(`barrage_db_pool_acquires_total`),
			sum(`barrage_db_pool_max_connections`), sum(`barrage_db_pool_empty_acquires_total`))
	}
}

// liveEvent is one Server-Sent Event of a run's live stream.
type liveEvent struct {
	event, id, data string
}

// liveReader reads a run's live stream in the background, keeping each second's index and
// when it came.
type liveReader struct {
	mu      sync.Mutex
	at      []time.Time
	idx     []int64
	from    string // the replica the stream comes from now
	end     bool
	broken  int
	changed chan struct{} // closed and replaced at each change
}

// startLive reads run id's live stream from base() until its end; resume says whether it
// reconnects with Last-Event-ID when the stream breaks, as an EventSource does.
func startLive(t *testing.T, token, id string, base func() string, resume bool) *liveReader {
	l := &liveReader{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		last := ""
		for ctx.Err() == nil {
			ended := l.read(ctx, base(), token, id, &last)
			if ended || !resume {
				return
			}
			l.update(func() { l.broken++ })
			select { // as an EventSource does: reconnect after a moment
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return l
}

// read follows one connection to the stream; it returns whether the run's end came.
func (l *liveReader) read(ctx context.Context, base, token, id string, last *string) bool {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+id+"/live", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false
	}
	from := res.Header.Get(e2etest.ReplicaHeader)
	if from == "" {
		from = base
	}
	l.update(func() { l.from = from })
	return eachEvent(res.Body, func(ev liveEvent) bool {
		switch ev.event {
		case "second":
			n, _ := strconv.ParseInt(ev.id, 10, 64)
			l.update(func() { l.idx, l.at = append(l.idx, n), append(l.at, time.Now()) })
			*last = ev.id
		case "end":
			l.update(func() { l.end = true })
			return true
		}
		return false
	})
}

// eachEvent calls fn with each event of an SSE stream until fn says stop (returning true) or
// the stream ends (returning false).
func eachEvent(r io.Reader, fn func(liveEvent) bool) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev liveEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if ev.event != "" && fn(ev) {
				return true
			}
			ev = liveEvent{}
		}
	}
	return false
}

// replay reads a run's whole live stream, from its start, from the replica at base.
func replay(t *testing.T, base, token, id string) []liveEvent {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/v1/runs/"+id+"/live", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var evs []liveEvent
	require.True(t, eachEvent(res.Body, func(ev liveEvent) bool {
		if ev.event == "state" {
			return false // the run as it stands when the stream opens: not the same moment on each
		}
		evs = append(evs, ev)
		return ev.event == "end"
	}), "the stream of an ended run ends with its end")
	return evs
}

func (l *liveReader) update(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
	close(l.changed)
	l.changed = make(chan struct{})
}

// await waits until cond (which reads the reader) holds, failing the test after within.
func (l *liveReader) await(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s within %s: the reader has seconds %v", what, within, l.indexes())
		}
	}
}

// secondAfter waits for a second that came after since, and returns when it came.
func (l *liveReader) secondAfter(t *testing.T, since time.Time, within time.Duration) time.Time {
	t.Helper()
	var got time.Time
	l.await(t, "second after "+since.Format(time.StampMilli), within, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, at := range l.at {
			if at.After(since) {
				got = at
				return true
			}
		}
		return false
	})
	return got
}

func (l *liveReader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.idx)
}

func (l *liveReader) indexes() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.idx...)
}

func (l *liveReader) replica() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.from
}

func (l *liveReader) ended() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

func (l *liveReader) breaks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// hook is a webhook receiver on 127.0.0.1 that counts the runs' ends it was told of.
type hook struct {
	*httptest.Server
	mu   sync.Mutex
	told map[string]int // by run id
	got  chan struct{}
}

func newHook(t *testing.T) *hook {
	h := &hook{told: map[string]int{}, got: make(chan struct{}, 100)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev struct {
			Run struct {
				ID string `json:"id"`
			} `json:"run"`
		}
		body, _ := io.ReadAll(req.Body)
		if json.Unmarshal(body, &ev) == nil && req.Header.Get("Barrage-Event") == "run.finished" {
			h.mu.Lock()
			h.told[ev.Run.ID]++
			h.mu.Unlock()
			h.got <- struct{}{}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

// await waits until the end of run id was told.
func (h *hook) await(t *testing.T, id string) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for h.count(id) == 0 {
		select {
		case <-h.got:
		case <-deadline.C:
			t.Fatalf("run %s's end not told within a minute", id)
		}
	}
}

func (h *hook) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.told[id]
}
