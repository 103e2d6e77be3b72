package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/report"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/summary"
)

// Compare holds p's run id against p's run base, as `barrage compare` holds two local results:
// both must have ended. Another user's run is not found.
func (s *Service) Compare(ctx context.Context, p barrage.Principal, id, base uuid.UUID, tol summary.Tolerances) (summary.Comparison, error) {
	var results [2]*summary.Result
	for i, runID := range []uuid.UUID{base, id} {
		r, _, err := s.result(ctx, p, runID)
		if err != nil {
			return summary.Comparison{}, err
		}
		results[i] = r
	}
	return summary.Compare(results[0], results[1], tol), nil
}

// reportTrendRuns is how many of its test's runs a run's report lists.
const reportTrendRuns = 10

// RunReport is the report on p's ended run id, as `barrage report` writes a local run's, with its
// agents; held against p's run base, when given, within tol.
func (s *Service) RunReport(ctx context.Context, p barrage.Principal, id uuid.UUID, base *uuid.UUID, tol summary.Tolerances) (report.Report, error) {
	r, sum, err := s.result(ctx, p, id)
	if err != nil {
		return report.Report{}, err
	}
	rn, err := s.Run(ctx, p, id)
	if err != nil {
		return report.Report{}, err
	}
	rep := report.Report{Title: fmt.Sprintf("%s, run %s", r.Script, id), Run: r, Generated: s.now(),
		State: string(sum.State), Reason: sum.Reason}
	accounts, err := s.store.ShardAccounts(ctx, id)
	if err != nil {
		return report.Report{}, err
	}
	names := map[uuid.UUID]string{}
	for _, a := range accounts {
		names[a.ShardID] = a.AgentName
	}
	acc, uncounted := shardAccounts(accounts)
	rep.Uncounted = uncounted
	r.Iterations, r.Dropped, r.Interrupted, r.Unsent = acc.Iterations, acc.Dropped, acc.Interrupted, acc.Unsent
	r.MonitorFailures = append(r.MonitorFailures, acc.MonitorFailures...)
	for _, a := range sum.Agents {
		name := fmt.Sprintf("shard %s (its agent was removed)", a.ShardID)
		if a.AgentID != nil {
			name = fmt.Sprintf("%s (%s)", names[a.ShardID], a.AgentID)
		}
		rep.Agents = append(rep.Agents, report.Agent{Name: name, State: a.State, Reason: a.Reason, Requests: a.Requests,
			Seconds: a.Seconds, LateStartMS: a.LateStartMS, Verdict: a.Verdict})
	}
	switch {
	case base != nil:
		b, _, err := s.result(ctx, p, *base)
		if err != nil {
			return report.Report{}, err
		}
		c := summary.Compare(b, r, tol)
		rep.Base, rep.BaseTitle, rep.Comparison = b, fmt.Sprintf("run %s", *base), &c
	case sum.Baseline != nil:
		// Held against its test's baseline when it ended: that comparison, as it was judged.
		b, _, err := s.result(ctx, p, sum.Baseline.RunID)
		if err == nil {
			rep.Base, rep.BaseTitle, rep.Comparison = b, fmt.Sprintf("the test's baseline, run %s", sum.Baseline.RunID), &sum.Baseline.Comparison
		} else if !errors.Is(err, barrage.ErrNotFound) {
			return report.Report{}, err
		}
	}
	if test := rn.Manifest.TestID; test != nil {
		tr, err := s.Trend(ctx, p, *test, reportTrendRuns)
		switch {
		case err == nil:
			rep.Trend, rep.RunID = &tr, id
		case !errors.Is(err, barrage.ErrNotFound): // a deleted test has no trend
			return report.Report{}, err
		}
	}
	return rep, nil
}

// result is p's ended run id as a local run's result: its summary and its seconds, with the
// summary the server stored.
func (s *Service) result(ctx context.Context, p barrage.Principal, id uuid.UUID) (*summary.Result, *summary.Document, error) {
	rn, err := s.Run(ctx, p, id)
	if err != nil {
		return nil, nil, err
	}
	doc, err := s.Summary(ctx, p, id)
	if err != nil {
		return nil, nil, barrage.Errorf(barrage.ErrConflict, "run %s has not ended yet: it is compared and reported once it has", id)
	}
	var sum summary.Document
	if err := json.Unmarshal(doc, &sum); err != nil {
		return nil, nil, fmt.Errorf("run %s: stored summary: %w", id, err)
	}
	if sum.State == "" { // summarized before summaries told it
		sum.State, sum.Reason = rn.State, rn.Reason
	}
	r, err := s.resultOf(ctx, rn, &sum)
	return r, &sum, err
}

// resultOf is run rn, summarized in sum, as a local run's result: the summary and the run's
// seconds.
func (s *Service) resultOf(ctx context.Context, rn barrage.Run, sum *summary.Document) (*summary.Result, error) {
	r := &summary.Result{Summary: sum.Summary, ElapsedS: sum.ElapsedS, Series: []summary.Point{}, RequestSeries: map[string][]summary.Point{}}
	if facts, err := s.facts(ctx, rn); err == nil {
		r.Script, r.Model = facts.Script, facts.Workload.Model.String()
		r.Monitors = facts.Skeleton()
	} else {
		s.factsMissing(ctx, rn, "its result goes without its script's name, model and monitors", err)
	}
	r.Start = rn.CreatedAt
	if rn.StartAt != nil {
		r.Start = *rn.StartAt
	}
	if rn.Stop != nil {
		r.Stop.Detail = rn.Stop.Reason
	}
	// The merge alone, without each shard's counts beside it: a point needs only the shards' health.
	err := s.eachSecond(ctx, rn, false, func(m *MergedSecond) error {
		healths := make([]run.Health, 0, len(m.Shards))
		for _, part := range m.Shards {
			healths = append(healths, part.Health)
		}
		r.Series = append(r.Series, summary.NewPoint(m.Index, m.Snapshot, healths...))
		for k, st := range m.Snapshot.Labels {
			if k.Kind != metrics.Request {
				continue
			}
			one := &metrics.Snapshot{Start: m.Snapshot.Start, Duration: m.Snapshot.Duration, Labels: map[metrics.Key]*metrics.Stats{k: st}}
			r.RequestSeries[k.Name] = append(r.RequestSeries[k.Name], summary.NewPoint(m.Index, one))
		}
		if m.Monitors != nil {
			monitor.Record(r.Monitors, m.Index, m.Monitors.Values, m.Monitors.Units)
		}
		return nil
	})
	if len(r.Monitors) == 0 {
		r.Monitors = nil
	}
	return r, err
}
