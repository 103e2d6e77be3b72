package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/barrage-load/barrage/internal/barrage"
)

// access is who may call a route.
type access int

const (
	public access = iota + 1 // anyone; no credentials read
	user                     // any signed-in, enabled user
	admin                    // admins only
	agent                    // measuring agents, with their agent token
)

// policy is a route's access rule: who, and which token scope it needs.
type policy struct {
	access access
	scope  barrage.Scope
}

// policies is the access table. Every route must have an entry: a route without one answers
// 403 to everybody (deny by default), and a test fails the build when one is missing.
var policies = map[string]policy{
	"GET /healthz":      {access: public},
	"GET /readyz":       {access: public},
	"GET /openapi.yaml": {access: public},
	"GET /docs":         {access: public},

	"POST /v1/auth/signup":  {access: public},
	"POST /v1/auth/login":   {access: public},
	"POST /v1/auth/refresh": {access: public},
	"POST /v1/auth/logout":  {access: public},
	// Browser sessions: each checks its request's Origin and CSRF token itself (sessionRoutes).
	"POST /v1/auth/session":         {access: public},
	"POST /v1/auth/session/refresh": {access: public},
	"DELETE /v1/auth/session":       {access: public},

	"GET /v1/me":             {user, barrage.ScopeRead},
	"PATCH /v1/me":           {user, barrage.ScopeWrite},
	"GET /v1/me/license":     {user, barrage.ScopeRead},
	"GET /v1/tokens":         {user, barrage.ScopeRead},
	"POST /v1/tokens":        {user, barrage.ScopeWrite},
	"DELETE /v1/tokens/{id}": {user, barrage.ScopeWrite},

	"GET /v1/admin/invitations":         {admin, barrage.ScopeAdmin},
	"POST /v1/admin/invitations":        {admin, barrage.ScopeAdmin},
	"DELETE /v1/admin/invitations/{id}": {admin, barrage.ScopeAdmin},
	"GET /v1/admin/users":               {admin, barrage.ScopeAdmin},
	"GET /v1/admin/users/{id}":          {admin, barrage.ScopeAdmin},
	"GET /v1/admin/users/{id}/license":  {admin, barrage.ScopeAdmin},
	"PATCH /v1/admin/users/{id}":        {admin, barrage.ScopeAdmin},
	"GET /v1/admin/agents":              {admin, barrage.ScopeAdmin},
	"POST /v1/admin/agents":             {admin, barrage.ScopeAdmin},
	"GET /v1/admin/namespaces":          {admin, barrage.ScopeAdmin},
	"POST /v1/admin/namespaces":         {admin, barrage.ScopeAdmin},
	"GET /v1/admin/plugin-versions":     {admin, barrage.ScopeAdmin},
	"GET /v1/admin/targets":             {admin, barrage.ScopeAdmin},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/approve": {admin, barrage.ScopeAdmin},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/reject":  {admin, barrage.ScopeAdmin},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/revoke":  {admin, barrage.ScopeAdmin},
	"DELETE /v1/admin/agents/{id}":                                         {admin, barrage.ScopeAdmin},

	"GET /v1/agents":            {user, barrage.ScopeRead},
	"POST /v1/agents":           {user, barrage.ScopeWrite},
	"GET /v1/agents/{id}":       {user, barrage.ScopeRead},
	"DELETE /v1/agents/{id}":    {user, barrage.ScopeWrite},
	"POST /v1/agents/{id}/ping": {user, barrage.ScopeRead},

	"GET /v1/secrets":                               {user, barrage.ScopeRead},
	"POST /v1/secrets":                              {user, barrage.ScopeWrite},
	"DELETE /v1/secrets/{name}":                     {user, barrage.ScopeWrite},
	"GET /v1/targets":                               {user, barrage.ScopeRead},
	"POST /v1/targets":                              {user, barrage.ScopeWrite},
	"GET /v1/targets/{id}":                          {user, barrage.ScopeRead},
	"POST /v1/tests/{id}/schedules":                 {user, barrage.ScopeWrite},
	"GET /v1/schedules":                             {user, barrage.ScopeRead},
	"GET /v1/schedules/{id}":                        {user, barrage.ScopeRead},
	"PATCH /v1/schedules/{id}":                      {user, barrage.ScopeWrite},
	"DELETE /v1/schedules/{id}":                     {user, barrage.ScopeWrite},
	"GET /v1/schedules/{id}/firings":                {user, barrage.ScopeRead},
	"GET /v1/notification-channels":                 {user, barrage.ScopeRead},
	"POST /v1/notification-channels":                {user, barrage.ScopeWrite},
	"GET /v1/notification-channels/{id}":            {user, barrage.ScopeRead},
	"PATCH /v1/notification-channels/{id}":          {user, barrage.ScopeWrite},
	"DELETE /v1/notification-channels/{id}":         {user, barrage.ScopeWrite},
	"POST /v1/notification-channels/{id}/test":      {user, barrage.ScopeWrite},
	"GET /v1/notification-channels/{id}/deliveries": {user, barrage.ScopeRead},
	"DELETE /v1/targets/{id}":                       {user, barrage.ScopeWrite},
	"POST /v1/targets/{id}/verify":                  {user, barrage.ScopeWrite},

	"GET /v1/tests":                      {user, barrage.ScopeRead},
	"POST /v1/tests":                     {user, barrage.ScopeWrite},
	"POST /v1/tests/import":              {user, barrage.ScopeWrite},
	"POST /v1/tests/check":               {user, barrage.ScopeRead}, // it changes nothing
	"GET /v1/tests/{id}":                 {user, barrage.ScopeRead},
	"PATCH /v1/tests/{id}":               {user, barrage.ScopeWrite},
	"DELETE /v1/tests/{id}":              {user, barrage.ScopeWrite},
	"GET /v1/tests/{id}/revisions":       {user, barrage.ScopeRead},
	"PUT /v1/tests/{id}/baseline":        {user, barrage.ScopeWrite},
	"DELETE /v1/tests/{id}/baseline":     {user, barrage.ScopeWrite},
	"GET /v1/tests/{id}/trend":           {user, barrage.ScopeRead},
	"GET /v1/tests/{id}/revisions/{rev}": {user, barrage.ScopeRead},
	"PUT /v1/tests/{id}/files/{name}":    {user, barrage.ScopeWrite},
	"GET /v1/tests/{id}/files/{name}":    {user, barrage.ScopeRead},
	"DELETE /v1/tests/{id}/files/{name}": {user, barrage.ScopeWrite},
	"POST /v1/tests/{id}/debug":          {user, barrage.ScopeWrite},
	"POST /v1/tests/{id}/scripts":        {user, barrage.ScopeWrite},

	"GET /v1/namespaces":                                   {user, barrage.ScopeRead},
	"POST /v1/namespaces":                                  {user, barrage.ScopeWrite},
	"GET /v1/namespaces/{namespace}":                       {user, barrage.ScopeRead},
	"POST /v1/namespaces/{namespace}/keys":                 {user, barrage.ScopeWrite},
	"POST /v1/namespaces/{namespace}/keys/{key_id}/retire": {user, barrage.ScopeWrite},
	"PUT /v1/namespaces/{namespace}/owners/{user_id}":      {user, barrage.ScopeWrite},
	"DELETE /v1/namespaces/{namespace}/owners/{user_id}":   {user, barrage.ScopeWrite},

	"GET /v1/plugins":                                                                 {user, barrage.ScopeRead},
	"GET /v1/plugins/{namespace}/{name}":                                              {user, barrage.ScopeRead},
	"POST /v1/plugins/{namespace}/{name}/versions":                                    {user, barrage.ScopePluginsWrite},
	"GET /v1/plugins/{namespace}/{name}/versions/{version}":                           {user, barrage.ScopeRead},
	"POST /v1/plugins/{namespace}/{name}/versions/{version}/deprecate":                {user, barrage.ScopePluginsWrite},
	"GET /v1/plugins/{namespace}/{name}/versions/{version}/download/{os}/{arch}":      {user, barrage.ScopeRead},
	"GET /v1/plugins/{namespace}/{name}/versions/{version}/download/{os}/{arch}/file": {user, barrage.ScopeRead},

	"POST /v1/scripts":     {user, barrage.ScopeWrite},
	"GET /v1/scripts/{id}": {user, barrage.ScopeRead},

	"GET /v1/runs":                  {user, barrage.ScopeRead},
	"POST /v1/runs":                 {user, barrage.ScopeWrite},
	"GET /v1/runs/{id}":             {user, barrage.ScopeRead},
	"POST /v1/runs/{id}/cancel":     {user, barrage.ScopeWrite},
	"GET /v1/runs/{id}/compare":     {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/series.csv":  {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/report":      {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/sweep":       {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/sweep.csv":   {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/sweep.html":  {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/summary.csv": {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/junit.xml":   {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/live":        {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/series":      {user, barrage.ScopeRead},
	"GET /v1/runs/{id}/summary":     {user, barrage.ScopeRead},

	"GET /v1/projects":                                     {user, barrage.ScopeRead},
	"POST /v1/projects":                                    {user, barrage.ScopeWrite},
	"GET /v1/projects/{id}":                                {user, barrage.ScopeRead},
	"PATCH /v1/projects/{id}":                              {user, barrage.ScopeWrite},
	"DELETE /v1/projects/{id}":                             {user, barrage.ScopeWrite},
	"PATCH /v1/projects/{id}/members/{user_id}":            {user, barrage.ScopeWrite},
	"DELETE /v1/projects/{id}/members/{user_id}":           {user, barrage.ScopeWrite},
	"GET /v1/projects/{id}/invitations":                    {user, barrage.ScopeRead},
	"POST /v1/projects/{id}/invitations":                   {user, barrage.ScopeWrite},
	"DELETE /v1/projects/{id}/invitations/{invitation_id}": {user, barrage.ScopeWrite},
	"GET /v1/me/invitations":                               {user, barrage.ScopeRead},
	"POST /v1/me/invitations/{id}/accept":                  {user, barrage.ScopeWrite},
	"POST /v1/me/invitations/{id}/decline":                 {user, barrage.ScopeWrite},

	"GET /v1/audit":        {user, barrage.ScopeRead},
	"GET /v1/audit/export": {user, barrage.ScopeRead},

	"POST /v1/agent/lease":              {access: agent},
	"GET /v1/agent/artifacts/{sha256}":  {access: agent},
	"POST /v1/agent/pings/{id}":         {access: agent},
	"POST /v1/agent/jobs/{id}":          {access: agent},
	"POST /v1/agent/shards/{id}/report": {access: agent},
}

// heavy are the routes that cost the server real work (parsing a script, converting a
// recording, checking an upload, rendering a report, comparing runs): a user may have only so
// many of them in flight at once (Deps.HeavyPerUser). Those whose work is the server's CPU and
// memory (true) also take a turn among everyone's; an upload, which a slow client may stretch
// over minutes, takes none, so that it cannot hold everyone else's work.
var heavy = map[string]bool{
	"POST /v1/tests": true, "POST /v1/tests/import": true, "PATCH /v1/tests/{id}": true, "POST /v1/tests/check": true,
	"PUT /v1/tests/{id}/files/{name}": true, "POST /v1/scripts": true,
	"GET /v1/runs/{id}/compare": true, "GET /v1/runs/{id}/report": true, "GET /v1/tests/{id}/trend": true, "GET /v1/runs/{id}/sweep.html": true,
	"POST /v1/plugins/{namespace}/{name}/versions": false,
}

// awaiting are the routes that read a test with its data files and may then wait for an agent's
// answer (up to fleet.JobWait): generating its script, debugging it, starting a run of it. A
// user may have as many in flight as jobs waiting (fleet.MaxOpenJobs), all running at once, and
// everyone's take turns among themselves (server.awaiting), not among the parses': a wait for an
// agent must not hold everyone else's work.
var awaiting = map[string]bool{"POST /v1/tests/{id}/scripts": true, "POST /v1/tests/{id}/debug": true, "POST /v1/runs": true}

func routeKey(method, pattern string) string { return method + " " + pattern }

// principalHolder lets the access log, outside the router, learn who the request was.
type principalHolder struct{ p *barrage.Principal }

// PrincipalFrom returns who the request acts as; ok is false on public routes.
func PrincipalFrom(ctx context.Context) (barrage.Principal, bool) {
	h, _ := ctx.Value(keyPrincipal).(*principalHolder)
	if h == nil || h.p == nil {
		return barrage.Principal{}, false
	}
	return *h.p, true
}

// Authenticator turns a bearer token into a principal.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string) (barrage.Principal, error)
}

// authorize records the requests of an audited route (record) and enforces the route's policy
// (admit): it runs inside the router, where the matched route pattern is known.
func (s *server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := routeKey(r.Method, chi.RouteContext(r.Context()).RoutePattern())
		s.record(key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.admit(key, next, w, r) })).ServeHTTP(w, r)
	})
}

// admit enforces the policy of the route key, and then reads the request's body (bufferBody)
// for next to serve.
func (s *server) admit(key string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	pol, ok := policies[key]
	if !ok {
		s.log.ErrorContext(r.Context(), "route has no access policy; denied", slog.String("route", key))
		writeError(s.log, w, r, barrage.Errorf(barrage.ErrForbidden, "this route is not open to anyone"))
		return
	}
	if pol.access == public {
		if csrf, ok := sessionRoutes[key]; ok {
			// Signing in, refreshing or out by cookie: only from this server's pages.
			if !sameOrigin(r) || (csrf && !csrfHeld(r)) {
				writeError(s.log, w, r, errCrossSite)
				return
			}
			r = withCookieJar(r)
		}
		if bufferBody(w, r) {
			next.ServeHTTP(w, r)
		}
		return
	}
	token, viaCookie, found := credentials(r)
	if !found {
		writeError(s.log, w, r, barrage.Errorf(barrage.ErrUnauthorized, "send Authorization: Bearer <token>, or sign in from the portal"))
		return
	}
	if viaCookie && (pol.access == agent || !safeMethod(r.Method) && (!sameOrigin(r) || !csrfHeld(r))) {
		writeError(s.log, w, r, errCrossSite)
		return
	}
	var p barrage.Principal
	var err error
	if pol.access == agent {
		var a barrage.Agent
		if a, err = s.fleet.AuthenticateAgent(r.Context(), token); err == nil {
			p.Agent = &a
		}
	} else {
		p, err = s.auth.Authenticate(r.Context(), token)
	}
	if err != nil {
		writeError(s.log, w, r, err)
		return
	}
	if h, _ := r.Context().Value(keyPrincipal).(*principalHolder); h != nil {
		h.p = &p
	}
	switch {
	case pol.access == agent:
	case pol.access == admin && p.User.Role != barrage.RoleAdmin:
		writeError(s.log, w, r, barrage.Errorf(barrage.ErrForbidden, "this route is for admins"))
		return
	case !p.HasScope(pol.scope):
		writeError(s.log, w, r, barrage.Errorf(barrage.ErrForbidden, "this token lacks the %q scope", pol.scope))
		return
	}
	turn, ok := heavy[key]
	counter := s.heavy
	if awaiting[key] {
		turn, ok, counter = true, true, s.awaiting
	}
	if ok {
		done, err := counter.acquire(r.Context(), p.User.ID, turn)
		if err == nil {
			defer done()
		}
		if r.Context().Err() != nil {
			return // the client left while its request waited its turn: nobody to answer
		}
		if err != nil {
			writeError(s.log, w, r, err)
			return
		}
	}
	// Only now is the body read: a token that is not one, a scope it lacks, a user with
	// enough in flight cost the server no body.
	if bufferBody(w, r) {
		next.ServeHTTP(w, r)
	}
}
