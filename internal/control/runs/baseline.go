package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/summary"
)

// SetBaseline makes run runID the baseline of test id (p an editor of the test's project): every
// run of the test that finishes after it is compared with it, within tol (nil: the defaults),
// and keeps the comparison in its summary. The run must be one of the test's, and have
// finished.
func (s *Service) SetBaseline(ctx context.Context, p barrage.Principal, id, runID uuid.UUID, tol *summary.Tolerances) (barrage.Test, error) {
	t, err := s.deps.Tests.Test(ctx, p, id)
	if err != nil {
		return barrage.Test{}, err
	}
	if err := p.Need(t.ProjectID, barrage.ProjectEditor); err != nil {
		return barrage.Test{}, err
	}
	r, err := s.store.Run(ctx, []uuid.UUID{t.ProjectID}, runID)
	switch {
	case errors.Is(err, barrage.ErrNotFound):
		return barrage.Test{}, barrage.Invalid("run_id", "the test's project has no run with this id")
	case err != nil:
		return barrage.Test{}, err
	case r.Manifest.TestID == nil || *r.Manifest.TestID != id:
		return barrage.Test{}, barrage.Invalid("run_id", fmt.Sprintf("run %s is not a run of this test", runID))
	case r.EndedAt == nil:
		return barrage.Test{}, barrage.Invalid("run_id", fmt.Sprintf("run %s has not ended: a baseline is a run that finished", runID))
	case r.State != barrage.RunFinished:
		return barrage.Test{}, barrage.Invalid("run_id", fmt.Sprintf("run %s ended %s (%s): a baseline is a run that finished", runID, r.State, r.Reason))
	}
	b := &barrage.TestBaseline{RunID: runID}
	if tol != nil {
		if b.Tolerances, err = json.Marshal(tol); err != nil {
			return barrage.Test{}, err
		}
	}
	t, err = s.store.SetTestBaseline(ctx, p.Projects(barrage.ProjectEditor), id, b)
	return t, p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindTest, id)
}

// ClearBaseline leaves test id without a baseline (p an editor of its project): its later runs
// are compared with none.
func (s *Service) ClearBaseline(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Test, error) {
	t, err := s.store.SetTestBaseline(ctx, p.Projects(barrage.ProjectEditor), id, nil)
	return t, p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindTest, id)
}

// Tolerances are the tolerances of baseline b: the defaults unless it was given its own.
func Tolerances(b *barrage.TestBaseline) (summary.Tolerances, error) {
	tol := summary.DefaultTolerances
	if b == nil || len(b.Tolerances) == 0 {
		return tol, nil
	}
	err := json.Unmarshal(b.Tolerances, &tol)
	return tol, err
}

// MaxTrendRuns bounds the runs of a trend.
const MaxTrendRuns = 200

// Trend is the trend of test id of p's projects over its newest limit ended runs.
func (s *Service) Trend(ctx context.Context, p barrage.Principal, id uuid.UUID, limit int) (summary.Trend, error) {
	t, err := s.deps.Tests.Test(ctx, p, id)
	if err != nil {
		return summary.Trend{}, err
	}
	rows, err := s.store.TestTrend(ctx, p.Projects(barrage.ProjectViewer), id, min(max(limit, 1), MaxTrendRuns))
	if err != nil {
		return summary.Trend{}, err
	}
	var baseline *uuid.UUID
	if t.Baseline != nil {
		baseline = &t.Baseline.RunID
	}
	return summary.NewTrend(id, baseline, rows)
}

// againstBaseline holds run r, whose result is next, against the baseline of its test, if it
// has one (and r is not it): nil when it has none.
func (s *Service) againstBaseline(ctx context.Context, r barrage.Run, next *summary.Result) (*summary.BaselineComparison, error) {
	if r.Manifest.TestID == nil {
		return nil, nil
	}
	b, err := s.store.TestBaselineOf(ctx, *r.Manifest.TestID)
	if errors.Is(err, barrage.ErrNotFound) || (err == nil && (b == nil || b.RunID == r.ID)) {
		return nil, nil // the test was deleted, or has no baseline
	} else if err != nil {
		return nil, err
	}
	tol, err := Tolerances(b)
	if err != nil {
		return nil, fmt.Errorf("test %s: baseline tolerances: %w", *r.Manifest.TestID, err)
	}
	baseRun, err := s.store.RunForAgent(ctx, b.RunID)
	if err != nil {
		return nil, fmt.Errorf("baseline run %s: %w", b.RunID, err)
	}
	doc, err := s.store.RunSummary(ctx, []uuid.UUID{baseRun.ProjectID}, b.RunID)
	if err != nil {
		return nil, fmt.Errorf("baseline run %s: summary: %w", b.RunID, err)
	}
	var baseSum summary.Document
	if err := json.Unmarshal(doc, &baseSum); err != nil {
		return nil, fmt.Errorf("baseline run %s: stored summary: %w", b.RunID, err)
	}
	base, err := s.resultOf(ctx, baseRun, &baseSum)
	if err != nil {
		return nil, err
	}
	return &summary.BaselineComparison{RunID: b.RunID, Comparison: summary.Compare(base, next, tol)}, nil
}
