package runs

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/sweep"
)

// RunSweep is p's ended sweep run id: the levels its agent measured, fitted and judged. A run
// that is not a sweep, or another user's, is not found; one that goes on is a conflict.
func (s *Service) RunSweep(ctx context.Context, p barrage.Principal, id uuid.UUID) (*sweep.Result, error) {
	r, err := s.Run(ctx, p, id)
	if err != nil {
		return nil, err
	}
	sw := r.Load.Sweep
	switch {
	case sw == nil:
		return nil, barrage.Errorf(barrage.ErrNotFound, "run %s is not a sweep", id)
	case r.EndedAt == nil:
		return nil, barrage.Errorf(barrage.ErrConflict, "sweep %s has not ended yet: its levels come when it has", id)
	}
	accounts, err := s.store.ShardAccounts(ctx, id)
	if err != nil {
		return nil, err
	}
	var levels []sweep.Level
	for _, a := range accounts {
		if len(a.Result) == 0 {
			continue // the shard ended without an account: lost, or refused
		}
		l, err := sweep.LevelsOf(a.Result)
		if err != nil {
			return nil, fmt.Errorf("run %s shard %s: its account: %w", id, a.ShardID, err)
		}
		levels = append(levels, l...)
	}
	// Only the run's own levels, in its order, are judged: an agent's account of others is not.
	var kept []sweep.Level
	for _, l := range levels {
		if len(kept) < len(sw.VUs) && l.VUs == sw.VUs[len(kept)] {
			kept = append(kept, l)
		}
	}
	levels = kept
	name := ""
	if facts, err := s.facts(ctx, r); err == nil {
		name = facts.Script
	} else {
		s.factsMissing(ctx, r, "its sweep goes without its script's name", err)
	}
	return sweep.NewResult(name, sw.Step, levels), nil
}
