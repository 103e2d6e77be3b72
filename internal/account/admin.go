package account

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
)

func itoa(i int) string { return strconv.Itoa(i) }

// LicenseInput is a license template as an admin writes it: a ready template, limits, or a
// template with some limits overridden. Nil fields are not given.
type LicenseInput struct {
	Template          *string
	Plan              *string
	MaxVUs            *int
	MaxRunDuration    *time.Duration
	MaxConcurrentRuns *int
	ValidDays         *int
	ValidUntil        *time.Time // for updating a user's license; invitations count ValidDays
	// Quotas are the license's own quotas by name (barrage.QuotaStorageBytes...), merged onto
	// those it has: 0 puts one back to the server's default.
	Quotas map[string]int64
}

// templates are the ready license templates, by name.
var templates = map[string]barrage.LicenseTemplate{barrage.PlanDemo: barrage.DemoLicense}

// template resolves in to a full template: the named one with overrides, or every limit given.
func (in LicenseInput) template(field string) (barrage.LicenseTemplate, error) {
	var t barrage.LicenseTemplate
	if in.Template != nil {
		tpl, ok := templates[*in.Template]
		if !ok {
			return t, barrage.Invalid(field+".template", "unknown template")
		}
		t = tpl
	} else {
		t.Plan = "custom"
		missing := []string{}
		if in.MaxVUs == nil {
			missing = append(missing, "max_vus")
		}
		if in.MaxRunDuration == nil {
			missing = append(missing, "max_run_duration_seconds")
		}
		if in.MaxConcurrentRuns == nil {
			missing = append(missing, "max_concurrent_runs")
		}
		if in.ValidDays == nil && in.ValidUntil == nil {
			missing = append(missing, "valid_days")
		}
		if len(missing) > 0 {
			return t, barrage.Invalid(field, "give a template, or every limit: missing "+strings.Join(missing, ", "))
		}
	}
	in.applyLimits(&t.Plan, &t.Limits)
	if in.ValidDays != nil {
		t.ValidDays = *in.ValidDays
	}
	return t, in.applyQuotas(field, &t.Quotas)
}

// applyQuotas merges in's quotas onto q.
func (in LicenseInput) applyQuotas(field string, q *barrage.Quotas) error {
	for name, n := range in.Quotas {
		if n < 0 || !q.Set(name, n) {
			return barrage.Invalid(field+".quota_limits."+name, "a quota is a whole number, 0 for the server's default")
		}
	}
	return nil
}

func (in LicenseInput) applyLimits(plan *string, l *barrage.Limits) {
	if in.Plan != nil {
		*plan = strings.TrimSpace(*in.Plan)
	}
	if in.MaxVUs != nil {
		l.MaxVUs = *in.MaxVUs
	}
	if in.MaxRunDuration != nil {
		l.MaxRunDuration = *in.MaxRunDuration
	}
	if in.MaxConcurrentRuns != nil {
		l.MaxConcurrentRuns = *in.MaxConcurrentRuns
	}
}

// InvitationInput describes an invitation to issue.
type InvitationInput struct {
	Role      barrage.Role
	License   *LicenseInput // nil: the role's default (demo for users, none for admins)
	Uses      int
	ExpiresIn time.Duration
	Note      string
}

// CreateInvitation issues an invitation and returns it with its code, which is not kept.
// createdBy is nil when the invitation comes from the command line or the first start.
func (s *Service) CreateInvitation(ctx context.Context, createdBy *uuid.UUID, in InvitationInput) (barrage.Invitation, string, error) {
	inv, err := s.newInvitation(createdBy, in)
	if err != nil {
		return barrage.Invitation{}, "", err
	}
	code := auth.NewInvitationCode()
	inv, err = s.store.CreateInvitation(ctx, inv, auth.HashSecret(code))
	if err != nil {
		return barrage.Invitation{}, "", err
	}
	s.log.InfoContext(ctx, "invitation issued", slog.String("invitation_id", inv.ID.String()), slog.String("role", string(inv.Role)))
	return inv, code, nil
}

func (s *Service) newInvitation(createdBy *uuid.UUID, in InvitationInput) (barrage.Invitation, error) {
	if in.Role == "" {
		in.Role = barrage.RoleUser
	}
	if !in.Role.Valid() {
		return barrage.Invitation{}, barrage.Invalid("role", "must be admin or user")
	}
	if in.Uses == 0 {
		in.Uses = 1
	}
	if in.Uses < 1 || in.Uses > 10000 {
		return barrage.Invitation{}, barrage.Invalid("uses", "must be between 1 and 10000")
	}
	if in.ExpiresIn == 0 {
		in.ExpiresIn = 7 * 24 * time.Hour
	}
	if in.ExpiresIn < time.Minute || in.ExpiresIn > 365*24*time.Hour {
		return barrage.Invitation{}, barrage.Invalid("expires_in_days", "must be between 1 and 365 days")
	}
	note, err := barrage.CheckText("note", in.Note, 0, 500)
	if err != nil {
		return barrage.Invitation{}, err
	}
	var lic *barrage.LicenseTemplate
	switch {
	case in.License != nil:
		t, err := in.License.template("license")
		if err != nil {
			return barrage.Invitation{}, err
		}
		lic = &t
	case in.Role == barrage.RoleUser:
		t := barrage.DemoLicense
		lic = &t
	}
	if lic != nil {
		if err := validLicense("license", lic.Plan, lic.Limits); err != nil {
			return barrage.Invitation{}, err
		}
		if lic.ValidDays < 1 || lic.ValidDays > 36500 {
			return barrage.Invitation{}, barrage.Invalid("license.valid_days", "must be between 1 and 36500")
		}
	}
	return barrage.Invitation{
		ID: uuid.Must(uuid.NewV7()), Role: in.Role, License: lic, UsesTotal: in.Uses, UsesLeft: in.Uses,
		ExpiresAt: s.now().Add(in.ExpiresIn), Note: note, CreatedBy: createdBy,
	}, nil
}

// validLicense applies the bounds the API documents; the command line's --local path reaches
// here without the API's validation.
func validLicense(field, plan string, l barrage.Limits) error {
	if _, err := barrage.CheckText(field+".plan", plan, 1, 64); err != nil {
		return err
	}
	switch {
	case l.MaxVUs < 1 || l.MaxVUs > 10_000_000:
		return barrage.Invalid(field+".max_vus", "must be between 1 and 10000000")
	case l.MaxRunDuration < time.Second || l.MaxRunDuration > 365*24*time.Hour:
		return barrage.Invalid(field+".max_run_duration_seconds", "must be between 1 and 31536000")
	case l.MaxConcurrentRuns < 1 || l.MaxConcurrentRuns > 100_000:
		return barrage.Invalid(field+".max_concurrent_runs", "must be between 1 and 100000")
	}
	return nil
}

// FirstAdminTTL is how long the first-admin invitation stays redeemable. If it lapses unused,
// the next start issues a new one.
const FirstAdminTTL = 7 * 24 * time.Hour

// EnsureFirstAdmin issues a single-use admin invitation when the database has no user and no
// redeemable admin invitation, and returns its code ("" when none was needed).
func (s *Service) EnsureFirstAdmin(ctx context.Context) (string, error) {
	var code string
	_, err := s.store.EnsureFirstAdminInvitation(ctx, func() (barrage.Invitation, []byte) {
		code = auth.NewInvitationCode()
		return barrage.Invitation{
			ID: uuid.Must(uuid.NewV7()), Role: barrage.RoleAdmin, UsesTotal: 1, UsesLeft: 1,
			ExpiresAt: s.now().Add(FirstAdminTTL), Note: "first admin",
		}, auth.HashSecret(code)
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// ListInvitations returns a page of invitations, newest first.
func (s *Service) ListInvitations(ctx context.Context, before *uuid.UUID, limit int) (barrage.Page[barrage.Invitation], error) {
	rows, err := s.store.ListInvitations(ctx, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Invitation]{}, err
	}
	return barrage.NewPage(rows, limit, func(i barrage.Invitation) uuid.UUID { return i.ID }), nil
}

// RevokeInvitation stops an invitation's unspent uses.
func (s *Service) RevokeInvitation(ctx context.Context, id uuid.UUID) error {
	_, err := s.store.RevokeInvitation(ctx, id)
	return err
}

// ListUsers returns a page of users, oldest first; when q is not empty, of those whose email or
// name contains it, case aside.
func (s *Service) ListUsers(ctx context.Context, after *uuid.UUID, limit int, q string) (barrage.Page[barrage.User], error) {
	rows, err := s.store.ListUsers(ctx, after, limit+1, q)
	if err != nil {
		return barrage.Page[barrage.User]{}, err
	}
	return barrage.NewPage(rows, limit, func(u barrage.User) uuid.UUID { return u.ID }), nil
}

// GetUser returns one user.
func (s *Service) GetUser(ctx context.Context, id uuid.UUID) (barrage.User, error) {
	return s.store.UserByID(ctx, id)
}

// UserWithActivity returns one user with what they have done: their live personal API tokens
// and the runs they started.
func (s *Service) UserWithActivity(ctx context.Context, id uuid.UUID) (barrage.User, barrage.UserActivity, error) {
	return s.store.UserWithActivity(ctx, id)
}

// UserPatch is what an admin changes on a user; nil fields stay as they are.
type UserPatch struct {
	Role          *barrage.Role
	Disabled      *bool
	RemoveLicense bool
	License       *LicenseInput // merged onto the current license
}

// UpdateUser applies an admin's changes to a user. Admins cannot demote or disable themselves,
// so that the platform never loses its last admin by accident. Disabling ends every session and
// revokes the user's personal API tokens for good (enabling the account again does not revive
// them).
func (s *Service) UpdateUser(ctx context.Context, p barrage.Principal, id uuid.UUID, patch UserPatch) (barrage.User, error) {
	if id == p.User.ID {
		if patch.Role != nil && *patch.Role != barrage.RoleAdmin {
			return barrage.User{}, barrage.Invalid("role", "you cannot demote yourself")
		}
		if patch.Disabled != nil && *patch.Disabled {
			return barrage.User{}, barrage.Invalid("disabled", "you cannot disable yourself")
		}
	}
	if patch.Role != nil && !patch.Role.Valid() {
		return barrage.User{}, barrage.Invalid("role", "must be admin or user")
	}
	now := s.now()
	return s.store.UpdateUser(ctx, id, func(u *barrage.User) error {
		if patch.Role != nil {
			u.Role = *patch.Role
		}
		if patch.Disabled != nil {
			if *patch.Disabled && !u.Disabled {
				u.TokensValidAfter = now
			}
			u.Disabled = *patch.Disabled
		}
		switch {
		case patch.RemoveLicense:
			u.License = nil
		case patch.License != nil:
			l, err := mergeLicense(u.License, *patch.License, now)
			if err != nil {
				return err
			}
			u.License = &l
		}
		return nil
	}, false)
}

// mergeLicense applies in to the current license (nil: none yet), starting afresh from a
// template when one is named.
func mergeLicense(cur *barrage.License, in LicenseInput, now time.Time) (barrage.License, error) {
	var l barrage.License
	switch {
	case in.Template != nil || cur == nil:
		t, err := in.template("license")
		if err != nil {
			return l, err
		}
		l = t.Issue(now)
	default:
		l = *cur
		in.applyLimits(&l.Plan, &l.Limits)
		if err := in.applyQuotas("license", &l.Quotas); err != nil {
			return l, err
		}
	}
	if in.ValidUntil != nil {
		l.ValidUntil = *in.ValidUntil
	}
	return l, validLicense("license", l.Plan, l.Limits)
}
