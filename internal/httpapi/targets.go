package httpapi

import (
	"context"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
)

func (s *server) ListTargets(ctx context.Context, req api.ListTargetsRequestObject) (api.ListTargetsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := s.targets.Targets(ctx, p, req.Params.Project)
	if err != nil {
		return nil, err
	}
	out := api.TargetList{Targets: make([]api.Target, len(ts))}
	for i, t := range ts {
		out.Targets[i] = toAPITarget(t)
	}
	return api.ListTargets200JSONResponse(out), nil
}

func (s *server) CreateTarget(ctx context.Context, req api.CreateTargetRequestObject) (api.CreateTargetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.targets.CreateTarget(ctx, p, req.Params.Project, req.Body.Url)
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, t.ID.String())
	audit.Detail(ctx, "host", t.Host)
	return api.CreateTarget201JSONResponse(toAPITarget(t)), nil
}

func (s *server) GetTarget(ctx context.Context, req api.GetTargetRequestObject) (api.GetTargetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.targets.Target(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetTarget200JSONResponse(toAPITarget(t)), nil
}

func (s *server) VerifyTarget(ctx context.Context, req api.VerifyTargetRequestObject) (api.VerifyTargetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.targets.VerifyTarget(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	audit.Detail(ctx, "host", t.Host)
	audit.Detail(ctx, "verified", t.VerifiedAt != nil)
	if t.CheckError != "" {
		audit.Detail(ctx, "check_error", t.CheckError)
	}
	return api.VerifyTarget200JSONResponse(toAPITarget(t)), nil
}

func (s *server) DeleteTarget(ctx context.Context, req api.DeleteTargetRequestObject) (api.DeleteTargetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.targets.DeleteTarget(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteTarget204Response{}, nil
}

func toAPITarget(t barrage.Target) api.Target {
	out := api.Target{
		Id: t.ID, ProjectId: t.ProjectID, Url: t.Origin(), Host: t.Host, Port: t.Port, Token: t.Token, VerifyUrl: t.VerifyURL(),
		Verified: t.Verified(), VerifiedAt: t.VerifiedAt, CheckedAt: t.CheckedAt, CheckError: t.CheckError, CreatedAt: t.CreatedAt,
		Open: t.Open,
	}
	if t.Verified() && t.Address.IsValid() {
		out.Address = ptr(t.Address.String())
	}
	return out
}

func (s *server) GetTargetSettings(ctx context.Context, _ api.GetTargetSettingsRequestObject) (api.GetTargetSettingsResponseObject, error) {
	set := s.targets.Settings()
	return api.GetTargetSettings200JSONResponse{Open: set.Open, OpenAll: set.All, MaxVusPerAddress: set.MaxVUsPerAddress}, nil
}
