package httpapi_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/account"
)

// forge signs claims with method and key, for the attack tests.
func forge(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func TestAccessTokenAttacksAnswer401(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	block, _ := pem.Decode(b.key)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	priv := k.(ed25519.PrivateKey)
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, otherEd, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)

	now := time.Now()
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{
			"sub": admin.id, "iss": "barrage", "aud": []string{"barrage-api"},
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		}
	}
	without := func(claim string) jwt.MapClaims {
		c := valid()
		delete(c, claim)
		return c
	}
	with := func(claim string, v any) jwt.MapClaims {
		c := valid()
		c[claim] = v
		return c
	}
	// The control: a token forged with the real key and valid claims is accepted, so the 401s
	// below come from the attack and not from a broken forge.
	control := forge(t, jwt.SigningMethodEdDSA, priv, valid())
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/me", control, nil).status)

	none := forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid())
	cases := map[string]string{
		"alg none":                    none,
		"HS256 keyed with public key": forge(t, jwt.SigningMethodHS256, pubPEM, valid()),
		"HS256 keyed with public DER": forge(t, jwt.SigningMethodHS256, []byte(priv.Public().(ed25519.PublicKey)), valid()),
		"ES256, another algorithm":    forge(t, jwt.SigningMethodES256, ecKey, valid()),
		"EdDSA by another key":        forge(t, jwt.SigningMethodEdDSA, otherEd, valid()),
		"expired":                     forge(t, jwt.SigningMethodEdDSA, priv, with("exp", now.Add(-time.Minute).Unix())),
		"no exp":                      forge(t, jwt.SigningMethodEdDSA, priv, without("exp")),
		"no iat":                      forge(t, jwt.SigningMethodEdDSA, priv, without("iat")),
		"wrong aud":                   forge(t, jwt.SigningMethodEdDSA, priv, with("aud", []string{"someone-else"})),
		"no aud":                      forge(t, jwt.SigningMethodEdDSA, priv, without("aud")),
		"wrong iss":                   forge(t, jwt.SigningMethodEdDSA, priv, with("iss", "evil")),
		"no iss":                      forge(t, jwt.SigningMethodEdDSA, priv, without("iss")),
		"lifetime over 15 minutes":    forge(t, jwt.SigningMethodEdDSA, priv, with("exp", now.Add(time.Hour).Unix())),
		"subject not a user":          forge(t, jwt.SigningMethodEdDSA, priv, with("sub", "00000000-0000-0000-0000-000000000000")),
		"subject not an id":           forge(t, jwt.SigningMethodEdDSA, priv, with("sub", "admin")),
		"garbage":                     "not.a.jwt",
		"unknown personal token":      "brg_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, b.do("GET", "/v1/me", tok, nil), http.StatusUnauthorized)
		})
	}
	p := requireProblem(t, b.do("GET", "/v1/me", "", nil), http.StatusUnauthorized)
	require.Contains(t, p["detail"], "Bearer")
}

func TestRefreshRotatesAndReuseRevokesTheFamily(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.firstAdmin()

	r1 := b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": u.refresh})
	require.Equal(t, http.StatusOK, r1.status, "body: %s", r1.body)
	second := secret(r1.json(t)["refresh_token"].(string))
	require.NotEqual(t, u.refresh, second)
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/me", secret(r1.json(t)["access_token"].(string)), nil).status)

	// Replaying the first token: refused, and the whole family dies with it.
	p := requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": u.refresh}), http.StatusUnauthorized)
	require.Contains(t, p["detail"], "already used")
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": second}), http.StatusUnauthorized)

	// Another session of the same user is untouched.
	login := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password})
	require.Equal(t, http.StatusOK, login.status)
	other := secret(login.json(t)["refresh_token"].(string))
	secret(login.json(t)["access_token"].(string))
	r2 := b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": other})
	require.Equal(t, http.StatusOK, r2.status)
	third := secret(r2.json(t)["refresh_token"].(string))
	secret(r2.json(t)["access_token"].(string))

	// Logout ends that session; logging out twice is fine.
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/auth/logout", "", map[string]any{"refresh_token": third}).status)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/auth/logout", "", map[string]any{"refresh_token": third}).status)
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": third}), http.StatusUnauthorized)
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": "brg_rt_unknown"}), http.StatusUnauthorized)
}

func TestLoginAnswersUnknownEmailAndWrongPasswordAlike(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.firstAdmin()
	wrong := requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "wrong password!"}), http.StatusUnauthorized)
	unknown := requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "wrong password!"}), http.StatusUnauthorized)
	delete(wrong, "request_id")
	delete(unknown, "request_id")
	require.Equal(t, wrong, unknown)
}

func TestPasswordChangeEndsEverySession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.firstAdmin()
	// Access tokens carry milliseconds: a token from a millisecond before the change is
	// refused, even within the same second.
	b.afterIssue(u.access)

	p := requireProblem(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"new_password": secret("a brand new password")}), http.StatusUnprocessableEntity)
	requireField(t, p, "current_password")
	p = requireProblem(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": "not it at all", "new_password": "a brand new password"}), http.StatusUnprocessableEntity)
	requireField(t, p, "current_password")
	p = requireProblem(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": u.password, "new_password": "short"}), http.StatusUnprocessableEntity)
	requireField(t, p, "new_password")

	r := b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": u.password, "new_password": "a brand new password", "name": "Renamed"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "Renamed", r.json(t)["name"])

	requireProblem(t, b.do("GET", "/v1/me", u.access, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": u.refresh}), http.StatusUnauthorized)
	requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password}), http.StatusUnauthorized)
	login := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "a brand new password"})
	require.Equal(t, http.StatusOK, login.status)
	secret(login.json(t)["access_token"].(string))
	secret(login.json(t)["refresh_token"].(string))
}

func TestPersonalTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()

	created := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "reader", "scopes": []string{"read"}, "expires_in_days": 7})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	c := created.json(t)
	reader := secret(c["token"].(string))
	require.Regexp(t, `^brg_pat_[A-Za-z0-9_-]{43}$`, reader)

	// The token works, for reading only.
	me := b.do("GET", "/v1/me", reader, nil)
	require.Equal(t, http.StatusOK, me.status)
	require.Equal(t, u.id, me.json(t)["id"])
	p := requireProblem(t, b.do("POST", "/v1/tokens", reader, map[string]any{"name": "x", "scopes": []string{"read"}}), http.StatusForbidden)
	require.Contains(t, p["detail"], "write")

	// Listing shows it without its secret; names are unique per user.
	list := b.do("GET", "/v1/tokens", u.access, nil)
	require.Equal(t, http.StatusOK, list.status)
	require.NotContains(t, string(list.body), reader)
	require.Len(t, list.json(t)["items"], 1)
	requireProblem(t, b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "reader", "scopes": []string{"read"}}), http.StatusConflict)

	// A user cannot mint an admin token; an admin's admin token reaches admin routes.
	p = requireProblem(t, b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "adm", "scopes": []string{"admin"}}), http.StatusUnprocessableEntity)
	requireField(t, p, "scopes[0]")
	adminTok := b.do("POST", "/v1/tokens", admin.access, map[string]any{"name": "adm", "scopes": []string{"read", "admin"}})
	require.Equal(t, http.StatusCreated, adminTok.status)
	at := secret(adminTok.json(t)["token"].(string))
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/admin/users", at, nil).status)
	// ... and a write-less admin token cannot create tokens (no scope escalation).
	requireProblem(t, b.do("POST", "/v1/tokens", at, map[string]any{"name": "more", "scopes": []string{"write"}}), http.StatusForbidden)

	// A write-only token cannot read.
	wo := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "writer", "scopes": []string{"write"}})
	require.Equal(t, http.StatusCreated, wo.status)
	requireProblem(t, b.do("GET", "/v1/me", secret(wo.json(t)["token"].(string)), nil), http.StatusForbidden)

	// Revoking: another user's id is not found; the owner's delete works and the token dies.
	requireProblem(t, b.do("DELETE", "/v1/tokens/"+c["id"].(string), admin.access, nil), http.StatusNotFound)
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tokens/"+c["id"].(string), u.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/me", reader, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("DELETE", "/v1/tokens/"+c["id"].(string), u.access, nil), http.StatusNotFound)
}

func TestDisabledUserIsSignedOutEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	tok := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "t", "scopes": []string{"read"}})
	pat := secret(tok.json(t)["token"].(string))
	b.afterIssue(u.access)

	r := b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"disabled": true})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	requireProblem(t, b.do("GET", "/v1/me", u.access, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("GET", "/v1/me", pat, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": u.refresh}), http.StatusUnauthorized)
	// A disabled account answers its right password as it answers a wrong one: sign-in confirms
	// no password of an account nobody may use.
	right := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password})
	wrong := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "not the password at all"})
	requireProblem(t, right, http.StatusUnauthorized)
	requireProblem(t, wrong, http.StatusUnauthorized)
	require.Equal(t, wrong.json(t)["detail"], right.json(t)["detail"])

	// Admins cannot lock themselves out.
	p := requireProblem(t, b.do("PATCH", "/v1/admin/users/"+admin.id, admin.access, map[string]any{"disabled": true}), http.StatusUnprocessableEntity)
	requireField(t, p, "disabled")
	p = requireProblem(t, b.do("PATCH", "/v1/admin/users/"+admin.id, admin.access, map[string]any{"role": "user"}), http.StatusUnprocessableEntity)
	requireField(t, p, "role")

	// Enabled again, the user signs in; the token stays revoked: disabling revoked it for good,
	// so a token that leaked with the account does not come back with it.
	require.Equal(t, http.StatusOK, b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"disabled": false}).status)
	login := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password})
	require.Equal(t, http.StatusOK, login.status)
	access := secret(login.json(t)["access_token"].(string))
	secret(login.json(t)["refresh_token"].(string))
	requireProblem(t, b.do("GET", "/v1/me", pat, nil), http.StatusUnauthorized)
	list := b.do("GET", "/v1/tokens", access, nil)
	require.Equal(t, http.StatusOK, list.status)
	require.Empty(t, list.json(t)["items"])
}

// A password change keeps the personal API tokens (a CI job's need not die with it) unless
// the user asks to revoke them with it, and its answer lists those it kept.
func TestPasswordChangeRevokesTokensWhenAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	mint := func(access, name string) string {
		tok := b.do("POST", "/v1/tokens", access, map[string]any{"name": name, "scopes": []string{"read"}})
		require.Equal(t, http.StatusCreated, tok.status, "body: %s", tok.body)
		return secret(tok.json(t)["token"].(string))
	}
	kept := mint(u.access, "ci")
	p := requireProblem(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"name": "x", "revoke_tokens": true}), http.StatusUnprocessableEntity)
	requireField(t, p, "revoke_tokens")

	r := b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": u.password, "new_password": "a second good password"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/me", kept, nil).status, "kept by a plain password change")
	alive := r.json(t)["tokens_kept"].([]any)
	require.Len(t, alive, 1, "the answer says which tokens stayed alive")
	require.Equal(t, "ci", alive[0].(map[string]any)["name"])
	require.Nil(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"name": "Ada"}).json(t)["tokens_kept"], "only a password change lists them")

	login := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "a second good password"})
	require.Equal(t, http.StatusOK, login.status)
	access := secret(login.json(t)["access_token"].(string))
	secret(login.json(t)["refresh_token"].(string))
	second := mint(access, "laptop")
	r = b.do("PATCH", "/v1/me", access, map[string]any{"current_password": "a second good password", "new_password": "a third good password", "revoke_tokens": true})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Nil(t, r.json(t)["tokens_kept"], "none kept")
	requireProblem(t, b.do("GET", "/v1/me", kept, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("GET", "/v1/me", second, nil), http.StatusUnauthorized)
}

// A token made with a token cannot outlive its parent, so a stolen token cannot extend itself.
func TestTokenMadeWithATokenLivesNoLongerThanItsParent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.firstAdmin()
	parent := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "parent", "scopes": []string{"read", "write"}, "expires_in_days": 2})
	require.Equal(t, http.StatusCreated, parent.status)
	pt := secret(parent.json(t)["token"].(string))
	child := b.do("POST", "/v1/tokens", pt, map[string]any{"name": "child", "scopes": []string{"read"}, "expires_in_days": 365})
	require.Equal(t, http.StatusCreated, child.status, "body: %s", child.body)
	secret(child.json(t)["token"].(string))
	require.Equal(t, parent.json(t)["expires_at"], child.json(t)["expires_at"])
}

// Whoever holds a token cannot guess the password through PATCH /v1/me at full speed.
func TestCurrentPasswordChecksAreRateLimited(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{limits: account.RateLimits{LoginPerClient: lots, SignupPerClient: lots, SignupPerAccount: lots,
		LoginPerAccount: account.Rate{N: 3, Per: time.Hour}}})
	u := b.firstAdmin()
	for range 3 {
		requireProblem(t, b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": "guess guess guess", "new_password": "a brand new password"}), http.StatusUnprocessableEntity)
	}
	r := b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": u.password, "new_password": "a brand new password"})
	requireProblem(t, r, http.StatusTooManyRequests)
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

// Every answer that may carry a secret (a session's tokens, a personal token, an invitation
// code, an agent's token) is kept by no cache on the way (issue 14's review found none said so).
func TestAnswersCarryingSecretsAreNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	for name, r := range map[string]response{
		"login":      b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password}),
		"token":      b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "ci", "scopes": []string{"read"}, "expires_in_days": 7}),
		"invitation": b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{}),
		"agent":      b.do("POST", "/v1/agents", u.access, map[string]any{"name": "mine"}),
		"problem":    b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "wrong password!"}),
	} {
		require.Less(t, r.status, 500, name)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"), name)
	}
}

// While the database is out of reach, the API answers 503 with Retry-After, not 500 (issue 14's
// review), and says nothing of the driver's error.
func TestAnAbsentDatabaseIs503(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1 of loopback: every connection is refused.
	pool, err := pgxpool.New(context.Background(), "postgres://barrage@127.0.0.1:1/barrage?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b := setup(t, setupOpts{pool: pool})
	for _, r := range []response{
		b.do("POST", "/v1/auth/login", "", map[string]any{"email": "ada@example.com", "password": "a long password 1"}),
		b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": "x", "email": "ada@example.com", "password": "a long password 1", "name": "Ada"}),
	} {
		p := requireProblem(t, r, http.StatusServiceUnavailable)
		require.Equal(t, "5", r.header.Get("Retry-After"))
		require.Equal(t, "The server cannot reach its database just now; try again shortly.", p["detail"])
	}
	require.Equal(t, http.StatusServiceUnavailable, b.do("GET", "/readyz", "", nil).status)
}

// A request body is strict JSON: one document, valid UTF-8, no null where the contract has
// none; anything else is refused, naming why, and nothing is stored.
func TestBodiesAreStrictJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	p := requireProblem(t, b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "n", "scopes": []string{"read"}, "expires_in_days": nil}), http.StatusUnprocessableEntity)
	requireField(t, p, "expires_in_days")
	bad := b.do("POST", "/v1/tokens", u.access, []byte("{\"name\": \"caf\xe9\", \"scopes\": [\"read\"]}"))
	p = requireProblem(t, bad, http.StatusBadRequest)
	require.Contains(t, p["detail"], "UTF-8")
	list := b.do("GET", "/v1/tokens", u.access, nil)
	require.Empty(t, list.json(t)["items"], "nothing stored")
}

// A request without credentials may send a small body only, and only so many of them are read
// at once: anonymous connections trickling large bodies cannot pin the server's memory.
func TestAnonymousBodiesAreSmallAndFew(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{anonReaders: 2, asServed: true}) // as served: the spec check would read the bodies first
	big := `{"email": "a@example.com", "password": "` + strings.Repeat("x", 20<<10) + `"}`
	requireProblem(t, b.do("POST", "/v1/auth/login", "", big), http.StatusRequestEntityTooLarge)
	// With credentials, the same size is allowed (and the credentials refused before it is read).
	requireProblem(t, b.do("POST", "/v1/tokens", "brg_pat_not-a-token", big), http.StatusUnauthorized)

	// Two anonymous bodies trickle in and hold the two places; a third is turned away at once.
	third := b.whileHeld(t, 2, "", func() response {
		return b.do("POST", "/v1/auth/login", "", `{"email": "a@example.com", "password": "whatever it is"}`)
	})
	p := requireProblem(t, third, http.StatusServiceUnavailable)
	require.Equal(t, "1", third.header.Get("Retry-After"))
	require.Contains(t, p["detail"], "without credentials")
}

// A body is read only once its sender is known: a request whose token is not one is answered
// 401 while its body is still on the way (here, never finishes), so that any Authorization header
// does not make the server hold a megabyte, or a data file's 16 MiB.
func TestABodyIsReadOnlyOnceItsSenderIsKnown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{asServed: true})
	_, u := b.adminAndUser()
	addr := strings.TrimPrefix(b.srv.URL, "http://")
	send := func(path, bearer string) net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: 16000000\r\n\r\n%s",
			path, bearer, strings.Repeat("x", 1000))
		require.NoError(t, err)
		return c
	}
	answer := func(c net.Conn) string {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err, "no answer while the body is on the way")
		return line
	}
	test := b.do("POST", "/v1/tests", u.access, "version: 1\nname: t\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1:9/'}]}]}\nload: {vus: 1, iterations: 1}\n", "Content-Type", "application/yaml").json(t)
	path := fmt.Sprintf("/v1/tests/%s/files/users.csv", test["id"])
	require.NotNil(t, test["id"], "%v", test)
	require.Contains(t, answer(send(path, "brg_pat_not-a-token")), " 401 ")
	require.Contains(t, answer(send(path, "not even a token")), " 401 ")

	// With the user's own token, the server waits for the body it was promised.
	c := send(path, u.access)
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a known sender's body is read before the answer")
	require.True(t, ne.Timeout())
}

// Changing one's email to one that has an account is refused (409), so each try says whether it
// has one: three tries a day per account, whatever their answers, keep it from listing who has.
func TestEmailChangesAreFewADay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	change := func(email string) response {
		return b.do("PATCH", "/v1/me", u.access, map[string]any{"email": email, "current_password": u.password})
	}
	requireProblem(t, change(admin.email), http.StatusConflict)
	require.Equal(t, http.StatusOK, change("fresh@example.com").status)
	requireProblem(t, change(admin.email), http.StatusConflict)
	r := change("another@example.com")
	requireProblem(t, r, http.StatusTooManyRequests)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	// A patch that does not change the email is not counted.
	require.Equal(t, http.StatusOK, b.do("PATCH", "/v1/me", u.access, map[string]any{"name": "Still Here"}).status)
}

// A chunked body with no end, under a token that is not one, is answered 401 at once and the
// connection closed: nothing waits for the rest.
func TestAnEndlessChunkedBodyIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{asServed: true})
	c, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /v1/tests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer brg_pat_not-a-token\r\nContent-Type: application/yaml\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n%s\r\n", strings.Repeat("x", 100))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "no answer while the body goes on")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.True(t, res.Close, "the connection ends with the answer")
	_, err = io.Copy(io.Discard, res.Body)
	require.NoError(t, err)
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closed it, not waiting for the rest of the body")
}

// Bodies without credentials are read a few at a time from each address: four trickling from
// one address keep its fifth waiting, and another address signs in meanwhile. (A trickle that
// came while a probe held a place was itself turned away: it is sent again.)
func TestOneAddressCannotTakeEveryAnonymousPlace(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{trusted: "127.0.0.1/32", asServed: true})
	u := b.firstAdmin()
	login := func(from string) response {
		return b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": u.password}, "X-Forwarded-For", from)
	}
	fifth := b.whileHeld(t, 4, "X-Forwarded-For: 203.0.113.9\r\n", func() response {
		r := login("203.0.113.9")
		if r.status == http.StatusOK {
			secret(r.json(t)["access_token"].(string))
			secret(r.json(t)["refresh_token"].(string))
		}
		return r
	})
	p := requireProblem(t, fifth, http.StatusServiceUnavailable)
	require.Contains(t, p["detail"], "from your address")
	ok := login("198.51.100.7")
	require.Equal(t, http.StatusOK, ok.status)
	secret(ok.json(t)["access_token"].(string))
	secret(ok.json(t)["refresh_token"].(string))
}

// whileHeld starts n trickles (with header) and sends probe while they hold their places, until
// the server turns it away (503) or 10 s have passed, and returns its last answer. A trickle that
// came while a probe held a place was itself turned away: it is sent again before the next probe.
func (b *testBundle) whileHeld(t *testing.T, n int, header string, probe func() response) response {
	t.Helper()
	trickles := make([]net.Conn, n)
	for i := range trickles {
		trickles[i] = b.trickle(t, header)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, c := range trickles {
			if answered(c) {
				trickles[i] = b.trickle(t, header)
			}
		}
		if r := probe(); r.status == http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		<-tick.C
	}
}

// trickle starts a sign-in without credentials, with header (whole lines) added, whose body
// never comes: it holds a place among the bodies without credentials read at once.
func (b *testBundle) trickle(t *testing.T, header string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"em", header)
	require.NoError(t, err)
	return c
}

// afterIssue waits until the clock has left the millisecond the access token was issued in: the
// server compares a token's issue time with a later change to the millisecond, so a change from
// then on comes after the token.
func (b *testBundle) afterIssue(access string) {
	b.t.Helper()
	claims, err := b.tokens.Verify(access)
	require.NoError(b.t, err)
	for !time.Now().Truncate(time.Millisecond).After(claims.IssuedAt) {
		runtime.Gosched()
	}
}

// answered reports whether the server answered c, which a held request has not.
func answered(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	n, _ := c.Read(make([]byte, 1))
	return n > 0
}
