package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Twenty people racing to redeem a single-use code get exactly one account between them.
func TestSingleUseCodeRedeemedConcurrentlyMakesOneAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{trusted: "127.0.0.1/32"}) // the racers come from addresses of their own
	admin := b.firstAdmin()
	code := b.invite(admin, map[string]any{"uses": 1})

	const n = 20
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := b.do("POST", "/v1/auth/signup", "", map[string]any{
				"invitation_code": code, "email": fmt.Sprintf("racer%d@example.com", i),
				"password": secret("racing password " + fmt.Sprint(i)), "name": "Racer",
			}, "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
			statuses[i] = r.status
		}()
	}
	close(start)
	wg.Wait()
	created, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusAccepted:
			created++
		case http.StatusConflict:
			conflicts++
		}
	}
	require.Equal(t, 1, created, "statuses: %v", statuses)
	require.Equal(t, n-1, conflicts, "statuses: %v", statuses)
	users := b.do("GET", "/v1/admin/users", admin.access, nil).json(t)
	require.Len(t, users["items"], 2)
}

// Sign-up answers an email that has an account as it answers a new one, and spends the code's use
// all the same: it is no way to learn which emails have an account, and each try costs a use of
// a code an admin issued.
func TestSignupTellsNobodyWhichEmailsHaveAnAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	taken := b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": b.invite(admin, map[string]any{}),
		"email": "Admin@Example.com", "password": "long enough password", "name": "Dup"})
	fresh := b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": b.invite(admin, map[string]any{}),
		"email": "new@example.com", "password": "long enough password", "name": "New"})
	require.Equal(t, http.StatusAccepted, taken.status, "body: %s", taken.body)
	require.Equal(t, fresh.status, taken.status)
	require.JSONEq(t, string(fresh.body), string(taken.body), "the same answer, word for word")

	// The code's one use is spent either way.
	code := b.invite(admin, map[string]any{})
	require.Equal(t, http.StatusAccepted, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": code,
		"email": "admin@example.com", "password": "long enough password", "name": "Dup"}).status)
	p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": code,
		"email": "other@example.com", "password": "long enough password", "name": "Other"}), http.StatusConflict)
	require.Contains(t, p["detail"], "already been used")
	// The account that was there is unchanged: its password still signs in, the other does not.
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "admin@example.com", "password": admin.password}).status)
	requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "admin@example.com", "password": "long enough password"}), http.StatusUnauthorized)
}

func TestInvitationRoleAndLicenseComeFromTheInvitation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	invited := time.Now()
	code := b.invite(admin, map[string]any{"role": "user", "license": map[string]any{
		"plan": "team", "max_vus": 250, "max_run_duration_seconds": 600, "max_concurrent_runs": 3, "valid_days": 30,
	}})
	// The request cannot choose a role: an extra field is refused outright.
	requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{
		"invitation_code": code, "email": "x@example.com", "password": "long enough password", "name": "X", "role": "admin",
	}), http.StatusUnprocessableEntity)
	u := b.signup(code, "team@example.com")
	signedUp := time.Now()
	me := b.do("GET", "/v1/me", u.access, nil).json(t)
	require.Equal(t, "user", me["role"])
	lic := me["license"].(map[string]any)
	require.Equal(t, "team", lic["plan"])
	require.EqualValues(t, 250, lic["max_vus"])
	require.EqualValues(t, 600, lic["max_run_duration_seconds"])
	require.EqualValues(t, 3, lic["max_concurrent_runs"])
	until, err := time.Parse(time.RFC3339, lic["valid_until"].(string))
	require.NoError(t, err)
	// 30 days from a moment between the invitation and the signup (in whole seconds, as it is
	// written).
	require.False(t, until.Before(invited.Add(30*24*time.Hour).Truncate(time.Second)), "valid until %s", until)
	require.False(t, until.After(signedUp.Add(30*24*time.Hour)), "valid until %s", until)

	// An admin invitation without a license makes an unlimited admin.
	adminCode := b.invite(admin, map[string]any{"role": "admin"})
	a2 := b.signup(adminCode, "admin2@example.com")
	require.Equal(t, true, b.do("GET", "/v1/me/license", a2.access, nil).json(t)["unlimited"])
}

func TestRevokedInvitationIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	r := b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"uses": 5})
	code := secret(r.json(t)["code"].(string))
	id := r.json(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/admin/invitations/"+id, admin.access, nil).status)
	p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": code, "email": "x@example.com", "password": "long enough password", "name": "X"}), http.StatusConflict)
	require.Contains(t, p["detail"], "revoked")
	requireProblem(t, b.do("DELETE", "/v1/admin/invitations/01234567-89ab-7def-8123-456789abcdef", admin.access, nil), http.StatusNotFound)
	list := b.do("GET", "/v1/admin/invitations", admin.access, nil).json(t)
	states := map[string]bool{}
	for _, it := range list["items"].([]any) {
		states[it.(map[string]any)["state"].(string)] = true
	}
	require.True(t, states["revoked"])
	require.True(t, states["spent"], "the first-admin invitation is spent")
}

func TestAdminManagesUsersAndLicenses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()

	got := b.do("GET", "/v1/admin/users/"+u.id, admin.access, nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, "demo", got.json(t)["license"].(map[string]any)["plan"])
	requireProblem(t, b.do("GET", "/v1/admin/users/01234567-89ab-7def-8123-456789abcdef", admin.access, nil), http.StatusNotFound)

	// Limits merge onto the current license.
	r := b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"max_vus": 500, "plan": "pro"}})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	lic := r.json(t)["license"].(map[string]any)
	require.EqualValues(t, 500, lic["max_vus"])
	require.Equal(t, "pro", lic["plan"])
	require.EqualValues(t, 1800, lic["max_run_duration_seconds"], "untouched limits stay")

	// An expired license shows as expired.
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"valid_until": "2020-01-01T00:00:00Z"}})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, true, b.do("GET", "/v1/me/license", u.access, nil).json(t)["expired"])

	// null removes the license; a user with none needs every limit.
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": nil})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, true, r.json(t)["license"].(map[string]any)["unlimited"])
	p := requireProblem(t, b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"max_vus": 5}}), http.StatusUnprocessableEntity)
	requireField(t, p, "license")
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"template": "demo"}, "role": "admin"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "admin", r.json(t)["role"])
	// Promoted, the user reaches admin routes with the same token: roles are read per request.
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/admin/users", u.access, nil).status)
}

func TestListsPaginate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	code := b.invite(admin, map[string]any{"uses": 10})
	want := map[string]bool{admin.email: true}
	for i := range 6 {
		u := b.signup(code, fmt.Sprintf("u%d@example.com", i))
		want[u.email] = true
	}
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		path := "/v1/admin/users?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := b.do("GET", path, admin.access, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		page := r.json(t)
		pages++
		items := page["items"].([]any)
		require.LessOrEqual(t, len(items), 3)
		for _, it := range items {
			email := it.(map[string]any)["email"].(string)
			require.False(t, seen[email], "%s listed twice", email)
			seen[email] = true
		}
		next, ok := page["next_cursor"].(string)
		if !ok {
			break
		}
		cursor = next
	}
	require.Equal(t, want, seen)
	require.Equal(t, 3, pages)
}

// An invitation lists the accounts made with it, oldest first, and an unused one an empty list.
func TestInvitationsListTheAccountsMadeWithThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	r := b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"uses": 2, "note": "the pair"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	created := r.json(t)
	require.Equal(t, []any{}, created["used_by"], "a new invitation has made no account")
	pair, code := created["id"].(string), secret(created["code"].(string))
	unused := b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{}).json(t)["id"].(string)

	before := time.Now().Truncate(time.Second)
	first := b.signup(code, "first@example.com")
	second := b.signup(code, "second@example.com")
	after := time.Now()

	r = b.do("GET", "/v1/admin/invitations", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	byID := map[string]map[string]any{}
	for _, it := range r.json(t)["items"].([]any) {
		byID[it.(map[string]any)["id"].(string)] = it.(map[string]any)
	}
	require.Equal(t, "spent", byID[pair]["state"])
	uses := byID[pair]["used_by"].([]any)
	require.Len(t, uses, 2)
	for i, u := range []user{first, second} {
		use := uses[i].(map[string]any)
		require.Equal(t, u.id, use["user_id"])
		require.Equal(t, u.email, use["email"])
		require.Equal(t, "Test "+u.email, use["name"])
		at, err := time.Parse(time.RFC3339, use["at"].(string))
		require.NoError(t, err)
		require.False(t, at.Before(before) || at.After(after), "made at %s", at)
	}
	require.Equal(t, []any{}, byID[unused]["used_by"])
	// The first start's invitation made the admin.
	madeAdmin := false
	for _, inv := range byID {
		if inv["note"] == "first admin" {
			require.Equal(t, admin.id, inv["used_by"].([]any)[0].(map[string]any)["user_id"])
			madeAdmin = true
		}
	}
	require.True(t, madeAdmin, "the first-admin invitation is listed")

	// Who signed up with what is for admins alone.
	requireProblem(t, b.do("GET", "/v1/admin/invitations", first.access, nil), http.StatusForbidden)
}

// An admin finds users by what their email or name contains, case aside; % and _ typed are the
// characters themselves.
func TestAdminSearchesUsersByEmailOrName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	code := b.invite(admin, map[string]any{"uses": 10})
	people := map[string]string{ // email: name
		"ada@example.com":      "Ada Lovelace",
		"grace@example.com":    "Grace Hopper",
		"percy@example.com":    "Percy Sure 100%",
		"percival@example.com": "Percy Sure 1000",
		"a_a@example.com":      "Underscore",
	}
	ids := map[string]string{}
	for email, name := range people {
		r := b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": code, "email": email,
			"password": "a long enough password", "name": name})
		require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	}
	r := b.do("GET", "/v1/admin/users", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	for _, it := range r.json(t)["items"].([]any) {
		ids[it.(map[string]any)["email"].(string)] = it.(map[string]any)["id"].(string)
	}

	// search lists the emails of the users q finds, page by page of limit, checking that they
	// come oldest (lowest id) first.
	search := func(q string, limit int) []string {
		t.Helper()
		var emails []string
		cursor := ""
		for {
			v := url.Values{"q": {q}, "limit": {fmt.Sprint(limit)}}
			if cursor != "" {
				v.Set("cursor", cursor)
			}
			r := b.do("GET", "/v1/admin/users?"+v.Encode(), admin.access, nil)
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			page := r.json(t)
			for _, it := range page["items"].([]any) {
				emails = append(emails, it.(map[string]any)["email"].(string))
			}
			next, ok := page["next_cursor"].(string)
			if !ok {
				break
			}
			cursor = next
		}
		for i := 1; i < len(emails); i++ {
			require.Less(t, ids[emails[i-1]], ids[emails[i]], "oldest first")
		}
		return emails
	}
	require.Equal(t, []string{"ada@example.com"}, search("LOVELACE", 50), "a name, case aside")
	require.Equal(t, []string{"grace@example.com"}, search("Grace@Example", 50), "an email, case aside")
	require.Equal(t, []string{"percy@example.com"}, search("100%", 50), "% is a percent sign, not any text")
	require.Equal(t, []string{"a_a@example.com"}, search("a_a", 50), "_ is an underscore, not any character (ada)")
	require.Empty(t, search(`\`, 50), "a backslash is itself too, escaping nothing (here the % after it)")
	require.Empty(t, search("nobody", 50))
	// The cursor continues the search: both Percys, one a page.
	require.ElementsMatch(t, []string{"percy@example.com", "percival@example.com"}, search("percy", 1))
	require.Len(t, search("", 2), len(people)+1, "empty finds everyone")

	p := requireProblem(t, b.do("GET", "/v1/admin/users?q="+strings.Repeat("x", 201), admin.access, nil), http.StatusBadRequest)
	requireField(t, p, "q")
	p = requireProblem(t, b.do("GET", "/v1/admin/users?q=%01", admin.access, nil), http.StatusBadRequest)
	requireField(t, p, "q")
	for _, notText := range []string{"%ff", "%c0%80", "%ed%a0%80"} {
		requireField(t, requireProblem(t, b.do("GET", "/v1/admin/users?q="+notText, admin.access, nil), http.StatusBadRequest), "q")
	}
	requireProblem(t, b.do("GET", "/v1/admin/users?q=ada", b.signup(b.invite(admin, map[string]any{}), "user@example.com").access, nil), http.StatusForbidden)
}

// An admin reads what a user has done: the personal API tokens they keep alive, the runs they
// started and when the newest was made.
func TestAdminReadsAUsersTokensAndRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	idle := b.signup(b.invite(admin, map[string]any{}), "idle@example.com")

	// Two tokens made, one of them revoked; one expired, which no request could make.
	for _, name := range []string{"ci", "old"} {
		r := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": name, "scopes": []string{"read"}})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		secret(r.json(t)["token"].(string))
		if name == "old" {
			require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tokens/"+r.json(t)["id"].(string), u.access, nil).status)
		}
	}
	_, err := b.store.CreateAPIToken(context.Background(), barrage.APIToken{ID: uuid.Must(uuid.NewV7()), UserID: uuid.MustParse(u.id),
		Name: "lapsed", Scopes: []barrage.Scope{barrage.ScopeRead}, ExpiresAt: time.Now().Add(-time.Hour)}, []byte("hash-lapsed"))
	require.NoError(t, err)

	// Two runs on an agent of their own: the first canceled (runs in any state count), then
	// another.
	_, agentToken := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", agentToken, hello).status)
	script := b.addScript(u, smokeScript)
	var last string
	for i := range 2 {
		r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 1, "duration_seconds": 5})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		last = r.json(t)["created_at"].(string)
		if i == 0 {
			require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+r.json(t)["id"].(string)+"/cancel", u.access, nil).status)
		}
	}

	r := b.do("GET", "/v1/admin/users/"+u.id, admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	got := r.json(t)
	require.Equal(t, u.email, got["email"])
	require.Equal(t, "demo", got["license"].(map[string]any)["plan"], "the user as ever")
	require.EqualValues(t, 1, got["tokens"], "neither revoked nor expired")
	require.EqualValues(t, 2, got["runs"])
	want, err := time.Parse(time.RFC3339, last)
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339, got["last_run_at"].(string))
	require.NoError(t, err)
	require.True(t, want.Equal(at), "the newest run's creation: want %s, got %s", want, at)

	r = b.do("GET", "/v1/admin/users/"+idle.id, admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	got = r.json(t)
	require.EqualValues(t, 0, got["tokens"])
	require.EqualValues(t, 0, got["runs"])
	require.NotContains(t, got, "last_run_at")

	// Only this route says so: a change answers the user alone.
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"disabled": false})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotContains(t, r.json(t), "runs")

	requireProblem(t, b.do("GET", "/v1/admin/users/"+u.id, u.access, nil), http.StatusForbidden)
	p := requireProblem(t, b.do("GET", "/v1/admin/users/not-a-uuid", admin.access, nil), http.StatusBadRequest)
	requireField(t, p, "id")
	requireProblem(t, b.do("GET", "/v1/admin/users/01234567-89ab-7def-8123-456789abcdef", admin.access, nil), http.StatusNotFound)
}
