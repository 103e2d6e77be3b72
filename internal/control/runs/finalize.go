package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/threshold"
)

// FinalizeRun summarizes and ends run id if every shard of it has ended (the background job that
// the last shard's end queued).
func (s *Service) FinalizeRun(ctx context.Context, id uuid.UUID) error {
	r, err := s.store.RunForAgent(ctx, id)
	if err != nil {
		return err
	}
	return s.Finalize(ctx, r)
}

// Finalize ends run once every shard has: its state from theirs, its summary from their seconds.
// It does nothing while a shard goes on, or when the run has ended already, so every replica may
// call it.
func (s *Service) Finalize(ctx context.Context, r barrage.Run) error {
	if r.EndedAt != nil || !r.ShardsEnded() {
		return nil
	}
	facts, err := s.facts(ctx, r)
	if err != nil {
		return err
	}
	sum, err := s.summarize(ctx, facts, r)
	if err != nil {
		return fmt.Errorf("summarize run %s: %w", r.ID, err)
	}
	state, reason := endState(r)
	sum.State, sum.Reason = state, reason
	// The run as a local run's result, its seconds with it: what its findings and its
	// comparison with its test's baseline are read from.
	res, err := s.resultOf(ctx, r, sum)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	sum.Insights = summary.Insights(res)
	if state == barrage.RunFinished {
		if sum.Baseline, err = s.againstBaseline(ctx, r, res); err != nil {
			return fmt.Errorf("run %s against its test's baseline: %w", r.ID, err)
		}
	}
	doc, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	ended, err := s.store.EndRun(ctx, r.ID, state, reason, doc)
	if err != nil {
		return err
	}
	s.judges.forget(r.ID)
	if ended {
		s.log.InfoContext(ctx, "run ended", slog.String("run_id", r.ID.String()), slog.String("state", string(state)), slog.String("reason", reason))
	}
	return nil
}

// endState decides how a run whose shards have all ended ends: canceled when someone canceled
// it, else by the gravest of its shards' ends, with the reason of the shard that had it. A
// failed threshold that aborted nothing leaves the run finished: the summary says it failed.
func endState(r barrage.Run) (barrage.RunState, string) {
	if r.Stop != nil {
		return r.Stop.State, r.Stop.Reason
	}
	gravity := []barrage.ShardState{
		barrage.ShardState(barrage.RunAbortedThreshold), barrage.ShardState(barrage.RunAbortedLimit),
		barrage.ShardState(barrage.RunTimedOut), barrage.ShardLost, barrage.ShardState(barrage.RunFailed),
		barrage.ShardState(barrage.RunCanceled),
	}
	for _, g := range gravity {
		for _, sh := range r.Shards {
			if sh.State != g {
				continue
			}
			switch g {
			case barrage.ShardLost:
				return barrage.RunFailed, fmt.Sprintf("agent %s was lost: %s", agentName(sh), sh.Reason)
			case barrage.ShardState(barrage.RunFailed):
				return barrage.RunFailed, fmt.Sprintf("agent %s: %s", agentName(sh), sh.Reason)
			}
			return barrage.RunState(g), sh.Reason
		}
	}
	// A shard that ended of itself before its end says why (data exhausted, a destination its
	// agent refused): the run did not run to its end.
	for _, sh := range r.Shards {
		if sh.State == barrage.ShardState(barrage.RunFinished) && sh.Reason != "" && sh.Reason != fleet.EndReason(run.Completed) {
			return barrage.RunFinished, fmt.Sprintf("the load ended early on agent %s: %s", agentName(sh), sh.Reason)
		}
	}
	return barrage.RunFinished, "the load ran to its end on every agent"
}

// summarize merges the shards' seconds into the run's summary, one second at a time.
func (s *Service) summarize(ctx context.Context, facts *summary.Facts, r barrage.Run) (*summary.Document, error) {
	total := &metrics.Snapshot{}
	byShard := map[uuid.UUID]*shardTally{}
	monitors := facts.Skeleton()
	watch := threshold.New(facts.Thresholds)
	seconds := 0
	var rps []float64 // all agents' requests/s, by second
	// Every shard has ended: every second is complete.
	err := s.eachSecond(ctx, r, true, func(m *MergedSecond) error {
		seconds++
		total.Merge(m.Snapshot)
		for int64(len(rps)) <= m.Index {
			rps = append(rps, 0)
		}
		rps[m.Index] = float64(m.Snapshot.Requests().Requests) / max(m.Snapshot.Duration.Seconds(), 1)
		if m.Monitors != nil {
			monitor.Record(monitors, m.Index, m.Monitors.Values, m.Monitors.Units)
		}
		watch.Observe(m.Snapshot, time.Duration(m.Index+1)*time.Second)
		for id, part := range m.Shards {
			t := byShard[id]
			if t == nil {
				t = &shardTally{}
				byShard[id] = t
			}
			t.add(m.Index, part)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	accounts, err := s.store.ShardAccounts(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	incomplete := summary.NewIncomplete(s.gaps(r, byShard, agentNames(accounts), int64(len(rps))))

	elapsed := max(total.Duration, time.Second)
	sum := &summary.Document{ElapsedS: elapsed.Seconds(), Seconds: seconds, Agents: []summary.AgentShare{},
		Summary: summary.New(total, facts.Requests, facts.Groups, facts.Checks, elapsed)}
	sum.Thresholds = summary.Thresholds(watch.Final(total, elapsed))
	sum.Scenarios = facts.Scenarios
	acc, _ := shardAccounts(accounts)
	sum.ErrorSamples, sum.HookErrors = acc.ErrorSamples, acc.HookErrorCounts()
	sum.Incomplete = incomplete
	if r.Load.Sweep == nil { // a sweep's load changes on purpose: its levels are judged apart
		from, to := summary.SteadyWindow(facts.Workload, elapsed)
		if incomplete != nil {
			// The figures after an agent stopped lack its share: the seconds before and the
			// agents that went on are judged apart, so that its loss reads as neither the
			// target's throughput nor the generators'.
			if cut := time.Duration(incomplete.From()) * time.Second; cut < to {
				sum.SurvivorStability = summary.NewStability(rps, max(cut, from), to)
				sum.SurvivorStability.Explain(rps, monitors)
				if sum.SurvivorStability != nil {
					sum.SurvivorStability.Note = fmt.Sprintf("the agents that went on, after second %d", incomplete.From())
				}
				to = cut
			}
		}
		sum.Stability = summary.NewStability(rps, from, to)
		sum.Stability.Explain(rps, monitors)
		if sum.Stability != nil && incomplete != nil {
			sum.Stability.Note = fmt.Sprintf("every agent, before second %d, when the first stopped short", incomplete.From())
		}
	}

	model := facts.Workload.Model
	var all []run.Health // every agent's seconds: what they delivered together
	for _, sh := range r.Shards {
		share := summary.AgentShare{ShardID: sh.ID, AgentID: sh.AgentID, State: string(sh.State), Reason: sh.Reason,
			LateStartMS: sh.LateStart.Milliseconds()}
		if t := byShard[sh.ID]; t != nil {
			v := run.Judge(t.healths)
			share.Requests, share.Seconds = t.requests, len(t.healths)
			share.Verdict = summary.VerdictOf(v, model)
			all = append(all, t.healths...)
			for _, r := range v.Reasons {
				sum.Verdict.Reasons = append(sum.Verdict.Reasons, fmt.Sprintf("agent %s: %s", agentName(sh), r))
			}
			for _, r := range v.TargetReasons {
				sum.Verdict.TargetReasons = append(sum.Verdict.TargetReasons, fmt.Sprintf("agent %s: %s", agentName(sh), r))
			}
		}
		if sh.LateStart > time.Second {
			sum.Verdict.Reasons = append(sum.Verdict.Reasons, fmt.Sprintf("agent %s started %s late", agentName(sh), sh.LateStart))
		}
		sum.Agents = append(sum.Agents, share)
	}
	sum.Verdict.Delivery = summary.DeliveryOf(run.Judge(all).Delivery, model)
	if incomplete != nil {
		sum.Verdict.Delivery.Note = "judged on the seconds each agent reported: an agent's end is not read as lateness or drops"
	}
	sum.Verdict.GeneratorLimited = len(sum.Verdict.Reasons) > 0
	sum.Verdict.TargetLimited = !sum.Verdict.GeneratorLimited && len(sum.Verdict.TargetReasons) > 0
	return sum, nil
}

// shardAccounts are what every shard reported in its account beside its seconds, summed, and
// the agents whose account is missing (lost before their end) or does not read, left out.
func shardAccounts(accounts []barrage.ShardAccount) (run.Account, []string) {
	all := make([]run.Account, 0, len(accounts))
	var uncounted []string
	for _, a := range accounts {
		if acc, err := run.ReadAccount(a.Result); len(a.Result) > 0 && err == nil {
			all = append(all, acc)
		} else {
			uncounted = append(uncounted, a.AgentName)
		}
	}
	return run.Accounts(all), uncounted
}

// facts are what run's script made of it when it was created. A run made before runs kept them
// has them derived from its script now, and stored, once; so has a run whose stored facts do not
// read (a row changed by hand), saying so in the log.
func (s *Service) facts(ctx context.Context, r barrage.Run) (*summary.Facts, error) {
	raw, err := s.store.RunFacts(ctx, r.ID)
	if errors.Is(err, barrage.ErrNotFound) {
		return s.deriveFacts(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	f := new(summary.Facts)
	err = json.Unmarshal(raw, f)
	if err == nil {
		err = f.Check()
	}
	if err != nil {
		s.log.WarnContext(ctx, "a run's stored facts do not read: deriving them again from its script",
			slog.String("run_id", r.ID.String()), slog.String("error", err.Error()))
		return s.deriveFacts(ctx, r)
	}
	return f, nil
}

// factsMissing logs that run r's facts could not be had (its script no longer parses, or the
// database failed), and what goes without them.
func (s *Service) factsMissing(ctx context.Context, r barrage.Run, without string, err error) {
	s.log.WarnContext(ctx, "a run's facts could not be had", slog.String("run_id", r.ID.String()),
		slog.String("goes_without", without), slog.String("error", err.Error()))
}

// deriveFacts derives the facts of run r from its script and stores them in place of any stored.
func (s *Service) deriveFacts(ctx context.Context, r barrage.Run) (*summary.Facts, error) {
	sc, err := s.store.Script(ctx, []uuid.UUID{r.ProjectID}, r.ScriptID)
	if err != nil {
		return nil, err
	}
	parsed, err := script.Parse(sc.Source, script.ParseOptions{Filename: sc.Name})
	if err != nil {
		return nil, fmt.Errorf("script %s no longer parses: %w", sc.ID, err)
	}
	f := summary.FactsOf(parsed, r.Load)
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if err := s.store.SaveRunFacts(ctx, r.ID, raw); err != nil {
		return nil, err
	}
	return &f, nil
}

// agentName names a shard's agent in reasons: its id, or its segment once it was removed.
func agentName(sh barrage.Shard) string {
	if sh.AgentID == nil {
		return fmt.Sprintf("(removed, shard %d:%d/%d)", sh.From, sh.To, sh.Of)
	}
	return sh.AgentID.String()
}

type shardTally struct {
	healths  []run.Health
	requests int64
	last     int64 // the newest second's index
	// recent are the newest seconds' requests and lengths, lastSeconds at most.
	recent []tallied
}

type tallied struct {
	requests int64
	length   time.Duration
}

// lastSeconds is how many of a shard's newest seconds tell its rate when it stopped.
const lastSeconds = 5

// add counts the shard's second of index idx.
func (t *shardTally) add(idx int64, part ShardPart) {
	n := part.Counts.Requests().Requests
	t.healths = append(t.healths, part.Health)
	t.requests += n
	t.last = max(t.last, idx)
	t.recent = append(t.recent, tallied{n, max(part.Counts.Duration, time.Second/10)})
	if len(t.recent) > lastSeconds {
		t.recent = t.recent[1:]
	}
}

// rate is the shard's requests/s over its newest seconds.
func (t *shardTally) rate() float64 {
	var n int64
	var d time.Duration
	for _, s := range t.recent {
		n, d = n+s.requests, d+s.length
	}
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// reportEvery is how often an agent reports a running shard (agent.report's tick).
const reportEvery = time.Second

// reportDue is how long after an agent's last report its next one may still come: a period,
// and as much again for a tick that waits on a slow send (the ticker drops ticks while the
// agent sends) and for the send itself on a loaded machine. An estimate of what a lost agent
// never reported must not fall short (a killed agent's 1.3 s after its last report, with the
// tests of several suites on two cores, was more than one period).
const reportDue = 2 * reportEvery

// gaps are the shards of run whose figures stop short of its end (seconds long): every lost
// one, and any other that ended (failed, say) while the others went on past the next second.
// A lost shard's gap estimates what it sent and never reported: its rate over its last
// seconds for the time from the end of its last reported second to when its next report was
// due at the latest (reportDue after its last), and a request in flight per VU.
func (s *Service) gaps(r barrage.Run, byShard map[uuid.UUID]*shardTally, names map[uuid.UUID]string, seconds int64) []summary.Gap {
	var gaps []summary.Gap
	for _, sh := range r.Shards {
		t := byShard[sh.ID]
		if t == nil {
			t = &shardTally{last: -1}
		}
		from := t.last + 1
		lost := sh.State == barrage.ShardLost
		if !lost && (sh.State == barrage.ShardState(barrage.RunFinished) || sh.State == barrage.ShardState(barrage.RunCanceled) || from+1 >= seconds) {
			continue
		}
		var unreported float64
		var inFlight int64
		if lost && r.StartAt != nil {
			silent := sh.HeartbeatAt
			if silent == nil {
				silent = sh.LeasedAt
			}
			if silent != nil {
				end := r.StartAt.Add(time.Duration(from) * time.Second)
				unreported = min(silent.Add(reportDue).Sub(end), s.cfg.LostAfter+reportDue).Seconds()
			}
			if n := len(t.healths); n > 0 {
				inFlight = t.healths[n-1].ActiveVUs
			}
		}
		gaps = append(gaps, summary.NewGap(shardAgentName(sh, names), string(sh.State), sh.Reason, from, t.rate(), unreported, inFlight))
	}
	return gaps
}

// agentNames are the names of the shards' agents in accounts, by shard.
func agentNames(accounts []barrage.ShardAccount) map[uuid.UUID]string {
	names := make(map[uuid.UUID]string, len(accounts))
	for _, a := range accounts {
		names[a.ShardID] = a.AgentName
	}
	return names
}

// shardAgentName names sh's agent as people read it: its name and id, or the shard once the
// agent was removed.
func shardAgentName(sh barrage.Shard, names map[uuid.UUID]string) string {
	if sh.AgentID == nil || names[sh.ID] == "" {
		return agentName(sh)
	}
	return fmt.Sprintf("%s (%s)", names[sh.ID], sh.AgentID)
}
