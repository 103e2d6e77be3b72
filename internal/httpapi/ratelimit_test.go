package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/account"
)

// Wrong passwords are counted per account and client together: they slow the client that sends
// them (even its right password waits), and never lock the owner out, who signs in from
// elsewhere. The allowance refills continuously: no window boundary lets a burst through.
func TestLoginIsRateLimitedPerAccountAndClient(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{trusted: "127.0.0.1/32", limits: account.RateLimits{
		LoginPerClient: lots, SignupPerClient: lots, SignupPerAccount: lots,
		LoginPerAccount: account.Rate{N: 3, Per: time.Hour},
	}})
	u := b.firstAdmin()
	login := func(password, client string) response {
		return b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": password}, "X-Forwarded-For", client)
	}
	for range 3 {
		requireProblem(t, login("wrong password", "203.0.113.66"), http.StatusUnauthorized)
	}
	r := login(u.password, "203.0.113.66")
	p := requireProblem(t, r, http.StatusTooManyRequests)
	require.Equal(t, "urn:barrage:problem:rate-limited", p["type"])
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.LessOrEqual(t, retry, 1200, "one attempt comes back after an hour/3")
	// The owner, elsewhere, signs in.
	ok := login(u.password, "198.51.100.20")
	require.Equal(t, http.StatusOK, ok.status, "body: %s", ok.body)
	secret(ok.json(t)["access_token"].(string))
	secret(ok.json(t)["refresh_token"].(string))
	// Another account from the attacker's address is not affected by its failures here.
	requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "other@example.com", "password": "wrong password"},
		"X-Forwarded-For", "203.0.113.66"), http.StatusUnauthorized)
	// A right password does not spend the allowance.
	for range 5 {
		ok := login(u.password, "198.51.100.21")
		require.Equal(t, http.StatusOK, ok.status)
		secret(ok.json(t)["access_token"].(string))
		secret(ok.json(t)["refresh_token"].(string))
	}
}

func TestLoginIsRateLimitedPerClientAddress(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{trusted: "127.0.0.1/32", limits: account.RateLimits{
		LoginPerAccount: lots, SignupPerClient: lots, SignupPerAccount: lots,
		LoginPerClient: account.Rate{N: 2, Per: time.Hour},
	}})
	login := func(email, forwardedFor string) response {
		return b.do("POST", "/v1/auth/login", "", map[string]any{"email": email, "password": "wrong password"}, "X-Forwarded-For", forwardedFor)
	}
	// The proxy (127.0.0.1, trusted) says the client is 203.0.113.7.
	requireProblem(t, login("a@example.com", "203.0.113.7"), http.StatusUnauthorized)
	requireProblem(t, login("b@example.com", "203.0.113.7"), http.StatusUnauthorized)
	requireProblem(t, login("c@example.com", "203.0.113.7"), http.StatusTooManyRequests)
	// A client cannot escape by writing its own X-Forwarded-For: the rightmost untrusted hop counts.
	requireProblem(t, login("d@example.com", "198.51.100.1, 203.0.113.7"), http.StatusTooManyRequests)
	// A balancer that writes the port does not merge every client into one bucket.
	requireProblem(t, login("e@example.com", "203.0.113.9:51234"), http.StatusUnauthorized)
	requireProblem(t, login("f@example.com", "203.0.113.9:51235"), http.StatusUnauthorized)
	requireProblem(t, login("g@example.com", "203.0.113.9:51236"), http.StatusTooManyRequests)
	// Another client behind the proxy has its own allowance.
	requireProblem(t, login("h@example.com", "203.0.113.8"), http.StatusUnauthorized)
	// An IPv6 client is its /64: hopping addresses inside it does not help.
	requireProblem(t, login("i@example.com", "2001:db8:1:2::1"), http.StatusUnauthorized)
	requireProblem(t, login("j@example.com", "2001:db8:1:2::2"), http.StatusUnauthorized)
	requireProblem(t, login("k@example.com", "2001:db8:1:2:ffff::3"), http.StatusTooManyRequests)
	requireProblem(t, login("l@example.com", "2001:db8:1:3::1"), http.StatusUnauthorized)
}

func TestForwardedForIsIgnoredFromUntrustedPeers(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{limits: account.RateLimits{
		LoginPerAccount: lots, SignupPerClient: lots, SignupPerAccount: lots,
		LoginPerClient: account.Rate{N: 2, Per: time.Hour},
	}})
	for i, ip := range []string{"203.0.113.1", "203.0.113.2"} {
		requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": strconv.Itoa(i) + "@example.com", "password": "wrong password"}, "X-Forwarded-For", ip), http.StatusUnauthorized)
	}
	// No trusted proxies: every request counts against 127.0.0.1, whatever the header says.
	requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "z@example.com", "password": "wrong password"}, "X-Forwarded-For", "203.0.113.3"), http.StatusTooManyRequests)
}

func TestSignupIsRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{limits: account.RateLimits{
		LoginPerAccount: lots, LoginPerClient: lots, SignupPerAccount: lots,
		SignupPerClient: account.Rate{N: 2, Per: time.Hour},
	}})
	body := map[string]any{"invitation_code": "brg_inv_guess", "email": "g@example.com", "password": "long enough password", "name": "G"}
	requireProblem(t, b.do("POST", "/v1/auth/signup", "", body), http.StatusUnprocessableEntity)
	requireProblem(t, b.do("POST", "/v1/auth/signup", "", body), http.StatusUnprocessableEntity)
	requireProblem(t, b.do("POST", "/v1/auth/signup", "", body), http.StatusTooManyRequests)
}

// Guessing one account's password from many addresses meets the account's budget: past it, the
// addresses it has not signed in from wait their turn, all together, whatever the password, while
// the owner signs in from an address they used. An email without an account is answered alike.
// The account says when it was guessed, to its owner and to admins.
func TestGuessingFromManyAddressesCrawlsAndTheOwnerSignsIn(t *testing.T) {
	t.Parallel()
	lots := account.Rate{N: 1000, Per: time.Hour}
	b := setup(t, setupOpts{trusted: "127.0.0.1/32", limits: account.RateLimits{
		LoginPerClient: lots, LoginPerAccount: lots, SignupPerClient: lots, SignupPerAccount: lots,
		GuessesPerAccount: account.Rate{N: 5, Per: time.Hour}, StrangersPerAccount: account.Rate{N: 1, Per: time.Hour},
	}})
	u := b.firstAdmin()
	login := func(email, password string, client int) response {
		return b.do("POST", "/v1/auth/login", "", map[string]any{"email": email, "password": password}, "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", client))
	}
	home := 200
	require.Equal(t, http.StatusOK, login(u.email, u.password, home).status)
	require.Nil(t, b.do("GET", "/v1/me", u.access, nil).json(t)["password_guessed_at"])

	for _, email := range []string{u.email, "nobody@example.com"} {
		for client := range 5 {
			requireProblem(t, login(email, "wrong password", client), http.StatusUnauthorized)
		}
		// Past the budget, a stranger's try takes the one turn; the next stranger waits for one.
		requireProblem(t, login(email, "wrong password", 10), http.StatusUnauthorized)
		r := login(email, "wrong password", 11)
		requireProblem(t, r, http.StatusTooManyRequests)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.Greater(t, retry, 60)
	}
	requireProblem(t, login(u.email, u.password, 12), http.StatusTooManyRequests) // a stranger, whatever the password
	ok := login(u.email, u.password, home)
	require.Equal(t, http.StatusOK, ok.status, "the owner, at home, signs in: %s", ok.body)
	access := secret(ok.json(t)["access_token"].(string))
	secret(ok.json(t)["refresh_token"].(string))
	require.NotNil(t, b.do("GET", "/v1/me", access, nil).json(t)["password_guessed_at"])
	require.NotNil(t, b.do("GET", "/v1/admin/users/"+u.id, access, nil).json(t)["password_guessed_at"])
}
