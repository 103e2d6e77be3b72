package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/summary"
)

// Compare holds p's run id against p's run base, as `barrage compare` holds two local results:
// both must have ended. Another user's run is not found.
func (s *Service) Compare(ctx context.Context, p barrage.Principal, id, base uuid.UUID, tol summary.Tolerances) (summary.Comparison, error) {
	var results [2]*summary.Result
	for i, runID := range []uuid.UUID{base, id} {
		r, err := s.result(ctx, p, runID)
		if err != nil {
			return summary.Comparison{}, err
		}
		results[i] = r
	}
	return summary.Compare(results[0], results[1], tol), nil
}

// result is p's ended run id as a local run's result: its summary and its seconds.
func (s *Service) result(ctx context.Context, p barrage.Principal, id uuid.UUID) (*summary.Result, error) {
	run, err := s.Run(ctx, p, id)
	if err != nil {
		return nil, err
	}
	doc, err := s.Summary(ctx, p, id)
	if err != nil {
		return nil, barrage.Errorf(barrage.ErrConflict, "run %s has not ended yet: it is compared once it has", id)
	}
	var sum Summary
	if err := json.Unmarshal(doc, &sum); err != nil {
		return nil, fmt.Errorf("run %s: stored summary: %w", id, err)
	}
	r := &summary.Result{Summary: sum.Summary, ElapsedS: sum.ElapsedS, Series: []summary.Point{}}
	err = s.eachSecond(ctx, run, true, func(m *MergedSecond) error {
		var vus int64
		for _, part := range m.Shards {
			vus += part.Health.ActiveVUs
		}
		r.Series = append(r.Series, summary.NewPoint(m.Index, m.Snapshot, vus))
		return nil
	})
	return r, err
}
