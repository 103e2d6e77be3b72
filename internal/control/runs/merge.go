package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
)

// MergedSecond is one second of a run, merged across the shards that reported it.
type MergedSecond struct {
	Index    int64
	Snapshot *metrics.Snapshot
	// Shards are each shard's own part of the second.
	Shards map[uuid.UUID]ShardPart
	// Monitors are the values of the script's monitor series in the second, from the shard
	// that scrapes them; nil when none did.
	Monitors *fleet.MonitorValues
}

// ShardPart is one shard's second: its generator's health and, when the merger keeps parts, its
// own counts (a snapshot without latency histograms: a run's seconds of every shard, kept whole,
// would fill memory).
type ShardPart struct {
	Counts *metrics.Snapshot // nil unless the merger keeps parts
	Health run.Health
}

// straggle is how far the newest second reported may run ahead of a second that a running shard
// has not reported yet before that second is merged without it: a late report must not hold the
// live view, and its own second still counts in the summary.
const straggle = 2

// merger turns the seconds that a run's shards report into the run's seconds, in order, each
// once it is complete: every running shard has reported it (or a later one), or the newest
// second is straggle ahead.
type merger struct {
	// parts says whether each shard's own counts are kept beside the merge (for a summary's
	// shares); the live view needs only the merge.
	parts  bool
	next   int64                   // the first second not yet merged
	latest map[uuid.UUID]int64     // per shard, the newest second reported
	open   map[int64]*MergedSecond // reported, not yet complete
}

func newMerger(from int64, parts bool) *merger {
	return &merger{parts: parts, next: from, latest: map[uuid.UUID]int64{}, open: map[int64]*MergedSecond{}}
}

// add takes the shards' seconds from m.next on (read again each time: those already added are
// skipped before they are decoded) and returns the seconds now complete, in order. A shard's
// second that comes after its second was merged without it is left out here (the summary,
// merged once every shard has ended, has it).
func (m *merger) add(r barrage.Run, secs []barrage.ShardSecond) ([]*MergedSecond, error) {
	newest := int64(-1)
	for _, sec := range secs {
		if sec.Index < m.next {
			continue
		}
		if l, ok := m.latest[sec.ShardID]; !ok || sec.Index > l {
			m.latest[sec.ShardID] = sec.Index
		}
		newest = max(newest, sec.Index)
		ms := m.open[sec.Index]
		if ms == nil {
			ms = &MergedSecond{Index: sec.Index, Snapshot: &metrics.Snapshot{}, Shards: map[uuid.UUID]ShardPart{}}
			m.open[sec.Index] = ms
		}
		if _, dup := ms.Shards[sec.ShardID]; dup {
			continue
		}
		part := ShardPart{}
		if err := json.Unmarshal(sec.Health, &part.Health); err != nil {
			return nil, fmt.Errorf("shard %s second %d: health: %w", sec.ShardID, sec.Index, err)
		}
		if err := ms.Snapshot.MergeBinary(sec.Snapshot); err != nil {
			return nil, fmt.Errorf("shard %s second %d: %w", sec.ShardID, sec.Index, err)
		}
		if len(sec.Monitors) > 0 {
			if err := json.Unmarshal(sec.Monitors, &ms.Monitors); err != nil {
				return nil, fmt.Errorf("shard %s second %d: monitors: %w", sec.ShardID, sec.Index, err)
			}
		}
		if m.parts {
			var err error
			if part.Counts, err = metrics.DecodeCounts(sec.Snapshot); err != nil {
				return nil, fmt.Errorf("shard %s second %d: %w", sec.ShardID, sec.Index, err)
			}
		}
		ms.Shards[sec.ShardID] = part
	}
	for _, ms := range m.open {
		newest = max(newest, ms.Index)
	}
	var out []*MergedSecond
	for ; m.next <= newest; m.next++ {
		if !m.complete(r, m.next, newest) {
			break
		}
		if ms := m.open[m.next]; ms != nil {
			out = append(out, ms)
			delete(m.open, m.next)
		}
	}
	return out, nil
}

// more reads the run's seconds that m has not read yet, and returns the seconds now complete,
// as add does. A follower calls it at each change of the run.
func (m *merger) more(ctx context.Context, store Store, r barrage.Run) ([]*MergedSecond, error) {
	secs, err := store.NewRunSeconds(ctx, r.ID, m.next, m.latest)
	if err != nil {
		return nil, err
	}
	return m.add(r, secs)
}

func (m *merger) complete(r barrage.Run, idx, newest int64) bool {
	if newest-idx >= straggle {
		return true
	}
	for _, sh := range r.Shards {
		if sh.State != barrage.ShardRunning {
			continue // ended, or not started: nothing more to wait for
		}
		if l, ok := m.latest[sh.ID]; !ok || l < idx {
			return false
		}
	}
	return true
}

// Series calls fn with each of p's run id's seconds merged across its agents, in order: all of
// them once it has ended, those complete so far while it goes on.
func (s *Service) Series(ctx context.Context, p barrage.Principal, id uuid.UUID, fn func(*MergedSecond) error) error {
	r, err := s.store.Run(ctx, p.Projects(barrage.ProjectViewer), id)
	if err != nil {
		return err
	}
	return s.eachSecond(ctx, r, false, fn)
}

// chunk is how many seconds of a run are read and merged at a time: a long run's seconds, merged
// all at once, would fill memory.
const chunk = 30

// eachSecond calls fn with each second of run merged across its shards, complete ones only, in
// order, a chunk at a time.
func (s *Service) eachSecond(ctx context.Context, r barrage.Run, parts bool, fn func(*MergedSecond) error) error {
	m := newMerger(0, parts)
	for from := int64(0); ; from += chunk {
		secs, err := s.store.RunSeconds(ctx, r.ID, from, from+chunk)
		if err != nil {
			return err
		}
		if len(secs) == 0 {
			// Nothing in this chunk: the run's seconds are done unless a later one exists, and
			// the walk goes on from the chunk of the first (a gap costs one query, not two a
			// chunk).
			more, err := s.store.RunSeconds(ctx, r.ID, from+chunk, math.MaxInt64)
			if err != nil || len(more) == 0 {
				return err
			}
			from = more[0].Index/chunk*chunk - chunk
			continue
		}
		done, err := m.add(r, secs)
		if err != nil {
			return err
		}
		for _, sec := range done {
			if err := fn(sec); err != nil {
				return err
			}
		}
	}
}
