package fleet

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
)

// AgentInput is a new agent's name and limits.
type AgentInput struct {
	Name   string
	Limits barrage.Limits
	// Project is whose runs a private agent serves (nil: the principal's home project).
	Project *uuid.UUID
}

// CreateAgent registers an agent and returns it with its token, shown this once. With shared,
// the agent serves every user (the caller must be an admin: the route says so); else it serves
// the runs of in.Project (nil: p's home project), where p must be an editor.
func (s *Service) CreateAgent(ctx context.Context, p barrage.Principal, in AgentInput, shared bool) (barrage.Agent, string, error) {
	var project uuid.UUID
	if !shared {
		var err error
		if project, err = p.ProjectFor(in.Project, barrage.ProjectEditor); err != nil {
			return barrage.Agent{}, "", err
		}
	}
	name, err := barrage.CheckText("name", in.Name, 1, 100)
	if err != nil {
		return barrage.Agent{}, "", err
	}
	if in.Limits.MaxVUs < 0 {
		return barrage.Agent{}, "", barrage.Invalid("max_vus", "must be positive")
	}
	if in.Limits.MaxRunDuration < 0 {
		return barrage.Agent{}, "", barrage.Invalid("max_run_duration_seconds", "must be positive")
	}
	a := barrage.Agent{ID: uuid.Must(uuid.NewV7()), Name: name, Limits: in.Limits}
	if !shared {
		a.OwnerID, a.ProjectID = &p.User.ID, &project
	}
	token := auth.NewSecret(auth.PrefixAgentToken)
	a, err = s.store.CreateAgent(ctx, a, auth.HashSecret(token))
	if err != nil {
		return barrage.Agent{}, "", err
	}
	s.log.InfoContext(ctx, "agent registered", slog.String("agent_id", a.ID.String()), slog.Bool("shared", shared))
	return a, token, nil
}

// Agents lists the agents p may see: those of p's projects (of project alone, when given),
// then the shared ones.
func (s *Service) Agents(ctx context.Context, p barrage.Principal, project *uuid.UUID) ([]barrage.Agent, error) {
	in, err := p.Listed(project)
	if err != nil {
		return nil, err
	}
	return s.store.UsableAgents(ctx, in)
}

// AllAgents lists every agent, for admins.
func (s *Service) AllAgents(ctx context.Context) ([]barrage.Agent, error) {
	return s.store.AllAgents(ctx)
}

// Agent reads one agent p may see: shared, or of one of p's projects.
func (s *Service) Agent(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Agent, error) {
	return s.store.UsableAgent(ctx, p.Projects(barrage.ProjectViewer), id)
}

// DeleteAgent removes private agent id (p an editor of its project), or with shared a shared
// agent (admins).
func (s *Service) DeleteAgent(ctx context.Context, p barrage.Principal, id uuid.UUID, shared bool) error {
	if shared {
		return s.store.DeleteAgent(ctx, id, nil)
	}
	err := s.store.DeleteAgent(ctx, id, p.Projects(barrage.ProjectEditor))
	return p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindAgent, id)
}

var errBadAgentToken = barrage.Errorf(barrage.ErrUnauthorized, "the agent token is invalid or the agent was removed")

// AuthenticateAgent turns an agent's bearer token into the agent.
func (s *Service) AuthenticateAgent(ctx context.Context, bearer string) (barrage.Agent, error) {
	a, err := s.store.AgentByTokenHash(ctx, auth.HashSecret(bearer))
	switch {
	case err == nil && a.Disabled:
		return barrage.Agent{}, barrage.Errorf(barrage.ErrForbidden, "this agent is disabled")
	case err == nil:
		return a, nil
	case errors.Is(err, barrage.ErrNotFound):
		return barrage.Agent{}, errBadAgentToken
	}
	return barrage.Agent{}, err
}
