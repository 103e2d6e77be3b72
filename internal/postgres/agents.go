package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateAgent stores a new agent whose token hashes to tokenHash; a private one up to
// barrage.MaxPrivateAgents of its owner's.
func (s *Store) CreateAgent(ctx context.Context, a barrage.Agent, tokenHash []byte) (barrage.Agent, error) {
	vus, secs := jobLimitParams(a.Limits)
	var row dbsqlc.Agent
	insert := func(tx pgx.Tx) (err error) {
		row, err = s.q.AgentInsert(ctx, tx, dbsqlc.AgentInsertParams{
			ID: a.ID, Name: a.Name, OwnerID: a.OwnerID, ProjectID: a.ProjectID, TokenHash: tokenHash, MaxVus: vus, MaxRunSeconds: secs,
		})
		return err
	}
	var err error
	if a.OwnerID == nil { // a shared agent, an admin's
		err = s.inTx(ctx, insert)
	} else {
		err = s.underCap(ctx, *a.OwnerID, func(tx pgx.Tx) (int64, error) { return s.q.AgentCountOwned(ctx, tx, a.OwnerID) },
			barrage.MaxPrivateAgents, "private agents", insert)
	}
	if err != nil {
		return barrage.Agent{}, translate(err, "agent")
	}
	return agentFromRow(row, false), nil
}

// UsableAgents lists the agents of the projects given, then the shared ones.
func (s *Store) UsableAgents(ctx context.Context, projects []uuid.UUID) ([]barrage.Agent, error) {
	rows, err := s.q.AgentListUsable(ctx, s.pool, projects)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Agent, len(rows))
	for i, r := range rows {
		out[i] = agentFromRow(r.Agent, r.Busy)
	}
	return out, nil
}

// AllAgents lists every agent, for admins.
func (s *Store) AllAgents(ctx context.Context) ([]barrage.Agent, error) {
	rows, err := s.q.AgentListAll(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Agent, len(rows))
	for i, r := range rows {
		out[i] = agentFromRow(r.Agent, r.Busy)
	}
	return out, nil
}

// UsableAgent reads agent id when it is shared or of one of the projects given; any other agent
// is not found.
func (s *Store) UsableAgent(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Agent, error) {
	r, err := s.q.AgentGetUsable(ctx, s.pool, dbsqlc.AgentGetUsableParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Agent{}, translate(err, "agent")
	}
	return agentFromRow(r.Agent, r.Busy), nil
}

// AgentByTokenHash authenticates an agent.
func (s *Store) AgentByTokenHash(ctx context.Context, hash []byte) (barrage.Agent, error) {
	row, err := s.q.AgentGetByTokenHash(ctx, s.pool, hash)
	if err != nil {
		return barrage.Agent{}, translate(err, "agent")
	}
	return agentFromRow(row, false), nil
}

// AgentSeen records that the agent asked for work now, and what it said of itself.
func (s *Store) AgentSeen(ctx context.Context, id uuid.UUID, version string, cores int, ip string, sandbox bool, protocol int) error {
	return s.q.AgentSeen(ctx, s.pool, dbsqlc.AgentSeenParams{ID: id, Version: version, Cores: int32(cores), LastIp: ip, Sandbox: sandbox,
		Protocol: int32(protocol)})
}

// DeleteAgent removes a private agent of the projects given, or with projects nil a shared agent.
func (s *Store) DeleteAgent(ctx context.Context, id uuid.UUID, projects []uuid.UUID) error {
	n, err := s.q.AgentDelete(ctx, s.pool, dbsqlc.AgentDeleteParams{ID: id, Projects: projects})
	if err != nil {
		return translate(err, "agent")
	}
	if n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "agent not found")
	}
	return nil
}

func agentFromRow(r dbsqlc.Agent, busy bool) barrage.Agent {
	return barrage.Agent{
		ID: r.ID, Name: r.Name, OwnerID: r.OwnerID, ProjectID: r.ProjectID, Limits: limitsFromRow(r.MaxVus, r.MaxRunSeconds, nil),
		Version: r.Version, Cores: int(r.Cores), LastSeenAt: r.LastSeenAt, LastIP: r.LastIp,
		Disabled: r.Disabled, Sandbox: r.Sandbox, Protocol: int(r.Protocol), Busy: busy, CreatedAt: r.CreatedAt,
	}
}

// jobLimitParams are the nullable columns of per-job limits (an agent's, a run's): zero, no
// limit, is NULL.
func jobLimitParams(l barrage.Limits) (vus, secs *int32) {
	if l.MaxVUs > 0 {
		vus = ptr(int32(l.MaxVUs))
	}
	if l.MaxRunDuration > 0 {
		secs = ptr(int32(l.MaxRunDuration / time.Second))
	}
	return vus, secs
}

// CreatePing queues a ping for the agent and wakes its waiting lease requests.
func (s *Store) CreatePing(ctx context.Context, id, agentID uuid.UUID) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.AgentPingInsert(ctx, tx, dbsqlc.AgentPingInsertParams{ID: id, AgentID: agentID}); err != nil {
			return translate(err, "ping")
		}
		return s.notifyWork(ctx, tx, []uuid.UUID{agentID})
	})
}

// TakePings hands the agent the pings waiting for it.
func (s *Store) TakePings(ctx context.Context, agentID uuid.UUID) ([]uuid.UUID, error) {
	return s.q.AgentPingTake(ctx, s.pool, agentID)
}

// AnswerPing records the agent's answer to its ping and wakes whoever waits on it; the round trip
// is from the ping's creation to the answer, both on the database's clock.
func (s *Store) AnswerPing(ctx context.Context, agentID, id uuid.UUID) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.AgentPingAnswer(ctx, tx, dbsqlc.AgentPingAnswerParams{ID: id, AgentID: agentID}); err != nil {
			return translate(err, "ping")
		}
		return s.notify(ctx, tx, id)
	})
}

// PingRoundTrip reads how long the ping took to be answered; ok is false while it is not.
func (s *Store) PingRoundTrip(ctx context.Context, id uuid.UUID) (rtt time.Duration, ok bool, err error) {
	p, err := s.q.AgentPingGet(ctx, s.pool, id)
	if err != nil || p.AnsweredAt == nil {
		return 0, false, translate(err, "ping")
	}
	return p.AnsweredAt.Sub(p.CreatedAt), true, nil
}

// AgentWorkWaiting says whether the agent has a shard, pings or jobs waiting for it, jobs
// since jobsSince (see TakeAgentJobs): one round trip, which a waiting lease asks at each look
// before it takes anything.
func (s *Store) AgentWorkWaiting(ctx context.Context, agentID uuid.UUID, jobsSince time.Time) (bool, error) {
	return s.q.AgentWorkWaiting(ctx, s.pool, dbsqlc.AgentWorkWaitingParams{AgentID: &agentID, JobsSince: jobsSince})
}
