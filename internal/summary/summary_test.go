package summary_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/threshold"
)

func stats(n int64, failed int64, d time.Duration) *metrics.Stats {
	st := metrics.NewStats()
	st.Requests = n
	st.Errors[metrics.Err5xx] = failed
	st.Latency.RecordN(d, n)
	return st
}

// second is a second of a request "r" (10 of 4 ms, 2 of them 5xx), a group "r" of 5 passes, a
// request "never" that did not run and a url plugin's hooks "sign".
func second() *metrics.Snapshot {
	return &metrics.Snapshot{Start: time.Unix(1_700_000_000, 0), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{
		metrics.RequestKey("r"): stats(10, 2, 4*time.Millisecond),
		metrics.GroupKey("r"):   stats(5, 0, 9*time.Millisecond),
		metrics.HookKey("sign"): stats(20, 0, 10*time.Microsecond),
	}}
}

func TestNewSummarizesEachKindApart(t *testing.T) {
	t.Parallel()
	s := summary.New(second(), []string{"r", "never"}, []string{"r"}, nil, 2*time.Second)
	require.Len(t, s.Requests, 1, "a request that did not run is left out")
	require.Equal(t, "r", s.Requests[0].Name)
	require.EqualValues(t, 10, s.Requests[0].Count)
	require.InDelta(t, 5.0, s.Requests[0].RPS, 1e-9)
	require.InDelta(t, 0.2, s.Requests[0].ErrorRate, 1e-9)
	require.EqualValues(t, 10, s.Total.Count, "groups and hooks are not requests")
	require.Len(t, s.Groups, 1)
	require.EqualValues(t, 5, s.Groups[0].Count)
	require.Len(t, s.Hooks, 1)
	require.Equal(t, "sign", s.Hooks[0].Name)
	require.EqualValues(t, 2, s.Errors["5xx"])
	require.InDelta(t, 4.0, s.Total.P99MS, 0.01)

	th, err := script.ParseThreshold("p99 < 3ms")
	require.NoError(t, err)
	s.Thresholds = summary.Thresholds([]threshold.Result{{Threshold: th, Observed: 0.004, Passed: false}})
	require.True(t, s.Failed())
	var out bytes.Buffer
	s.Print(&out)
	for _, want := range []string{"r  ", "all requests", "group r", "hook sign (calls)", "errors: 5xx 2", "p99 < 3ms: 4.00ms, FAILED", "generator OK"} {
		require.Contains(t, out.String(), want)
	}

	// What the server stores reads back into the same summary, as `runs --watch` reads it.
	doc, err := json.Marshal(s)
	require.NoError(t, err)
	var back summary.Summary
	require.NoError(t, json.Unmarshal(doc, &back))
	require.Equal(t, s, back)
}

// A threshold of the mapping form keeps its request, window and abort in the summary, its text
// and its JSON.
func TestAThresholdKeepsItsSettings(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`version: 1
session: { groups: [ { name: g, requests: [ { name: login, url: "http://127.0.0.1:9/" } ] } ] }
load: { vus: 1, iterations: 1 }
thresholds:
  - { check: "p95 < 300ms", over: 30s, request: login, abort: true }
  - "error_rate < 1% over 1m"
`), script.ParseOptions{})
	require.NoError(t, err)
	ts := summary.Thresholds([]threshold.Result{{Threshold: s.Thresholds[0], Observed: 0.2123, Worst: true, Passed: true}, {Threshold: s.Thresholds[1], Passed: true}})
	require.Equal(t, `p95 < 300ms over 30s for "login", abort: 212.30ms at worst, passed`, ts[0].String())
	require.Equal(t, `error_rate < 1% over 1m: 0.00%, passed`, ts[1].String(), "a run shorter than its window is judged whole")
	doc, err := json.Marshal(ts[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"check":"p95 < 300ms","over":"30s","request":"login","abort":true,"observed":0.2123,"worst_window":true,"passed":true}`, string(doc))
	var back summary.Threshold
	require.NoError(t, json.Unmarshal(doc, &back))
	require.Equal(t, ts[0].String(), back.String())
}

func TestLiveLine(t *testing.T) {
	t.Parallel()
	l := summary.NewLive(second().Requests(), time.Second, 3*time.Second, 7, 0.25)
	require.EqualValues(t, 10, l.Requests)
	require.EqualValues(t, 2, l.Failed)
	require.Regexp(t, `^ +3s  vus    7        10 req/s  p50 4\.00ms +p95 4\.00ms +p99 4\.00ms +errors 20\.00%  cpu  25%$`, l.String())
	l.Agents = 2
	require.Contains(t, l.String(), "agents 2")
}

func TestSeriesCSVHasARowPerLabelWithItsKind(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := summary.NewSeriesCSV(&buf)
	w.Write(0, second(), 0.5, 4)
	// A last second cut short, 1.5 s into the run, is the second second, at its own rate.
	half := second()
	half.Duration = 500 * time.Millisecond
	w.Write(1, half, 0.5, 4)
	require.NoError(t, w.Flush())
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 7)
	require.Equal(t, []string{"second", "kind", "label", "count"}, rows[0][:4])
	require.Equal(t, []string{"1", "request", "r", "10"}, rows[1][:4])
	require.Equal(t, []string{"1", "group", "r", "5"}, rows[2][:4])
	require.Equal(t, []string{"1", "hook", "sign", "20"}, rows[3][:4])
	require.Equal(t, []string{"2", "request", "r", "10", "20.0"}, rows[4][:5])
}

// What a generator delivered reads as one sentence: the open model's arrivals started of those
// due and how late, and in both models how the VUs' time split.
func TestTheDeliveryIsOneSentence(t *testing.T) {
	t.Parallel()
	open := summary.DeliveryOf(run.Delivery{Scheduled: 12000, Dropped: 10, LatenessMean: 45 * time.Microsecond,
		LatenessMax: 1200 * time.Microsecond, BusyTime: 10 * time.Second, TargetTime: 9 * time.Second}, script.Open)
	require.Equal(t, "delivered: started 11990 of 12000 arrivals due (99.9%), 45µs late on average (worst 1.20ms); "+
		"VUs spent 90% of their time waiting on the target, 10% in the generator", open.String())
	closed := summary.DeliveryOf(run.Delivery{Scheduled: 50, BusyTime: 4 * time.Second, TargetTime: time.Second}, script.Closed)
	require.Equal(t, "delivered: VUs spent 25% of their time waiting on the target, 75% in the generator", closed.String())
	require.Empty(t, summary.DeliveryOf(run.Delivery{}, script.Closed).String(), "nothing measured, nothing said")
	v := summary.Verdict{Delivery: closed}
	require.Equal(t, "generator OK: the numbers measure the target\n"+closed.String(), v.String())
}

// An incomplete run's summary says so first, with its bound on what is missing, and that its
// thresholds were judged on it.
func TestAnIncompleteSummarySaysSoFirst(t *testing.T) {
	t.Parallel()
	s := summary.New(second(), []string{"r"}, nil, nil, time.Second)
	s.Thresholds = []summary.Threshold{{Check: "p95 < 300ms", Observed: 0.1, Passed: true}}
	s.Incomplete = summary.NewIncomplete([]summary.Gap{
		summary.NewGap("one (0d6c)", "lost", "the agent sent nothing for 8s", 12, 100, 1.5, 4),
		summary.NewGap("two (9b1e)", "failed", "the agent was stopped", 14, 80, 0, 0),
	})
	require.EqualValues(t, 154, s.Incomplete.MissingRequests, "100/s × 1.5s + 4 in flight, and nothing of the agent that reported its end")
	require.EqualValues(t, 12, s.Incomplete.From())
	var b strings.Builder
	s.Print(&b)
	out := b.String()
	require.True(t, strings.HasPrefix(out, "INCOMPLETE: the figures stop short for 2 agent(s); up to 154 requests the target served may not be counted\n"+
		"  - agent one (0d6c) lost from second 12 (the agent sent nothing for 8s): up to 154 requests it sent may not be counted"), out)
	require.Contains(t, out, "  - agent two (9b1e) failed from second 14 (the agent was stopped): every request it sent is counted; its share of the load after that was not sent")
	require.Contains(t, out, "thresholds:\n  (judged on incomplete figures: see INCOMPLETE above)")
}

// Checks are tallied in the script's order, one that judged nothing left out, and printed with
// a mark, the share that passed (never rounded up to 100% while one failed) and the counts.
func TestChecksArePrintedWithTheirTally(t *testing.T) {
	t.Parallel()
	snap := second()
	tally := func(n, failed int64) *metrics.Stats {
		st := stats(n, 0, 0)
		st.Errors[metrics.ErrAssertion] = failed
		return st
	}
	status, qty := script.Check{Request: "r", Name: "status 200"}, script.Check{Request: "r", Name: "json $.qty equals 3"}
	snap.Labels[metrics.CheckKey(status.Label())] = tally(10, 0)
	snap.Labels[metrics.CheckKey(qty.Label())] = tally(100000, 1)
	s := summary.New(snap, []string{"r"}, nil, []script.Check{qty, status, {Request: "r", Name: "never judged"}}, time.Second)
	require.Equal(t, []summary.Check{{Check: qty, Passes: 99999, Fails: 1}, {Check: status, Passes: 10}}, s.Checks)
	var b bytes.Buffer
	s.Print(&b)
	require.Contains(t, b.String(), "checks: 1 of 2 held on every response\n"+
		"  ✗ r: json $.qty equals 3  99.99% (99999 of 100000), 1 failed\n"+
		"  ✓ r: status 200  100.00% (10 of 10)\n")
	doc, err := json.Marshal(s.Checks)
	require.NoError(t, err)
	require.JSONEq(t, `[{"request":"r","name":"json $.qty equals 3","passes":99999,"fails":1},{"request":"r","name":"status 200","passes":10,"fails":0}]`, string(doc))
}
