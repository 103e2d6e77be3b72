package runs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/threshold"
)

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
		facts, err := s.facts(ctx, r)
		if err != nil {
			return err
		}
		j = &judge{merger: newMerger(0, false), start: -1}
		if aborting := facts.Aborting(); len(aborting) > 0 {
			j.watch = threshold.New(aborting)
		}
		s.judges.mu.Lock()
		s.judges.runs[r.ID] = j
		s.judges.mu.Unlock()
	}
	if j.watch == nil || r.Stop != nil {
		return nil
	}
	done, err := j.merger.more(ctx, s.store, r)
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
