package account

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
)

// CreateTokenInput describes a personal API token to create.
type CreateTokenInput struct {
	Name      string
	Scopes    []barrage.Scope
	ExpiresIn time.Duration
	// Project, when set, limits the token to that project of its creator's.
	Project *uuid.UUID
}

// CreateToken creates a personal API token for the principal and returns it with its secret,
// which is not kept. A token never holds a scope its creator lacks, and only admins hold admin.
func (s *Service) CreateToken(ctx context.Context, p barrage.Principal, in CreateTokenInput) (barrage.APIToken, string, error) {
	name, err := barrage.CheckText("name", in.Name, 1, 100)
	if err != nil {
		return barrage.APIToken{}, "", err
	}
	if len(in.Scopes) == 0 {
		return barrage.APIToken{}, "", barrage.Invalid("scopes", "must name at least one scope")
	}
	for i, sc := range in.Scopes {
		field := "scopes[" + itoa(i) + "]"
		switch {
		case !sc.Valid():
			return barrage.APIToken{}, "", barrage.Invalid(field, "unknown scope")
		case sc == barrage.ScopeAdmin && p.User.Role != barrage.RoleAdmin:
			return barrage.APIToken{}, "", barrage.Invalid(field, "the admin scope is for admins only")
		case !p.HasScope(sc):
			return barrage.APIToken{}, "", barrage.Invalid(field, "a token cannot grant a scope its creator lacks")
		}
	}
	if in.ExpiresIn <= 0 || in.ExpiresIn > 365*24*time.Hour {
		return barrage.APIToken{}, "", barrage.Invalid("expires_in_days", "must be between 1 and 365 days")
	}
	if in.Project != nil && slices.Contains(in.Scopes, barrage.ScopeAdmin) {
		return barrage.APIToken{}, "", barrage.Invalid("project_id", "a token with the admin scope reaches the whole server: it cannot be limited to a project")
	}
	if in.Project != nil {
		// Only to a project of the creator's, and a limited token makes no token for another.
		if err := p.Need(*in.Project, barrage.ProjectViewer); err != nil {
			return barrage.APIToken{}, "", barrage.Invalid("project_id", "not a project of yours")
		}
	} else if p.TokenProject != nil {
		in.Project = p.TokenProject
	}
	expires := s.now().Add(in.ExpiresIn)
	if p.TokenExpiresAt != nil && expires.After(*p.TokenExpiresAt) {
		// A token made with a token lives no longer than its parent: a stolen token cannot
		// extend itself.
		expires = *p.TokenExpiresAt
	}
	secret := auth.NewSecret(auth.PrefixAPIToken)
	t, err := s.store.CreateAPIToken(ctx, barrage.APIToken{
		ID: uuid.Must(uuid.NewV7()), UserID: p.User.ID, Name: name, Scopes: in.Scopes, ExpiresAt: expires, ProjectID: in.Project,
	}, auth.HashSecret(secret))
	if err != nil {
		return barrage.APIToken{}, "", err
	}
	return t, secret, nil
}

// ListTokens returns a page of the principal's tokens, newest first.
func (s *Service) ListTokens(ctx context.Context, p barrage.Principal, before *uuid.UUID, limit int) (barrage.Page[barrage.APIToken], error) {
	if err := accountWide(p); err != nil {
		return barrage.Page[barrage.APIToken]{}, err
	}
	rows, err := s.store.ListAPITokens(ctx, p.User.ID, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.APIToken]{}, err
	}
	return barrage.NewPage(rows, limit, func(t barrage.APIToken) uuid.UUID { return t.ID }), nil
}

// DeleteToken revokes one of the principal's tokens. Another user's token is not found.
func (s *Service) DeleteToken(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	if err := accountWide(p); err != nil {
		return err
	}
	return s.store.DeleteAPIToken(ctx, p.User.ID, id)
}

// accountWide refuses what reaches past one project (the account's tokens, its email and
// password) to a token limited to one.
func accountWide(p barrage.Principal) error {
	if p.TokenProject != nil {
		return barrage.Errorf(barrage.ErrForbidden, "this token is limited to one project: the account and its tokens are managed with a session or an unlimited token")
	}
	return nil
}
