package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// oneRequest is a script of one request to target's root, under the given load (YAML lines
// indented by two spaces).
func oneRequest(t *testing.T, target, load string) *script.Script {
	t.Helper()
	return parse(t, target, "version: 1\nname: one\nsession:\n  groups:\n    - name: g\n      requests:\n"+
		"        - { name: r, url: \"${target}/\" }\nload:\n  "+load+"\n")
}

// idle is a target that answers 200 to everything.
func idle(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runShards runs s as len(segs) shards at once, on one shared schedule, and returns their results.
func runShards(t *testing.T, s *script.Script, segs []run.Segment) []*run.Result {
	t.Helper()
	start := time.Now().Add(100 * time.Millisecond)
	runs := make([]*engine.Running, len(segs))
	for i, seg := range segs {
		r, err := engine.Start(t.Context(), s, engine.Options{Start: start, Segment: seg})
		require.NoError(t, err)
		runs[i] = r
	}
	out := make([]*run.Result, len(runs))
	for i, r := range runs {
		out[i] = r.Wait()
		require.Equal(t, start, out[i].Start)
		require.Equal(t, segs[i], out[i].Segment)
	}
	return out
}

func TestShardsUseEachSequentialRowOnceAcrossAllOfThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := writeUsers(t, dir, 45)
	rc := &recorder{}
	srv := httptest.NewServer(rc.handler("u"))
	defer srv.Close()
	s := load(t, dir, srv.URL, `
version: 1
name: rows
variables:
  data:
    - { file: users.csv, order: sequential }
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/?u=${name}" }
load:
  vus: 5
  duration: 30s
`)
	results := runShards(t, s, run.Split(3))
	var total int64
	for _, res := range results {
		require.Equal(t, run.Completed, res.Stop.Reason)
		require.Contains(t, res.Exhausted, "users.csv")
		total += stats(t, res, "r").Requests
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	got := append([]string(nil), rc.seen...)
	sort.Strings(got)
	require.Equal(t, rows, got, "each row once across the shards")
	require.EqualValues(t, len(rows), total)
}

func TestShardsSplitTheIterationBudgetAndTheArrivals(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for name, load := range map[string]string{
		"iterations": "vus: 4\n  iterations: 25",
		// 40 arrivals a second for a second: 40 in all, whichever shard sends them (or drops,
		// when a loaded machine leaves it no free VU in time: the arrival is its all the same).
		"arrivals": "stages:\n    - { rate: 40/s, duration: 1s }\n  max_vus: 8",
	} {
		t.Run(name, func(t *testing.T) {
			before := hits.Load()
			s := oneRequest(t, srv.URL, load)
			results := runShards(t, s, run.Split(3))
			var sent, dropped int64
			for _, res := range results {
				n := stats(t, res, "r").Requests
				require.Positive(t, n, "every shard has a share")
				sent += n
				dropped += res.Dropped
			}
			want := map[string]int64{"iterations": 25, "arrivals": 40}[name]
			require.Equal(t, want, sent+dropped, "every iteration or arrival due, once, in one shard")
			require.Equal(t, sent, hits.Load()-before, "what the shards counted is what the target served")
			require.LessOrEqual(t, dropped, want/10, "a few at most")
		})
	}
}

// A budget smaller than the shards: a shard whose share is 0 runs no iteration (it ran without
// a bound, until its deadline).
func TestAShardWhoseShareOfTheBudgetIsNoneRunsNone(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := oneRequest(t, srv.URL, "vus: 4\n  iterations: 1\n  duration: 1m")
	var sum int64
	for _, res := range runShards(t, s, run.Split(2)) {
		sum += res.Iterations
	}
	require.EqualValues(t, 1, sum)
	require.EqualValues(t, 1, hits.Load())
}

func TestStopCutsTheRunShortWithItsReason(t *testing.T) {
	t.Parallel()
	s := oneRequest(t, idle(t), "vus: 2\n  duration: 10m")
	first := make(chan struct{})
	var once sync.Once
	r, err := engine.Start(t.Context(), s, engine.Options{OnSecond: func(run.Second) { once.Do(func() { close(first) }) }})
	require.NoError(t, err)
	<-first
	r.Stop(run.Canceled, "canceled by the test")
	r.Stop(run.Failed, "a later reason is ignored")
	res := r.Wait()
	require.Equal(t, run.Stop{Reason: run.Canceled, Detail: "canceled by the test"}, res.Stop)
	require.Positive(t, stats(t, res, "r").Requests)
}

// A drain ends the run at the requests' edge: every request the target answered is measured and
// none is cut.
func TestDrainMeasuresEveryRequestTheTargetSaw(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	held, drained := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/b" {
			// b is held until the drain has come: requests are in flight when it does.
			select {
			case held <- struct{}{}:
			default:
			}
			<-drained
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: drain
session:
  groups:
    - name: g
      requests:
        - { name: a, url: "${target}/a" }
        - { name: b, url: "${target}/b" }
load: { vus: 8, duration: 10m }
`)
	var counted atomic.Int64
	r, err := engine.Start(t.Context(), s, engine.Options{OnSecond: func(sec run.Second) {
		counted.Add(sec.Snapshot.Requests().Requests)
	}})
	require.NoError(t, err)
	<-held
	r.Drain(run.Canceled, "drained by the test", time.Minute)
	r.Drain(run.Failed, "a later reason is ignored", 0)
	close(drained)
	res := r.Wait()
	require.Equal(t, run.Stop{Reason: run.Canceled, Detail: "drained by the test"}, res.Stop)
	total := stats(t, res, "a").Requests + stats(t, res, "b").Requests
	require.Positive(t, total)
	require.Equal(t, hits.Load(), total, "every request the target answered is counted")
	require.Equal(t, total, counted.Load(), "and was in the seconds streamed")
}

func TestDrainEndsThinkTimesAtOnce(t *testing.T) {
	t.Parallel()
	s := parse(t, idle(t), `
version: 1
name: thinker
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", think: 1h }
load: { vus: 2, duration: 10m }
`)
	first := make(chan struct{})
	var once sync.Once
	r, err := engine.Start(t.Context(), s, engine.Options{OnSecond: func(run.Second) { once.Do(func() { close(first) }) }})
	require.NoError(t, err)
	<-first
	r.Drain(run.Canceled, "drained", time.Hour) // the hour's think is not waited for
	res := r.Wait()
	require.EqualValues(t, 2, stats(t, res, "r").Requests)
	require.EqualValues(t, 2, res.Interrupted, "each VU's iteration ended in its think time")
}

func TestDrainWaitsForRequestsInFlightOnlySoLong(t *testing.T) {
	t.Parallel()
	s := oneRequest(t, hangingServer(t).URL, "vus: 2\n  duration: 10m")
	r, err := engine.Start(t.Context(), s, engine.Options{})
	require.NoError(t, err)
	r.Drain(run.Failed, "the agent was stopped", 0) // the hanging requests are cut at once
	res := r.Wait()
	require.Equal(t, run.Failed, res.Stop.Reason)
}

func TestCancelledContextStopsTheRunAsCanceled(t *testing.T) {
	t.Parallel()
	s := oneRequest(t, idle(t), "vus: 1\n  duration: 10m")
	ctx, cancel := context.WithCancel(t.Context())
	r, err := engine.Start(ctx, s, engine.Options{OnSecond: func(run.Second) { cancel() }})
	require.NoError(t, err)
	require.Equal(t, run.Canceled, r.Wait().Stop.Reason)
}

func TestHardLimitsHoldWhateverTheScriptSays(t *testing.T) {
	t.Parallel()
	target := idle(t)
	src := func(load string) *script.Script { return oneRequest(t, target, load) }

	t.Run("too many VUs are refused", func(t *testing.T) {
		t.Parallel()
		_, err := engine.Start(t.Context(), src("vus: 10\n  duration: 1s"), engine.Options{Limits: barrage.Limits{MaxVUs: 5}})
		var le *barrage.LimitError
		require.ErrorAs(t, err, &le)
		require.Equal(t, barrage.LimitViolation{Limit: barrage.LimitMaxVUs, Allowed: 5, Requested: 10}, le.Violations[0])
		// Half of them on a shard is within the limit.
		r, err := engine.Start(t.Context(), src("vus: 10\n  duration: 1s"), engine.Options{Limits: barrage.Limits{MaxVUs: 5}, Segment: run.Split(2)[0]})
		require.NoError(t, err)
		require.Equal(t, run.Completed, r.Wait().Stop.Reason)
	})
	t.Run("an open model's max_vus counts", func(t *testing.T) {
		t.Parallel()
		_, err := engine.Start(t.Context(), src("stages:\n    - { rate: 10/s, duration: 1s }\n  max_vus: 20"), engine.Options{Limits: barrage.Limits{MaxVUs: 5}})
		require.ErrorIs(t, err, barrage.ErrLimitExceeded, "%v", err)
	})
	t.Run("an iteration-bounded run stops at the time limit", func(t *testing.T) {
		t.Parallel()
		r, err := engine.Start(t.Context(), src("vus: 1\n  iterations: 100000000"), engine.Options{Limits: barrage.Limits{MaxRunDuration: time.Second}})
		require.NoError(t, err)
		res := r.Wait()
		require.Equal(t, run.TimedOut, res.Stop.Reason)
		require.Contains(t, res.Stop.Detail, "1s")
	})
	// Admitted means it can finish: a run as long as the limit ends by itself, though the two
	// timers fire at one instant (it ended timed_out about half the time).
	for _, load := range []string{"vus: 1\n  duration: 1s", "stages:\n    - { rate: 50/s, duration: 1s }\n  max_vus: 2"} {
		t.Run("a run as long as the limit completes: "+load, func(t *testing.T) {
			t.Parallel()
			for range 6 {
				r, err := engine.Start(t.Context(), src(load), engine.Options{Limits: barrage.Limits{MaxRunDuration: time.Second}})
				require.NoError(t, err)
				require.Equal(t, run.Completed, r.Wait().Stop.Reason)
			}
		})
	}
}

func TestSecondsFollowTheSharedSchedule(t *testing.T) {
	t.Parallel()
	s := oneRequest(t, idle(t), "vus: 1\n  duration: 3s")
	collect := func(start time.Time) (*run.Result, []run.Second) {
		var mu sync.Mutex
		var secs []run.Second
		r, err := engine.Start(t.Context(), s, engine.Options{Start: start, OnSecond: func(sec run.Second) {
			mu.Lock()
			secs = append(secs, sec)
			mu.Unlock()
		}})
		require.NoError(t, err)
		res := r.Wait()
		mu.Lock()
		defer mu.Unlock()
		return res, secs
	}

	t.Run("a start ahead is waited for", func(t *testing.T) {
		t.Parallel()
		start := time.Now().Add(500 * time.Millisecond)
		res, secs := collect(start)
		require.Zero(t, res.LateStart)
		require.NotEmpty(t, secs)
		require.False(t, secs[0].Snapshot.Start.Before(start), "nothing measured before the start")
		for i, sec := range secs {
			require.EqualValues(t, i, sec.Index)
			if i < len(secs)-1 {
				// Each second ends on the schedule's boundary (the timer fires at it or after).
				require.GreaterOrEqual(t, sec.Snapshot.End().Sub(start), time.Duration(i+1)*time.Second)
			}
		}
	})
	t.Run("a late shard joins the schedule's current second", func(t *testing.T) {
		t.Parallel()
		start := time.Now().Add(-2500 * time.Millisecond)
		res, secs := collect(start)
		require.GreaterOrEqual(t, res.LateStart, 2500*time.Millisecond)
		require.NotEmpty(t, secs)
		require.GreaterOrEqual(t, secs[0].Index, int64(2))
	})
}
