package control

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/threshold"
)

// MergedSecond is one second of a run, merged across the shards that reported it.
type MergedSecond struct {
	Index    int64
	Snapshot *metrics.Snapshot
	// Shards are each shard's own part of the second.
	Shards map[uuid.UUID]ShardPart
	// Monitors are the values of the script's monitor series in the second, from the shard
	// that scrapes them; nil when none did.
	Monitors *MonitorValues
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

// coalesce is how long a live view waits after a notification before it reads: a run's agents
// report at the same moment, and one read then serves all their reports.
const coalesce = 50 * time.Millisecond

// LiveEvent is what the live view of a run sends: a merged second, a shard whose state changed
// (started, lost, failed, finished...: Shard, with why), or the run as it stands after it
// changed (Run), the last one once the run has ended.
type LiveEvent struct {
	Second *MergedSecond
	Shard  *barrage.Shard
	Run    *barrage.Run
	// Monitors name the series of Second.Monitors ("node: node_load1"), in their order.
	Monitors []string
	// Stability is over the latest seconds of the steady state, up to Second; nil outside it.
	Stability *summary.Stability
	// Thresholds are the script's thresholds judged on the run up to Second, as its summary
	// would were it to end there.
	Thresholds []summary.Threshold
}

// Live follows p's run id from the second after `after` (-1 for the start), calling emit with
// each merged second as it completes and with the run each time its state changes, until the
// run has ended and every second was sent, or ctx ends. It wakes when any replica notifies a
// change of the run, and looks again every second regardless.
func (s *Service) Live(ctx context.Context, p barrage.Principal, id uuid.UUID, after int64, emit func(LiveEvent) error) error {
	woken, stop := s.runs.Subscribe(id.String())
	defer stop()
	r, err := s.store.Run(ctx, p.User.ID, id)
	if err != nil {
		return err
	}
	var monitors []string
	steady := new(summary.LiveStability) // the script unknown: no steady state to follow
	var judged *threshold.Watch
	if sc, err := s.runScript(ctx, r); err == nil {
		for _, ser := range monitor.Skeleton(sc.Monitors) {
			monitors = append(monitors, ser.Monitor+": "+ser.Series)
		}
		if r.Load.Sweep == nil { // a sweep's load changes on purpose: no steady state to follow
			steady = summary.NewLiveStability(run.Workload(sc, r.Load))
		}
		if len(sc.Thresholds) > 0 {
			judged = threshold.New(sc.Thresholds)
		}
	}
	// Every second from the run's first: the stability and the thresholds judge them all, and
	// those up to `after`, which the follower has, are not sent again.
	m := newMerger(0, false)
	last := barrage.RunState("")
	// The shards' states as the stream last told them: the run's first event tells them all,
	// a shard event each change after.
	shards := map[uuid.UUID]barrage.ShardState{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		// The seconds first, then the state they led to: the end is the stream's last event,
		// after every second of the run.
		secs, err := s.store.RunSeconds(ctx, id, m.next, math.MaxInt64)
		if err != nil {
			return err
		}
		done, err := m.add(r, secs)
		if err != nil {
			return err
		}
		for _, sec := range done {
			rps := float64(sec.Snapshot.Requests().Requests) / max(sec.Snapshot.Duration.Seconds(), 1)
			ev := LiveEvent{Second: sec, Monitors: monitors, Stability: steady.Add(sec.Index, rps)}
			if judged != nil {
				elapsed := time.Duration(sec.Index+1) * time.Second
				judged.Observe(sec.Snapshot, elapsed)
				ev.Thresholds = summary.Thresholds(judged.Standing(elapsed))
			}
			if sec.Index <= after {
				continue
			}
			if err := emit(ev); err != nil {
				return err
			}
		}
		if last != "" {
			for _, sh := range r.Shards {
				if shards[sh.ID] != sh.State {
					if err := emit(LiveEvent{Shard: &sh}); err != nil {
						return err
					}
				}
			}
		}
		for _, sh := range r.Shards {
			shards[sh.ID] = sh.State
		}
		if r.State != last {
			last = r.State
			if err := emit(LiveEvent{Run: &r}); err != nil {
				return err
			}
		}
		if r.EndedAt != nil && len(m.open) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-woken:
			// The agents of a run report together: let the others' reports of the same
			// moment arrive, and read them all at once.
			t := time.NewTimer(coalesce)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		case <-tick.C:
		}
		if r, err = s.store.Run(ctx, p.User.ID, id); err != nil {
			return err
		}
	}
}

// judges keeps, per running run with aborting thresholds, the threshold watch over its merged
// seconds, so that an aborting threshold that breaks stops every shard. Each replica keeps its
// own (a replica that starts reads the run's seconds from the start); the stop is recorded once.
type judges struct {
	mu   sync.Mutex
	runs map[uuid.UUID]*judge
}

type judge struct {
	merger *merger
	watch  *threshold.Watch
	start  int64 // the first second, for elapsed times
}

func newJudges() *judges { return &judges{runs: map[uuid.UUID]*judge{}} }

// judge feeds a running run's newly complete seconds to its aborting thresholds, and stops the
// run when one breaks.
func (s *Service) judge(ctx context.Context, r barrage.Run) error {
	s.judges.mu.Lock()
	j := s.judges.runs[r.ID]
	s.judges.mu.Unlock()
	if j == nil {
		parsed, err := s.runScript(ctx, r)
		if err != nil {
			return err
		}
		var aborting []*script.Threshold
		for _, t := range parsed.Thresholds {
			if t.Abort {
				aborting = append(aborting, t)
			}
		}
		j = &judge{merger: newMerger(0, false), start: -1}
		if len(aborting) > 0 {
			j.watch = threshold.New(aborting)
		}
		s.judges.mu.Lock()
		s.judges.runs[r.ID] = j
		s.judges.mu.Unlock()
	}
	if j.watch == nil || r.Stop != nil {
		return nil
	}
	secs, err := s.store.RunSeconds(ctx, r.ID, j.merger.next, math.MaxInt64)
	if err != nil {
		return err
	}
	done, err := j.merger.add(r, secs)
	if err != nil {
		return err
	}
	for _, sec := range done {
		if j.start < 0 {
			j.start = sec.Index
		}
		why := j.watch.Observe(sec.Snapshot, time.Duration(sec.Index+1)*time.Second)
		if why == "" {
			continue
		}
		stopped, err := s.store.StopRun(ctx, r.ID, barrage.RunAbortedThreshold, why)
		if err != nil {
			return err
		}
		if stopped {
			s.log.InfoContext(ctx, "run aborted by a threshold", slog.String("run_id", r.ID.String()), slog.String("reason", why))
		}
		return nil
	}
	return nil
}

// forget drops the judge of a run that has ended.
func (j *judges) forget(id uuid.UUID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.runs, id)
}

// Series calls fn with each of p's run id's seconds merged across its agents, in order: all of
// them once it has ended, those complete so far while it goes on.
func (s *Service) Series(ctx context.Context, p barrage.Principal, id uuid.UUID, fn func(*MergedSecond) error) error {
	r, err := s.store.Run(ctx, p.User.ID, id)
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
