package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/projects"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/summary"
)

// testBundle is a control plane whose targets are all open, a user with the demo license (2
// concurrent runs, 100 VUs, 30 minutes) and their script.
type testBundle struct {
	*controltest.Plane
	user   barrage.Principal
	script barrage.Script
}

func setup(t *testing.T, cfg control.Config) *testBundle {
	t.Helper()
	if cfg.Targets.Open == nil {
		cfg.Targets.All = true
	}
	p := controltest.New(t, cfg)
	u := p.User("tester@example.com", &barrage.DemoLicense)
	return &testBundle{Plane: p, user: u, script: p.Script(u, controltest.SmokeScript)}
}

// start creates u's run of the bundle's script with in's other fields.
func (b *testBundle) start(t *testing.T, in runs.RunInput) barrage.Run {
	t.Helper()
	in.ScriptID = b.script.ID
	r, err := b.Runs.CreateRun(context.Background(), b.user, in)
	require.NoError(t, err)
	return r
}

// violations are the limits err, a *barrage.LimitError, names, as people read each.
func violations(t *testing.T, err error) []string {
	t.Helper()
	var lim *barrage.LimitError
	require.ErrorAs(t, err, &lim)
	var out []string
	for _, v := range lim.Violations {
		out = append(out, v.String())
	}
	return out
}

// A run fits the tightest of its owner's license and its agents' own limits, and the license's
// cap on concurrent runs; a refusal names each limit, what it allows, what was asked, and whose
// limit it is.
func TestARunIsAdmittedWithinTheTightestLimitsAndARefusalNamesThem(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	lic := barrage.LicenseTemplate{Plan: "small", Limits: barrage.Limits{MaxVUs: 50, MaxRunDuration: time.Minute, MaxConcurrentRuns: 1}, ValidDays: 1}
	u := b.User("small@example.com", &lic)
	sc := b.Script(u, controltest.SmokeScript)
	small, _ := b.Agent(&u, "small", barrage.Limits{MaxVUs: 10})
	big, _ := b.Agent(&u, "big", barrage.Limits{})
	create := func(agent barrage.Agent, load barrage.LoadOverrides) error {
		_, err := b.Runs.CreateRun(ctx, u, runs.RunInput{ScriptID: sc.ID, AgentIDs: []uuid.UUID{agent.ID}, Load: load})
		return err
	}

	require.Equal(t, []string{"max_vus: allowed 50, requested 60 (the limit of your small license)"},
		violations(t, create(big, barrage.LoadOverrides{VUs: 60})))
	require.Equal(t, []string{"max_run_duration_seconds: allowed 60, requested 120 (the limit of your small license)"},
		violations(t, create(big, barrage.LoadOverrides{Duration: 2 * time.Minute})))
	require.Equal(t, []string{`max_vus: allowed 10, requested 20 (the limit of agent "small", for each run on it)`},
		violations(t, create(small, barrage.LoadOverrides{VUs: 20})))

	require.NoError(t, create(big, barrage.LoadOverrides{}))
	require.Equal(t, []string{"max_concurrent_runs: allowed 1, requested 2 (the limit of your small license)"},
		violations(t, create(small, barrage.LoadOverrides{})))
	list, err := b.Runs.Runs(ctx, u, barrage.RunFilter{}, nil, 10)
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "a refused run is not stored")
}

// An agent runs one run at a time: a run that names a busy agent is refused, naming it, and one
// that lets the server choose takes another, or is refused when none is idle.
func TestABusyAgentIsNotGivenASecondRun(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	shared, _ := b.Agent(nil, "shared", barrage.Limits{})
	b.start(t, runs.RunInput{AgentIDs: []uuid.UUID{shared.ID}})

	other := b.User("other@example.com", &barrage.DemoLicense)
	sc := b.Script(other, controltest.SmokeScript)
	_, err := b.Runs.CreateRun(ctx, other, runs.RunInput{ScriptID: sc.ID, AgentIDs: []uuid.UUID{shared.ID}})
	require.Contains(t, controltest.Invalid(t, err, "agent_ids[0]"), `agent "shared" is busy with another run`)

	_, err = b.Runs.CreateRun(ctx, other, runs.RunInput{ScriptID: sc.ID})
	require.Contains(t, controltest.Invalid(t, err, "agents"), "asked for 1 idle online agents, and 0")

	mine, _ := b.Agent(&other, "mine", barrage.Limits{})
	r, err := b.Runs.CreateRun(ctx, other, runs.RunInput{ScriptID: sc.ID})
	require.NoError(t, err)
	require.Equal(t, mine.ID, *r.Shards[0].AgentID, "the idle agent is chosen")
}

// Every user's runs on shared agents together aim at most the cap of VUs at one address that
// proved control, checked where runs created at once cannot slip past it; a run that ends frees
// its share.
func TestTheVUsAimedAtOneAddressAreCappedAcrossUsers(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{Targets: targets.Config{Open: map[string]bool{}, Checker: controltest.LoopbackChecker(), MaxVUsPerAddress: 10}})
	ctx := context.Background()
	shop := controltest.NewProofServer(t)
	src := strings.ReplaceAll(controltest.SmokeScript, "http://127.0.0.1:9/", shop.URL+"/")
	other := b.User("other@example.com", &barrage.DemoLicense)
	agents := 0
	start := func(u barrage.Principal, vus int) (barrage.Run, error) {
		tg, err := b.Targets.CreateTarget(ctx, u, nil, shop.URL)
		if err == nil {
			shop.Serve(tg.Token, true)
			_, err = b.Targets.VerifyTarget(ctx, u, tg.ID)
		}
		if err != nil && !errors.Is(err, barrage.ErrConflict) { // registered already
			return barrage.Run{}, err
		}
		agents++
		a, _ := b.Agent(nil, fmt.Sprintf("shared-%d", agents), barrage.Limits{})
		return b.Runs.CreateRun(ctx, u, runs.RunInput{ScriptID: b.Script(u, src).ID, AgentIDs: []uuid.UUID{a.ID}, Load: barrage.LoadOverrides{VUs: vus}})
	}
	first, err := start(b.user, 6)
	require.NoError(t, err)
	require.NotEmpty(t, first.PinnedAddresses(), "the run loads the address that proved the target")

	_, err = start(other, 5)
	require.Contains(t, controltest.Invalid(t, err, "vus"), "aim 6 VUs at 127.0.0.1 already; with this run's 5 they would pass the 10")

	_, err = b.Runs.CancelRun(ctx, b.user, first.ID)
	require.NoError(t, err)
	_, err = start(other, 5)
	require.NoError(t, err, "a run that ended frees its share")
}

// twoShards is a run of the bundle's user on two agents of theirs, each holding its shard.
type twoShards struct {
	run    barrage.Run
	agents [2]barrage.Agent
	jobs   [2]*barrage.ShardJob
}

func (b *testBundle) twoShards(t *testing.T) twoShards {
	t.Helper()
	var s twoShards
	for i := range s.agents {
		s.agents[i], _ = b.Agent(&b.user, fmt.Sprintf("agent-%d", i), barrage.Limits{})
	}
	s.run = b.start(t, runs.RunInput{AgentIDs: []uuid.UUID{s.agents[0].ID, s.agents[1].ID}})
	for i, a := range s.agents {
		s.jobs[i] = b.Lease(a)
		require.NotNil(t, s.jobs[i], "agent %d is given its shard", i)
	}
	return s
}

// report has agent i of s report seconds of its shard (and its end, when given).
func (b *testBundle) report(t *testing.T, s twoShards, i int, end *fleet.ShardEnd, secs ...fleet.Second) fleet.Instruction {
	t.Helper()
	in, err := b.Fleet.Report(context.Background(), s.agents[i], s.jobs[i].Shard.ID, fleet.Report{Lease: s.jobs[i].Shard.Lease, Seconds: secs, End: end})
	require.NoError(t, err)
	return in
}

// series is the run's seconds merged so far: each second's requests.
func (b *testBundle) series(t *testing.T, id uuid.UUID) []int64 {
	t.Helper()
	var out []int64
	require.NoError(t, b.Runs.Series(context.Background(), b.user, id, func(m *runs.MergedSecond) error {
		out = append(out, m.Snapshot.Requests().Requests)
		return nil
	}))
	return out
}

var completed = &fleet.ShardEnd{Stop: run.Stop{Reason: run.Completed}}

// A second is merged once every running shard has reported it, each shard's part counted once:
// a report sent again (the agent did not hear the answer) changes nothing.
func TestTheSecondsOfSeveralShardsMergeOnceAndAResentSecondCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	s := b.twoShards(t)
	const label = "get home"

	b.report(t, s, 0, nil, controltest.Second(t, 0, label, 10, 20*time.Millisecond), controltest.Second(t, 1, label, 11, 20*time.Millisecond))
	require.Empty(t, b.series(t, s.run.ID), "a second waits for every running shard")
	b.report(t, s, 1, nil, controltest.Second(t, 0, label, 5, 20*time.Millisecond))
	require.Equal(t, []int64{15}, b.series(t, s.run.ID), "second 0 is complete; second 1 waits for the second agent")

	// The first agent sends its seconds again, with other figures: they were stored already.
	b.report(t, s, 0, nil, controltest.Second(t, 0, label, 99, 20*time.Millisecond), controltest.Second(t, 1, label, 99, 20*time.Millisecond))
	b.report(t, s, 1, nil, controltest.Second(t, 1, label, 6, 20*time.Millisecond))
	require.Equal(t, []int64{15, 17}, b.series(t, s.run.ID))

	b.report(t, s, 0, completed)
	b.report(t, s, 1, completed)
	doc := b.summary(t, s.run.ID)
	require.EqualValues(t, 32, doc.Total.Count, "the summary counts each shard's second once")
	require.Equal(t, 2, doc.Seconds)
}

// summary reads the ended run id's summary.
func (b *testBundle) summary(t *testing.T, id uuid.UUID) summary.Document {
	t.Helper()
	raw, err := b.Runs.Summary(context.Background(), b.user, id)
	require.NoError(t, err)
	var doc summary.Document
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc
}

// A run ends once every shard has, at the last one's report and not before, with the summary of
// all their seconds and each agent's share; an agent told to stop by then hears why.
func TestARunEndsOnceEveryShardHasWithItsSummary(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	s := b.twoShards(t)
	b.report(t, s, 0, completed, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))

	_, err := b.Runs.Summary(ctx, b.user, s.run.ID)
	require.ErrorIs(t, err, barrage.ErrConflict, "one shard goes on: no summary yet")
	r, err := b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunRunning, r.State)

	b.report(t, s, 1, completed, controltest.Second(t, 0, "get home", 5, 20*time.Millisecond), controltest.Second(t, 1, "get home", 7, 40*time.Millisecond))
	r, err = b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunFinished, r.State)
	require.Equal(t, "the load ran to its end on every agent", r.Reason)
	doc := b.summary(t, s.run.ID)
	require.Equal(t, barrage.RunFinished, doc.State)
	require.EqualValues(t, 22, doc.Total.Count)
	require.Equal(t, 2, doc.Seconds)
	require.Nil(t, doc.Incomplete)
	require.Len(t, doc.Agents, 2)
	for i, share := range doc.Agents {
		require.Equal(t, s.jobs[i].Shard.ID, share.ShardID)
		require.Equal(t, string(barrage.RunFinished), share.State)
	}
	require.EqualValues(t, 10, doc.Agents[0].Requests)
	require.EqualValues(t, 12, doc.Agents[1].Requests)
	require.Equal(t, 2, doc.Agents[1].Seconds)

	// A report that comes after the end is refused: the shard has ended.
	_, err = b.Fleet.Report(ctx, s.agents[0], s.jobs[0].Shard.ID, fleet.Report{Lease: s.jobs[0].Shard.Lease})
	require.ErrorIs(t, err, barrage.ErrConflict)
}

// The live view of an ended run sends its merged seconds in order, then the run as it ended, and
// returns; a follower that has some seconds already is sent only the later ones.
func TestTheLiveViewSendsTheMergedSecondsThenTheEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	s := b.twoShards(t)
	b.report(t, s, 0, completed, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond), controltest.Second(t, 1, "get home", 10, 20*time.Millisecond))
	b.report(t, s, 1, completed, controltest.Second(t, 0, "get home", 5, 20*time.Millisecond), controltest.Second(t, 1, "get home", 6, 20*time.Millisecond))
	follow := func(after int64) []string {
		var events []string
		require.NoError(t, b.Runs.Live(ctx, b.user, s.run.ID, after, func(ev runs.LiveEvent) error {
			switch {
			case ev.Second != nil:
				events = append(events, fmt.Sprintf("second %d: %d", ev.Second.Index, ev.Second.Snapshot.Requests().Requests))
			case ev.Run != nil:
				events = append(events, "run "+string(ev.Run.State))
			}
			return nil
		}))
		return events
	}
	require.Equal(t, []string{"second 0: 15", "second 1: 16", "run finished"}, follow(-1))
	require.Equal(t, []string{"second 1: 16", "run finished"}, follow(0))
}

// An aborting threshold is judged on the seconds merged across the shards: the housekeeping
// stops the run when it breaks, every agent hears it at its next report, and the run ends
// aborted, saying which threshold broke.
func TestAnAbortingThresholdOnTheMergedSecondsStopsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	b.script = b.Script(b.user, strings.Replace(controltest.SmokeScript, "p95 < 300ms", `{ check: "error_rate < 10%", abort: true }`, 1))
	s := b.twoShards(t)
	// Agent one alone is at 5% errors, agent two at 15%: merged, 10% breaks "< 10%".
	b.report(t, s, 0, nil, controltest.FailingSecond(t, 0, "get home", 100, 5, 20*time.Millisecond))
	b.report(t, s, 1, nil, controltest.FailingSecond(t, 0, "get home", 100, 15, 20*time.Millisecond))
	require.NoError(t, b.Runs.Reap(ctx))
	for i := range s.agents {
		in := b.report(t, s, i, nil)
		require.NotNil(t, in.Stop)
		require.Equal(t, run.AbortedThreshold, in.Stop.Reason)
		require.Contains(t, in.Stop.Detail, "error_rate < 10%")
		b.report(t, s, i, &fleet.ShardEnd{Stop: *in.Stop})
	}
	r, err := b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunAbortedThreshold, r.State)
	require.Contains(t, r.Reason, "error_rate < 10%")
}

// An agent that falls silent is lost once its silence outlasts LostAfter, and not before: its
// shard ends lost, the run fails saying which agent it lost, and the summary keeps what the agent
// reported and says what is missing, in its share and in the figures after it stopped.
func TestALostAgentsShardFailsWithinItsDeadlineAndItsShareIsReportedIncomplete(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{LostAfter: 8 * time.Second})
	ctx := context.Background()
	s := b.twoShards(t)
	for i := range int64(3) {
		b.report(t, s, 1, nil, controltest.Second(t, i, "get home", 10, 20*time.Millisecond))
	}
	b.report(t, s, 0, nil, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))
	// The first agent falls silent from its last report on; the second goes on, then ends.
	r, err := b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	b.Clock.Set(*r.Shards[0].HeartbeatAt)
	b.Clock.Add(6 * time.Second)
	require.NoError(t, b.Runs.Reap(ctx))
	r, err = b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.ShardRunning, r.Shards[0].State, "6 seconds of silence is not yet lost")

	b.report(t, s, 1, completed, controltest.Second(t, 3, "get home", 10, 20*time.Millisecond))
	b.Clock.Add(3 * time.Second)
	require.NoError(t, b.Runs.Reap(ctx))
	r, err = b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.ShardLost, r.Shards[0].State)
	require.Equal(t, barrage.RunFailed, r.State)
	require.Contains(t, r.Reason, fmt.Sprintf("agent %s was lost: the agent sent nothing for 8s", s.agents[0].ID))

	doc := b.summary(t, s.run.ID)
	require.EqualValues(t, 50, doc.Total.Count, "what the lost agent reported is kept")
	require.NotNil(t, doc.Incomplete)
	require.Len(t, doc.Incomplete.Agents, 1)
	gap := doc.Incomplete.Agents[0]
	require.Equal(t, string(barrage.ShardLost), gap.State)
	require.Contains(t, gap.Agent, "agent-0")
	require.EqualValues(t, 1, gap.FromS, "nothing from the lost agent after its first second")
	require.Equal(t, string(barrage.ShardLost), doc.Agents[0].State)
	require.EqualValues(t, 10, doc.Agents[0].Requests)

	// The lost agent's report, once it is back, is refused: its shard has ended.
	_, err = b.Fleet.Report(ctx, s.agents[0], s.jobs[0].Shard.ID, fleet.Report{Lease: s.jobs[0].Shard.Lease,
		Seconds: []fleet.Second{controltest.Second(t, 1, "get home", 10, 20*time.Millisecond)}})
	require.ErrorIs(t, err, barrage.ErrConflict)
}

// A shard no agent takes fails its run once Unclaimed has passed, and not before.
func TestAnUnclaimedShardFailsItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{Unclaimed: time.Minute})
	ctx := context.Background()
	a, _ := b.Agent(&b.user, "mine", barrage.Limits{})
	r := b.start(t, runs.RunInput{AgentIDs: []uuid.UUID{a.ID}})
	b.Clock.Set(r.CreatedAt)
	b.Clock.Add(50 * time.Second)
	require.NoError(t, b.Runs.Reap(ctx))
	got, err := b.Runs.Run(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunQueued, got.State)

	b.Clock.Add(20 * time.Second)
	require.NoError(t, b.Runs.Reap(ctx))
	got, err = b.Runs.Run(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunFailed, got.State)
	require.Contains(t, got.Reason, "no agent took the shard within 1m0s")
	require.Nil(t, b.Lease(a), "the ended shard is not handed out")
}

// A canceled run's agents hear it at their next report, and the run ends canceled once they
// have stopped.
func TestACanceledRunStopsItsAgentsAtTheirNextReport(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	s := b.twoShards(t)
	_, err := b.Runs.CancelRun(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	_, err = b.Runs.CancelRun(ctx, b.user, s.run.ID)
	require.ErrorIs(t, err, barrage.ErrConflict, "a run is canceled once")
	for i := range s.agents {
		in := b.report(t, s, i, nil, controltest.Second(t, 0, "get home", 1, 20*time.Millisecond))
		require.NotNil(t, in.Stop)
		require.Equal(t, run.Canceled, in.Stop.Reason)
		require.Equal(t, "canceled by tester@example.com", in.Stop.Detail)
		b.report(t, s, i, &fleet.ShardEnd{Stop: *in.Stop})
	}
	r, err := b.Runs.Run(ctx, b.user, s.run.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunCanceled, r.State)
}

// Another user's run answers not found, whatever is asked of it.
func TestAnotherUsersRunIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	s := b.twoShards(t)
	b.report(t, s, 0, completed, controltest.Second(t, 0, "get home", 1, 20*time.Millisecond))
	b.report(t, s, 1, completed)
	other := b.User("other@example.com", &barrage.DemoLicense)
	id := s.run.ID

	_, err := b.Runs.Run(ctx, other, id)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = b.Runs.Summary(ctx, other, id)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = b.Runs.CancelRun(ctx, other, id)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	require.ErrorIs(t, b.Runs.Series(ctx, other, id, func(*runs.MergedSecond) error { return nil }), barrage.ErrNotFound)
	require.ErrorIs(t, b.Runs.Live(ctx, other, id, -1, func(runs.LiveEvent) error { return nil }), barrage.ErrNotFound)
	_, err = b.Runs.Compare(ctx, other, id, id, summary.Tolerances{})
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = b.Runs.RunReport(ctx, other, id, nil, summary.Tolerances{})
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = b.Runs.RunSweep(ctx, other, id)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	page, err := b.Runs.Runs(ctx, other, barrage.RunFilter{}, nil, 10)
	require.NoError(t, err)
	require.Empty(t, page.Items)
	_, err = b.Runs.CreateRun(ctx, other, runs.RunInput{ScriptID: b.script.ID})
	require.ErrorIs(t, err, barrage.ErrNotFound, "nor is their script")

	// Its owner has all of it.
	_, err = b.Runs.Compare(ctx, b.user, id, id, summary.Tolerances{})
	require.NoError(t, err)
}

// A run is told from the facts its script made of it at its creation: once it is created, its
// live view, its summary and its comparison read no script, so a script that no longer parses
// (a newer version's grammar, a row damaged) changes nothing of them. A run made before runs kept
// their facts has them derived from its script once, and stored.
func TestARunIsToldFromTheFactsStoredAtItsCreation(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	s := b.twoShards(t)
	_, err := b.DB.Exec(ctx, `UPDATE scripts SET source = 'version: [1' WHERE id = $1`, b.script.ID)
	require.NoError(t, err)

	b.report(t, s, 0, completed, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))
	b.report(t, s, 1, completed, controltest.Second(t, 0, "get home", 5, 400*time.Millisecond))
	doc := b.summary(t, s.run.ID)
	require.Equal(t, barrage.RunFinished, doc.State)
	require.Len(t, doc.Requests, 1)
	require.Equal(t, "get home", doc.Requests[0].Name)
	require.Len(t, doc.Thresholds, 1, "the script's threshold is judged from the stored facts")
	require.Equal(t, "p95 < 300ms", doc.Thresholds[0].Check)
	require.False(t, doc.Thresholds[0].Passed, "5 of 15 requests took 400ms")

	judged := 0
	require.NoError(t, b.Runs.Live(ctx, b.user, s.run.ID, -1, func(ev runs.LiveEvent) error {
		judged = max(judged, len(ev.Thresholds))
		return nil
	}))
	require.Equal(t, 1, judged, "the live view judges the script's threshold")
	rep, err := b.Runs.RunReport(ctx, b.user, s.run.ID, &s.run.ID, summary.Tolerances{})
	require.NoError(t, err)
	require.Equal(t, "smoke", rep.Run.Script)
	require.Equal(t, "closed", rep.Run.Model)
	require.Equal(t, "smoke", rep.Base.Script)

	// A run of a version that kept no facts: they are derived from its script, once.
	b.script = b.Script(b.user, strings.Replace(controltest.SmokeScript, "name: smoke", "name: older", 1))
	old := b.twoShards(t)
	_, err = b.DB.Exec(ctx, `DELETE FROM run_facts WHERE run_id = $1`, old.run.ID)
	require.NoError(t, err)
	b.report(t, old, 0, completed, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))
	b.report(t, old, 1, completed, controltest.Second(t, 0, "get home", 5, 20*time.Millisecond))
	doc = b.summary(t, old.run.ID)
	require.Len(t, doc.Thresholds, 1)
	require.True(t, doc.Thresholds[0].Passed)
	var stored int
	require.NoError(t, b.DB.QueryRow(ctx, `SELECT count(*) FROM run_facts WHERE run_id = $1`, old.run.ID).Scan(&stored))
	require.Equal(t, 1, stored, "the facts derived are stored")

	// Facts changed by hand into what no script makes are derived again, and stored in their place.
	for _, bad := range []string{`{"monitors":[null]}`, `{"thresholds":[null]}`, `{"workload":{"model":"sideways"}}`, `[]`} {
		_, err = b.DB.Exec(ctx, `UPDATE run_facts SET facts = $2 WHERE run_id = $1`, old.run.ID, bad)
		require.NoError(t, err)
		rep, err := b.Runs.RunReport(ctx, b.user, old.run.ID, nil, summary.Tolerances{})
		require.NoError(t, err, bad)
		require.Equal(t, "older", rep.Run.Script, bad)
		var script string
		require.NoError(t, b.DB.QueryRow(ctx, `SELECT facts->>'script' FROM run_facts WHERE run_id = $1`, old.run.ID).Scan(&script))
		require.Equal(t, "older", script, "the facts are stored again in place of %s", bad)
	}
}

// A run whose stored facts do not read (a damaged row, a newer version's model) holds up no other
// run's housekeeping: another user's aborting threshold is still judged.
func TestARunWhoseFactsDoNotReadHoldsUpNoOtherRun(t *testing.T) {
	t.Parallel()
	b := setup(t, control.Config{})
	ctx := context.Background()
	broken := b.twoShards(t)
	b.report(t, broken, 0, nil, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))
	b.report(t, broken, 1, nil, controltest.Second(t, 0, "get home", 10, 20*time.Millisecond))
	_, err := b.DB.Exec(ctx, `UPDATE run_facts SET facts = '{"workload":{"model":"sideways"}}' WHERE run_id = $1`, broken.run.ID)
	require.NoError(t, err)

	b.script = b.Script(b.user, strings.Replace(controltest.SmokeScript, "p95 < 300ms", `{ check: "error_rate < 10%", abort: true }`, 1))
	s := b.twoShards(t)
	b.report(t, s, 0, nil, controltest.FailingSecond(t, 0, "get home", 100, 15, 20*time.Millisecond))
	b.report(t, s, 1, nil, controltest.FailingSecond(t, 0, "get home", 100, 15, 20*time.Millisecond))
	reapErr := b.Runs.Reap(ctx)
	in := b.report(t, s, 0, nil)
	require.NotNil(t, in.Stop, "the other run's aborting threshold is judged (reap: %v)", reapErr)

	// The run itself is told from its script, and ends.
	b.report(t, broken, 0, completed)
	b.report(t, broken, 1, completed)
	require.NoError(t, b.Runs.Reap(ctx))
	doc := b.summary(t, broken.run.ID)
	require.Equal(t, barrage.RunFinished, doc.State)
	require.Len(t, doc.Thresholds, 1)
}

// A runner of a project starts its scripts on its agents, counted against the runner's own
// license; setting the environment of a script that reads the project's secrets takes an
// editor, as it could send them elsewhere; a viewer starts nothing.
func TestARunnerRunsTheProjectsScriptsButDoesNotRedirectItsSecrets(t *testing.T) {
	t.Parallel()
	p := controltest.New(t, control.Config{Targets: targets.Config{All: true}})
	ctx := context.Background()
	owner := p.User("owner@example.com", &barrage.DemoLicense)
	runner := p.User("runner@example.com", &barrage.DemoLicense)
	viewer := p.User("viewer@example.com", &barrage.DemoLicense)
	team := p.Share(&owner, "team", barrage.ProjectRunner, &runner)
	inv, err := p.Projects.Invite(ctx, owner, team, projects.InviteInput{UserID: &viewer.User.ID, Role: barrage.ProjectViewer})
	require.NoError(t, err)
	_, err = p.Projects.Answer(ctx, viewer, inv.ID, true)
	require.NoError(t, err)
	viewer = p.Reload(viewer)
	_, _, err = p.Secrets.PutSecret(ctx, owner, &team, "API_KEY", "the team's key")
	require.NoError(t, err)
	src := strings.Replace(controltest.SmokeScript, `url: "http://127.0.0.1:9/"`, `url: "${base}/", headers: { X-Key: "${secret.API_KEY}" }`, 1)
	src = strings.Replace(src, "name: smoke\n", "name: smoke\nvariables:\n  env:\n    base: { from: BASE, default: \"http://127.0.0.1:9\" }\n", 1)
	sc, err := p.Tests.CreateScript(ctx, owner, tests.ScriptInput{Source: []byte(src), Project: &team})
	require.NoError(t, err)
	a, _ := p.Agent(nil, "shared", barrage.Limits{})

	_, err = p.Runs.CreateRun(ctx, runner, runs.RunInput{ScriptID: sc.ID, AgentIDs: []uuid.UUID{a.ID}, Env: map[string]string{"BASE": "http://127.0.0.1:1"}})
	require.ErrorIs(t, err, barrage.ErrForbidden)
	require.ErrorContains(t, err, "takes the editor role")
	_, err = p.Runs.CreateRun(ctx, viewer, runs.RunInput{ScriptID: sc.ID, AgentIDs: []uuid.UUID{a.ID}})
	require.ErrorIs(t, err, barrage.ErrForbidden)
	require.ErrorContains(t, err, "takes the runner role")
	r, err := p.Runs.CreateRun(ctx, runner, runs.RunInput{ScriptID: sc.ID, AgentIDs: []uuid.UUID{a.ID}})
	require.NoError(t, err)
	require.Equal(t, team, r.ProjectID)
	require.Equal(t, runner.User.ID, r.OwnerID, "the run counts against the runner's license")
}
