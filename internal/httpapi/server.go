// Package httpapi is Barrage's REST API over HTTP: the chi router and strict server generated
// from api/openapi.yaml, request validation against the spec, access policies, and the
// translation between API types and domain types. Errors leave as RFC 9457 problem documents.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/notifications"
	"github.com/barrage-load/barrage/internal/control/projects"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/schedules"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/market"
)

// Deps are what the API needs.
type Deps struct {
	Log      *slog.Logger
	Accounts *account.Service
	Control  *control.Plane
	Market   *market.Service
	// Audit, when set, records the audited routes' requests (audits).
	Audit *audit.Log
	// Ready reports whether the server can serve: database up, schema known.
	Ready func(ctx context.Context) error
	// TrustedProxies are the proxies whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// MaxBodyBytes caps request bodies; larger ones get 413.
	MaxBodyBytes int64
	// MaxFileBytes caps a test's data file (default 16 MiB).
	MaxFileBytes int64
	// Version is the server's version, as the reports it writes name it.
	Version string
	// AnonymousReaders bounds the request bodies without credentials read at once (default
	// 1024, of 16 KiB at most), 4 of them from one client address; past it such a request is 503
	// with Retry-After.
	AnonymousReaders int
	// ObserveRequest, when set, receives each request answered: its route pattern ("" when none
	// matched), method, status and duration.
	ObserveRequest func(route, method string, status int, d time.Duration)
	// HeavyPerUser bounds each user's requests in flight on the routes that cost the server real
	// work (DefaultHeavyPerUser when 0); past it they are 429 with Retry-After.
	HeavyPerUser int
	// LiveStreams bounds the runs' live streams a replica serves (DefaultLiveStreams when zero).
	LiveStreams LiveStreams
	// Draining, when set, ends when the server begins to shut down: the live streams end then,
	// telling their clients to reconnect (to another replica, behind a balancer), rather than
	// hold the shutdown for its whole grace and be cut at its end.
	Draining context.Context
	// Portal, when set, serves the paths it says are its own and no route takes: the portal's
	// pages and assets.
	Portal interface {
		http.Handler
		Serves(path string) bool
	}
}

type server struct {
	log       *slog.Logger
	accounts  *account.Service
	fleet     *fleet.Service
	projects  *projects.Service
	runs      *runs.Service
	tests     *tests.Service
	targets   *targets.Service
	secrets   *secrets.Service
	notify    *notifications.Service
	schedules *schedules.Service
	market    *market.Service
	audit     *audit.Log
	spec      *openapi3.T
	auth      Authenticator
	ready     func(ctx context.Context) error
	docsPage  []byte
	version   string
	heavy     *inflight
	awaiting  *inflight
	live      liveLimits
	draining  context.Context // ends when the server begins to shut down
}

var _ api.StrictServerInterface = (*server)(nil)

// NewServer returns the API as an http.Handler.
func NewServer(d Deps) (http.Handler, error) {
	doc, err := loadSpec()
	if err != nil {
		return nil, err
	}
	page, err := docsPage()
	if err != nil {
		return nil, err
	}
	s := &server{log: d.Log, accounts: d.Accounts, market: d.Market, audit: d.Audit, spec: doc, auth: d.Accounts, ready: d.Ready, docsPage: page, version: d.Version,
		heavy: newInflight(d.HeavyPerUser, 1, 0, "requests that parse, convert, publish or render"),
		// What waits for agents holds a turn of its own kind only: a user's jobs wait together,
		// and everyone's, so many at once, bound the memory their tests' files take.
		awaiting: newInflight(fleet.MaxOpenJobs, fleet.MaxOpenJobs, max(8, 4*runtime.GOMAXPROCS(0)),
			"requests that read a test for an agent (generating its script, debugging it, starting a run of it)"),
		live: newLiveLimits(d.LiveStreams), draining: d.Draining}
	if s.draining == nil {
		s.draining = context.Background() // never ends
	}
	if c := d.Control; c != nil { // nil for a test that only walks the routes
		s.fleet, s.runs, s.tests, s.targets, s.secrets, s.projects = c.Fleet, c.Runs, c.Tests, c.Targets, c.Secrets, c.Projects
		s.notify, s.schedules = c.Notify, c.Schedules
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 1 << 20
	}
	if d.MaxFileBytes <= 0 {
		d.MaxFileBytes = 16 << 20
	}

	r := chi.NewRouter()
	r.Use(requestID, clientIP(d.TrustedProxies), accessLog(d.Log, d.ObserveRequest), securityHeaders, longDownloads, limitBody(d.MaxBodyBytes, d.MaxFileBytes, uploadMax(d.Market), cmp.Or(d.AnonymousReaders, 1024)), exactPaths(doc))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		if d.Portal != nil && d.Portal.Serves(r.URL.Path) {
			d.Portal.ServeHTTP(w, r)
			return
		}
		writeProblem(w, r, problem{Status: http.StatusNotFound, Detail: "No route matches " + r.URL.Path + "."})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, req, problem{Status: http.StatusMethodNotAllowed, Detail: "This route answers " + strings.Join(allowed, ", ") + "."})
	})
	strict := api.NewStrictHandlerWithOptions(s, nil, api.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, r, decodeProblem(err))
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(s.log, w, r, err)
		},
	})
	api.HandlerWithOptions(checkRaw{ServerInterface: strict, s: s}, api.ChiServerOptions{
		BaseRouter: r,
		// Applied innermost first: authorize runs before validation.
		Middlewares: []api.MiddlewareFunc{newValidator(d.Log, doc).middleware, s.authorize},
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, r, paramProblem(err))
		},
	})
	return r, nil
}

// decodeProblem reports a body the validator accepted but Go cannot decode: a number such as
// 1e2 where a whole number belongs.
func decodeProblem(err error) problem {
	if errors.Is(err, http.ErrNotMultipart) || errors.Is(err, http.ErrMissingBoundary) {
		return problem{Type: typeMalformed, Status: http.StatusBadRequest, Detail: "The request body is not multipart/form-data with a boundary."}
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusUnprocessableEntity,
			Detail: ute.Field + ": must be a " + ute.Type.String(),
			Errors: []barrage.FieldError{fieldError(ute.Field, "must be a "+ute.Type.String())}}
	}
	return problem{Type: typeMalformed, Status: http.StatusBadRequest, Detail: "The request body is not valid JSON for this operation."}
}

// paramProblem reports a path or query parameter that the generated wrapper could not parse.
func paramProblem(err error) problem {
	p := problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusBadRequest, Detail: "A parameter is not valid."}
	var ipf *api.InvalidParamFormatError
	if errors.As(err, &ipf) {
		p.Errors = append(p.Errors, fieldError(ipf.ParamName, "has the wrong format"))
		p.Detail = ipf.ParamName + ": has the wrong format"
	}
	return p
}

//go:embed docs/redoc.standalone.js
var docsFS embed.FS

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Barrage API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.yaml" hide-download-button="false"></redoc>
<script>{{.Script}}</script>
</body>
</html>
`))

// docsPage renders the reference page once, with Redoc inlined: no CDN, no second request.
func docsPage() ([]byte, error) {
	js, err := docsFS.ReadFile("docs/redoc.standalone.js")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = docsTemplate.Execute(&b, struct{ Script template.JS }{template.JS(js)})
	return b.Bytes(), err
}

func (s *server) GetDocs(ctx context.Context, _ api.GetDocsRequestObject) (api.GetDocsResponseObject, error) {
	return api.GetDocs200TexthtmlResponse{Body: bytes.NewReader(s.docsPage), ContentLength: int64(len(s.docsPage))}, nil
}

func (s *server) GetOpenAPI(ctx context.Context, _ api.GetOpenAPIRequestObject) (api.GetOpenAPIResponseObject, error) {
	return api.GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(api.Spec), ContentLength: int64(len(api.Spec))}, nil
}

func (s *server) GetHealthz(ctx context.Context, _ api.GetHealthzRequestObject) (api.GetHealthzResponseObject, error) {
	return api.GetHealthz200JSONResponse{Status: api.Ok}, nil
}

func (s *server) GetReadyz(ctx context.Context, _ api.GetReadyzRequestObject) (api.GetReadyzResponseObject, error) {
	if err := s.ready(ctx); err != nil {
		s.log.WarnContext(ctx, "not ready", slog.String("error", err.Error()))
		return api.GetReadyz503JSONResponse{Status: api.Unavailable, Checks: &map[string]string{"database": "unavailable"}}, nil
	}
	return api.GetReadyz200JSONResponse{Status: api.Ok, Checks: &map[string]string{"database": "ok"}}, nil
}
