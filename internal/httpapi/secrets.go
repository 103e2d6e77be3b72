package httpapi

import (
	"context"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
)

func (s *server) ListSecrets(ctx context.Context, req api.ListSecretsRequestObject) (api.ListSecretsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.secrets.Secrets(ctx, p, req.Params.Project)
	if err != nil {
		return nil, err
	}
	out := api.SecretList{Items: make([]api.Secret, len(list))}
	for i, sec := range list {
		out.Items[i] = toAPISecret(sec)
	}
	return api.ListSecrets200JSONResponse(out), nil
}

func (s *server) PutSecret(ctx context.Context, req api.PutSecretRequestObject) (api.PutSecretResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, req.Body.Name) // the name alone: never the value
	sec, created, err := s.secrets.PutSecret(ctx, p, req.Params.Project, req.Body.Name, deref(req.Body.Value))
	if err != nil {
		return nil, err
	}
	audit.Detail(ctx, "created", created)
	if created {
		return api.PutSecret201JSONResponse(toAPISecret(sec)), nil
	}
	return api.PutSecret200JSONResponse(toAPISecret(sec)), nil
}

func (s *server) DeleteSecret(ctx context.Context, req api.DeleteSecretRequestObject) (api.DeleteSecretResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.secrets.DeleteSecret(ctx, p, req.Params.Project, req.Name); err != nil {
		return nil, err
	}
	return api.DeleteSecret204Response{}, nil
}

func toAPISecret(s barrage.Secret) api.Secret {
	return api.Secret{Name: s.Name, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}
