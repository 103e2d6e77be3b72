package httpapi

import (
	"context"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
)

// principal returns the request's principal; the policy guarantees one on non-public routes.
func principal(ctx context.Context) (barrage.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return p, barrage.Errorf(barrage.ErrUnauthorized, "sign in first")
	}
	return p, nil
}

func (s *server) Signup(ctx context.Context, req api.SignupRequestObject) (api.SignupResponseObject, error) {
	b := req.Body
	err := s.accounts.Signup(ctx, account.SignupInput{
		InvitationCode: b.InvitationCode, Email: b.Email, Password: b.Password, Name: b.Name,
	}, ClientIP(ctx))
	if err != nil {
		return nil, err
	}
	return api.Signup202JSONResponse{Status: "accepted",
		Message: "Unless this email already had an account, it has one now: sign in with the email and this password."}, nil
}

func (s *server) Login(ctx context.Context, req api.LoginRequestObject) (api.LoginResponseObject, error) {
	sess, err := s.accounts.Login(ctx, req.Body.Email, req.Body.Password, ClientIP(ctx))
	if err != nil {
		return nil, err
	}
	return api.Login200JSONResponse(toAPISession(sess)), nil
}

func (s *server) Refresh(ctx context.Context, req api.RefreshRequestObject) (api.RefreshResponseObject, error) {
	sess, err := s.accounts.Refresh(ctx, req.Body.RefreshToken)
	if err != nil {
		return nil, err
	}
	return api.Refresh200JSONResponse(toAPISession(sess)), nil
}

func (s *server) Logout(ctx context.Context, req api.LogoutRequestObject) (api.LogoutResponseObject, error) {
	if err := s.accounts.Logout(ctx, req.Body.RefreshToken); err != nil {
		return nil, err
	}
	return api.Logout204Response{}, nil
}

func (s *server) GetMe(ctx context.Context, _ api.GetMeRequestObject) (api.GetMeResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	return api.GetMe200JSONResponse(toAPIUser(p.User, time.Now())), nil
}

func (s *server) UpdateMe(ctx context.Context, req api.UpdateMeRequestObject) (api.UpdateMeResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	u, err := s.accounts.UpdateMe(ctx, p, account.UpdateMeInput{
		Name: b.Name, Email: b.Email, CurrentPassword: b.CurrentPassword, NewPassword: b.NewPassword,
		RevokeTokens: b.RevokeTokens != nil && *b.RevokeTokens,
	})
	if err != nil {
		return nil, err
	}
	me := toAPIUser(u, time.Now())
	out := api.UpdateMe200JSONResponse{Id: me.Id, Email: me.Email, Name: me.Name, Role: me.Role, Disabled: me.Disabled,
		CreatedAt: me.CreatedAt, License: me.License}
	if b.NewPassword != nil && (b.RevokeTokens == nil || !*b.RevokeTokens) {
		// Said in the answer: a password changed after a leak must not leave a token alive unseen.
		kept, err := s.accounts.ListTokens(ctx, p, nil, 100)
		if err != nil {
			return nil, err
		}
		tokens := make([]api.APIToken, len(kept.Items))
		for i, t := range kept.Items {
			tokens[i] = toAPIToken(t)
		}
		out.TokensKept = &tokens
	}
	return out, nil
}

func (s *server) GetMyLicense(ctx context.Context, _ api.GetMyLicenseRequestObject) (api.GetMyLicenseResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	l, err := s.license(ctx, p.User)
	return api.GetMyLicense200JSONResponse(l), err
}

func (s *server) GetUserLicense(ctx context.Context, req api.GetUserLicenseRequestObject) (api.GetUserLicenseResponseObject, error) {
	u, err := s.accounts.GetUser(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	l, err := s.license(ctx, u)
	return api.GetUserLicense200JSONResponse(l), err
}

// license is u's license with what u keeps against each quota.
func (s *server) license(ctx context.Context, u barrage.User) (api.MyLicense, error) {
	l := toAPILicense(u.License, time.Now())
	out := api.MyLicense{Unlimited: l.Unlimited, Plan: l.Plan, MaxVus: l.MaxVus, MaxRunDurationSeconds: l.MaxRunDurationSeconds,
		MaxConcurrentRuns: l.MaxConcurrentRuns, ValidUntil: l.ValidUntil, Expired: l.Expired, QuotaLimits: l.QuotaLimits}
	q, used, err := s.accounts.Quotas(ctx, u)
	if err != nil {
		return api.MyLicense{}, err
	}
	quotas := map[string]api.QuotaUse{}
	for _, n := range q.Named(used) {
		if n.Limit > 0 {
			quotas[n.Name] = api.QuotaUse{Limit: n.Limit, Used: n.Used}
		}
	}
	if len(quotas) > 0 {
		out.Quotas = &quotas
	}
	return out, nil
}

func (s *server) ListTokens(ctx context.Context, req api.ListTokensRequestObject) (api.ListTokensResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.APIToken], error) {
		return s.accounts.ListTokens(ctx, p, before, limit)
	}, toAPIToken)
	return api.ListTokens200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) CreateToken(ctx context.Context, req api.CreateTokenRequestObject) (api.CreateTokenResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	scopes := make([]barrage.Scope, len(req.Body.Scopes))
	for i, sc := range req.Body.Scopes {
		scopes[i] = barrage.Scope(sc)
	}
	t, secret, err := s.accounts.CreateToken(ctx, p, account.CreateTokenInput{
		Name: req.Body.Name, Scopes: scopes, ExpiresIn: days(req.Body.ExpiresInDays, 90), Project: req.Body.ProjectId,
	})
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, t.ID.String())
	audit.Detail(ctx, "name", t.Name)
	audit.Detail(ctx, "scopes", t.Scopes)
	v := toAPIToken(t)
	return api.CreateToken201JSONResponse{
		Id: v.Id, Name: v.Name, Scopes: v.Scopes, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt, Token: secret, ProjectId: v.ProjectId,
	}, nil
}

func (s *server) DeleteToken(ctx context.Context, req api.DeleteTokenRequestObject) (api.DeleteTokenResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.accounts.DeleteToken(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteToken204Response{}, nil
}

func (s *server) CreateInvitation(ctx context.Context, req api.CreateInvitationRequestObject) (api.CreateInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := account.InvitationInput{License: fromAPILicenseTemplate(b.License), ExpiresIn: days(b.ExpiresInDays, 7)}
	if b.Role != nil {
		in.Role = barrage.Role(*b.Role)
	}
	if b.Uses != nil {
		in.Uses = *b.Uses
	}
	if b.Note != nil {
		in.Note = *b.Note
	}
	inv, code, err := s.accounts.CreateInvitation(ctx, &p.User.ID, in)
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, inv.ID.String())
	audit.Detail(ctx, "role", inv.Role)
	audit.Detail(ctx, "uses", inv.UsesTotal)
	v := toAPIInvitation(inv, time.Now())
	return api.CreateInvitation201JSONResponse{
		Id: v.Id, Role: v.Role, License: v.License, UsesTotal: v.UsesTotal, UsesLeft: v.UsesLeft, ExpiresAt: v.ExpiresAt,
		Note: v.Note, State: api.CreatedInvitationState(v.State), CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt, UsedBy: v.UsedBy, Code: code,
	}, nil
}

func (s *server) ListInvitations(ctx context.Context, req api.ListInvitationsRequestObject) (api.ListInvitationsResponseObject, error) {
	now := time.Now()
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Invitation], error) {
		return s.accounts.ListInvitations(ctx, before, limit)
	}, func(inv barrage.Invitation) api.Invitation { return toAPIInvitation(inv, now) })
	return api.ListInvitations200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) RevokeInvitation(ctx context.Context, req api.RevokeInvitationRequestObject) (api.RevokeInvitationResponseObject, error) {
	if err := s.accounts.RevokeInvitation(ctx, req.Id); err != nil {
		return nil, err
	}
	return api.RevokeInvitation204Response{}, nil
}

func (s *server) ListUsers(ctx context.Context, req api.ListUsersRequestObject) (api.ListUsersResponseObject, error) {
	if !utf8.ValidString(deref(req.Params.Q)) {
		return nil, &badParam{field: "q", reason: "not UTF-8 text"}
	}
	now := time.Now()
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(after *uuid.UUID, limit int) (barrage.Page[barrage.User], error) {
		return s.accounts.ListUsers(ctx, after, limit, deref(req.Params.Q))
	}, func(u barrage.User) api.User { return toAPIUser(u, now) })
	return api.ListUsers200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) GetUser(ctx context.Context, req api.GetUserRequestObject) (api.GetUserResponseObject, error) {
	u, act, err := s.accounts.UserWithActivity(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetUser200JSONResponse(toAPIAdminUser(u, act, time.Now())), nil
}

func (s *server) UpdateUser(ctx context.Context, req api.UpdateUserRequestObject) (api.UpdateUserResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	audit.Subject(ctx, req.Id)
	for field, set := range map[string]any{"disabled": b.Disabled, "role": b.Role} {
		if !reflect.ValueOf(set).IsNil() {
			audit.Detail(ctx, field, set)
		}
	}
	if b.License.IsSpecified() {
		audit.Detail(ctx, "license", b.License)
	}
	patch := account.UserPatch{Disabled: b.Disabled}
	if b.Role != nil {
		r := barrage.Role(*b.Role)
		patch.Role = &r
	}
	if b.License.IsNull() {
		patch.RemoveLicense = true
	} else if l, err := b.License.Get(); err == nil {
		patch.License = fromAPILicenseUpdate(l)
	}
	u, err := s.accounts.UpdateUser(ctx, p, req.Id, patch)
	if err != nil {
		return nil, err
	}
	return api.UpdateUser200JSONResponse(toAPIUser(u, time.Now())), nil
}
