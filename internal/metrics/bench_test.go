package metrics_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
)

// latencies is a fixed spread of 1-50 ms for benchmarks to cycle through, so the benchmark
// measures recording and not a random number generator.
var latencies = func() []time.Duration {
	rng := rand.New(rand.NewPCG(17, 18))
	ls := make([]time.Duration, 4096)
	for i := range ls {
		ls[i] = time.Millisecond + time.Duration(rng.Int64N(int64(49*time.Millisecond)))
	}
	return ls
}()

func BenchmarkRecord(b *testing.B) {
	b.Run("Histogram", func(b *testing.B) {
		h := metrics.NewHistogram()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			h.Record(latencies[i&4095])
			i++
		}
	})
	b.Run("Histogram/parallel", func(b *testing.B) {
		h := metrics.NewHistogram()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				h.Record(latencies[i&4095])
				i++
			}
		})
	})
	b.Run("Label", func(b *testing.B) {
		l := metrics.NewRecorder(requestKeys("GET /"), t0).Label(0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Record(latencies[i&4095], 1500, 300, metrics.NoError)
			i++
		}
	})
	// Every goroutine on one label: the worst case for contention on its counters.
	b.Run("Label/parallel", func(b *testing.B) {
		l := metrics.NewRecorder(requestKeys("GET /"), t0).Label(0)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				l.Record(latencies[i&4095], 1500, 300, metrics.NoError)
				i++
			}
		})
	})
	// Goroutines spread over eight labels, as virtual users walking through a script are.
	b.Run("Label/parallel-8-labels", func(b *testing.B) {
		r := metrics.NewRecorder(requestKeys("a", "b", "c", "d", "e", "f", "g", "h"), t0)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				r.Label(i&7).Record(latencies[i&4095], 1500, 300, metrics.NoError)
				i++
			}
		})
	})
}

// BenchmarkRotate measures one rotation of 10 labels that each recorded a second of 10,000
// requests over 1-50 ms: moving the counts out, building the snapshot, adding it to the total.
func BenchmarkRotate(b *testing.B) {
	names := make([]string, 10)
	for i := range names {
		names[i] = "label " + strconv.Itoa(i)
	}
	r := metrics.NewRecorder(requestKeys(names...), t0)
	fill := func() {
		for l := range names {
			for i := range 10_000 {
				r.Label(l).Record(latencies[i&4095], 1500, 300, metrics.NoError)
			}
		}
	}
	fill()
	r.Rotate(t0)
	b.ReportAllocs()
	now := t0
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		now = now.Add(time.Second)
		r.Rotate(now)
	}
}

func BenchmarkMarshal(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	h := typicalSecond(rng)
	b.Run("Histogram", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 16<<10)
		for b.Loop() {
			buf, _ = h.AppendBinary(buf[:0])
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("Histogram/unmarshal", func(b *testing.B) {
		enc := marshal(b, h)
		into := metrics.NewHistogram()
		b.ReportAllocs()
		for b.Loop() {
			if err := into.UnmarshalBinary(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	s := &metrics.Snapshot{Start: t0, Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
	for i := range 10 {
		st := &metrics.Stats{Requests: 10_000, Latency: typicalSecond(rng)}
		s.Labels[metrics.RequestKey("label "+strconv.Itoa(i))] = st
	}
	b.Run("Snapshot-10-labels", func(b *testing.B) {
		b.ReportAllocs()
		var enc []byte
		for b.Loop() {
			enc, _ = s.MarshalBinary()
		}
		b.ReportMetric(float64(len(enc)), "bytes")
	})
	b.Run("Snapshot-10-labels/unmarshal", func(b *testing.B) {
		enc := marshal(b, s)
		b.ReportAllocs()
		for b.Loop() {
			var into metrics.Snapshot
			if err := into.UnmarshalBinary(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMerge(b *testing.B) {
	rng := rand.New(rand.NewPCG(21, 22))
	src := typicalSecond(rng)
	dst := metrics.NewHistogram()
	b.ReportAllocs()
	for b.Loop() {
		dst.Merge(src)
	}
}

func BenchmarkQuantile(b *testing.B) {
	h := typicalSecond(rand.New(rand.NewPCG(23, 24)))
	b.ReportAllocs()
	for b.Loop() {
		h.Quantile(0.99)
	}
}
