// Package controltest builds the control plane (package control) on a fresh PostgreSQL for the
// tests of its services, as pgtest does the database: with a clock the test moves, and the few
// things every such test starts from (users with a license, agents online, scripts, seconds of
// metrics as an agent reports them, a target that proves its owner's control).
package controltest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/projects"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/ownership"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/run"
)

// Plane is the control plane on a database of its own test.
type Plane struct {
	*control.Plane
	Store *postgres.Store
	// DB is the plane's database, for a test to change what no service would.
	DB    *pgxpool.Pool
	Clock *Clock
	t     testing.TB
}

// New composes the control plane on a fresh database, with cfg's settings: its clock is a
// Clock set to now (the plane's Now, unless cfg has one), and waits look again every 20ms.
func New(t testing.TB, cfg control.Config) *Plane {
	t.Helper()
	db := pgtest.Pool(t)
	store := postgres.NewStore(db)
	clock := NewClock(time.Now())
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.PollEvery == 0 {
		cfg.PollEvery = 20 * time.Millisecond
	}
	return &Plane{Plane: control.New(store, slog.New(slog.DiscardHandler), cfg), Store: store, DB: db, Clock: clock, t: t}
}

// NewClock is a Clock set to at.
func NewClock(at time.Time) *Clock { return &Clock{now: at} }

// Clock is a clock that moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// User signs up a user of email with a license of lic (none when nil), as an invitation would.
func (p *Plane) User(email string, lic *barrage.LicenseTemplate) barrage.Principal {
	p.t.Helper()
	return p.signup(email, barrage.RoleUser, lic)
}

// Admin signs up an admin of email, without a license.
func (p *Plane) Admin(email string) barrage.Principal {
	p.t.Helper()
	return p.signup(email, barrage.RoleAdmin, nil)
}

func (p *Plane) signup(email string, role barrage.Role, lic *barrage.LicenseTemplate) barrage.Principal {
	p.t.Helper()
	ctx := context.Background()
	code := []byte("code-" + email)
	_, err := p.Store.CreateInvitation(ctx, barrage.Invitation{ID: uuid.Must(uuid.NewV7()), Role: role, License: lic,
		UsesTotal: 1, UsesLeft: 1, ExpiresAt: time.Now().Add(time.Hour)}, code)
	require.NoError(p.t, err)
	u, err := p.Store.CreateUserFromInvitation(ctx, code, barrage.User{ID: uuid.Must(uuid.NewV7()), Email: email, Name: email,
		PasswordHash: "not a hash"}, time.Now())
	require.NoError(p.t, err)
	return p.Reload(barrage.Principal{User: u})
}

// Share makes a project named name of owner's, in which each of members holds role, and reloads
// them all with it; it returns the project.
func (p *Plane) Share(owner *barrage.Principal, name string, role barrage.ProjectRole, members ...*barrage.Principal) uuid.UUID {
	p.t.Helper()
	ctx := context.Background()
	pr, err := p.Projects.CreateProject(ctx, *owner, name)
	require.NoError(p.t, err)
	*owner = p.Reload(*owner)
	for _, m := range members {
		inv, err := p.Projects.Invite(ctx, *owner, pr.ID, projects.InviteInput{UserID: &m.User.ID, Role: role})
		require.NoError(p.t, err)
		_, err = p.Projects.Answer(ctx, *m, inv.ID, true)
		require.NoError(p.t, err)
		*m = p.Reload(*m)
	}
	return pr.ID
}

// Home is u's personal project.
func Home(t testing.TB, u barrage.Principal) uuid.UUID {
	t.Helper()
	id, err := u.HomeProject()
	require.NoError(t, err)
	return id
}

// Reload is u with the projects it belongs to now, as the API reads them for each request.
func (p *Plane) Reload(u barrage.Principal) barrage.Principal {
	p.t.Helper()
	m, err := p.Store.Memberships(context.Background(), u.User.ID)
	require.NoError(p.t, err)
	u.Memberships = m
	return u
}

// SmokeScript is a script of one request to 127.0.0.1:9, where nothing listens, by 4 VUs for 10
// seconds, with a threshold that does not abort.
const SmokeScript = `version: 1
name: smoke
session:
  groups:
    - name: home
      requests:
        - { name: get home, url: "http://127.0.0.1:9/" }
load:
  vus: 4
  duration: 10s
thresholds:
  - p95 < 300ms
`

// Invalid is the reason err, a *barrage.InvalidError, gives for its first field, which must be
// field.
func Invalid(t testing.TB, err error, field string) string {
	t.Helper()
	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, field, inv.Fields[0].Field, "%v", err)
	return inv.Fields[0].Reason
}

// Hello is what the tests' agents say of themselves: the protocol this build speaks.
var Hello = fleet.Hello{Protocol: barrage.AgentProtocol, Version: "test", Cores: 2, IP: "127.0.0.1"}

// Agent registers an agent of owner's named name with limits (shared when owner is nil), has it
// ask for work once so that it is online, and returns it as the server knows it then, with its
// token.
func (p *Plane) Agent(owner *barrage.Principal, name string, limits barrage.Limits) (barrage.Agent, string) {
	p.t.Helper()
	ctx := context.Background()
	var who barrage.Principal
	if owner != nil {
		who = *owner
	}
	a, token, err := p.Fleet.CreateAgent(ctx, who, fleet.AgentInput{Name: name, Limits: limits}, owner == nil)
	require.NoError(p.t, err)
	_, err = p.Fleet.Lease(ctx, a, Hello, 0)
	require.NoError(p.t, err)
	a, err = p.Fleet.AuthenticateAgent(ctx, token)
	require.NoError(p.t, err)
	return a, token
}

// Script stores source as a script of u's.
func (p *Plane) Script(u barrage.Principal, source string) barrage.Script {
	p.t.Helper()
	sc, err := p.Tests.CreateScript(context.Background(), u, tests.ScriptInput{Source: []byte(source)})
	require.NoError(p.t, err)
	return sc
}

// Lease has agent a ask for work once, without waiting, and returns the shard it was given
// (nil when none).
func (p *Plane) Lease(a barrage.Agent) *barrage.ShardJob {
	p.t.Helper()
	w, err := p.Fleet.Lease(context.Background(), a, Hello, 0)
	require.NoError(p.t, err)
	return w.Shard
}

// ProofServer is a target on loopback that serves the ownership proof of the tokens it is told
// to (package ownership).
type ProofServer struct {
	*httptest.Server
	mu     sync.Mutex
	tokens map[string]bool
}

// NewProofServer starts a ProofServer that serves no proof yet; it stops when t ends.
func NewProofServer(t testing.TB) *ProofServer {
	ps := &ProofServer{tokens: map[string]bool{}}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/barrage-verify-"), ".txt")
		ps.mu.Lock()
		ok := ps.tokens[token]
		ps.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, token)
	}))
	t.Cleanup(ps.Close)
	return ps
}

// Serve has ps serve the proof of token, or stop serving it.
func (ps *ProofServer) Serve(token string, on bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.tokens[token] = on
}

// LoopbackChecker checks proofs on loopback, where the tests' targets listen (the default
// checker reaches no internal address).
func LoopbackChecker() *ownership.Checker {
	return ownership.New(&netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, nil)
}

// Second is second idx of a shard as an agent reports it: n requests of label, each taking
// latency, by 2 VUs.
func Second(t testing.TB, idx int64, label string, n int, latency time.Duration) fleet.Second {
	t.Helper()
	return FailingSecond(t, idx, label, n, 0, latency)
}

// FailingSecond is Second with failed of its n requests answered 5xx.
func FailingSecond(t testing.TB, idx int64, label string, n, failed int, latency time.Duration) fleet.Second {
	t.Helper()
	st := metrics.NewStats()
	for range n {
		st.Requests++
		st.Latency.Record(latency)
	}
	st.Errors[metrics.Err5xx] = int64(failed)
	snap := &metrics.Snapshot{Start: time.Unix(1_700_000_000+idx, 0), Duration: time.Second,
		Labels: map[metrics.Key]*metrics.Stats{metrics.RequestKey(label): st}}
	enc, err := snap.MarshalBinary()
	require.NoError(t, err)
	return fleet.Second{Index: idx, Snapshot: enc, Health: run.Health{CPU: 0.2, Cores: 2, ActiveVUs: 2}}
}
