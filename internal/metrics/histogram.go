package metrics

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The bucket layout is HdrHistogram's with a unit of 1 µs and 3 significant digits: 2048
// sub-buckets, so every value is kept to within 1/1024 of itself (under 0.1%), and values below
// 2048 µs are kept exactly. Each further bucket doubles the range at the same relative precision;
// 22 buckets reach 2^32-1 µs (about 71.6 minutes), far beyond any request timeout, so clamping is
// a safety net rather than something a real test meets.
//
// Counters live in a flat index space of (bucketCount+1)*1024 slots, as in HdrHistogram: index i
// below 2048 holds the value i; above, each 1024 slots cover one power of two. The slots are
// split into pages allocated on first use, because a full array is 184 KB and most histograms
// (one per label per second) touch a few pages only.
const (
	subBucketBits      = 11
	subBucketCount     = 1 << subBucketBits // 2048
	subBucketHalfBits  = subBucketBits - 1
	subBucketHalfCount = 1 << subBucketHalfBits // 1024
	subBucketMask      = subBucketCount - 1
	bucketCount        = 22
	countsLen          = (bucketCount + 1) * subBucketHalfCount // 23552

	// maxMicros is the highest trackable value, in µs: 2^32-1, about 71.6 minutes.
	maxMicros = subBucketCount<<(bucketCount-1) - 1

	pageBits  = 8
	pageSize  = 1 << pageBits // 256 counters, 2 KB
	pageMask  = pageSize - 1
	pageCount = countsLen / pageSize // 92
)

// MaxLatency is the highest latency a Histogram tells apart (2^32-1 µs, about 71.6 minutes).
// Longer latencies are recorded as MaxLatency and counted by Histogram.Clamped, so a count is
// never lost and the overflow is visible.
const MaxLatency = maxMicros * time.Microsecond

type page [pageSize]atomic.Int64

// Histogram is a latency histogram with HdrHistogram's log-linear buckets: 1 µs unit, 3
// significant digits, up to MaxLatency. Bucket counts simply add, so merging the histograms of
// many seconds or many agents gives exactly the histogram of all their samples, and percentiles
// of any span can be read from the merge.
//
// Every method is safe for concurrent use: recording costs a few atomic adds and no allocation
// once the pages it touches exist (a Recorder keeps them). Readers running while others record
// see each counter atomically but not the histogram as a whole, so read a histogram nobody
// records into when the figures must agree (MarshalBinary in particular: its output is checked on
// decoding). The zero value is an empty histogram ready for use; a Histogram must not be copied.
type Histogram struct {
	count   atomic.Int64
	sum     atomic.Int64 // µs
	max     atomic.Int64 // µs; 0 when empty
	minInv  atomic.Int64 // maxMicros+1-min, so that "new minimum" is a raise and 0 means empty
	clamped atomic.Int64
	pages   [pageCount]atomic.Pointer[page]
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return new(Histogram) }

// Record adds one sample. Latencies are kept in whole microseconds (truncated); anything below
// 1 µs, including a negative duration from a clock step, counts as 1 µs, and anything above
// MaxLatency counts as MaxLatency.
func (h *Histogram) Record(d time.Duration) { h.record(d, 1) }

// RecordN adds n samples of the same latency, as Record would n times. n <= 0 records nothing.
func (h *Histogram) RecordN(d time.Duration, n int64) {
	if n > 0 {
		h.record(d, n)
	}
}

func (h *Histogram) record(d time.Duration, n int64) {
	v := int64(d / time.Microsecond)
	if v < 1 {
		v = 1
	} else if v > maxMicros {
		v = maxMicros
		h.clamped.Add(n)
	}
	h.counter(index(v)).Add(n)
	h.count.Add(n)
	h.sum.Add(v * n)
	// Loads first: after the first few samples the extremes rarely move, and a plain load keeps
	// the cache line shared between cores where a CAS would take it.
	if v > h.max.Load() {
		raise(&h.max, v)
	}
	if inv := maxMicros + 1 - v; inv > h.minInv.Load() {
		raise(&h.minInv, inv)
	}
}

// raise sets a to v unless another goroutine has already set it higher.
func raise(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// counter returns the counter of slot i, allocating its page on first use.
func (h *Histogram) counter(i int) *atomic.Int64 {
	p := h.pages[i>>pageBits].Load()
	if p == nil {
		p = h.newPage(i >> pageBits)
	}
	return &p[i&pageMask]
}

// newPage installs page pi unless a concurrent recorder did so first.
func (h *Histogram) newPage(pi int) *page {
	p := new(page)
	if h.pages[pi].CompareAndSwap(nil, p) {
		return p
	}
	return h.pages[pi].Load()
}

// index is the counter slot of v µs, 1 <= v <= maxMicros.
func index(v int64) int {
	b := bits.Len64(uint64(v)|subBucketMask) - subBucketBits
	return (b+1)<<subBucketHalfBits + int(v>>b) - subBucketHalfCount
}

// lowestValue is the smallest value, in µs, that falls in slot i.
func lowestValue(i int) int64 {
	b := i>>subBucketHalfBits - 1
	sub := int64(i&(subBucketHalfCount-1) + subBucketHalfCount)
	if b < 0 {
		return sub - subBucketHalfCount
	}
	return sub << b
}

// highestValue is the largest value, in µs, that falls in slot i.
func highestValue(i int) int64 {
	b := max(i>>subBucketHalfBits-1, 0)
	return lowestValue(i) + 1<<b - 1
}

// Count is the number of samples.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Clamped is how many samples exceeded MaxLatency and were recorded as MaxLatency.
func (h *Histogram) Clamped() int64 { return h.clamped.Load() }

// Min is the smallest sample, exact to the microsecond; 0 when empty.
func (h *Histogram) Min() time.Duration {
	inv := h.minInv.Load()
	if inv == 0 {
		return 0
	}
	return time.Duration(maxMicros+1-inv) * time.Microsecond
}

// Max is the largest sample, exact to the microsecond; 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) * time.Microsecond }

// Mean is the exact mean of the samples (their sum is kept, not estimated from buckets); 0 when
// empty.
func (h *Histogram) Mean() time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(float64(h.sum.Load()) / float64(n) * float64(time.Microsecond))
}

// Quantile returns the latency at quantile q, q in [0, 1] (0.95 for p95; q outside is clamped),
// with HdrHistogram's "value at percentile" meaning: the largest value of the bucket that holds
// the k-th smallest sample, k = ceil(q*Count) and at least 1, capped at Max. So at least a
// fraction q of the samples are at or below the result, and the result exceeds the true k-th
// sample by less than 0.1% (by nothing below 2048 µs). Quantile(1) is Max. 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	k := rank(q, n)
	hi := h.max.Load()
	var seen int64
	for pi := range h.pages {
		p := h.pages[pi].Load()
		if p == nil {
			continue
		}
		for j := range p {
			if seen += p[j].Load(); seen >= k {
				return time.Duration(min(highestValue(pi<<pageBits+j), hi)) * time.Microsecond
			}
		}
	}
	// Only reached when a concurrent Record has counted a sample but not yet its bucket.
	return time.Duration(hi) * time.Microsecond
}

// rank is the 1-based rank of the sample at quantile q of n samples: ceil(q*n) in [1, n]. The
// product is shaved by a few ulps first, so that 0.95*100, which floating point makes
// 95.00000000000001, is rank 95 and not 96.
func rank(q float64, n int64) int64 {
	if !(q > 0) { // also NaN
		return 1
	}
	if q >= 1 {
		return n
	}
	k := int64(math.Ceil(q * float64(n) * (1 - 4*0x1p-52)))
	return min(max(k, 1), n)
}

// Merge adds every sample of o to h. It is exact: counts, sum, minimum and maximum combine
// without loss, so percentiles read from the merge are those of all the samples together.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	for pi := range o.pages {
		op := o.pages[pi].Load()
		if op == nil {
			continue
		}
		var hp *page
		for j := range op {
			c := op[j].Load()
			if c == 0 {
				continue
			}
			if hp == nil {
				hp = h.pageAt(pi)
			}
			hp[j].Add(c)
		}
	}
	h.count.Add(o.count.Load())
	h.sum.Add(o.sum.Load())
	h.clamped.Add(o.clamped.Load())
	raise(&h.max, o.max.Load())
	raise(&h.minInv, o.minInv.Load())
}

// pageAt returns page pi, allocating it on first use.
func (h *Histogram) pageAt(pi int) *page {
	if p := h.pages[pi].Load(); p != nil {
		return p
	}
	return h.newPage(pi)
}

// moveTo adds h's samples to dst and leaves h empty, keeping h's pages for reuse. It reads and
// clears each counter in one pass, touching only counters that hold something, which is what
// makes rotating a Recorder every second cheap. Nothing may record into h meanwhile.
func (h *Histogram) moveTo(dst *Histogram) {
	for pi := range h.pages {
		p := h.pages[pi].Load()
		if p == nil {
			continue
		}
		var dp *page
		for j := range p {
			c := p[j].Load()
			if c == 0 {
				continue
			}
			if dp == nil {
				dp = dst.pageAt(pi)
			}
			dp[j].Add(c)
			p[j].Store(0)
		}
	}
	dst.count.Add(h.count.Swap(0))
	dst.sum.Add(h.sum.Swap(0))
	dst.clamped.Add(h.clamped.Swap(0))
	raise(&dst.max, h.max.Swap(0))
	raise(&dst.minInv, h.minInv.Swap(0))
}

// Clone returns an independent copy of h, with pages only where h has samples.
func (h *Histogram) Clone() *Histogram {
	c := NewHistogram()
	c.Merge(h)
	return c
}

// Reset empties h. Its pages stay allocated, so refilling it does not allocate again.
func (h *Histogram) Reset() {
	for pi := range h.pages {
		p := h.pages[pi].Load()
		if p == nil {
			continue
		}
		for j := range p {
			if p[j].Load() != 0 {
				p[j].Store(0)
			}
		}
	}
	h.count.Store(0)
	h.sum.Store(0)
	h.clamped.Store(0)
	h.max.Store(0)
	h.minInv.Store(0)
}

// MemoryBytes is the memory h holds: the fixed part plus 2 KB for every page of 256 counters in
// use. It lets callers watch what keeping many histograms costs.
func (h *Histogram) MemoryBytes() int {
	n := int(sizeofHistogram)
	for pi := range h.pages {
		if h.pages[pi].Load() != nil {
			n += pageSize * 8
		}
	}
	return n
}

// sizeofHistogram is unsafe.Sizeof(Histogram{}), spelled out to keep unsafe out of the package.
const sizeofHistogram = 5*8 + pageCount*8
