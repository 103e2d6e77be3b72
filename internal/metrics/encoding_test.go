package metrics_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
)

// typicalSecond is one label's second under load: 10,000 requests spread over 1-50 ms.
func typicalSecond(rng *rand.Rand) *metrics.Histogram {
	h := metrics.NewHistogram()
	for range 10_000 {
		h.Record(time.Millisecond + time.Duration(rng.Int64N(int64(49*time.Millisecond))))
	}
	return h
}

func requireSameHistogram(t *testing.T, want, got *metrics.Histogram) {
	t.Helper()
	require.Equal(t, marshal(t, want), marshal(t, got))
	require.Equal(t, want.Count(), got.Count())
	require.Equal(t, want.Min(), got.Min())
	require.Equal(t, want.Max(), got.Max())
	require.Equal(t, want.Mean(), got.Mean())
	require.Equal(t, want.Clamped(), got.Clamped())
	for _, p := range quantiles {
		require.Equal(t, want.Quantile(float64(p)/1e4), got.Quantile(float64(p)/1e4), "q=%d/1e4", p)
	}
}

func TestHistogramRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	wide := metrics.NewHistogram()
	for range 50_000 {
		wide.Record(wideSample(rng))
	}
	one := metrics.NewHistogram()
	one.Record(42 * time.Millisecond)
	for name, h := range map[string]*metrics.Histogram{
		"empty": metrics.NewHistogram(), "one sample": one, "typical second": typicalSecond(rng), "wide and clamped": wide,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := marshal(t, h)
			got := metrics.NewHistogram()
			got.Record(time.Hour) // overwritten, not added to
			require.NoError(t, got.UnmarshalBinary(b))
			requireSameHistogram(t, h, got)

			appended, err := h.AppendBinary([]byte("prefix"))
			require.NoError(t, err)
			require.Equal(t, append([]byte("prefix"), b...), appended)
		})
	}
}

func TestEncodedSizes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	h := typicalSecond(rng)
	b := marshal(t, h)
	t.Logf("10,000 samples over 1-50 ms: %d bytes encoded (%.2f bytes/sample), %d bytes in memory", len(b),
		float64(len(b))/10_000, h.MemoryBytes())
	require.Less(t, len(b), 8*1024)

	s := &metrics.Snapshot{Start: time.Unix(1_760_000_000, 0), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
	for _, name := range []string{"GET /", "POST /login", "GET /api/items", "GET /api/items/{id}", "PUT /api/cart"} {
		st := &metrics.Stats{Requests: 2_000, BytesIn: 2_000 * 1_450, BytesOut: 2_000 * 310, Latency: metrics.NewHistogram()}
		st.Errors[metrics.Err5xx] = 3
		for range 2_000 {
			st.Latency.Record(time.Millisecond + time.Duration(rng.Int64N(int64(49*time.Millisecond))))
		}
		s.Labels[metrics.RequestKey(name)] = st
	}
	sb := marshal(t, s)
	t.Logf("snapshot of 5 labels x 2,000 requests over 1-50 ms: %d bytes", len(sb))
}

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	s := &metrics.Snapshot{
		Start:    time.Date(2026, 3, 1, 12, 0, 7, 123_456_789, time.UTC),
		Duration: time.Second,
		Labels: map[metrics.Key]*metrics.Stats{
			metrics.RequestKey("GET /"): {Requests: 10_000, BytesIn: 1 << 33, BytesOut: 12345, Latency: typicalSecond(rng)},
			metrics.GroupKey("GET /"):   {Requests: 2, Latency: typicalSecond(rng)},
			metrics.RequestKey(""):      {Requests: 0, Latency: metrics.NewHistogram()},
			metrics.HookKey("sign"):     {Requests: 1, Latency: typicalSecond(rng)},
			metrics.RequestKey("POST /login ✓"): {Requests: 3, Errors: [metrics.NumErrorClasses]int64{0, 1, 1, 0, 0, 1}, Latency: func() *metrics.Histogram {
				h := metrics.NewHistogram()
				h.Record(time.Millisecond)
				h.Record(30 * time.Second)
				h.Record(2 * time.Hour)
				return h
			}()},
		},
	}
	b := marshal(t, s)
	var got metrics.Snapshot
	require.NoError(t, got.UnmarshalBinary(b))
	require.True(t, s.Start.Equal(got.Start))
	require.Equal(t, s.Duration, got.Duration)
	require.Len(t, got.Labels, len(s.Labels))
	for name, want := range s.Labels {
		g := got.Labels[name]
		require.NotNil(t, g, "%+v", name)
		require.Equal(t, want.Requests, g.Requests)
		require.Equal(t, want.Errors, g.Errors)
		require.Equal(t, want.BytesIn, g.BytesIn)
		require.Equal(t, want.BytesOut, g.BytesOut)
		requireSameHistogram(t, want.Latency, g.Latency)
	}
	require.Equal(t, b, marshal(t, &got))

	var zero metrics.Snapshot
	require.NoError(t, zero.UnmarshalBinary(marshal(t, &metrics.Snapshot{})))
	require.True(t, zero.Start.IsZero())
	require.Empty(t, zero.Labels)
}

// Each input breaks one rule of the format; all must be refused as invalid, not panic, and leave
// the target empty.
func TestUnmarshalRefusesMalformedInput(t *testing.T) {
	t.Parallel()
	one := func(b ...byte) []byte { return append([]byte{'H', 1}, b...) }
	histograms := map[string][]byte{
		"empty input":           {},
		"magic only":            {'H'},
		"snapshot magic":        {'S', 1, 0},
		"unknown version":       {'H', 2, 0},
		"truncated count":       one(0x80),
		"non-minimal varint":    one(0x80, 0x00),
		"count without figures": one(1),
		"trailing byte":         one(0, 0),
		// count 1, min 5, max 5, sum 5, clamped 0, then slot entries (zig-zag):
		"valid":               one(1, 5, 5, 5, 0, 9, 2),
		"no slots":            one(1, 5, 5, 5, 0),
		"zero count entry":    one(1, 5, 5, 5, 0, 9, 0),
		"two skips":           one(1, 5, 5, 5, 0, 7, 1, 2),
		"count over total":    one(1, 5, 5, 5, 0, 9, 4),
		"min outside slot":    one(1, 4, 5, 5, 0, 9, 2),
		"max outside slot":    one(1, 5, 6, 5, 0, 9, 2),
		"min above max":       one(1, 6, 5, 5, 0, 9, 2),
		"min zero":            one(1, 0, 5, 5, 0, 9, 2),
		"sum too small":       one(1, 5, 5, 4, 0, 9, 2),
		"sum too large":       one(1, 5, 5, 6, 0, 9, 2),
		"clamped below top":   one(1, 5, 5, 5, 1, 9, 2),
		"skip past the end":   one(1, 5, 5, 5, 0, 0xff, 0xff, 0x07, 2),
		"count over int64":    one(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"varint over 64 bits": one(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
	}
	for name, b := range histograms {
		h := metrics.NewHistogram()
		h.Record(time.Second)
		err := h.UnmarshalBinary(b)
		if name == "valid" {
			require.NoError(t, err)
			require.Equal(t, 5*time.Microsecond, h.Quantile(0.5))
			continue
		}
		require.ErrorIs(t, err, barrage.ErrInvalid, name)
		require.Zero(t, h.Count(), name)
	}

	snap := func(b ...byte) []byte { return append([]byte{'S', 1, 0, 0, 0}, b...) }
	snap2 := func(b ...byte) []byte { return append([]byte{'S', 2, 0, 0, 0}, b...) }
	label := []byte{1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0}
	snapshots := map[string][]byte{
		"valid":            snap(2, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"histogram magic":  {'H', 1, 0},
		"labels unsorted":  snap(2, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"label repeated":   snap(append(append([]byte{2}, label...), label...)...),
		"name past end":    snap(1, 9, 'a'),
		"label count lies": snap(100, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"truncated label":  snap(1, 1, 'a', 0, 0),
		"bad nanoseconds":  {'S', 1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0, 0},
		"trailing byte":    snap(0, 0),
		// Version 2: each label begins with its kind.
		"valid v2":             snap2(2, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"kinds unsorted":       snap2(2, 1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"same kind and name":   snap2(2, 1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"kind out of range":    snap2(1, 6, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"version 3":            {'S', 3, 0, 0, 0, 0},
		"v2 label count lies":  snap2(9, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"v2 truncated at kind": snap2(1),
	}
	for name, b := range snapshots {
		var s metrics.Snapshot
		err := s.UnmarshalBinary(b)
		if strings.HasPrefix(name, "valid") {
			require.NoError(t, err)
			require.Len(t, s.Labels, 2)
			continue
		}
		require.ErrorIs(t, err, barrage.ErrInvalid, name)
		require.Empty(t, s.Labels, name)
	}
}

// Fuzzing holds the decoder to its contract: any input is refused with an error or decodes to a
// histogram whose own encoding is that input (the format is canonical), and which every method
// can then use without panicking.
func FuzzUnmarshalHistogram(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	small := metrics.NewHistogram()
	for _, d := range []time.Duration{time.Microsecond, 3 * time.Millisecond, 3 * time.Millisecond, time.Minute, 2 * time.Hour} {
		small.Record(d)
	}
	for _, h := range []*metrics.Histogram{metrics.NewHistogram(), small, typicalSecond(rng)} {
		f.Add(marshalF(f, h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := metrics.NewHistogram()
		if err := h.UnmarshalBinary(data); err != nil {
			require.ErrorIs(t, err, barrage.ErrInvalid)
			require.Zero(t, h.Count())
			return
		}
		require.Equal(t, data, marshal(t, h))
		if h.Count() > 0 {
			require.LessOrEqual(t, h.Min(), h.Quantile(0))
			require.LessOrEqual(t, h.Quantile(0.5), h.Quantile(0.99))
			require.Equal(t, h.Max(), h.Quantile(1))
			require.GreaterOrEqual(t, h.Mean(), h.Min()-time.Microsecond)
			require.LessOrEqual(t, h.Mean(), h.Max()+time.Microsecond)
		}
		m := h.Clone()
		m.Merge(h)
		require.Equal(t, 2*h.Count(), m.Count())
	})
}

// FuzzUnmarshalSnapshot holds the snapshot decoder to the same contract as the histogram's.
func FuzzUnmarshalSnapshot(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	h := metrics.NewHistogram()
	h.Record(12 * time.Millisecond)
	f.Add(marshalF(f, &metrics.Snapshot{}))
	f.Add(marshalF(f, &metrics.Snapshot{Start: time.Unix(1_760_000_000, 5), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{
		metrics.RequestKey("GET /"): {Requests: 1, BytesIn: 100, BytesOut: 50, Errors: [metrics.NumErrorClasses]int64{0, 0, 0, 0, 1, 0}, Latency: h},
		metrics.GroupKey("GET /"):   {Requests: 1, Latency: h},
		metrics.RequestKey("b"):     {Requests: 500, Latency: typicalSecond(rng)},
	}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s metrics.Snapshot
		err := s.UnmarshalBinary(data)
		// Validating without decoding agrees with decoding, whatever the input, and so does
		// decoding the counts alone.
		require.Equal(t, err == nil, metrics.ValidateSnapshot(data) == nil, "%v", err)
		counts, cerr := metrics.DecodeCounts(data)
		require.Equal(t, err == nil, cerr == nil, "%v", err)
		if err == nil {
			require.Equal(t, s.Requests().Requests, counts.Requests().Requests)
			require.Len(t, counts.Labels, len(s.Labels))
		}
		if err != nil {
			require.ErrorIs(t, err, barrage.ErrInvalid)
			require.Empty(t, s.Labels)
			return
		}
		if data[1] == 1 {
			// Version 1 is read, never written: its snapshot is written as version 2, which
			// reads back the same.
			var again metrics.Snapshot
			require.NoError(t, again.UnmarshalBinary(marshal(t, &s)))
			require.Equal(t, marshal(t, &s), marshal(t, &again))
		} else {
			require.Equal(t, data, marshal(t, &s))
		}
		c := s.Clone()
		c.Merge(&s)
		require.Equal(t, 2*s.Requests().Requests, c.Requests().Requests)
		// Merging the encoding straight in is merging the decoded snapshot.
		m := s.Clone()
		require.NoError(t, m.MergeBinary(data))
		require.Equal(t, marshal(t, c), marshal(t, m))
	})
}

func TestMergeBinaryIsMergeOfTheDecoded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 18))
	second := func(start int64, names ...string) *metrics.Snapshot {
		s := &metrics.Snapshot{Start: time.Unix(start, 0), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
		for _, n := range names {
			st := metrics.NewStats()
			st.Latency = typicalSecond(rng)
			st.Requests = st.Latency.Count()
			st.Errors[metrics.ErrTimeout] = 3
			s.Labels[metrics.RequestKey(n)] = st
		}
		return s
	}
	a, b := second(100, "x", "y"), second(101, "y", "z")
	want := a.Clone()
	want.Merge(b)
	got := &metrics.Snapshot{}
	require.NoError(t, got.MergeBinary(marshal(t, a)))
	require.NoError(t, got.MergeBinary(marshal(t, b)))
	require.Equal(t, marshal(t, want), marshal(t, got))
	require.ErrorIs(t, got.MergeBinary([]byte{1, 2, 3}), barrage.ErrInvalid)
	require.ErrorIs(t, metrics.ValidateSnapshot([]byte{1, 2, 3}), barrage.ErrInvalid)
}

// BenchmarkTakeSnapshot is what the server does with each second an agent reports: check it,
// then merge it into the run's second. 20 labels of 100 requests each over 1-50 ms.
func BenchmarkTakeSnapshot(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	s := &metrics.Snapshot{Start: time.Unix(100, 0), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
	for l := range 20 {
		st := metrics.NewStats()
		for range 100 {
			st.Latency.Record(time.Millisecond + time.Duration(rng.Int64N(int64(49*time.Millisecond))))
		}
		st.Requests = 100
		s.Labels[metrics.RequestKey(string(rune('a'+l)))] = st
	}
	data, _ := s.MarshalBinary()
	b.Run("validate", func(b *testing.B) {
		for b.Loop() {
			if err := metrics.ValidateSnapshot(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		for b.Loop() {
			var got metrics.Snapshot
			if err := got.UnmarshalBinary(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("merge 50 agents", func(b *testing.B) {
		for b.Loop() {
			m := &metrics.Snapshot{}
			for range 50 {
				if err := m.MergeBinary(data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("unmarshal and merge 50 agents", func(b *testing.B) {
		for b.Loop() {
			m := &metrics.Snapshot{}
			for range 50 {
				var got metrics.Snapshot
				if err := got.UnmarshalBinary(data); err != nil {
					b.Fatal(err)
				}
				m.Merge(&got)
			}
		}
	})
}

func marshalF(f *testing.F, m interface{ MarshalBinary() ([]byte, error) }) []byte {
	f.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	return b
}
