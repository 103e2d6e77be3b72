package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/sweep"
)

// Second is one second of a shard's metrics as an agent reports it.
type Second struct {
	Index    int64
	Snapshot []byte // metrics.Snapshot's binary encoding
	Health   run.Health
	// Monitors are the values of the script's monitor series in the second, from the one
	// shard that scrapes them; nil from the others.
	Monitors *MonitorValues
}

// MonitorValues are a second's values of the script's monitor series, in the script's order
// (nil where a series had none), and the unit of each (monitor.UnitValue, ...).
type MonitorValues struct {
	Values []*float64 `json:"values"`
	Units  []string   `json:"units"`
}

// MaxMonitorValues bounds a second's monitor values: a script has at most 8 monitors of 16
// series each.
const MaxMonitorValues = 8 * 16

// Report is what an agent sends about a shard it holds: the seconds not yet acknowledged, and how
// it ended, once it has.
type Report struct {
	Lease   int64
	Seconds []Second
	End     *ShardEnd
}

// ShardEnd is how a shard ended, by its agent's account.
type ShardEnd struct {
	Stop      run.Stop
	LateStart time.Duration
	// Result is the agent's account of the shard beyond its seconds (iterations, dropped...).
	Result json.RawMessage
}

// MaxSecondIndex is the last second a shard may report: a run lasts a week at most, and its
// iterations a graceful stop more. A later index would have every reader of the run's seconds
// walk the gap.
const MaxSecondIndex = int64((7*24*time.Hour + time.Hour) / time.Second)

// MaxReportLabels bounds the labels (requests, groups, hooks) of one second of a shard.
const MaxReportLabels = 1000

// MaxReportSeconds bounds the seconds one report may carry: an agent that was cut off from
// the server sends what it kept in several reports.
const MaxReportSeconds = 300

// Instruction is the server's answer to a report: whether the agent must stop the shard's load,
// and the pings and jobs it has to answer.
type Instruction struct {
	Stop  *run.Stop
	Pings []uuid.UUID
	Jobs  []barrage.AgentJob
}

// Report stores what agent a reports of its shard. Seconds already stored (a resent report) are
// ignored, so totals never count twice; a report under a stale lease is refused. The answer
// tells the agent to stop when the run was canceled or has ended.
func (s *Service) Report(ctx context.Context, a barrage.Agent, shardID uuid.UUID, r Report) (Instruction, error) {
	if len(r.Seconds) > MaxReportSeconds {
		return Instruction{}, barrage.Invalid("seconds", fmt.Sprintf("at most %d seconds in one report", MaxReportSeconds))
	}
	secs := make([]barrage.ShardSecond, len(r.Seconds))
	for i, sec := range r.Seconds {
		field := fmt.Sprintf("seconds[%d]", i)
		if sec.Index < 0 || sec.Index > MaxSecondIndex {
			return Instruction{}, barrage.Invalid(field+".index", fmt.Sprintf("must be from 0 to %d: no run lasts longer", MaxSecondIndex))
		}
		// Checked without building histograms: an agent's report must not cost the server
		// memory in proportion to what it claims.
		counts, err := metrics.DecodeCounts(sec.Snapshot)
		if err != nil {
			return Instruction{}, barrage.Invalid(field+".snapshot", err.Error())
		}
		if len(counts.Labels) > MaxReportLabels {
			// Each label costs up to 184 KB when merged: a report may not make the server
			// allocate without bound.
			return Instruction{}, barrage.Invalid(field+".snapshot", fmt.Sprintf("%d labels; at most %d", len(counts.Labels), MaxReportLabels))
		}
		if err := sec.Health.Check(); err != nil {
			return Instruction{}, barrage.Invalid(field+".health", err.Error())
		}
		health, err := json.Marshal(sec.Health)
		if err != nil {
			return Instruction{}, err
		}
		secs[i] = barrage.ShardSecond{ShardID: shardID, Index: sec.Index, Snapshot: sec.Snapshot, Health: health}
		if m := sec.Monitors; m != nil {
			if len(m.Values) > MaxMonitorValues {
				return Instruction{}, barrage.Invalid(field+".monitors", fmt.Sprintf("%d values; at most %d", len(m.Values), MaxMonitorValues))
			}
			if len(m.Units) != len(m.Values) {
				return Instruction{}, barrage.Invalid(field+".monitor_units", "one unit for each of monitors")
			}
			for _, v := range m.Values {
				if v != nil && (math.IsNaN(*v) || math.Abs(*v) > maxMonitorValue) {
					return Instruction{}, barrage.Invalid(field+".monitors", fmt.Sprintf("a value must be null or a number from %g to %g", -maxMonitorValue, maxMonitorValue))
				}
			}
			if secs[i].Monitors, err = json.Marshal(m); err != nil {
				return Instruction{}, err
			}
		}
	}
	var end *barrage.ShardEnd
	if r.End != nil {
		end = &barrage.ShardEnd{State: barrage.ShardState(r.End.Stop.Reason.String()), Reason: r.End.Stop.Detail,
			LateStart: r.End.LateStart, Result: r.End.Result}
		if end.Reason == "" {
			end.Reason = EndReason(r.End.Stop.Reason)
		}
		if len(end.Result) == 0 {
			end.Result = json.RawMessage("{}")
		}
		if err := checkSweepLevels(end.Result); err != nil {
			return Instruction{}, err
		}
	}
	rep, err := s.storeReport(ctx, a, shardID, r.Lease, secs, end)
	if err != nil {
		return Instruction{}, err
	}
	if lag := s.cfg.IngestLag; lag != nil && len(secs) > 0 && rep.Run.StartAt != nil {
		newest := slices.MaxFunc(secs, func(a, b barrage.ShardSecond) int { return cmp.Compare(a.Index, b.Index) }).Index
		lag(s.now().Sub(rep.Run.StartAt.Add(time.Duration(newest+1) * time.Second)))
	}
	var in Instruction
	if rep.WorkWaiting {
		if in.Pings, err = s.store.TakePings(ctx, a.ID); err != nil {
			return Instruction{}, err
		}
		if in.Jobs, err = s.takeJobs(ctx, a, a.Sandbox); err != nil {
			return Instruction{}, err
		}
	}
	switch r := rep.Run; {
	case r.Stop != nil:
		reason := run.Canceled
		if r.Stop.State == barrage.RunAbortedThreshold {
			reason = run.AbortedThreshold
		}
		in.Stop = &run.Stop{Reason: reason, Detail: r.Stop.Reason}
	case r.State.Ended():
		in.Stop = &run.Stop{Reason: run.Failed, Detail: "the run has ended: " + r.Reason}
	}
	return in, nil
}

// storeReport stores the seconds of agent a's shard and its end, if it ended, and finalizes its
// run when it was the last shard to end.
func (s *Service) storeReport(ctx context.Context, a barrage.Agent, shardID uuid.UUID, lease int64, secs []barrage.ShardSecond,
	end *barrage.ShardEnd) (postgres.ShardReport, error) {
	rep, err := s.store.ReportShard(ctx, a.ID, shardID, lease, secs, end, s.now().Add(-JobWait))
	if err != nil {
		return rep, err
	}
	if end != nil {
		s.log.InfoContext(ctx, "shard ended", slog.String("run_id", rep.Run.ID.String()), slog.String("shard_id", shardID.String()),
			slog.String("state", string(end.State)), slog.String("reason", end.Reason))
		if !rep.Queued && s.finalizer != nil {
			if err := s.finalizer.Finalize(ctx, rep.Run); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// EndReason is the reason a shard gives when its agent gave none.
func EndReason(r run.StopReason) string {
	if r == run.Completed {
		return "the load ran to its end"
	}
	return r.String()
}

// maxMonitorValue bounds a monitor's value: past any rate or gauge an exporter gives (a counter
// of bytes grows by 1e10 a second on a 100 Gbit/s link), and within what a chart can draw.
const maxMonitorValue = 1e15

// maxFigure bounds what an agent may report of a sweep level: far above any generator's
// requests/s, or a latency in milliseconds of more than a week.
const maxFigure = 1e12

// checkSweepLevels refuses a shard's account whose sweep levels no generator could have
// measured: figures not finite, negative or past maxFigure, more successful requests than
// requests, an error rate outside [0, 1], levels of fewer than 1 VU or not going up, a level
// longer than the longest step and its graceful stop.
func checkSweepLevels(result []byte) error {
	levels, err := sweep.LevelsOf(result)
	if err != nil {
		return nil // the contract checked its shape
	}
	for i, l := range levels {
		field := fmt.Sprintf("end.result.sweep_levels[%d]", i)
		for _, f := range []struct {
			name string
			v    float64
		}{{"rps", l.RPS}, {"ok_rps", l.OKRPS}, {"p50_ms", l.P50MS}, {"p95_ms", l.P95MS}, {"p99_ms", l.P99MS}, {"requests", float64(l.Requests)}} {
			if math.IsNaN(f.v) || f.v < 0 || f.v > maxFigure {
				return barrage.Invalid(field+"."+f.name, fmt.Sprintf("must be from 0 to %g", maxFigure))
			}
		}
		switch {
		case l.Seconds < 0 || l.Seconds > (barrage.MaxSweepStep+time.Hour).Seconds():
			return barrage.Invalid(field+".seconds", "must be from 0 to a step and its graceful stop")
		case l.OKRPS > l.RPS*(1+1e-9):
			return barrage.Invalid(field+".ok_rps", "must not be more than rps")
		case l.ErrorRate < 0 || l.ErrorRate > 1:
			return barrage.Invalid(field+".error_rate", "must be from 0 to 1")
		case l.VUs < 1 || (i > 0 && l.VUs <= levels[i-1].VUs):
			return barrage.Invalid(field+".vus", "levels are at least 1 VU and go up")
		}
	}
	return nil
}
