package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/sweep"
)

// Hello is what an agent says of itself each time it asks for work.
type Hello struct {
	Protocol int
	Version  string
	Cores    int
	IP       string
	// Sandbox says whether the agent's plugin host holds the whole kernel sandbox.
	Sandbox bool
}

// MaxLeaseWait bounds how long a lease request waits for work: well under
// barrage.AgentOnlineWithin, since a waiting agent is seen only when it asks again.
const MaxLeaseWait = 5 * time.Second

// Work is what an agent is given when it asks: a shard to run, pings to answer, jobs to do
// (debug, generate), or none of these.
type Work struct {
	Shard *barrage.ShardJob
	Pings []uuid.UUID
	Jobs  []barrage.AgentJob
}

// Lease waits up to wait for work for agent a: pings to answer, or a shard, handed over under a
// new fencing token. An agent speaking a protocol older than the server accepts is refused with
// a message that names the version it needs.
func (s *Service) Lease(ctx context.Context, a barrage.Agent, h Hello, wait time.Duration) (Work, error) {
	if h.Protocol < barrage.MinAgentProtocol {
		return Work{}, barrage.Errorf(barrage.ErrOutdated,
			"this server needs agents that speak protocol %d or newer; this agent (version %q) speaks %d: upgrade it to the server's version",
			barrage.MinAgentProtocol, h.Version, h.Protocol)
	}
	if err := s.store.AgentSeen(ctx, a.ID, h.Version, h.Cores, h.IP, h.Sandbox, h.Protocol); err != nil {
		return Work{}, err
	}
	a.Protocol = h.Protocol
	wait = min(max(wait, 0), MaxLeaseWait)
	deadline := s.now().Add(wait)
	woken, stop := s.work.Subscribe(a.ID.String())
	defer stop()
	for {
		var w Work
		var err error
		if w.Pings, err = s.store.TakePings(ctx, a.ID); err != nil {
			return Work{}, err
		}
		if w.Jobs, err = s.takeJobs(ctx, a, h.Sandbox); err != nil {
			return Work{}, err
		}
		if w.Shard, err = s.store.LeaseShard(ctx, a.ID, h.Version, s.cfg.StartLead); err != nil {
			return Work{}, err
		}
		if w.Shard != nil {
			// The sandbox is checked as the agent says it is now, not as it was at admission.
			why, err := s.sandboxRefuses(ctx, a, h.Sandbox, w.Shard.Run.Manifest.Plugins)
			if err != nil {
				return Work{}, err
			}
			switch r := w.Shard.Run; {
			case r.Destinations != nil && h.Protocol < barrage.DestinationsProtocol:
				why = tooOldForDestinations(a, "run")
			case (len(r.Manifest.Env) > 0 || len(r.Manifest.Secrets) > 0) && h.Protocol < barrage.EnvProtocol:
				why = fmt.Sprintf("agent %q speaks protocol %d, which cannot hand a run's environment (env, -e) or secrets to its script (%d can): upgrade it",
					a.Name, a.Protocol, barrage.EnvProtocol)
			case len(r.Manifest.Secrets) > 0:
				// Read now, not at the run's creation: a secret deleted since fails the shard.
				var missing *barrage.InvalidError
				w.Shard.Secrets, err = s.secretValues(ctx, r.OwnerID, r.Manifest.Secrets)
				if errors.As(err, &missing) {
					why, err = fmt.Sprintf("secret %s, which the script reads, was deleted after the run was created",
						strings.TrimPrefix(missing.Fields[0].Field, "secrets.")), nil
				}
				if err != nil {
					return Work{}, err
				}
			}
			if why != "" {
				end := &barrage.ShardEnd{State: barrage.ShardState(run.Failed.String()), Reason: why, Result: json.RawMessage("{}")}
				if _, err := s.storeReport(ctx, a, w.Shard.Shard.ID, w.Shard.Shard.Lease, nil, end); err != nil {
					return Work{}, err
				}
				w.Shard = nil
			}
		}
		if w.Shard != nil {
			s.log.InfoContext(ctx, "shard leased", slog.String("run_id", w.Shard.Run.ID.String()),
				slog.String("shard_id", w.Shard.Shard.ID.String()), slog.String("agent_id", a.ID.String()))
		}
		if w.Shard != nil || len(w.Pings) > 0 || len(w.Jobs) > 0 {
			return w, nil
		}
		left := deadline.Sub(s.now())
		if left <= 0 {
			return Work{}, nil
		}
		t := time.NewTimer(min(left, s.cfg.PollEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return Work{}, nil
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}

// PingWait is how long a ping waits for its agent's answer.
const PingWait = 5 * time.Second

// Ping sends an application-level ping through agent id, which p may use, and returns the
// round trip: from the server to the agent (woken at once when it waits for work, at its next
// report when it runs a shard) and back.
func (s *Service) Ping(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Agent, time.Duration, error) {
	a, err := s.store.UsableAgent(ctx, p.User.ID, id)
	if err != nil {
		return a, 0, err
	}
	if st := a.State(s.now()); st == barrage.AgentOffline || st == barrage.AgentDisabled {
		return a, 0, barrage.Errorf(barrage.ErrConflict, "agent %q is %s", a.Name, st)
	}
	pingID := uuid.Must(uuid.NewV7())
	var rtt time.Duration
	err = s.await(ctx, pingID, PingWait, func() error { return s.store.CreatePing(ctx, pingID, a.ID) }, func() (bool, error) {
		var ok bool
		var err error
		rtt, ok, err = s.store.PingRoundTrip(ctx, pingID)
		return ok, err
	})
	if errors.Is(err, barrage.ErrNoAnswer) {
		return a, 0, barrage.Errorf(barrage.ErrNoAnswer, "agent %q did not answer within %s", a.Name, PingWait)
	}
	return a, rtt, err
}

// tooOldForDestinations is why agent a, which speaks a protocol older than
// barrage.DestinationsProtocol, is given no run or job (what) bounded to destinations.
func tooOldForDestinations(a barrage.Agent, what string) string {
	return fmt.Sprintf("agent %q speaks protocol %d, which cannot hold a %s to its owner's verified targets (%d can): upgrade it",
		a.Name, a.Protocol, what, barrage.DestinationsProtocol)
}

// takeJobs hands agent a, which holds the whole kernel sandbox or not (sandbox), the jobs
// waiting for it whose askers still wait, as many as it has free slots: on a shared agent, one
// per user at a time. Each carries only the data files its test's revision reads. A job whose
// marketplace plugins the agent may not run without the sandbox is answered with why.
func (s *Service) takeJobs(ctx context.Context, a barrage.Agent, sandbox bool) ([]barrage.AgentJob, error) {
	slots := postgres.JobSlots{Slots: barrage.AgentJobSlots, PerOwner: barrage.AgentJobSlots}
	if a.Shared() {
		slots.PerOwner = 1
	}
	jobs, err := s.store.TakeAgentJobs(ctx, a.ID, s.now().Add(-JobWait), slots, dataFiles)
	if err != nil {
		return nil, err
	}
	kept := jobs[:0]
	for _, j := range jobs {
		why, err := s.sandboxRefuses(ctx, a, sandbox, j.Plugins)
		if err == nil && why == "" && j.Kind == barrage.JobDebug && j.Bundle != nil {
			why, err = s.jobSecrets(ctx, &j)
		}
		if err == nil && why == "" && a.Shared() {
			// A debug sends requests, and a generation may run plugins that reach out: on a
			// shared agent, they reach only what a run of the job's owner could.
			j.Destinations, err = s.verifiedDestinations(ctx, j.OwnerID)
			if j.Destinations != nil && a.Protocol < barrage.DestinationsProtocol {
				why = tooOldForDestinations(a, "job")
			}
		}
		switch {
		case err != nil:
			return nil, err
		case why != "":
			if err := s.store.AnswerAgentJob(ctx, a.ID, j.ID, nil, &why); err != nil {
				return nil, err
			}
		default:
			kept = append(kept, j)
		}
	}
	return kept, nil
}

// jobSecrets hands debug job j the values of its owner's secrets its script reads: why it cannot
// have them (deleted since it was asked for), or an error.
func (s *Service) jobSecrets(ctx context.Context, j *barrage.AgentJob) (string, error) {
	parsed, err := loadBundle(j.Bundle.Source, j.Bundle.Files)
	if err != nil || len(parsed.Secrets) == 0 {
		return "", nil // the agent says what is wrong with the script
	}
	var missing *barrage.InvalidError
	j.Secrets, err = s.secretValues(ctx, j.OwnerID, parsed.Secrets)
	if errors.As(err, &missing) {
		return missing.Fields[0].Reason, nil
	}
	return "", err
}

// AnswerPing records agent a's answer to its ping id.
func (s *Service) AnswerPing(ctx context.Context, a barrage.Agent, id uuid.UUID) error {
	return s.store.AnswerPing(ctx, a.ID, id)
}

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
			end.Reason = endReason(r.End.Stop.Reason)
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
	if in.Pings, err = s.store.TakePings(ctx, a.ID); err != nil {
		return Instruction{}, err
	}
	if in.Jobs, err = s.takeJobs(ctx, a, a.Sandbox); err != nil {
		return Instruction{}, err
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
	queued := false
	rep, err := s.store.ReportShard(ctx, a.ID, shardID, lease, secs, end, func(tx pgx.Tx, run barrage.Run) error {
		if s.finalizer == nil || !allEnded(run) {
			return nil
		}
		queued = true
		return s.finalizer.Finalize(ctx, tx, run.ID)
	})
	if err != nil {
		return rep, err
	}
	if end != nil {
		s.log.InfoContext(ctx, "shard ended", slog.String("run_id", rep.Run.ID.String()), slog.String("shard_id", shardID.String()),
			slog.String("state", string(end.State)), slog.String("reason", end.Reason))
		if !queued {
			if err := s.finalize(ctx, rep.Run); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// allEnded reports whether every shard of run has ended.
func allEnded(r barrage.Run) bool {
	for _, sh := range r.Shards {
		if !sh.Ended() {
			return false
		}
	}
	return true
}

// endReason is the reason a shard gives when its agent gave none.
func endReason(r run.StopReason) string {
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
