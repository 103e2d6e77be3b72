package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// browser is a client that keeps cookies, as a browser does, and sends what a page of origin
// would: its Origin, and the CSRF token it reads from its cookie when csrf is set.
type browser struct {
	t      *testing.T
	b      *testBundle
	client *http.Client
	origin string
}

func (b *testBundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := *b.srv.Client()
	c.Jar = jar
	return &browser{t: t, b: b, client: &c, origin: b.srv.URL}
}

func (br *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(br.b.srv.URL + "/v1/auth/session")
	for _, c := range br.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (br *browser) do(method, path, body string, csrf bool) response {
	br.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, br.b.srv.URL+path, rd)
	require.NoError(br.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if br.origin != "" {
		req.Header.Set("Origin", br.origin)
	}
	if c := br.cookie("barrage_csrf"); csrf && c != nil {
		req.Header.Set("X-CSRF-Token", c.Value)
	}
	res, err := br.client.Do(req)
	require.NoError(br.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(br.t, err)
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// The portal signs in by cookie: the tokens come as HttpOnly, SameSite=Strict cookies that no
// script reads, every route takes them, and whatever changes something must carry the CSRF token
// and come from this server's pages; signing out revokes the session.
func TestABrowserSessionIsByCookieAndRefusesOtherSites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.firstAdmin()
	br := b.browser(t)
	login, _ := json.Marshal(map[string]string{"email": u.email, "password": u.password})

	// Only a page of this server signs in.
	other := b.browser(t)
	other.origin = "http://evil.example"
	requireProblem(t, other.do("POST", "/v1/auth/session", string(login), false), http.StatusForbidden)
	other.origin = ""
	requireProblem(t, other.do("POST", "/v1/auth/session", string(login), false), http.StatusForbidden)
	require.Nil(t, other.cookie("barrage_access"))

	r := br.do("POST", "/v1/auth/session", string(login), false)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NotContains(t, string(r.body), "token", "no token in a script's reach")
	require.Equal(t, u.email, r.json(t)["user"].(map[string]any)["email"])
	set := map[string]string{}
	for _, c := range r.header.Values("Set-Cookie") {
		set[strings.SplitN(c, "=", 2)[0]] = c
	}
	for _, name := range []string{"barrage_access", "barrage_refresh"} {
		require.Contains(t, set[name], "HttpOnly", name)
		require.Contains(t, set[name], "SameSite=Strict", name)
	}
	require.Contains(t, set["barrage_csrf"], "SameSite=Strict")
	require.NotContains(t, set["barrage_csrf"], "HttpOnly", "the page reads it, to send it back")
	require.Contains(t, set["barrage_refresh"], "Path=/v1/auth/session", "the refresh token goes to the session's routes alone")

	// Reads need the cookie alone; changes need the CSRF token and this server's Origin.
	me := br.do("GET", "/v1/me", "", false)
	require.Equal(t, http.StatusOK, me.status, "%s", me.body)
	token := `{"name": "from the portal", "scopes": ["read"]}`
	requireProblem(t, br.do("POST", "/v1/tokens", token, false), http.StatusForbidden)
	br.origin = "http://evil.example"
	requireProblem(t, br.do("POST", "/v1/tokens", token, true), http.StatusForbidden)
	br.origin = b.srv.URL
	require.Empty(t, br.do("GET", "/v1/tokens", "", false).json(t)["items"], "nothing refused was made")
	require.Equal(t, http.StatusCreated, br.do("POST", "/v1/tokens", token, true).status)

	// Renewed by its refresh cookie, with the CSRF token; signed out, the session is gone.
	requireProblem(t, br.do("POST", "/v1/auth/session/refresh", "", false), http.StatusForbidden)
	old := br.cookie("barrage_access").Value
	r = br.do("POST", "/v1/auth/session/refresh", "", true)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NotEqual(t, old, br.cookie("barrage_access").Value)
	refresh := br.cookie("barrage_refresh").Value
	require.Equal(t, http.StatusNoContent, br.do("DELETE", "/v1/auth/session", "", true).status)
	require.Nil(t, br.cookie("barrage_access"), "the cookies are cleared")
	requireProblem(t, b.do("POST", "/v1/auth/refresh", "", map[string]any{"refresh_token": refresh}), http.StatusUnauthorized)
	requireProblem(t, br.do("GET", "/v1/me", "", false), http.StatusUnauthorized)
}
