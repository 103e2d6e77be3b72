// Package portal serves the portal: the browser's client of the public API, built from web/ into
// dist/ (committed, rebuilt and compared by `make verify`) and embedded, so that `barrage serve`
// needs nothing beside itself to serve it. The pages use the API alone; this package serves
// files, with a Content-Security-Policy that lets them load nothing but this server's own
// scripts and styles and talk to nothing but this server.
package portal

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// CSP is every page's Content-Security-Policy: no inline script or style, no eval, nothing from
// another origin, no frame, no form posted elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one of the portal's files, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Pages are the paths of the portal's pages, by their first segment: each answers the portal's
// page (index.html), whose script draws the page the path names (web/src/main.tsx). Any other
// path is not the portal's: 404, as it would be without it (/metrics is served apart, if at all).
var Pages = []string{"", "signin", "signup", "license", "tokens", "password", "tests", "runs"}

// Portal serves the portal's files: its assets under /assets/, and its page at the paths of
// Pages.
type Portal struct{ http.Handler }

// Serves reports whether path is the portal's: a page's or an asset's.
func (Portal) Serves(path string) bool {
	if strings.HasPrefix(path, "/assets/") {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return slices.Contains(Pages, first)
}

// Handler returns the portal.
func Handler() Portal {
	files := map[string]file{}
	_ = fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		files[strings.TrimPrefix(p, "dist/")] = file{body: body, contentType: contentType(p), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	page := files["index.html"]
	return Portal{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "The portal's pages answer GET.", http.StatusMethodNotAllowed)
			return
		}
		f := page
		if name, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
			if f, ok = files[path.Clean(name)]; !ok || name == "index.html" {
				http.NotFound(w, r)
				return
			}
		} else if !(Portal{}).Serves(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("Cache-Control", "no-cache") // revalidated by its ETag: a new build is seen at once
		h.Set("ETag", f.etag)
		h.Set("Content-Type", f.contentType)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})}
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "text/html; charset=utf-8"
}
