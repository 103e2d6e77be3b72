package httpapi

import (
	"encoding/base64"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/barrage"
)

func fieldError(field, reason string) barrage.FieldError {
	return barrage.FieldError{Field: field, Reason: reason}
}

// Cursors are opaque to clients: the id of the last item, base64url-encoded.
func encodeCursor(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := base64.RawURLEncoding.EncodeToString(id[:])
	return &s
}

func decodeCursor(c *string) (*uuid.UUID, error) {
	if c == nil || *c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*c)
	if err != nil || len(b) != 16 {
		return nil, &badParam{field: "cursor", reason: "not a cursor from this list"}
	}
	id := uuid.UUID(b)
	return &id, nil
}

// listPage reads one page of a list: the cursor (the id to list before) and limit (default 50)
// from the query, the page from fetch, each item converted for the wire by conv; next is the
// cursor of the page after, nil on the last.
func listPage[T, W any](cursor *string, limit *int, fetch func(before *uuid.UUID, limit int) (barrage.Page[T], error), conv func(T) W) (items []W, next *string, err error) {
	before, err := decodeCursor(cursor)
	if err != nil {
		return nil, nil, err
	}
	n := 50
	if limit != nil {
		n = *limit
	}
	page, err := fetch(before, n)
	if err != nil {
		return nil, nil, err
	}
	items = make([]W, len(page.Items))
	for i, t := range page.Items {
		items[i] = conv(t)
	}
	return items, encodeCursor(page.Next), nil
}

func toAPISession(s account.Session) api.TokenPair {
	return api.TokenPair{
		AccessToken:  s.AccessToken,
		RefreshToken: s.RefreshToken,
		TokenType:    api.Bearer,
		ExpiresIn:    int(s.ExpiresIn / time.Second),
	}
}

func toAPIUser(u barrage.User, now time.Time) api.User {
	return api.User{
		Id: u.ID, Email: u.Email, Name: u.Name, Role: api.Role(u.Role), Disabled: u.Disabled,
		License: ptr(toAPILicense(u.License, now)), PasswordGuessedAt: u.GuessedAt, CreatedAt: u.CreatedAt,
	}
}

func toAPIAdminUser(u barrage.User, act barrage.UserActivity, now time.Time) api.AdminUser {
	v := toAPIUser(u, now)
	return api.AdminUser{
		Id: v.Id, Email: v.Email, Name: v.Name, Role: v.Role, Disabled: v.Disabled, License: v.License,
		PasswordGuessedAt: v.PasswordGuessedAt, CreatedAt: v.CreatedAt,
		Tokens: int(act.Tokens), Runs: act.Runs, LastRunAt: act.LastRunAt,
	}
}

func toAPILicense(l *barrage.License, now time.Time) api.License {
	if l == nil {
		return api.License{Unlimited: true}
	}
	return api.License{
		Plan:                  ptr(l.Plan),
		MaxVus:                ptr(l.Limits.MaxVUs),
		MaxRunDurationSeconds: ptr(int(l.Limits.MaxRunDuration / time.Second)),
		MaxConcurrentRuns:     ptr(l.Limits.MaxConcurrentRuns),
		ValidUntil:            ptr(l.ValidUntil),
		Expired:               ptr(!now.Before(l.ValidUntil)),
		QuotaLimits:           toAPIQuotaLimits(l.Quotas),
	}
}

// toAPIQuotaLimits is a license's own quotas, nil when it has none.
func toAPIQuotaLimits(q barrage.Quotas) *api.QuotaLimits {
	byName := map[string]int64{}
	for _, n := range q.Named(barrage.Usage{}) {
		if n.Limit > 0 {
			byName[n.Name] = n.Limit
		}
	}
	return api.NewQuotaLimits(byName)
}

func toAPIToken(t barrage.APIToken) api.APIToken {
	scopes := make([]api.Scope, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = api.Scope(s)
	}
	return api.APIToken{Id: t.ID, Name: t.Name, Scopes: scopes, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt,
		ProjectId: t.ProjectID}
}

func invitationState(inv barrage.Invitation, now time.Time) api.InvitationState {
	switch {
	case inv.RevokedAt != nil:
		return api.InvitationStateRevoked
	case inv.UsesLeft == 0:
		return api.InvitationStateSpent
	case !now.Before(inv.ExpiresAt):
		return api.InvitationStateExpired
	}
	return api.InvitationStateActive
}

func toAPIInvitation(inv barrage.Invitation, now time.Time) api.Invitation {
	out := api.Invitation{
		Id: inv.ID, Role: api.Role(inv.Role), UsesTotal: inv.UsesTotal, UsesLeft: inv.UsesLeft,
		ExpiresAt: inv.ExpiresAt, Note: inv.Note, State: invitationState(inv, now),
		CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt, RevokedAt: inv.RevokedAt,
		UsedBy: make([]api.InvitationUse, len(inv.UsedBy)), // [] when unused, never null
	}
	for i, u := range inv.UsedBy {
		out.UsedBy[i] = api.InvitationUse{UserId: u.UserID, Email: u.Email, Name: u.Name, At: u.At}
	}
	if l := inv.License; l != nil {
		out.License = &api.InvitationLicense{
			Plan: l.Plan, MaxVus: l.Limits.MaxVUs, MaxRunDurationSeconds: int(l.Limits.MaxRunDuration / time.Second),
			MaxConcurrentRuns: l.Limits.MaxConcurrentRuns, ValidDays: l.ValidDays, QuotaLimits: toAPIQuotaLimits(l.Quotas),
		}
	}
	return out
}

func fromAPILicenseTemplate(t *api.LicenseTemplate) *account.LicenseInput {
	if t == nil {
		return nil
	}
	return &account.LicenseInput{
		Template: (*string)(t.Template), Plan: t.Plan, MaxVUs: t.MaxVus,
		MaxRunDuration: seconds(t.MaxRunDurationSeconds), MaxConcurrentRuns: t.MaxConcurrentRuns, ValidDays: t.ValidDays,
		Quotas: t.QuotaLimits.ByName(),
	}
}

func fromAPILicenseUpdate(t api.LicenseUpdate) *account.LicenseInput {
	return &account.LicenseInput{
		Template: (*string)(t.Template), Plan: t.Plan, MaxVUs: t.MaxVus,
		MaxRunDuration: seconds(t.MaxRunDurationSeconds), MaxConcurrentRuns: t.MaxConcurrentRuns, ValidUntil: t.ValidUntil,
		Quotas: t.QuotaLimits.ByName(),
	}
}

func seconds(n *int) *time.Duration {
	if n == nil {
		return nil
	}
	d := time.Duration(*n) * time.Second
	return &d
}

func days(n *int, def int) time.Duration {
	if n != nil {
		def = *n
	}
	return time.Duration(def) * 24 * time.Hour
}

func ptr[T any](v T) *T { return &v }

// ptrIf is a pointer to v, or nil when v is its type's zero: an optional field left out.
func ptrIf[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
