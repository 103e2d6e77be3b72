package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// exactPaths answers 405 for a method that a path of the spec, written without parameters, does
// not have, where a route with a parameter would otherwise take the request: PATCH
// /v1/tests/import is no PATCH /v1/tests/{id} with the id "import", and says which methods the
// path answers, as any other path does.
func exactPaths(doc *openapi3.T) func(http.Handler) http.Handler {
	shadowed := map[string][]string{} // path -> its methods
	paths := doc.Paths.Map()
	for p, item := range paths {
		if strings.Contains(p, "{") {
			continue
		}
		for q := range paths {
			if strings.Contains(q, "{") && templateMatches(q, p) {
				shadowed[p] = slices.Sorted(maps.Keys(item.Operations()))
				break
			}
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			methods, ok := shadowed[r.URL.Path]
			if !ok || slices.Contains(methods, r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			allow := strings.Join(methods, ", ")
			w.Header().Set("Allow", allow)
			writeProblem(w, r, problem{Status: http.StatusMethodNotAllowed, Detail: "This route answers " + allow + "."})
		})
	}
}

// templateMatches reports whether path template t (/v1/tests/{id}) matches path p segment by
// segment.
func templateMatches(t, p string) bool {
	ts, ps := strings.Split(t, "/"), strings.Split(p, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if ts[i] != ps[i] && !strings.HasPrefix(ts[i], "{") {
			return false
		}
	}
	return true
}
