package demoshop

import (
	"encoding/csv"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// visitor is a browser of the shop: its own cookie jar, and redirects returned, not followed.
type visitor struct {
	t      *testing.T
	base   string
	client *http.Client
}

func newVisitor(t *testing.T, srv *httptest.Server) *visitor {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &visitor{t: t, base: srv.URL, client: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// csrfRe finds the login form's CSRF token, as examples/scripts/shop.yaml does.
var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// home loads the home page and returns the CSRF token its form carries.
func (v *visitor) home() string {
	v.t.Helper()
	status, body := v.get("/")
	require.Equal(v.t, http.StatusOK, status)
	m := csrfRe.FindStringSubmatch(body)
	require.NotNil(v.t, m, body)
	return m[1]
}

func (v *visitor) get(path string) (int, string) {
	v.t.Helper()
	resp, err := v.client.Get(v.base + path)
	require.NoError(v.t, err)
	return read(v.t, resp)
}

// login posts the login form; a field left out of form is not sent.
func (v *visitor) login(form url.Values) (int, string, *http.Response) {
	v.t.Helper()
	resp, err := v.client.PostForm(v.base+"/login", form)
	require.NoError(v.t, err)
	status, body := read(v.t, resp)
	return status, body, resp
}

func read(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// users reads the rows of examples/scripts/users.csv, the accounts the example scripts log in
// with: email and password of each.
func users(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "examples", "scripts", "users.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"email", "password", "card"}, rows[0])
	var out [][2]string
	for _, r := range rows[1:] {
		out = append(out, [2]string{r[0], r[1]})
	}
	require.NotEmpty(t, out)
	return out
}

// Every user of the examples' users.csv logs in with their password and the token the shop gave
// their session: 303 to the account page, which names them. Login starts a new session id, so
// the one from before it does not open the account.
func TestLoginWithTheExamplesUsersIs303(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New().Handler())
	t.Cleanup(srv.Close)
	for _, u := range users(t) {
		v := newVisitor(t, srv)
		csrf := v.home()
		before := v.client.Jar.Cookies(mustURL(t, srv.URL))
		status, body, resp := v.login(url.Values{"email": {u[0]}, "password": {u[1]}, "csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, status, "%s: %s", u[0], body)
		require.Equal(t, "/account", resp.Header.Get("Location"))

		status, body = v.get("/account")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, body, "Signed in as "+u[0])

		require.Len(t, before, 1)
		require.NotEqual(t, before[0].Value, v.client.Jar.Cookies(mustURL(t, srv.URL))[0].Value)
		stale := newVisitor(t, srv)
		stale.client.Jar.SetCookies(mustURL(t, srv.URL), before)
		status, _ = stale.get("/account")
		require.Equal(t, http.StatusUnauthorized, status, "the session from before the login")
	}
}

// A wrong password, a user the shop does not know, or no password at all, with the right CSRF
// token: 401 and the login form again with an error, and the account stays closed. The same
// session may then log in with the right password.
func TestLoginWithAWrongPasswordIs401(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New().Handler())
	t.Cleanup(srv.Close)
	for name, form := range map[string]url.Values{
		"wrong password":    {"email": {"ada@example.test"}, "password": {"hopper-1906"}},
		"password's prefix": {"email": {"ada@example.test"}, "password": {"lovelace"}},
		"unknown user":      {"email": {"eve@example.test"}, "password": {"lovelace-1815"}},
		"no password":       {"email": {"ada@example.test"}},
		"empty password":    {"email": {"ada@example.test"}, "password": {""}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := newVisitor(t, srv)
			csrf := v.home()
			form.Set("csrf", csrf)
			status, body, _ := v.login(form)
			require.Equal(t, http.StatusUnauthorized, status)
			require.Contains(t, body, "Wrong email or password.")
			require.Contains(t, body, `name="csrf" value="`+csrf+`"`, "the form again, for the same session")
			status, _ = v.get("/account")
			require.Equal(t, http.StatusUnauthorized, status)

			status, body, _ = v.login(url.Values{"email": {"ada@example.test"}, "password": {"lovelace-1815"}, "csrf": {csrf}})
			require.Equal(t, http.StatusSeeOther, status, body)
		})
	}
}

// With the right password, a CSRF token that is not the one the shop gave this session is
// refused with 403 and logs nobody in: none, an empty one, a made-up one, another visitor's, or
// a token without the session cookie it was given with.
func TestLoginWithoutTheSessionsCSRFTokenIs403(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New().Handler())
	t.Cleanup(srv.Close)
	right := url.Values{"email": {"grace@example.test"}, "password": {"hopper-1906"}}
	for name, tc := range map[string]struct {
		csrf   func(t *testing.T, own string) (string, bool)
		cookie bool
	}{
		"no token":          {func(*testing.T, string) (string, bool) { return "", false }, true},
		"empty token":       {func(*testing.T, string) (string, bool) { return "", true }, true},
		"made-up token":     {func(*testing.T, string) (string, bool) { return "0123456789abcdef", true }, true},
		"token with more":   {func(_ *testing.T, own string) (string, bool) { return own + "0", true }, true},
		"another's token":   {func(t *testing.T, _ string) (string, bool) { return newVisitor(t, srv).home(), true }, true},
		"no session cookie": {func(_ *testing.T, own string) (string, bool) { return own, true }, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := newVisitor(t, srv)
			own := v.home()
			form := url.Values{}
			for k, vs := range right {
				form[k] = vs
			}
			if csrf, send := tc.csrf(t, own); send {
				form.Set("csrf", csrf)
			}
			if !tc.cookie {
				jar, err := cookiejar.New(nil)
				require.NoError(t, err)
				v.client.Jar = jar
			}
			status, body, resp := v.login(form)
			require.Equal(t, http.StatusForbidden, status, body)
			require.Contains(t, body, "CSRF token")
			require.Empty(t, resp.Cookies(), "no session for a refused login")
			status, _ = v.get("/account")
			require.Equal(t, http.StatusUnauthorized, status)
		})
	}
}

// A visitor keeps the session, and so the token, the home page gave them: loading it again shows
// the same token, which still logs in.
func TestHomeKeepsTheSessionsTokenIs200(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New().Handler())
	t.Cleanup(srv.Close)
	v := newVisitor(t, srv)
	first := v.home()
	require.Equal(t, first, v.home())
	status, body, _ := v.login(url.Values{"email": {"alan@example.test"}, "password": {"turing-1912"}, "csrf": {first}})
	require.Equal(t, http.StatusSeeOther, status, body)
}

// The shop keeps at most its limit of sessions (and of carts) however many are made, and the
// newest are those it keeps.
func TestSessionsStayWithinTheirLimit(t *testing.T) {
	t.Parallel()
	ss := newBounded[session](8)
	for i := range 100 {
		ss.put(strconv.Itoa(i), session{csrf: strconv.Itoa(i)})
		require.LessOrEqual(t, len(ss.newer)+len(ss.older), 8)
	}
	for i := 96; i < 100; i++ {
		got, ok := ss.get(strconv.Itoa(i))
		require.True(t, ok, "session %d", i)
		require.Equal(t, strconv.Itoa(i), got.csrf)
	}
	_, ok := ss.get("0")
	require.False(t, ok)
	ss.drop("99")
	_, ok = ss.get("99")
	require.False(t, ok)
}

// The CSRF token is written into the page escaped, as any value in HTML.
func TestPageEscapesItsValues(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	page(rec, http.StatusUnauthorized, `"><script>`, "<b>")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.NotContains(t, rec.Body.String(), "<script>")
	require.NotContains(t, rec.Body.String(), "<b>")
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html"))
}

// A cart is ordered once: 201 confirmed, then 404 for the same cart again.
func TestOrderOfACartIs201Once(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New().Handler())
	t.Cleanup(srv.Close)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		return read(t, resp)
	}
	status, body := post("/api/cart/items", `{"product": "p-101", "quantity": 1}`)
	require.Equal(t, http.StatusCreated, status, body)
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, id, body)
	status, body = post("/api/orders", `{"cart": "`+id[1]+`"}`)
	require.Equal(t, http.StatusCreated, status, body)
	require.Contains(t, body, `"status":"confirmed"`)
	status, _ = post("/api/orders", `{"cart": "`+id[1]+`"}`)
	require.Equal(t, http.StatusNotFound, status)
}
