package metrics

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder is where the engine records requests while a run goes on, and what it rotates into a
// Snapshot each second. Labels are fixed when it is made (the engine knows them once the script
// is compiled), so a LabelRecorder is looked up once and recording needs no map, hashing or lock.
//
// Rotation loses and double-counts nothing, and each Snapshot is consistent in itself (its
// Requests equal its latency Count): each label keeps two sets of counters and records into the
// current one through an atomic pointer. A recording goroutine announces itself in the set's
// in-flight count before writing and re-checks the pointer, backing off to the new set if a
// rotation swapped it meanwhile. Rotate swaps the pointer, waits until the old set's in-flight
// count is zero (writers hold it for a few atomic adds), then moves the old set's counts into the
// snapshot and keeps the emptied set, pages and all, as the next spare. So once a label's
// latencies have spread over their range, recording never allocates, and rotation allocates only
// the snapshot it returns (pages where that second has samples).
type Recorder struct {
	mu     sync.Mutex // serialises Rotate and Total
	byIdx  []*LabelRecorder
	labels []*LabelRecorder // distinct labels, in the order first named
	start  time.Time        // of the interval being recorded
	total  *Snapshot        // every rotated interval merged
}

// NewRecorder returns a recorder for the given labels, whose first interval starts at start. A
// key given twice yields one label: both indexes record into it.
func NewRecorder(labels []Key, start time.Time) *Recorder {
	r := &Recorder{byIdx: make([]*LabelRecorder, len(labels)), start: start,
		total: &Snapshot{Start: start, Labels: map[Key]*Stats{}}}
	seen := make(map[Key]*LabelRecorder, len(labels))
	for i, name := range labels {
		l := seen[name]
		if l == nil {
			l = &LabelRecorder{key: name, spare: new(liveStats)}
			l.cur.Store(new(liveStats))
			seen[name] = l
			r.labels = append(r.labels, l)
		}
		r.byIdx[i] = l
	}
	return r
}

// Label returns the recorder of the i-th label given to NewRecorder. It panics if i is out of
// range, as indexing would.
func (r *Recorder) Label(i int) *LabelRecorder { return r.byIdx[i] }

// Len is the number of labels given to NewRecorder, repeated names included.
func (r *Recorder) Len() int { return len(r.byIdx) }

// Rotate ends the interval being recorded at now and returns it as a Snapshot, holding the labels
// that had requests; recording goes on into the next interval meanwhile, never blocked. The
// caller owns the snapshot. Every record lands in exactly one snapshot: the one whose interval
// was current when it took hold of its label's counters.
//
// Rotate waits for records already under way. They take nanoseconds and never block, so the wait
// is nil unless the scheduler paused a goroutine in the middle of one (for the GC, say, or
// because it ran 10 ms without blocking, which a virtual user waiting on the network rarely
// does); then Rotate yields until that goroutine has run again, which on a saturated machine can
// take a scheduling round. The interval still ends at the swap, so only the snapshot's delivery
// is late, never its figures wrong.
func (r *Recorder) Rotate(now time.Time) *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := &Snapshot{Start: r.start, Duration: now.Sub(r.start), Labels: map[Key]*Stats{}}
	// Swap every label first, so that the labels' intervals end together, then drain.
	old := make([]*liveStats, len(r.labels))
	for i, l := range r.labels {
		old[i] = l.cur.Swap(l.spare)
	}
	for i, l := range r.labels {
		s := old[i]
		for spins := 0; s.inflight.Load() != 0; spins++ {
			if spins >= 100 { // not a record running on another core: let the holder run
				runtime.Gosched()
			}
		}
		if s.hist.count.Load() != 0 {
			snap.Labels[l.key] = s.drain()
		}
		l.spare = s
	}
	r.total.Merge(snap)
	r.start = now
	return snap
}

// Total returns the cumulative figures of the run: every interval rotated so far, merged. Records
// since the last Rotate are not in it, so rotate once more when load stops.
func (r *Recorder) Total() *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total.Clone()
}

// LabelRecorder records the requests of one label. It is safe for concurrent use.
type LabelRecorder struct {
	key   Key
	cur   atomic.Pointer[liveStats]
	spare *liveStats // owned by Rotate, under Recorder.mu
}

// Key is the label's key.
func (l *LabelRecorder) Key() Key { return l.key }

// Record counts one request: how long it took (measured from its intended start under an
// arrival-rate model), the bytes it read and wrote, and its error class, NoError for a success.
// It does not allocate once the label's counter pages exist, takes no lock, and panics on a
// class outside the defined ones.
func (l *LabelRecorder) Record(latency time.Duration, bytesIn, bytesOut int64, class ErrorClass) {
	if class >= NumErrorClasses {
		// Before taking hold of the counters: a panic while holding them would stall Rotate.
		panic(fmt.Sprintf("metrics: record with error class %d", class))
	}
	s := l.acquire()
	s.hist.record(latency, 1)
	if bytesIn != 0 {
		s.bytesIn.Add(bytesIn)
	}
	if bytesOut != 0 {
		s.bytesOut.Add(bytesOut)
	}
	if class != NoError {
		s.errors[class].Add(1)
	}
	s.inflight.Add(-1)
}

// acquire returns the current counters with the caller counted in their in-flight count. The
// re-check after announcing closes the race with Rotate: a writer that announced itself on a set
// already swapped out sees so, backs off, and takes the new set. One that passes the re-check
// announced itself before Rotate could see the count at zero, so Rotate waits for it.
func (l *LabelRecorder) acquire() *liveStats {
	for {
		s := l.cur.Load()
		s.inflight.Add(1)
		if l.cur.Load() == s {
			return s
		}
		s.inflight.Add(-1)
	}
}

// liveStats are one label's counters for one interval, as recorders update them.
type liveStats struct {
	inflight atomic.Int64
	errors   [NumErrorClasses]atomic.Int64
	bytesIn  atomic.Int64
	bytesOut atomic.Int64
	hist     Histogram
}

// drain moves the counters into new Stats and leaves s zeroed, its histogram pages kept. Nothing
// may record into s meanwhile.
func (s *liveStats) drain() *Stats {
	st := NewStats()
	st.Requests = s.hist.count.Load()
	for c := range s.errors {
		st.Errors[c] = s.errors[c].Swap(0)
	}
	st.BytesIn = s.bytesIn.Swap(0)
	st.BytesOut = s.bytesOut.Swap(0)
	s.hist.moveTo(st.Latency)
	return st
}
