package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
)

// specRouter finds a request's operation in the spec, whatever host the test server has.
func specRouter(t testing.TB) routers.Router {
	t.Helper()
	r, err := sharedSpecRouter()
	require.NoError(t, err)
	return r
}

// sharedSpecRouter is made once for the whole suite: it is only read.
var sharedSpecRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return nil, err
	}
	doc.Servers = nil
	return legacy.NewRouter(doc)
})

// conformToSpec checks every response the suite receives against the spec: its status must be
// declared for the operation, and a JSON body must match the declared schema. A test that makes
// the server answer something the contract does not promise fails, so the spec stays true.
func conformToSpec(t testing.TB, next http.Handler) http.Handler {
	router := specRouter(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		route, params, err := router.FindRoute(r)
		if err != nil {
			return // no operation: the 404 and 405 answers, checked by their own tests
		}
		ct := rec.Header().Get("Content-Type")
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
			Status:                 rec.Code,
			Header:                 rec.Header(),
			Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
			Options: &openapi3filter.Options{
				IncludeResponseStatus: true,
				ExcludeResponseBody:   !strings.Contains(ct, "json"),
				MultiError:            true,
			},
		}
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			t.Errorf("%s %s answered %d, which the spec does not describe: %v\nbody: %.300s", r.Method, r.URL.Path, rec.Code, err, rec.Body.String())
		}
	})
}
