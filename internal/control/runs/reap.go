package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Reap is the control plane's housekeeping, run every second or two by one replica at a time:
// shards whose agent went silent are lost, shards no agent took fail the run, a run past its
// deadline times out, and a run whose shards have all ended gets its summary.
func (s *Service) Reap(ctx context.Context) error {
	now := s.now()
	var lost []uuid.UUID
	// Right after a start, agents' silence may be the server's own absence (every replica was
	// down): they get LostAfter to report again before they are lost.
	if now.Sub(s.started) >= s.cfg.LostAfter {
		var err error
		lost, err = s.store.LoseSilentShards(ctx, now.Add(-s.cfg.LostAfter),
			fmt.Sprintf("the agent sent nothing for %s; its results until then are kept", s.cfg.LostAfter))
		if err != nil {
			return fmt.Errorf("reap lost shards: %w", err)
		}
	}
	for _, id := range lost {
		s.log.WarnContext(ctx, "a run lost an agent", slog.String("run_id", id.String()))
	}
	runs, err := s.store.OpenRuns(ctx)
	if err != nil {
		return fmt.Errorf("reap: list open runs: %w", err)
	}
	// A run that cannot be watched (its facts do not read, its store fails) is told and left
	// for the next reap: the others are watched all the same.
	var errs []error
	for _, r := range runs {
		if err := s.watch(ctx, r, now); err != nil {
			s.log.ErrorContext(ctx, "reap a run", slog.String("run_id", r.ID.String()), slog.String("error", err.Error()))
			errs = append(errs, fmt.Errorf("reap run %s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// watch ends what a run can no longer expect: unclaimed shards and a passed deadline.
func (s *Service) watch(ctx context.Context, r barrage.Run, now time.Time) error {
	changed := false
	if now.Sub(r.CreatedAt) > s.cfg.Unclaimed {
		for _, sh := range r.Shards {
			if sh.State == barrage.ShardPending {
				if err := s.store.EndPendingShards(ctx, r.ID, barrage.ShardState(barrage.RunFailed),
					fmt.Sprintf("no agent took the shard within %s", s.cfg.Unclaimed)); err != nil {
					return err
				}
				changed = true
				break
			}
		}
	}
	// Agents stop at the deadline on their own clocks; this is the server's net under them.
	if r.StartAt != nil && r.Limits.MaxRunDuration > 0 && now.After(r.StartAt.Add(r.Limits.MaxRunDuration+s.cfg.Unclaimed)) {
		if err := s.store.EndOpenShards(ctx, r.ID, barrage.ShardState(barrage.RunTimedOut),
			"the run went past its deadline and its agent did not end it"); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		var err error
		if r, err = s.store.RunForAgent(ctx, r.ID); err != nil {
			return err
		}
	}
	if r.State == barrage.RunRunning {
		if err := s.judge(ctx, r); err != nil {
			return err
		}
	}
	return s.Finalize(ctx, r)
}
