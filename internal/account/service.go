// Package account is where people get in and what they may do: sign-up with invitation codes,
// sign-in and sessions, personal API tokens, and the admin's invitations, users and licenses.
// It owns the rules; the store keeps the data and the HTTP layer translates.
package account

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres"
)

// Service carries out account operations.
type Service struct {
	store      *postgres.Store
	hasher     *auth.Hasher
	tokens     *auth.Tokens
	refreshTTL time.Duration
	limits     RateLimits
	log        *slog.Logger
	now        func() time.Time
	quotas     barrage.Quotas
}

// Config are the Service's settings.
type Config struct {
	RefreshTTL time.Duration
	RateLimits RateLimits
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Quotas bound what each user with a license keeps, where their license does not (none
	// when zero).
	Quotas barrage.Quotas
}

// New returns a Service.
func New(store *postgres.Store, hasher *auth.Hasher, tokens *auth.Tokens, log *slog.Logger, cfg Config) *Service {
	if cfg.RateLimits == (RateLimits{}) {
		cfg.RateLimits = DefaultRateLimits
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, hasher: hasher, tokens: tokens, refreshTTL: cfg.RefreshTTL, limits: cfg.RateLimits, log: log, now: cfg.Now,
		quotas: cfg.Quotas}
}

// Quotas are the quotas on what u keeps (their license's over the server's defaults), and what u
// keeps; none for a user without a license.
func (s *Service) Quotas(ctx context.Context, u barrage.User) (barrage.Quotas, barrage.Usage, error) {
	if u.License == nil {
		return barrage.Quotas{}, barrage.Usage{}, nil
	}
	used, err := s.store.Usage(ctx, u.ID)
	return u.Quotas(s.quotas), used, err
}

// Session is what signing in gives: a short-lived access token and a refresh token.
type Session struct {
	AccessToken  string
	RefreshToken string
	ExpiresIn    time.Duration
	User         barrage.User
}

// SignupInput is what a person gives to create an account.
type SignupInput struct {
	InvitationCode string
	Email          string
	Password       string
	Name           string
}

// Signup redeems an invitation code and creates the account; the person then signs in. An email
// that already has an account is answered the same (nil) and spends the code's use all the
// same: sign-up is no way to learn which emails have an account, and each try costs a use of a
// code an admin issued. The password is hashed either way, so the time says nothing either.
func (s *Service) Signup(ctx context.Context, in SignupInput, client netip.Addr) error {
	if err := s.limit(ctx, s.limits.SignupPerClient, "signup:client:"+ClientKey(client)); err != nil {
		return err
	}
	email, err := validEmail("email", in.Email)
	if err != nil {
		return err
	}
	audit.Actor(ctx, nil, email)
	if err := s.limit(ctx, s.limits.SignupPerAccount, "signup:email:"+strings.ToLower(email)); err != nil {
		return err
	}
	name, err := validName("name", in.Name)
	if err != nil {
		return err
	}
	if err := validPassword("password", in.Password, email); err != nil {
		return err
	}
	code := strings.TrimSpace(in.InvitationCode)
	if !strings.HasPrefix(code, auth.PrefixInvitation) {
		return barrage.Invalid("invitation_code", "unknown invitation code")
	}
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return err
	}
	u, err := s.store.CreateUserFromInvitation(ctx, auth.HashSecret(code), barrage.User{
		ID: uuid.Must(uuid.NewV7()), Email: email, Name: name, PasswordHash: hash,
	}, s.now())
	if errors.Is(err, postgres.ErrEmailTaken) {
		// Answered as a created account: sign-up tells nobody which emails have one.
		s.log.InfoContext(ctx, "sign-up for an email that has an account; the code's use is spent")
		audit.Detail(ctx, "email_taken", true)
		return nil
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "account created", slog.String("user_id", u.ID.String()), slog.String("role", string(u.Role)))
	audit.Actor(ctx, &u.ID, u.Email)
	if u.InvitationID != nil {
		audit.Object(ctx, u.InvitationID.String())
	}
	audit.Detail(ctx, "role", u.Role)
	return nil
}

// ClientKey names a client address for rate limiting. An IPv6 client usually holds a whole /64,
// so the /64 is the client; an IPv4 address is its own.
func ClientKey(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.Unmap().String()
}

// EmailChangeRate is how often an account may ask to change its email.
var EmailChangeRate = Rate{N: 3, Per: 24 * time.Hour}

// errBadCredentials answers an unknown email, a wrong password and a disabled account alike: the
// answer tells nobody whether a password is right, nor which emails have an account.
var errBadCredentials = barrage.Errorf(barrage.ErrUnauthorized, "invalid email or password, or the account is disabled")

// Login checks email and password and starts a session.
func (s *Service) Login(ctx context.Context, email, password string, client netip.Addr) (Session, error) {
	if err := s.limit(ctx, s.limits.LoginPerClient, "login:client:"+ClientKey(client)); err != nil {
		return Session{}, err
	}
	email = strings.TrimSpace(email)
	if _, err := barrage.CheckText("email", email, 1, 254); err != nil {
		// No account has such an address: answer as for any unknown email.
		_ = s.hasher.VerifyDummy(ctx, password)
		return Session{}, errBadCredentials
	}
	audit.Actor(ctx, nil, email)
	// Wrong passwords are counted per account and client together: they slow whoever sends
	// them, not the owner signing in from elsewhere.
	failures := "login:failures:" + strings.ToLower(email) + ":" + ClientKey(client)
	if err := s.allowed(ctx, s.limits.LoginPerAccount, failures); err != nil {
		return Session{}, err
	}
	u, err := s.store.UserByEmail(ctx, email)
	if err != nil && !errors.Is(err, barrage.ErrNotFound) {
		return Session{}, err
	}
	if u.ID != uuid.Nil {
		// The account tried: its owner reads the attempt in their own log.
		audit.Object(ctx, u.ID.String())
		audit.Subject(ctx, u.ID)
	}
	// Wrong passwords from everywhere together: past their budget, strangers wait their turn.
	// An email without an account is counted alike, so that the turns say nothing of which have.
	guesses := "login:guesses:" + strings.ToLower(email)
	from := ClientKey(client)
	if err := s.allowed(ctx, s.limits.GuessesPerAccount, guesses); err != nil {
		known := false
		if u.ID != uuid.Nil {
			if known, err = s.store.KnownSignInAddress(ctx, u.ID, from, s.now().Add(-KnownFor)); err != nil {
				return Session{}, err
			}
		}
		if !known {
			if err := s.limit(ctx, s.limits.StrangersPerAccount, "login:strangers:"+strings.ToLower(email)); err != nil {
				return Session{}, err
			}
		}
	}
	wrong := func() error {
		if err := s.failed(ctx, s.limits.GuessesPerAccount, guesses); err != nil && u.ID != uuid.Nil {
			s.guessed(ctx, u)
		}
		return cmp.Or(s.failed(ctx, s.limits.LoginPerAccount, failures), errBadCredentials)
	}
	if u.ID == uuid.Nil {
		_ = s.hasher.VerifyDummy(ctx, password)
		return Session{}, wrong()
	}
	if err := s.hasher.Verify(ctx, u.PasswordHash, password); err != nil {
		if errors.Is(err, auth.ErrMismatch) {
			return Session{}, wrong()
		}
		return Session{}, err
	}
	if u.Disabled {
		audit.Detail(ctx, "disabled", true)
		return Session{}, wrong()
	}
	if err := s.store.TouchSignInAddress(ctx, u.ID, from, s.now()); err != nil {
		return Session{}, err
	}
	audit.Actor(ctx, &u.ID, u.Email)
	return s.startSession(ctx, u)
}

// guessed records that u's password is being guessed from many addresses, and says so in the
// log once an hour.
func (s *Service) guessed(ctx context.Context, u barrage.User) {
	news, err := s.store.MarkGuessed(ctx, u.ID, s.now())
	switch {
	case err != nil:
		s.log.ErrorContext(ctx, "record password guessing", slog.String("user_id", u.ID.String()), slog.Any("error", err))
	case news:
		// Strangers now wait their turn: the account is under attack, and its log says so.
		audit.Detail(ctx, "guessing_detected", true)
		s.log.WarnContext(ctx, "wrong passwords for an account from many addresses, past its budget: addresses it has not signed in from now wait their turn",
			slog.String("user_id", u.ID.String()), slog.Int("budget", s.limits.GuessesPerAccount.N), slog.Duration("per", s.limits.GuessesPerAccount.Per))
	}
}

// startSession issues an access token and the first refresh token of a new family.
func (s *Service) startSession(ctx context.Context, u barrage.User) (Session, error) {
	refresh := auth.NewSecret(auth.PrefixRefreshToken)
	if err := s.store.CreateRefreshToken(ctx, u.ID, uuid.Must(uuid.NewV7()), auth.HashSecret(refresh), s.now().Add(s.refreshTTL)); err != nil {
		return Session{}, err
	}
	return s.session(u, refresh)
}

func (s *Service) session(u barrage.User, refresh string) (Session, error) {
	access, _, err := s.tokens.Issue(u.ID)
	if err != nil {
		return Session{}, err
	}
	return Session{AccessToken: access, RefreshToken: refresh, ExpiresIn: s.tokens.TTL(), User: u}, nil
}

// Refresh exchanges a refresh token for a new pair; see postgres.Store.RotateRefreshToken.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (Session, error) {
	next := auth.NewSecret(auth.PrefixRefreshToken)
	u, err := s.store.RotateRefreshToken(ctx, auth.HashSecret(refreshToken), auth.HashSecret(next), s.now().Add(s.refreshTTL))
	if err != nil {
		if errors.Is(err, barrage.ErrUnauthorized) {
			s.log.WarnContext(ctx, "refresh refused", slog.String("reason", err.Error()))
		}
		return Session{}, err
	}
	return s.session(u, next)
}

// RefreshTTL is how long a refresh token lives.
func (s *Service) RefreshTTL() time.Duration { return s.refreshTTL }

// Logout ends the session the refresh token belongs to.
func (s *Service) Logout(ctx context.Context, refreshToken string) error {
	return s.store.RevokeRefreshFamily(ctx, auth.HashSecret(refreshToken))
}

// errBadToken answers every bearer token that is not accepted.
var errBadToken = barrage.Errorf(barrage.ErrUnauthorized, "the bearer token is invalid or expired")

// touchEvery is how stale a personal token's last-used time may get: writing it on every request
// would turn each read into a write.
const touchEvery = time.Minute

// Authenticate returns who a bearer token (an access token or a personal API token) acts as.
func (s *Service) Authenticate(ctx context.Context, bearer string) (barrage.Principal, error) {
	now := s.now()
	if strings.HasPrefix(bearer, auth.PrefixAPIToken) {
		t, u, err := s.store.APITokenByHash(ctx, auth.HashSecret(bearer))
		if errors.Is(err, barrage.ErrNotFound) {
			return barrage.Principal{}, errBadToken
		}
		if err != nil {
			return barrage.Principal{}, err
		}
		if !now.Before(t.ExpiresAt) || u.Disabled {
			return barrage.Principal{}, errBadToken
		}
		if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > touchEvery {
			if err := s.store.TouchAPIToken(ctx, t.ID); err != nil {
				s.log.WarnContext(ctx, "record token use", slog.String("error", err.Error()))
			}
		}
		return s.withMemberships(ctx, barrage.Principal{User: u, Scopes: t.Scopes, TokenID: &t.ID, TokenExpiresAt: &t.ExpiresAt, Expires: t.ExpiresAt,
			TokenProject: t.ProjectID})
	}
	claims, err := s.tokens.Verify(bearer)
	if err != nil {
		return barrage.Principal{}, errBadToken
	}
	u, err := s.store.UserByID(ctx, claims.UserID)
	if errors.Is(err, barrage.ErrNotFound) {
		return barrage.Principal{}, errBadToken
	}
	if err != nil {
		return barrage.Principal{}, err
	}
	// iat has whole milliseconds: compare at that precision.
	if u.Disabled || claims.IssuedAt.Before(u.TokensValidAfter.Truncate(time.Millisecond)) {
		return barrage.Principal{}, errBadToken
	}
	return s.withMemberships(ctx, barrage.Principal{User: u, Scopes: barrage.AllScopes, Expires: claims.Expiry})
}

// withMemberships is p with the projects its user belongs to and the role in each, read for each
// request: a member removed a moment ago reaches nothing of the project at their next one.
func (s *Service) withMemberships(ctx context.Context, p barrage.Principal) (barrage.Principal, error) {
	m, err := s.store.Memberships(ctx, p.User.ID)
	if err != nil {
		return barrage.Principal{}, err
	}
	p.Memberships = m
	return p, nil
}

// UpdateMeInput holds the changes a user asks for; nil fields stay as they are.
type UpdateMeInput struct {
	Name, Email, CurrentPassword, NewPassword *string
	// RevokeTokens, with NewPassword, revokes every personal API token too, in the same change.
	RevokeTokens bool
}

// UpdateMe changes the principal's own account. Email and password need the current password;
// a new password ends every session, and revokes the personal API tokens when asked to (they
// are the user's to keep: a CI job's token need not die with a password change).
func (s *Service) UpdateMe(ctx context.Context, p barrage.Principal, in UpdateMeInput) (barrage.User, error) {
	audit.Object(ctx, p.User.ID.String())
	if err := accountWide(p); err != nil {
		return barrage.User{}, err
	}
	var changed []string
	for field, set := range map[string]bool{"email": in.Email != nil, "name": in.Name != nil, "password": in.NewPassword != nil} {
		if set {
			changed = append(changed, field)
		}
	}
	slices.Sort(changed)
	audit.Detail(ctx, "fields", changed)
	if in.NewPassword != nil {
		audit.Rename(ctx, "user.change_password")
		audit.Detail(ctx, "revoke_tokens", in.RevokeTokens)
	}
	var newHash string
	if in.Email != nil || in.NewPassword != nil {
		if in.CurrentPassword == nil {
			return barrage.User{}, barrage.Invalid("current_password", "required to change the email or the password")
		}
		// Whoever holds a token could otherwise guess the password here at full speed.
		if err := s.limit(ctx, s.limits.LoginPerAccount, "password:user:"+p.User.ID.String()); err != nil {
			return barrage.User{}, err
		}
		if err := s.hasher.Verify(ctx, p.User.PasswordHash, *in.CurrentPassword); err != nil {
			if errors.Is(err, auth.ErrMismatch) {
				return barrage.User{}, barrage.Invalid("current_password", "does not match")
			}
			return barrage.User{}, err
		}
	}
	var email string
	if in.Email != nil {
		e, err := validEmail("email", *in.Email)
		if err != nil {
			return barrage.User{}, err
		}
		email = e
		// A change to an email that has an account is refused (409), so each try tells whether
		// one has: few a day, counted whatever the answer, keep that from being a way to list
		// who has an account.
		if !strings.EqualFold(email, p.User.Email) {
			if err := s.limit(ctx, EmailChangeRate, "email-change:"+p.User.ID.String()); err != nil {
				return barrage.User{}, err
			}
		}
	}
	if in.RevokeTokens && in.NewPassword == nil {
		return barrage.User{}, barrage.Invalid("revoke_tokens", "goes with new_password")
	}
	if in.NewPassword != nil {
		if err := validPassword("new_password", *in.NewPassword, cmp.Or(email, p.User.Email)); err != nil {
			return barrage.User{}, err
		}
		h, err := s.hasher.Hash(ctx, *in.NewPassword)
		if err != nil {
			return barrage.User{}, err
		}
		newHash = h
	}
	var name string
	if in.Name != nil {
		n, err := validName("name", *in.Name)
		if err != nil {
			return barrage.User{}, err
		}
		name = n
	}
	now := s.now()
	return s.store.UpdateUser(ctx, p.User.ID, func(u *barrage.User) error {
		// Only what was asked changes: another session's concurrent change to the rest stays.
		if email != "" {
			u.Email = email
		}
		if name != "" {
			u.Name = name
		}
		if newHash != "" {
			u.PasswordHash = newHash
			u.TokensValidAfter = now
		}
		return nil
	}, in.RevokeTokens)
}

func validEmail(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", barrage.Invalid(field, "must be an email address such as ada@example.com")
	}
	return s, nil
}

func validName(field, s string) (string, error) {
	return barrage.CheckText(field, s, 1, 200)
}

// minPasswordLen follows NIST SP 800-63B: length matters, composition rules do not.
const minPasswordLen = 12

func validPassword(field, pw, email string) error {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < minPasswordLen:
		return barrage.Invalid(field, fmt.Sprintf("must have at least %d characters", minPasswordLen))
	case n > 256:
		return barrage.Invalid(field, "must have at most 256 characters")
	case strings.EqualFold(pw, email):
		return barrage.Invalid(field, "must not be the email address")
	}
	return nil
}
