package metrics_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// requestKeys are the keys of requests named names.
func requestKeys(names ...string) []metrics.Key {
	keys := make([]metrics.Key, len(names))
	for i, n := range names {
		keys[i] = metrics.RequestKey(n)
	}
	return keys
}

// A request and a group of the same name are two labels: they never merge, in a recorder, in a
// snapshot, nor in its encoding.
func TestKindsKeepLabelsApart(t *testing.T) {
	t.Parallel()
	keys := []metrics.Key{metrics.RequestKey("g"), metrics.GroupKey("g"), metrics.HookKey("g"), metrics.RequestKey("group: g")}
	r := metrics.NewRecorder(keys, t0)
	for i := range keys {
		for range 3 + i {
			r.Label(i).Record(time.Millisecond, 0, 0, metrics.NoError)
		}
	}
	s := r.Rotate(t0.Add(time.Second))
	var back metrics.Snapshot
	require.NoError(t, back.UnmarshalBinary(marshal(t, s)))
	for _, snap := range []*metrics.Snapshot{s, &back} {
		require.Len(t, snap.Labels, 4)
		for i, k := range keys {
			require.Equal(t, int64(3+i), snap.Labels[k].Requests, k.String())
		}
		require.Equal(t, int64(3+6), snap.Requests().Requests, "groups and hooks are not requests")
	}
	require.Equal(t, "group g", metrics.GroupKey("g").String())
	require.Equal(t, "hook g", metrics.HookKey("g").String())
	require.Equal(t, "g", metrics.RequestKey("g").String())
}

// Snapshots of version 1, before labels had kinds, named groups "group: NAME" and hooks
// "hook: ALIAS": runs stored then are still read, those names as kinds.
func TestReadsSnapshotsOfVersion1(t *testing.T) {
	t.Parallel()
	// Labels "a", "group: g", "hook: h", one request of 5 µs each.
	label := func(name string) []byte {
		return append(append([]byte{byte(len(name))}, name...), 1, 0, 0, 0, 0, 0, 0, 0, 1, 5, 5, 5, 0, 9, 2)
	}
	v1 := []byte{'S', 1, 0, 0, 0, 3}
	for _, n := range []string{"a", "group: g", "hook: h"} {
		v1 = append(v1, label(n)...)
	}
	var s metrics.Snapshot
	require.NoError(t, s.UnmarshalBinary(v1))
	require.NoError(t, metrics.ValidateSnapshot(v1))
	require.Len(t, s.Labels, 3)
	for _, k := range []metrics.Key{metrics.RequestKey("a"), metrics.GroupKey("g"), metrics.HookKey("h")} {
		require.Equal(t, int64(1), s.Labels[k].Requests, k.String())
		require.Equal(t, 5*time.Microsecond, s.Labels[k].Latency.Max())
	}
}

// Writers hammer three labels while Rotate runs back to back: every record must land in exactly
// one snapshot, each snapshot must agree with itself, and the run's total must equal the sum.
func TestRotateLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	labels := requestKeys("GET /", "POST /login", "GET /", "GET /items") // index 2 shares "GET /"
	r := metrics.NewRecorder(labels, t0)

	const writers, perWriter = 8, 20_000
	var (
		wg        sync.WaitGroup
		want      = map[metrics.Key]*metrics.Stats{}
		wantMu    sync.Mutex
		snaps     []*metrics.Snapshot
		rotator   = make(chan struct{})
		rotations atomic.Int64
		// Writers ask for a rotation now and then; one asked for while another is pending is
		// the same one. The snapshots held are in bounds: a rotation per ask at most.
		ask = make(chan struct{}, 1)
	)
	nudge := func() {
		select {
		case ask <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(rotator)
		now := t0
		for range ask {
			now = now.Add(time.Second)
			snaps = append(snaps, r.Rotate(now))
			rotations.Add(1)
		}
	}()
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			mine := map[metrics.Key]*metrics.Stats{}
			seen := rotations.Load()
			for n := range perWriter {
				// Halfway, wait for rotations, so that they certainly happen while writers write;
				// and ask for one and yield now and then, so that they happen often.
				for n == perWriter/2 && rotations.Load() < seen+3 {
					nudge()
					runtime.Gosched()
				}
				if n%1000 == 0 {
					nudge()
					runtime.Gosched()
				}
				i := rng.IntN(len(labels))
				d := time.Duration(rng.Int64N(int64(2 * time.Second)))
				in, out := rng.Int64N(5000), rng.Int64N(500)
				class := metrics.ErrorClass(rng.IntN(int(metrics.NumErrorClasses)))
				r.Label(i).Record(d, in, out, class)

				st := mine[labels[i]]
				if st == nil {
					st = metrics.NewStats()
					mine[labels[i]] = st
				}
				st.Requests++
				if class != metrics.NoError {
					st.Errors[class]++
				}
				st.BytesIn += in
				st.BytesOut += out
				st.Latency.Record(d)
			}
			wantMu.Lock()
			defer wantMu.Unlock()
			for name, st := range mine {
				if want[name] == nil {
					want[name] = metrics.NewStats()
				}
				want[name].Merge(st)
			}
		})
	}
	wg.Wait()
	close(ask)
	<-rotator
	last := r.Rotate(t0.Add(time.Duration(len(snaps)+1) * time.Second))
	snaps = append(snaps, last)
	t.Logf("%d rotations during %d records", len(snaps), writers*perWriter)
	require.Greater(t, len(snaps), 3)

	got := &metrics.Snapshot{}
	for i, s := range snaps {
		require.Equal(t, t0.Add(time.Duration(i)*time.Second), s.Start)
		require.Equal(t, time.Second, s.Duration)
		for name, st := range s.Labels {
			require.Positive(t, st.Requests, "%+v", name)
			require.Equal(t, st.Requests, st.Latency.Count(), "snapshot %d %s", i, name)
			require.LessOrEqual(t, st.Failed(), st.Requests)
			require.Zero(t, st.Errors[metrics.NoError])
		}
		// A snapshot's histograms must agree with themselves, or they would not decode.
		var back metrics.Snapshot
		require.NoError(t, back.UnmarshalBinary(marshal(t, s)), "snapshot %d", i)
		got.Merge(s)
	}
	require.Len(t, got.Labels, 3)
	for name, w := range want {
		g := got.Labels[name]
		require.Equal(t, w.Requests, g.Requests, "%+v", name)
		require.Equal(t, w.Errors, g.Errors, "%+v", name)
		require.Equal(t, w.BytesIn, g.BytesIn, "%+v", name)
		require.Equal(t, w.BytesOut, g.BytesOut, "%+v", name)
		requireSameHistogram(t, w.Latency, g.Latency)
	}

	total := r.Total()
	require.Equal(t, t0, total.Start)
	require.Equal(t, time.Duration(len(snaps))*time.Second, total.Duration)
	require.Equal(t, marshal(t, got), marshal(t, total))
}

func TestRotateKeepsOnlyLabelsWithRequests(t *testing.T) {
	t.Parallel()
	r := metrics.NewRecorder(requestKeys("a", "b"), t0)
	require.Equal(t, 2, r.Len())
	require.Equal(t, metrics.RequestKey("b"), r.Label(1).Key())
	r.Label(0).Record(3*time.Millisecond, 100, 20, metrics.NoError)
	r.Label(0).Record(4*time.Millisecond, 0, 20, metrics.Err5xx)

	s := r.Rotate(t0.Add(time.Second))
	require.Equal(t, t0, s.Start)
	require.Equal(t, time.Second, s.Duration)
	require.Len(t, s.Labels, 1)
	a := s.Labels[metrics.RequestKey("a")]
	require.Equal(t, int64(2), a.Requests)
	require.Equal(t, int64(1), a.Errors[metrics.Err5xx])
	require.Equal(t, int64(1), a.Failed())
	require.Equal(t, int64(100), a.BytesIn)
	require.Equal(t, int64(40), a.BytesOut)
	require.Equal(t, 4*time.Millisecond, a.Latency.Max())

	idle := r.Rotate(t0.Add(2500 * time.Millisecond))
	require.Equal(t, t0.Add(time.Second), idle.Start)
	require.Equal(t, 1500*time.Millisecond, idle.Duration)
	require.Empty(t, idle.Labels)

	// The caller owns what Rotate returned: recording on does not touch it.
	r.Label(0).Record(time.Second, 0, 0, metrics.NoError)
	require.Equal(t, int64(2), a.Latency.Count())
	require.Equal(t, int64(2), r.Total().Labels[metrics.RequestKey("a")].Requests)
}

func TestRecordRefusesUnknownClass(t *testing.T) {
	t.Parallel()
	r := metrics.NewRecorder(requestKeys("a"), t0)
	require.Panics(t, func() { r.Label(0).Record(time.Millisecond, 0, 0, metrics.NumErrorClasses) })
	// The refused record must not have left Rotate waiting for it.
	require.Empty(t, r.Rotate(t0.Add(time.Second)).Labels)
	require.Equal(t, "assertion", metrics.ErrAssertion.String())
	require.Equal(t, "ErrorClass(9)", metrics.ErrorClass(9).String())
}

// Once a label's pages exist, recording and rotating must not allocate pages again: rotation
// hands the emptied counters back for the next interval.
func TestRecordDoesNotAllocate(t *testing.T) {
	r := metrics.NewRecorder(requestKeys("a"), t0)
	l := r.Label(0)
	latencies := []time.Duration{time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	for range 2 { // fill both sets of counters
		for _, d := range latencies {
			l.Record(d, 1, 1, metrics.Err4xx)
		}
		r.Rotate(t0)
	}
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		l.Record(latencies[i%len(latencies)], 1500, 300, metrics.NoError)
		i++
	})
	require.Zero(t, allocs)
}
