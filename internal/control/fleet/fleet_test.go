package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/run"
)

// targetsOpen opens every target: the tests' scripts load nothing.
var targetsOpen = targets.Config{All: true}

// testBundle is a control plane whose targets are all open, and a user with the demo license
// and an agent of their own.
type testBundle struct {
	*controltest.Plane
	user  barrage.Principal
	agent barrage.Agent
	token string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	p := controltest.New(t, control.Config{Targets: targetsOpen})
	u := p.User("tester@example.com", &barrage.DemoLicense)
	a, token := p.Agent(&u, "mine", barrage.Limits{})
	return &testBundle{Plane: p, user: u, agent: a, token: token}
}

// queued is a run of the bundle's user on agents, not yet leased.
func (b *testBundle) queued(t *testing.T, agents ...barrage.Agent) barrage.Run {
	t.Helper()
	ids := make([]uuid.UUID, len(agents))
	for i, a := range agents {
		ids[i] = a.ID
	}
	r, err := b.Runs.CreateRun(context.Background(), b.user, runs.RunInput{ScriptID: b.Script(b.user, controltest.SmokeScript).ID, AgentIDs: ids})
	require.NoError(t, err)
	return r
}

// An agent's shard is handed to it under a fencing token, again (under a new one) when the agent
// asks before reporting on it, and no more once it has: a report under another lease (a stale
// holder's) is refused and stores nothing, another agent's report on it is not found, and the
// holder's is taken.
func TestAShardIsHandedUntilReportedOnAndAStaleLeaseIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.queued(t, b.agent)
	job := b.Lease(b.agent)
	require.NotNil(t, job)
	require.Equal(t, r.ID, job.Run.ID)
	require.Equal(t, r.Shards[0].ID, job.Shard.ID)
	require.Equal(t, barrage.ShardRunning, job.Shard.State)
	require.Equal(t, controltest.SmokeScript, string(job.Script.Source), "the shard comes with its script")
	require.NotNil(t, job.Run.StartAt, "the first lease sets the run's start")
	// The agent asks again before any report of its shard: the answer never reached it (a
	// replica died before sending it), and the shard is handed again under a new token.
	again := b.Lease(b.agent)
	require.NotNil(t, again, "a shard whose answer was lost is handed again")
	require.Equal(t, job.Shard.ID, again.Shard.ID)
	require.Equal(t, job.Shard.Lease+1, again.Shard.Lease)
	require.Equal(t, *job.Run.StartAt, *again.Run.StartAt, "the run's start stays")
	require.Equal(t, job.Shard.HeartbeatAt, again.Shard.HeartbeatAt, "asking again keeps no shard alive")
	require.Equal(t, job.Shard.LeasedAt, again.Shard.LeasedAt)

	sec := controltest.Second(t, 0, "get home", 10, 20*time.Millisecond)
	_, err := b.Fleet.Report(ctx, b.agent, job.Shard.ID, fleet.Report{Lease: job.Shard.Lease, Seconds: []fleet.Second{sec}})
	require.ErrorIs(t, err, barrage.ErrConflict)
	require.ErrorContains(t, err, "another holder has it")
	stored, err := b.Store.RunSeconds(ctx, r.ID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, stored, "a stale holder's seconds are not stored")

	other, _ := b.Agent(&b.user, "other", barrage.Limits{})
	_, err = b.Fleet.Report(ctx, other, job.Shard.ID, fleet.Report{Lease: job.Shard.Lease, Seconds: []fleet.Second{sec}})
	require.ErrorIs(t, err, barrage.ErrNotFound)

	job = again
	in, err := b.Fleet.Report(ctx, b.agent, job.Shard.ID, fleet.Report{Lease: job.Shard.Lease, Seconds: []fleet.Second{sec}})
	require.NoError(t, err)
	require.Nil(t, in.Stop)
	stored, err = b.Store.RunSeconds(ctx, r.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Nil(t, b.Lease(b.agent), "a shard its agent reported on is not handed again")
}

// An agent that speaks a protocol older than the server accepts is refused, told what to run.
func TestAnOutdatedAgentIsRefusedWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queued(t, b.agent)
	old := controltest.Hello
	old.Protocol = barrage.MinAgentProtocol - 1
	_, err := b.Fleet.Lease(context.Background(), b.agent, old, 0)
	require.ErrorIs(t, err, barrage.ErrOutdated)
	require.ErrorContains(t, err, "upgrade it")
	require.NotNil(t, b.Lease(b.agent), "the shard waits for an agent that can run it")
}

// What an agent reports is checked before anything is stored: a second's index, its snapshot,
// how many seconds come at once, and the figures of a sweep's levels, each refusal naming the
// field.
func TestAReportThatNoAgentCouldHaveMeasuredIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.queued(t, b.agent)
	job := b.Lease(b.agent)
	require.NotNil(t, job)
	report := func(r fleet.Report) error {
		r.Lease = job.Shard.Lease
		_, err := b.Fleet.Report(ctx, b.agent, job.Shard.ID, r)
		return err
	}
	late := controltest.Second(t, fleet.MaxSecondIndex+1, "get home", 1, time.Millisecond)
	controltest.Invalid(t, report(fleet.Report{Seconds: []fleet.Second{late}}), "seconds[0].index")
	garbled := controltest.Second(t, 0, "get home", 1, time.Millisecond)
	garbled.Snapshot = []byte("not a snapshot")
	controltest.Invalid(t, report(fleet.Report{Seconds: []fleet.Second{garbled}}), "seconds[0].snapshot")
	many := make([]fleet.Second, fleet.MaxReportSeconds+1)
	controltest.Invalid(t, report(fleet.Report{Seconds: many}), "seconds")
	sweep := &fleet.ShardEnd{Stop: run.Stop{Reason: run.Completed}, Result: []byte(`{"sweep_levels": [{"vus": 2, "rps": 10, "ok_rps": 11}]}`)}
	controltest.Invalid(t, report(fleet.Report{End: sweep}), "end.result.sweep_levels[0].ok_rps")
}

// queue records the runs whose summary it was asked to queue, in the transaction that ended
// their last shard.
type queue struct{ runs []uuid.UUID }

func (q *queue) Finalize(_ context.Context, tx pgx.Tx, id uuid.UUID) error {
	if tx == nil {
		panic("no transaction")
	}
	q.runs = append(q.runs, id)
	return nil
}

// With a queue, the report that ends a run's last shard queues its summary, once, rather than
// making it in the agent's request; until then, nothing is queued.
func TestTheLastShardsEndQueuesTheRunsSummaryOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := &queue{}
	b.Store.UseFinalizer(q)
	other, _ := b.Agent(&b.user, "other", barrage.Limits{})
	r := b.queued(t, b.agent, other)
	end := &fleet.ShardEnd{Stop: run.Stop{Reason: run.Completed}}
	for i, a := range []barrage.Agent{b.agent, other} {
		job := b.Lease(a)
		require.NotNil(t, job)
		_, err := b.Fleet.Report(ctx, a, job.Shard.ID, fleet.Report{Lease: job.Shard.Lease, End: end})
		require.NoError(t, err)
		if i == 0 {
			require.Empty(t, q.runs, "a shard goes on")
		}
	}
	require.Equal(t, []uuid.UUID{r.ID}, q.runs)
	got, err := b.Runs.Run(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Nil(t, got.EndedAt, "the summary is the queue's to make")
	require.NoError(t, b.Runs.FinalizeRun(ctx, r.ID))
	got, err = b.Runs.Run(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunFinished, got.State)
}

// A ping goes to the agent with its next request for work and comes back with its answer; an
// offline agent is not pinged.
func TestAPingGoesThroughTheAgent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agentDone := make(chan error, 1)
	go func() {
		w, err := b.Fleet.Lease(ctx, b.agent, controltest.Hello, fleet.MaxLeaseWait)
		if err == nil && len(w.Pings) == 1 {
			err = b.Fleet.AnswerPing(ctx, b.agent, w.Pings[0])
		}
		agentDone <- err
	}()
	a, rtt, err := b.Fleet.Ping(ctx, b.user, b.agent.ID)
	require.NoError(t, err)
	require.Equal(t, b.agent.ID, a.ID)
	require.Positive(t, rtt)
	require.NoError(t, <-agentDone)

	b.Clock.Add(barrage.AgentOnlineWithin + time.Minute)
	_, _, err = b.Fleet.Ping(ctx, b.user, b.agent.ID)
	require.ErrorIs(t, err, barrage.ErrConflict)
	require.ErrorContains(t, err, "offline")
}

// An agent is its owner's: another user's id answers not found, and its token alone makes it
// known to the server.
func TestAnotherUsersAgentIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := b.User("other@example.com", &barrage.DemoLicense)
	_, err := b.Fleet.Agent(ctx, other, b.agent.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, _, err = b.Fleet.Ping(ctx, other, b.agent.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	require.ErrorIs(t, b.Fleet.DeleteAgent(ctx, other, b.agent.ID, false), barrage.ErrNotFound)
	list, err := b.Fleet.Agents(ctx, other, nil)
	require.NoError(t, err)
	require.Empty(t, list)

	shared, _ := b.Agent(nil, "shared", barrage.Limits{})
	list, err = b.Fleet.Agents(ctx, other, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, shared.ID, list[0].ID, "a shared agent serves everyone")
	require.ErrorIs(t, b.Fleet.DeleteAgent(ctx, other, shared.ID, false), barrage.ErrNotFound, "a shared agent is not a user's to remove")

	a, err := b.Fleet.AuthenticateAgent(ctx, b.token)
	require.NoError(t, err)
	require.Equal(t, b.agent.ID, a.ID)
	require.NoError(t, b.Fleet.DeleteAgent(ctx, b.user, b.agent.ID, false))
	_, err = b.Fleet.AuthenticateAgent(ctx, b.token)
	require.ErrorIs(t, err, barrage.ErrUnauthorized, "a removed agent's token is refused")
}

// Reports that arrive together are stored together, each second once whichever way it came: a
// second resent with the next is not counted twice, a stale holder's report among them is
// refused alone, and a ping waiting for an agent busy with a run reaches it with its next
// report.
func TestReportsThatArriveTogetherAreEachStoredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	agents := []barrage.Agent{b.agent}
	for _, name := range []string{"two", "three", "four"} {
		a, _ := b.Agent(&b.user, name, barrage.Limits{})
		agents = append(agents, a)
	}
	r := b.queued(t, agents...)
	jobs := make([]*barrage.ShardJob, len(agents))
	for i, a := range agents {
		jobs[i] = b.Lease(a)
		require.NotNil(t, jobs[i])
	}
	// Ten rounds of every agent reporting at once, each report with its second and the one
	// before (as an agent resends what it thinks unanswered), one stale report among them.
	for idx := range int64(10) {
		errs := make(chan error, len(agents)+1)
		for i, a := range agents {
			go func() {
				secs := []fleet.Second{controltest.Second(t, idx, "get home", 10, 20*time.Millisecond)}
				if idx > 0 {
					secs = append(secs, controltest.Second(t, idx-1, "get home", 10, 20*time.Millisecond))
				}
				_, err := b.Fleet.Report(ctx, a, jobs[i].Shard.ID, fleet.Report{Lease: jobs[i].Shard.Lease, Seconds: secs})
				errs <- err
			}()
		}
		go func() {
			errs <- refusedAsStale(b, agents[0], jobs[0], fleet.Report{Seconds: []fleet.Second{controltest.Second(t, idx, "get home", 10, 20*time.Millisecond)}})
		}()
		for range len(agents) + 1 {
			require.NoError(t, <-errs)
		}
	}
	stored, err := b.Store.RunSeconds(ctx, r.ID, 0, 100)
	require.NoError(t, err)
	require.Len(t, stored, 10*len(agents), "each agent's ten seconds, once each")
	run, err := b.Runs.Run(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Equal(t, barrage.RunRunning, run.State)

	// A ping for an agent that is running a shard: its next report takes it.
	pinged := make(chan error, 1)
	go func() {
		_, _, err := b.Fleet.Ping(ctx, b.user, agents[1].ID)
		pinged <- err
	}()
	var ping uuid.UUID
	require.Eventually(t, func() bool {
		in, err := b.Fleet.Report(ctx, agents[1], jobs[1].Shard.ID, fleet.Report{Lease: jobs[1].Shard.Lease})
		if err != nil || len(in.Pings) == 0 {
			return false
		}
		ping = in.Pings[0]
		return true
	}, 30*time.Second, 50*time.Millisecond, "the ping reaches the agent with a report")
	require.NoError(t, b.Fleet.AnswerPing(ctx, agents[1], ping))
	require.NoError(t, <-pinged)
}

// The ends of a run's shards that arrive together (its agents end at the same moment) each end
// their own shard with their own account and last second, once; a stale holder's end among them
// is refused; the run's summary is queued once, by the transaction that ended the last.
func TestEndsThatArriveTogetherEndTheRunOnce(t *testing.T) {
	t.Parallel()
	for _, queued := range []bool{true, false} {
		t.Run(fmt.Sprintf("queued=%v", queued), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			q := &queue{}
			if queued {
				b.Store.UseFinalizer(q)
			}
			agents := []barrage.Agent{b.agent}
			for i := range 7 {
				a, _ := b.Agent(&b.user, fmt.Sprintf("agent %d", i), barrage.Limits{})
				agents = append(agents, a)
			}
			r := b.queued(t, agents...)
			jobs := make([]*barrage.ShardJob, len(agents))
			for i, a := range agents {
				jobs[i] = b.Lease(a)
				require.NotNil(t, jobs[i])
			}
			errs := make(chan error, len(agents)+1)
			for i, a := range agents {
				go func() {
					_, err := b.Fleet.Report(ctx, a, jobs[i].Shard.ID, fleet.Report{Lease: jobs[i].Shard.Lease,
						Seconds: []fleet.Second{controltest.Second(t, 0, "get home", 10, 20*time.Millisecond)},
						End:     &fleet.ShardEnd{Stop: run.Stop{Reason: run.Completed}, LateStart: time.Duration(i) * time.Millisecond}})
					errs <- err
				}()
			}
			go func() {
				errs <- refusedAsStale(b, agents[0], jobs[0], fleet.Report{End: &fleet.ShardEnd{Stop: run.Stop{Reason: run.Failed, Detail: "stale"}}})
			}()
			for range len(agents) + 1 {
				require.NoError(t, <-errs)
			}
			got, err := b.Runs.Run(ctx, b.user, r.ID)
			require.NoError(t, err)
			if queued {
				require.Equal(t, []uuid.UUID{r.ID}, q.runs, "the summary queued once")
				require.NoError(t, b.Runs.FinalizeRun(ctx, r.ID))
				got, err = b.Runs.Run(ctx, b.user, r.ID)
				require.NoError(t, err)
			}
			require.Equal(t, barrage.RunFinished, got.State)
			require.Len(t, got.Shards, len(agents))
			late := map[uuid.UUID]time.Duration{}
			for i, a := range agents {
				late[a.ID] = time.Duration(i) * time.Millisecond
			}
			for _, sh := range got.Shards {
				require.Equal(t, barrage.ShardState(run.Completed.String()), sh.State, "shard %d", sh.From)
				require.Equal(t, fleet.EndReason(run.Completed), sh.Reason)
				require.Equal(t, late[*sh.AgentID], sh.LateStart, "each shard its own agent's account")
			}
			stored, err := b.Store.RunSeconds(ctx, r.ID, 0, 10)
			require.NoError(t, err)
			require.Len(t, stored, len(agents), "each agent's last second, once")
		})
	}
}

// refusedAsStale sends rep of job's shard under the lease before job's, as a stale holder would,
// and says what is wrong unless it was refused as a conflict.
func refusedAsStale(b *testBundle, a barrage.Agent, job *barrage.ShardJob, rep fleet.Report) error {
	rep.Lease = job.Shard.Lease - 1
	_, err := b.Fleet.Report(context.Background(), a, job.Shard.ID, rep)
	if !errors.Is(err, barrage.ErrConflict) {
		return fmt.Errorf("a stale report: want a conflict, got %v", err)
	}
	return nil
}

// A shard whose answer may have been lost is handed again only soon after its lease and while
// its run goes on: asking again and again keeps no shard alive past its agent's silence, nor a
// canceled run's.
func TestALostAnswerIsHandedAgainOnlySoonAndWhileItsRunGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	r := b.queued(t, b.agent)
	require.NotNil(t, b.Lease(b.agent))
	_, err := b.DB.Exec(ctx, `UPDATE shards SET leased_at = leased_at - interval '5 seconds',
		heartbeat_at = heartbeat_at - interval '5 seconds' WHERE run_id = $1`, r.ID)
	require.NoError(t, err)
	require.Nil(t, b.Lease(b.agent), "5 s after its lease, a shard is not handed again: it is to be lost")

	other, _ := b.Agent(&b.user, "other", barrage.Limits{})
	r = b.queued(t, other)
	require.NotNil(t, b.Lease(other))
	_, err = b.Runs.CancelRun(ctx, b.user, r.ID)
	require.NoError(t, err)
	require.Nil(t, b.Lease(other), "a canceled run's shard is not handed again")
}

// An end that the batch cannot store (a reason PostgreSQL refuses) is refused alone, through its
// own transaction, and the batch's failure is logged: no one else would hear of it.
func TestAnEndTheBatchCannotStoreIsRefusedAndLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var logged bytes.Buffer
	b.Store.UseLog(slog.New(slog.NewTextHandler(&logged, nil)))
	b.queued(t, b.agent)
	job := b.Lease(b.agent)
	require.NotNil(t, job)
	_, err := b.Fleet.Report(ctx, b.agent, job.Shard.ID, fleet.Report{Lease: job.Shard.Lease,
		Seconds: []fleet.Second{controltest.Second(t, 0, "get home", 10, 20*time.Millisecond)},
		End:     &fleet.ShardEnd{Stop: run.Stop{Reason: run.Failed, Detail: "nul \x00 in it"}}})
	require.Error(t, err)
	require.NotErrorIs(t, err, barrage.ErrConflict)
	require.Contains(t, logged.String(), "a batch of shards' ends failed")
}
