package httpapi

import (
	"context"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/schedules"
)

func (s *server) CreateSchedule(ctx context.Context, req api.CreateScheduleRequestObject) (api.CreateScheduleResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := schedules.Input{Name: deref(b.Name), Cron: deref(b.Cron), Every: deref(b.Every), TimeZone: deref(b.TimeZone),
		Revision: deref(b.Revision), Agents: deref(b.Agents)}
	if b.AgentIds != nil {
		in.AgentIDs = *b.AgentIds
	}
	if b.Env != nil {
		in.Env = *b.Env
	}
	if b.Load != nil {
		if in.Load, err = b.Load.Overrides(); err != nil {
			return nil, err
		}
	}
	sc, err := s.schedules.Create(ctx, p, req.Id, in)
	if err != nil {
		return nil, err
	}
	return api.CreateSchedule201JSONResponse(s.toAPISchedule(sc)), nil
}

func (s *server) ListSchedules(ctx context.Context, req api.ListSchedulesRequestObject) (api.ListSchedulesResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Schedule], error) {
		return s.schedules.Schedules(ctx, p, req.Params.Project, req.Params.TestId, before, limit)
	}, s.toAPISchedule)
	return api.ListSchedules200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) GetSchedule(ctx context.Context, req api.GetScheduleRequestObject) (api.GetScheduleResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := s.schedules.Schedule(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetSchedule200JSONResponse(s.toAPISchedule(sc)), nil
}

func (s *server) UpdateSchedule(ctx context.Context, req api.UpdateScheduleRequestObject) (api.UpdateScheduleResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := s.schedules.SetPaused(ctx, p, req.Id, req.Body.Paused)
	if err != nil {
		return nil, err
	}
	return api.UpdateSchedule200JSONResponse(s.toAPISchedule(sc)), nil
}

func (s *server) DeleteSchedule(ctx context.Context, req api.DeleteScheduleRequestObject) (api.DeleteScheduleResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.schedules.Delete(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteSchedule204Response{}, nil
}

func (s *server) ListScheduleFirings(ctx context.Context, req api.ListScheduleFiringsRequestObject) (api.ListScheduleFiringsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	fs, err := s.schedules.Firings(ctx, p, req.Id, 100)
	if err != nil {
		return nil, err
	}
	out := api.ListScheduleFirings200JSONResponse{Items: make([]api.Firing, len(fs))}
	for i, f := range fs {
		out.Items[i] = api.Firing{DueAt: f.DueAt, RunId: f.RunID, Error: f.Error, FiredAt: f.FiredAt}
	}
	return out, nil
}

// toAPISchedule is a schedule with its next five firings.
func (s *server) toAPISchedule(sc barrage.Schedule) api.Schedule {
	return api.Schedule{Id: sc.ID, ProjectId: sc.ProjectID, TestId: sc.TestID, OwnerId: sc.OwnerID, Name: sc.Name, Cron: sc.Cron,
		TimeZone: sc.TimeZone, Revision: sc.Revision, AgentIds: sc.AgentIDs, Agents: sc.Agents, Load: api.LoadOf(sc.Load), Paused: sc.PausedAt != nil,
		PausedAt: sc.PausedAt, PausedReason: sc.PausedReason, Next: s.schedules.Next(sc, 5), CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
}
