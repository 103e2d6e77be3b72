package barrage

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// Role is what a user may do on the platform.
type Role string

// The roles.
const (
	RoleAdmin Role = "admin"
	RoleUser  Role = "user"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleUser }

// User is an account.
type User struct {
	ID               uuid.UUID
	Email            string
	Name             string
	PasswordHash     string
	Role             Role
	Disabled         bool
	License          *License // nil: no license, no limits (admins by default)
	TokensValidAfter time.Time
	// GuessedAt is when wrong passwords for the account last came from many addresses past its
	// budget: someone is guessing its password (nil: never seen).
	GuessedAt *time.Time
	// InvitationID is the invitation the account was made with; nil for accounts made before
	// Barrage recorded it (migration 0020).
	InvitationID *uuid.UUID
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// UserActivity is what a user has done, as an admin reads it: the personal API tokens they keep
// alive (neither revoked nor expired), the runs they started in any state, and when the newest
// was made (nil when none was).
type UserActivity struct {
	Tokens    int64
	Runs      int64
	LastRunAt *time.Time
}

// Invitation admits people: redeeming its code creates an account with its role and license.
type Invitation struct {
	ID        uuid.UUID
	Role      Role
	License   *LicenseTemplate
	UsesTotal int
	UsesLeft  int
	ExpiresAt time.Time
	Note      string
	CreatedBy *uuid.UUID
	CreatedAt time.Time
	RevokedAt *time.Time
	// UsedBy are the accounts made with it, oldest first. A use spent on an email that had an
	// account made none, and accounts made before Barrage recorded it are not there.
	UsedBy []InvitationUse
}

// InvitationUse is an account made with an invitation: who, and when.
type InvitationUse struct {
	UserID uuid.UUID
	Email  string
	Name   string
	At     time.Time
}

// Scope limits what a personal API token may do.
type Scope string

// The scopes. An access token from signing in holds all of them.
const (
	ScopeRead  Scope = "read"  // safe methods
	ScopeWrite Scope = "write" // changes to the user's own data
	ScopeAdmin Scope = "admin" // admin routes, for admins only
	// ScopePluginsWrite publishes and deprecates plugin versions: a token that CI keeps to
	// publish with need not change anything else.
	ScopePluginsWrite Scope = "plugins:write"
)

// AllScopes lists every scope, in display order.
var AllScopes = []Scope{ScopeRead, ScopeWrite, ScopePluginsWrite, ScopeAdmin}

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return slices.Contains(AllScopes, s) }

// APIToken is a personal API token; its secret is shown once and stored hashed.
type APIToken struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	Name       string
	Scopes     []Scope
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	// ProjectID, when set, limits the token to that project of its user.
	ProjectID *uuid.UUID
}

// Principal is who a request acts as, and with which scopes.
type Principal struct {
	User   User
	Scopes []Scope
	// TokenID is the personal API token used, if any, and TokenExpiresAt when it expires.
	TokenID        *uuid.UUID
	TokenExpiresAt *time.Time
	// Expires is when the credential of the request (a personal token, an access token) stops
	// being accepted; zero when unknown. What outlives a request, a live stream, ends then.
	Expires time.Time
	// Agent is set, and User empty, when a measuring agent makes the request with its token.
	Agent *Agent
	// Memberships are the user's projects, with the role held in each.
	Memberships map[uuid.UUID]Membership
	// TokenProject, when set, limits the request's personal API token to that project.
	TokenProject *uuid.UUID
}

// HasScope reports whether the principal holds s.
func (p Principal) HasScope(s Scope) bool {
	for _, have := range p.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// Page is one page of a list, and the id to continue after, if there is more.
type Page[T any] struct {
	Items []T
	Next  *uuid.UUID
}

// NewPage makes a page of at most limit items from rows, which should hold up to limit+1: the
// extra row only tells that another page exists.
func NewPage[T any](rows []T, limit int, id func(T) uuid.UUID) Page[T] {
	if len(rows) <= limit {
		return Page[T]{Items: rows}
	}
	rows = rows[:limit]
	next := id(rows[limit-1])
	return Page[T]{Items: rows, Next: &next}
}

// How many of some things one user may keep, whatever their license: enough for any use, and a
// bound on what one user's loop can add to tables everyone shares.
const (
	MaxAPITokens     = 100 // personal API tokens not expired
	MaxPrivateAgents = 50  // agents of their own
)
