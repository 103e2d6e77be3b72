package runs

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/threshold"
)

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
	woken, stop := s.deps.Changes.Subscribe(id.String())
	defer stop()
	r, err := s.store.Run(ctx, p.Projects(barrage.ProjectViewer), id)
	if err != nil {
		return err
	}
	var monitors []string
	steady := new(summary.LiveStability) // the script unknown: no steady state to follow
	var judged *threshold.Watch
	if facts, err := s.facts(ctx, r); err == nil {
		for _, ser := range facts.Monitors {
			monitors = append(monitors, ser.Monitor+": "+ser.Series)
		}
		if r.Load.Sweep == nil { // a sweep's load changes on purpose: no steady state to follow
			steady = summary.NewLiveStability(facts.Workload)
		}
		if len(facts.Thresholds) > 0 {
			judged = threshold.New(facts.Thresholds)
		}
	} else {
		s.factsMissing(ctx, r, "the live view goes on without its thresholds, stability and monitors", err)
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
		done, err := m.more(ctx, s.store, r)
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
		if r, err = s.store.Run(ctx, p.Projects(barrage.ProjectViewer), id); err != nil {
			return err
		}
	}
}
