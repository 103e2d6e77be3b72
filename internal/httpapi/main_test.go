package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/httpapi"
	"github.com/barrage-load/barrage/internal/logging"
	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

// The whole suite logs into suiteLog at debug level, and every secret a test sees (passwords,
// tokens, codes) is noted in secrets. TestMain fails the run if any secret was logged.
var (
	suiteLog syncBuffer
	secrets  sync.Map
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// secret notes a value that must never appear in a log line, and returns it.
func secret(s string) string {
	if len(s) >= 8 {
		secrets.Store(s, true)
	}
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	logs := suiteLog.String()
	leaked := 0
	secrets.Range(func(k, _ any) bool {
		if strings.Contains(logs, k.(string)) {
			fmt.Fprintf(os.Stderr, "FAIL: a secret appears in the logs: %.12s…\n", k.(string))
			leaked++
		}
		return true
	})
	n := 0
	secrets.Range(func(any, any) bool { n++; return true })
	// The whole suite registers dozens; fewer means the registration broke (a -run subset may
	// legitimately see few).
	if code == 0 && n < 10 && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintf(os.Stderr, "FAIL: the log check saw only %d secrets; the tests did not register them\n", n)
		code = 1
	}
	if leaked > 0 || (code == 0 && logs != "" && !strings.Contains(logs, "request_id=")) { // logs, when a server ran
		code = 1
	}
	os.Exit(code)
}

// testBundle is one server on a fresh database.
type testBundle struct {
	t      testing.TB
	srv    *httptest.Server
	store  *postgres.Store
	pool   *pgxpool.Pool // the store's, for tests that wait on what it holds
	svc    *account.Service
	ctl    *control.Plane
	blobs  *blob.Local
	mkt    *market.Service
	key    []byte // PEM of the signing key, for forging tokens
	tokens *auth.Tokens
}

type setupOpts struct {
	// pool, when set, is the database the server uses instead of a fresh one.
	pool   *pgxpool.Pool
	limits account.RateLimits
	// trusted are the trusted proxies.
	trusted string
	maxBody int64
	// maxFileBytes caps a test's data file.
	maxFileBytes int64
	// maxPluginBytes caps a plugin artifact.
	maxPluginBytes int64
	// asServed serves the handler as serve does, without the check of every answer against
	// the spec (which records each answer whole): for benchmarks of streamed answers.
	asServed bool
	// anonReaders bounds the bodies without credentials read at once.
	anonReaders int
	// heavyPerUser bounds a user's heavy requests in flight (the default when 0).
	heavyPerUser int
	// liveStreams bounds the live streams (the defaults when zero).
	liveStreams httpapi.LiveStreams
	// draining, when set, ends when the test shuts the server down.
	draining context.Context
	// reservedNamespaces are the operator's reserved namespaces.
	reservedNamespaces []string
	// quotas bound what each user with a license keeps (none when zero).
	quotas barrage.Quotas
	// conversionBudget is the conversion time a user may spend (the default when zero).
	conversionBudget barrage.Rate
	// targets are what runs on shared agents may load; nil opens the addresses the suite's
	// scripts name (127.0.0.1:9 and :9100), which nothing listens on, as an operator would.
	targets *targets.Config
}

// testHasher is cheap: the suite hashes hundreds of passwords. The cost of the real
// parameters is measured by BenchmarkHashOWASP in package auth.
var testHasher = auth.NewHasher(auth.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})

func setup(t testing.TB, opts ...setupOpts) *testBundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.limits == (account.RateLimits{}) {
		// High enough that only the rate-limit tests meet them.
		r := account.Rate{N: 1000, Per: time.Hour}
		o.limits = account.RateLimits{LoginPerClient: r, LoginPerAccount: r, SignupPerClient: r, SignupPerAccount: r}
	}
	pool := o.pool
	if pool == nil {
		pool = pgtest.Pool(t)
	}
	store := postgres.NewStore(pool)
	keyPath := t.TempDir() + "/key.pem"
	key, err := auth.LoadOrCreateKey(keyPath, true)
	require.NoError(t, err)
	pemBytes, err := os.ReadFile(keyPath)
	require.NoError(t, err)
	tokens := auth.NewTokens(key, "barrage", "barrage-api", 15*time.Minute)
	log := logging.New(&suiteLog, "text", slog.LevelDebug)
	svc := account.New(store, testHasher, tokens, log, account.Config{RefreshTTL: 24 * time.Hour, RateLimits: o.limits, Quotas: o.quotas})
	tc := targets.Config{Open: map[string]bool{"127.0.0.1:9": true, "127.0.0.1:9100": true}}
	if o.targets != nil {
		tc = *o.targets
	}
	ctl := control.New(store, log, control.Config{PollEvery: 20 * time.Millisecond, Targets: tc, Quotas: o.quotas,
		ConversionBudget: o.conversionBudget})
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	mkt := market.New(store, blobs, log, market.Config{MaxArtifactBytes: o.maxPluginBytes, ReservedNamespaces: o.reservedNamespaces, Quotas: o.quotas})
	deps := httpapi.Deps{Log: log, Accounts: svc, Control: ctl, Market: mkt, Audit: audit.New(store, log, 0), Ready: store.Ready, MaxBodyBytes: o.maxBody, MaxFileBytes: o.maxFileBytes,
		AnonymousReaders: o.anonReaders, HeavyPerUser: o.heavyPerUser, LiveStreams: o.liveStreams,
		Draining: o.draining}
	if o.trusted != "" {
		deps.TrustedProxies = mustPrefixes(t, o.trusted)
	}
	h, err := httpapi.NewServer(deps)
	require.NoError(t, err)
	if !o.asServed {
		h = conformToSpec(t, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testBundle{t: t, srv: srv, store: store, pool: pool, svc: svc, ctl: ctl, blobs: blobs, mkt: mkt, key: pemBytes, tokens: tokens}
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// do sends a request; body is JSON-encoded unless it is a string or []byte.
func (b *testBundle) do(method, path, bearer string, body any, header ...string) response {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		data, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.srv.URL+path, rd)
	require.NoError(b.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// requireProblem checks that r is a problem document with status, and returns it.
func requireProblem(t *testing.T, r response, status int) map[string]any {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), "body: %s", r.body)
	p := r.json(t)
	require.EqualValues(t, status, p["status"])
	require.NotEmpty(t, p["title"])
	require.NotEmpty(t, p["type"])
	require.NotEmpty(t, p["request_id"])
	return p
}

// requireField checks that problem p names field among its errors, and returns the reason.
func requireField(t *testing.T, p map[string]any, field string) string {
	t.Helper()
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		fe := e.(map[string]any)
		if fe["field"] == field {
			require.NotEmpty(t, fe["reason"])
			return fe["reason"].(string)
		}
	}
	require.Failf(t, "field not named", "want field %q in %v", field, p)
	return ""
}

// user is a signed-up account and its session.
type user struct {
	id, email, password string
	access, refresh     string
}

const testPassword = "correct horse battery staple"

// firstAdmin signs up the first admin with the code the first start issues.
func (b *testBundle) firstAdmin() user {
	b.t.Helper()
	code, err := b.svc.EnsureFirstAdmin(context.Background())
	require.NoError(b.t, err)
	require.NotEmpty(b.t, code)
	return b.signup(secret(code), "admin@example.com")
}

func (b *testBundle) signup(code, email string) user {
	b.t.Helper()
	pw := secret(testPassword + " " + email)
	r := b.do("POST", "/v1/auth/signup", "", map[string]any{
		"invitation_code": code, "email": email, "password": pw, "name": "Test " + email,
	})
	require.Equal(b.t, http.StatusAccepted, r.status, "body: %s", r.body)
	r = b.do("POST", "/v1/auth/login", "", map[string]any{"email": email, "password": pw})
	require.Equal(b.t, http.StatusOK, r.status, "body: %s", r.body)
	m := r.json(b.t)
	u := user{email: email, password: pw, access: secret(m["access_token"].(string)), refresh: secret(m["refresh_token"].(string))}
	me := b.do("GET", "/v1/me", u.access, nil)
	require.Equal(b.t, http.StatusOK, me.status)
	u.id = me.json(b.t)["id"].(string)
	return u
}

// invite issues an invitation as admin and returns the code.
func (b *testBundle) invite(admin user, body map[string]any) string {
	b.t.Helper()
	r := b.do("POST", "/v1/admin/invitations", admin.access, body)
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	return secret(r.json(b.t)["code"].(string))
}

// adminAndUser sets up the first admin and one demo user.
func (b *testBundle) adminAndUser() (user, user) {
	admin := b.firstAdmin()
	code := b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}})
	return admin, b.signup(code, "user@example.com")
}
