// Package portal serves the portal: the browser's client of the public API, built from web/ into
// dist/ (committed, rebuilt and compared by `make verify`) and embedded, so that `barrage serve`
// needs nothing beside itself to serve it. The pages use the API alone; this package serves
// files, with a Content-Security-Policy that lets them load nothing but this server's own
// scripts and styles and talk to nothing but this server.
package portal

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// CSP is every page's Content-Security-Policy: no inline script or style, no eval, nothing from
// another origin, no frame, no form posted elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one of the portal's files, ready to serve: as it is, and compressed with gzip once,
// for the browsers that take it (all do).
type file struct {
	body, gzipped []byte
	contentType   string
	etag          string
}

// accepts reports whether the request takes gzip: Accept-Encoding names it (or *) with a
// quality above 0.
func accepts(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(h, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := 1.0
			if v, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
				q, _ = strconv.ParseFloat(v, 64)
			}
			return q > 0
		}
	}
	return false
}

func compress(body []byte) []byte {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = z.Write(body)
	_ = z.Close()
	return b.Bytes()
}

// Pages are the paths of the portal's pages, by their first segment: each answers the portal's
// page (index.html), whose script draws the page the path names (web/src/main.tsx). Any other
// path is not the portal's: 404, as it would be without it (/metrics is served apart, if at all).
var Pages = []string{"", "signin", "signup", "license", "tokens", "password", "tests", "runs", "projects", "plugins", "namespaces", "admin"}

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
		files[strings.TrimPrefix(p, "dist/")] = file{body: body, gzipped: compress(body), contentType: contentType(p),
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
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
		h.Set("Content-Type", f.contentType)
		h.Add("Vary", "Accept-Encoding")
		body, etag := f.body, f.etag
		if accepts(r) {
			h.Set("Content-Encoding", "gzip")
			body, etag = f.gzipped, strings.TrimSuffix(f.etag, `"`)+`-gzip"` // another representation, another tag
		}
		h.Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
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
