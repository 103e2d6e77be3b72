package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/barrage"
)

// Browser sessions. The portal signs in with POST /v1/auth/session, which answers with cookies
// rather than tokens: the access token and the refresh token the API issues, each HttpOnly and
// SameSite=Strict (Secure over TLS), so no script of the page can read them, and a CSRF token the
// page reads and sends back in X-CSRF-Token. A request signed in by cookie that changes anything
// must carry that header, equal to the cookie (double submit), and an Origin of this server's
// own: a page of another site can make the browser send the cookies, not read the token nor
// write that Origin.
const (
	cookieAccess  = "barrage_access"
	cookieRefresh = "barrage_refresh"
	cookieCSRF    = "barrage_csrf"
	headerCSRF    = "X-CSRF-Token"
	// refreshPath is where the refresh token's cookie goes: the session's routes, no other.
	refreshPath = "/v1/auth/session"
)

// sessionRoutes sign in, refresh and sign out by cookie: public routes that check the request's
// Origin themselves (and, but for signing in, its CSRF token).
var sessionRoutes = map[string]bool{
	"POST /v1/auth/session": false, "POST /v1/auth/session/refresh": true, "DELETE /v1/auth/session": true,
}

// credentials returns the token a request is signed in with: its Authorization header's, else
// its access cookie's (viaCookie).
func credentials(r *http.Request) (token string, viaCookie, found bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, found := strings.Cut(h, " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return "", false, false
		}
		token = strings.TrimSpace(token)
		return token, false, token != ""
	}
	if c, err := r.Cookie(cookieAccess); err == nil && c.Value != "" {
		return c.Value, true, true
	}
	return "", false, false
}

// sendsCredentials reports whether r says who sends it, by header or by cookie: only then may
// its body be larger than a sign-in's.
func sendsCredentials(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	c, err := r.Cookie(cookieAccess)
	return err == nil && c.Value != ""
}

// safeMethod reports whether method changes nothing.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// sameOrigin reports whether r came from a page of this server: its Origin is this server's
// scheme and host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if secure, _ := r.Context().Value(keySecure).(bool); secure {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// csrfHeld reports whether r carries the CSRF token of its session: the header equal to the
// cookie.
func csrfHeld(r *http.Request) bool {
	c, err := r.Cookie(cookieCSRF)
	h := r.Header.Get(headerCSRF)
	return err == nil && len(c.Value) >= 32 && subtle.ConstantTimeCompare([]byte(c.Value), []byte(h)) == 1
}

// errCrossSite refuses a request signed in by cookie that a page of this server did not send.
var errCrossSite = barrage.Errorf(barrage.ErrForbidden,
	"a request signed in by cookie that changes something must come from this server's pages: with an Origin of this server and the X-CSRF-Token header equal to the barrage_csrf cookie")

// cookieJar is what a session route learns of its request, for its answer: whether it came over
// TLS (the cookies are then Secure), and the refresh token's cookie.
type cookieJar struct {
	secure  bool
	refresh string
}

func withCookieJar(r *http.Request) *http.Request {
	jar := &cookieJar{}
	jar.secure, _ = r.Context().Value(keySecure).(bool)
	if c, err := r.Cookie(cookieRefresh); err == nil {
		jar.refresh = c.Value
	}
	return r.WithContext(context.WithValue(r.Context(), keyCookies, jar))
}

func cookieJarFrom(ctx context.Context) *cookieJar {
	if j, _ := ctx.Value(keyCookies).(*cookieJar); j != nil {
		return j
	}
	return &cookieJar{}
}

// browserSession is a session given by cookie: it sets them, and answers who signed in.
type browserSession struct {
	sess   account.Session
	secure bool
	ttl    time.Duration // the refresh token's
}

func (b browserSession) write(w http.ResponseWriter) error {
	csrf := make([]byte, 32)
	_, _ = rand.Read(csrf)
	set := func(name, value, path string, maxAge time.Duration, httpOnly bool) {
		http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: int(maxAge / time.Second),
			HttpOnly: httpOnly, Secure: b.secure, SameSite: http.SameSiteStrictMode})
	}
	set(cookieAccess, b.sess.AccessToken, "/v1", b.sess.ExpiresIn, true)
	set(cookieRefresh, b.sess.RefreshToken, refreshPath, b.ttl, true)
	set(cookieCSRF, base64.RawURLEncoding.EncodeToString(csrf), "/", b.ttl, false)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(api.BrowserSession{User: toAPIUser(b.sess.User, time.Now()), ExpiresIn: int(b.sess.ExpiresIn / time.Second)})
}

func (b browserSession) VisitCreateSessionResponse(w http.ResponseWriter) error  { return b.write(w) }
func (b browserSession) VisitRefreshSessionResponse(w http.ResponseWriter) error { return b.write(w) }

// endedSession clears a session's cookies.
type endedSession struct{ secure bool }

func (e endedSession) VisitDeleteSessionResponse(w http.ResponseWriter) error {
	for name, path := range map[string]string{cookieAccess: "/v1", cookieRefresh: refreshPath, cookieCSRF: "/"} {
		http.SetCookie(w, &http.Cookie{Name: name, Path: path, MaxAge: -1, HttpOnly: name != cookieCSRF, Secure: e.secure, SameSite: http.SameSiteStrictMode})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) CreateSession(ctx context.Context, req api.CreateSessionRequestObject) (api.CreateSessionResponseObject, error) {
	sess, err := s.accounts.Login(ctx, req.Body.Email, req.Body.Password, ClientIP(ctx))
	if err != nil {
		return nil, err
	}
	return browserSession{sess: sess, secure: cookieJarFrom(ctx).secure, ttl: s.accounts.RefreshTTL()}, nil
}

func (s *server) RefreshSession(ctx context.Context, _ api.RefreshSessionRequestObject) (api.RefreshSessionResponseObject, error) {
	jar := cookieJarFrom(ctx)
	if jar.refresh == "" {
		return nil, barrage.Errorf(barrage.ErrUnauthorized, "no session: sign in again")
	}
	sess, err := s.accounts.Refresh(ctx, jar.refresh)
	if err != nil {
		return nil, err
	}
	return browserSession{sess: sess, secure: jar.secure, ttl: s.accounts.RefreshTTL()}, nil
}

func (s *server) DeleteSession(ctx context.Context, _ api.DeleteSessionRequestObject) (api.DeleteSessionResponseObject, error) {
	jar := cookieJarFrom(ctx)
	if jar.refresh != "" {
		if err := s.accounts.Logout(ctx, jar.refresh); err != nil {
			return nil, err
		}
	}
	return endedSession{secure: jar.secure}, nil
}
