package metrics

import (
	"slices"
	"sync"
	"time"
)

// Window keeps the snapshots of a trailing span of time and merges them on demand, for
// thresholds such as "p95 < 300ms over 30s": the percentile comes from the exact merge of the
// span's histograms, never from an average of per-second percentiles. The span is measured back
// from the latest end among the snapshots added, so it follows the data's own clock. It is safe
// for concurrent use.
type Window struct {
	mu    sync.Mutex
	span  time.Duration
	snaps []*Snapshot // sorted by End
}

// NewWindow returns a window over the last span of time.
func NewWindow(span time.Duration) *Window { return &Window{span: span} }

// Add puts s in the window and drops the snapshots that end before the window now starts; s
// itself is dropped if it is already too old. The window keeps s, so s must not change after.
func (w *Window) Add(s *Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := s.End()
	i, _ := slices.BinarySearchFunc(w.snaps, end, func(x *Snapshot, t time.Time) int { return x.End().Compare(t) })
	w.snaps = slices.Insert(w.snaps, i, s)
	from := w.snaps[len(w.snaps)-1].End().Add(-w.span)
	drop := 0
	for drop < len(w.snaps) && !w.snaps[drop].End().After(from) {
		drop++
	}
	w.snaps = slices.Delete(w.snaps, 0, drop)
}

// Len is the number of snapshots in the window.
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.snaps)
}

// Merged returns the merge of the snapshots in the window, a new snapshot the caller owns; it has
// no labels and no interval when the window is empty.
func (w *Window) Merged() *Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := &Snapshot{Labels: map[Key]*Stats{}}
	for _, s := range w.snaps {
		m.Merge(s)
	}
	return m
}
