package httpapi

import (
	"context"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/google/uuid"
)

func (s *server) ListAgents(ctx context.Context, req api.ListAgentsRequestObject) (api.ListAgentsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	agents, err := s.fleet.Agents(ctx, p, req.Params.Project)
	if err != nil {
		return nil, err
	}
	return api.ListAgents200JSONResponse(toAPIAgentList(agents)), nil
}

func (s *server) ListAllAgents(ctx context.Context, _ api.ListAllAgentsRequestObject) (api.ListAllAgentsResponseObject, error) {
	agents, err := s.fleet.AllAgents(ctx)
	if err != nil {
		return nil, err
	}
	return api.ListAllAgents200JSONResponse(toAPIAgentList(agents)), nil
}

func (s *server) CreateAgent(ctx context.Context, req api.CreateAgentRequestObject) (api.CreateAgentResponseObject, error) {
	a, token, err := s.createAgent(ctx, *req.Body, req.Params.Project, false)
	if err != nil {
		return nil, err
	}
	return api.CreateAgent201JSONResponse(toAPICreatedAgent(a, token)), nil
}

func (s *server) CreateSharedAgent(ctx context.Context, req api.CreateSharedAgentRequestObject) (api.CreateSharedAgentResponseObject, error) {
	a, token, err := s.createAgent(ctx, *req.Body, nil, true)
	if err != nil {
		return nil, err
	}
	return api.CreateSharedAgent201JSONResponse(toAPICreatedAgent(a, token)), nil
}

func (s *server) createAgent(ctx context.Context, b api.CreateAgentRequest, project *uuid.UUID, shared bool) (barrage.Agent, string, error) {
	p, err := principal(ctx)
	if err != nil {
		return barrage.Agent{}, "", err
	}
	in := fleet.AgentInput{Name: b.Name, Project: project}
	if b.MaxVus != nil {
		in.Limits.MaxVUs = *b.MaxVus
	}
	if b.MaxRunDurationSeconds != nil {
		in.Limits.MaxRunDuration = time.Duration(*b.MaxRunDurationSeconds) * time.Second
	}
	a, token, err := s.fleet.CreateAgent(ctx, p, in, shared)
	if err == nil {
		audit.Object(ctx, a.ID.String())
		audit.Detail(ctx, "name", a.Name)
		audit.Detail(ctx, "shared", shared)
	}
	return a, token, err
}

func (s *server) GetAgent(ctx context.Context, req api.GetAgentRequestObject) (api.GetAgentResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.fleet.Agent(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetAgent200JSONResponse(toAPIAgent(a, time.Now())), nil
}

func (s *server) DeleteAgent(ctx context.Context, req api.DeleteAgentRequestObject) (api.DeleteAgentResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.fleet.DeleteAgent(ctx, p, req.Id, false); err != nil {
		return nil, err
	}
	return api.DeleteAgent204Response{}, nil
}

func (s *server) DeleteSharedAgent(ctx context.Context, req api.DeleteSharedAgentRequestObject) (api.DeleteSharedAgentResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.fleet.DeleteAgent(ctx, p, req.Id, true); err != nil {
		return nil, err
	}
	return api.DeleteSharedAgent204Response{}, nil
}

func toAPIAgentList(agents []barrage.Agent) api.AgentList {
	now := time.Now()
	out := api.AgentList{Items: make([]api.Agent, len(agents))}
	for i, a := range agents {
		out.Items[i] = toAPIAgent(a, now)
	}
	return out
}

func toAPIAgent(a barrage.Agent, now time.Time) api.Agent {
	v := api.Agent{
		Id: a.ID, Name: a.Name, Shared: a.Shared(), State: api.AgentState(a.State(now)), Version: a.Version,
		Cores: a.Cores, Sandbox: a.Sandbox, Protocol: a.Protocol, LastSeenAt: a.LastSeenAt, CreatedAt: a.CreatedAt, ProjectId: a.ProjectID,
	}
	v.MaxVus, v.MaxRunDurationSeconds = apiJobLimits(a.Limits)
	return v
}

func toAPICreatedAgent(a barrage.Agent, token string) api.CreatedAgent {
	v := toAPIAgent(a, time.Now())
	return api.CreatedAgent{
		Id: v.Id, Name: v.Name, Shared: v.Shared, State: v.State, Version: v.Version, Cores: v.Cores,
		Sandbox: v.Sandbox, Protocol: v.Protocol, MaxVus: v.MaxVus, MaxRunDurationSeconds: v.MaxRunDurationSeconds, LastSeenAt: v.LastSeenAt,
		CreatedAt: v.CreatedAt, Token: token,
	}
}

// apiJobLimits are per-job limits as the API shows them: absent when there is none.
func apiJobLimits(l barrage.Limits) (vus, secs *int) {
	if l.MaxVUs > 0 {
		vus = ptr(l.MaxVUs)
	}
	if l.MaxRunDuration > 0 {
		secs = ptr(int(l.MaxRunDuration / time.Second))
	}
	return vus, secs
}

func (s *server) PingAgent(ctx context.Context, req api.PingAgentRequestObject) (api.PingAgentResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	a, rtt, err := s.fleet.Ping(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.PingAgent200JSONResponse{AgentId: a.ID, RoundTripMs: float64(rtt) / float64(time.Millisecond),
		State: api.AgentState(a.State(time.Now())), Version: a.Version}, nil
}
