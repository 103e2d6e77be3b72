package httpapi_test

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/registry/registrytest"
)

// tinyELF is a static Linux executable for arch that exits 0, then body.
func tinyELF(arch string, body string) []byte { return registrytest.TinyELF(arch, []byte(body)) }

// zipapp is a Python zipapp holding __main__.py, with extra entries of the modes given.
func zipapp(t testing.TB, extra map[string]fs.FileMode) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("#!/usr/bin/env python3\n")
	z := zip.NewWriter(&b)
	z.SetOffset(int64(b.Len()))
	w, err := z.Create("__main__.py")
	require.NoError(t, err)
	_, _ = w.Write([]byte("print('hello')\n"))
	for name, mode := range extra {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := z.CreateHeader(h)
		require.NoError(t, err)
		_, _ = w.Write([]byte("x"))
	}
	require.NoError(t, z.Close())
	return b.Bytes()
}

// artifact is one file of a version to publish, and what the manifest says of it.
type artifact struct {
	os, arch, format string
	data             []byte
	// sha256 and size, when set, are what the manifest declares instead of the truth.
	sha256 string
	size   int64
	file   string
	// unsent is declared in the manifest and not sent.
	unsent bool
}

// version is a plugin version to publish.
type version struct {
	ns, name, version string
	kinds             []string
	description       string
	tags              []string
	artifacts         []artifact
	key               ed25519.PrivateKey
	// tweak changes the manifest before it is encoded, mangle its bytes after.
	tweak  func(m map[string]any)
	mangle func([]byte) []byte
}

// body is the multipart body of the publish and its content type.
func (v version) body(t testing.TB) ([]byte, string) {
	t.Helper()
	var arts []any
	var sums []registry.Sum
	for _, a := range v.artifacts {
		sum := sha256.Sum256(a.data)
		hexSum := hex.EncodeToString(sum[:])
		if a.sha256 != "" {
			hexSum = a.sha256
		}
		size := int64(len(a.data))
		if a.size != 0 {
			size = a.size
		}
		file := registry.ArtifactFile(v.name, v.version, a.os, a.arch)
		if a.file != "" {
			file = a.file
		}
		arts = append(arts, map[string]any{"os": a.os, "arch": a.arch, "file": file, "format": a.format, "sha256": hexSum, "size": size})
		sums = append(sums, registry.Sum{SHA256: hexSum, Name: file})
	}
	doc, err := registry.FormatSums(sums)
	require.NoError(t, err)
	m := map[string]any{"version": v.version, "kinds": v.kinds, "protocols": []int{1}, "artifacts": arts,
		"description": v.description, "tags": v.tags, "license": "MIT", "readme": "# " + v.name,
		"signature": base64.StdEncoding.EncodeToString(registry.Sign(v.key, doc))}
	if v.kinds == nil {
		m["kinds"] = []string{"session-element"}
	}
	if v.tags == nil {
		m["tags"] = []string{}
	}
	if v.tweak != nil {
		v.tweak(m)
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="manifest"`)
	h.Set("Content-Type", "application/json")
	pw, err := w.CreatePart(h)
	require.NoError(t, err)
	doc, err = json.Marshal(m)
	require.NoError(t, err)
	if v.mangle != nil {
		doc = v.mangle(doc)
	}
	_, err = pw.Write(doc)
	require.NoError(t, err)
	for i, a := range v.artifacts {
		if a.unsent {
			continue
		}
		fw, err := w.CreateFormFile("artifact", arts[i].(map[string]any)["file"].(string))
		require.NoError(t, err)
		_, _ = fw.Write(a.data)
	}
	require.NoError(t, w.Close())
	return b.Bytes(), w.FormDataContentType()
}

func (b *testBundle) publish(bearer string, v version) response {
	b.t.Helper()
	body, ct := v.body(b.t)
	return b.do("POST", fmt.Sprintf("/v1/plugins/%s/%s/versions", v.ns, v.name), bearer, body, "Content-Type", ct)
}

// author claims ns for u and registers a fresh key on it, returning the key.
func (b *testBundle) author(u user, ns string) ed25519.PrivateKey {
	b.t.Helper()
	r := b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": ns})
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(b.t, err)
	r = b.do("POST", "/v1/namespaces/"+ns+"/keys", u.access, map[string]any{"public_key": registry.PublicKey(pub).String(), "proof": registry.ProveKey(priv, ns)})
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	return priv
}

func randomData(key ed25519.PrivateKey, ver string) version {
	return version{ns: "acme", name: "random-data", version: ver, key: key, description: "Makes up test data: emails, UUIDs, numbers",
		tags: []string{"data", "generator"}, artifacts: []artifact{
			{os: "linux", arch: "amd64", format: "elf", data: tinyELF("amd64", "amd64 build of "+ver)},
			{os: "linux", arch: "arm64", format: "elf", data: tinyELF("arm64", "arm64 build of "+ver)},
		}}
}

// An author publishes a version for two platforms; it is pending and nobody else sees it; an
// admin approves it; another user finds it, reads it, and downloads an artifact that verifies
// against the signed SHA256SUMS and the namespace's keys; the counts move; deprecation and
// revocation follow their rules.
func TestPublishReviewFindAndDownloadAPluginVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "tester@example.com")
	key := b.author(u, "acme")

	r := b.publish(u.access, randomData(key, "1.0.0"))
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	pv := r.json(t)
	require.Equal(t, "pending", pv["state"])
	require.Len(t, pv["artifacts"], 2)
	require.Contains(t, pv["shasums"], "  random-data_1.0.0_linux_amd64\n")

	// Pending: its author sees it, another user does not, not even by its address.
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/plugins/acme/random-data", u.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data", v.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", v.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/amd64", v.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/amd64/file", v.access, nil), http.StatusNotFound)
	require.Empty(t, b.do("GET", "/v1/plugins?q=random", v.access, nil).json(t)["items"])
	require.Len(t, b.do("GET", "/v1/plugins?q=random", u.access, nil).json(t)["items"], 1, "its author finds it")

	// Review: only admins; pending versions queue for them.
	requireProblem(t, b.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/approve", u.access, nil), http.StatusForbidden)
	queue := b.do("GET", "/v1/admin/plugin-versions", admin.access, nil).json(t)["items"].([]any)
	require.Len(t, queue, 1)
	require.Len(t, queue[0].(map[string]any)["artifacts"], 2, "the reviewer sees what is to be approved")
	r = b.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/approve", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "published", r.json(t)["state"])
	requireProblem(t, b.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/approve", admin.access, nil), http.StatusConflict)
	require.Empty(t, b.do("GET", "/v1/admin/plugin-versions", admin.access, nil).json(t)["items"])

	// Found by the beginnings of its words, its kind and its tags; not by others.
	for _, q := range []string{"q=rand", "q=RANDOM+dat", "q=acme", "q=emails", "kind=session-element", "tag=generator", "q=data&tag=data", ""} {
		items := b.do("GET", "/v1/plugins?"+q, v.access, nil).json(t)["items"].([]any)
		require.Len(t, items, 1, q)
		require.Equal(t, "random-data", items[0].(map[string]any)["name"], q)
	}
	for _, q := range []string{"q=zebra", "kind=url", "tag=database", "q=random+zebra", "q=" + url.QueryEscape("random & !"),
		"q=" + url.QueryEscape("&|!:*"), "q=" + url.QueryEscape("日本")} {
		r := b.do("GET", "/v1/plugins?"+q, v.access, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", q, r.body)
		if q == "q="+url.QueryEscape("random & !") {
			require.Len(t, r.json(t)["items"], 1, "query syntax is not syntax")
			continue
		}
		require.Empty(t, r.json(t)["items"], q)
	}
	requireProblem(t, b.do("GET", "/v1/plugins?kind=nonsense", v.access, nil), http.StatusBadRequest)

	pl := b.do("GET", "/v1/plugins/acme/random-data", v.access, nil).json(t)
	require.Equal(t, "1.0.0", pl["latest"])
	require.Equal(t, "# random-data", pl["readme"])
	require.Len(t, pl["versions"], 1)

	// The download, as Terraform's registry gives one: verify the signature with the keys, then
	// the artifact against its line.
	d := b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/arm64", v.access, nil)
	require.Equal(t, http.StatusOK, d.status, "body: %s", d.body)
	dl := d.json(t)
	sig, err := base64.StdEncoding.DecodeString(dl["shasums_signature"].(string))
	require.NoError(t, err)
	var keys []registry.PublicKey
	for _, k := range dl["signing_keys"].([]any) {
		pk, err := registry.ParsePublicKey(k.(map[string]any)["public_key"].(string))
		require.NoError(t, err)
		keys = append(keys, pk)
	}
	signer, err := registry.Verify(keys, []byte(dl["shasums"].(string)), sig)
	require.NoError(t, err)
	require.Equal(t, dl["signer"], signer.ID())
	file := b.do("GET", dl["download_url"].(string), v.access, nil)
	require.Equal(t, http.StatusOK, file.status)
	require.Equal(t, "application/octet-stream", file.header.Get("Content-Type"))
	got := sha256.Sum256(file.body)
	require.Equal(t, dl["shasum"], hex.EncodeToString(got[:]))
	require.Contains(t, dl["shasums"], hex.EncodeToString(got[:])+"  random-data_1.0.0_linux_arm64\n")
	require.True(t, bytes.Equal(tinyELF("arm64", "arm64 build of 1.0.0"), file.body))
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/riscv64", v.access, nil), http.StatusBadRequest)

	pl = b.do("GET", "/v1/plugins/acme/random-data", v.access, nil).json(t)
	require.EqualValues(t, 1, pl["downloads"])
	require.EqualValues(t, 1, pl["versions"].([]any)[0].(map[string]any)["downloads"])

	// Deprecation: its owners (another user's attempt finds nothing), with a reason.
	dep := "/v1/plugins/acme/random-data/versions/1.0.0/deprecate"
	requireProblem(t, b.do("POST", dep, v.access, map[string]any{"reason": "mine now"}), http.StatusNotFound)
	requireField(t, requireProblem(t, b.do("POST", dep, u.access, map[string]any{}), http.StatusUnprocessableEntity), "reason")
	r = b.do("POST", dep, u.access, map[string]any{"reason": "use 2.0.0"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "deprecated", r.json(t)["state"])
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/arm64", v.access, nil).status, "still usable")

	// Revocation: admins only; then gone for downloads, still shown for the record.
	rev := "/v1/admin/plugins/acme/random-data/versions/1.0.0/revoke"
	requireProblem(t, b.do("POST", rev, u.access, map[string]any{"reason": "x"}), http.StatusForbidden)
	r = b.do("POST", rev, admin.access, map[string]any{"reason": "mines coins"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	p := requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/arm64", v.access, nil), http.StatusGone)
	require.Contains(t, p["detail"], "mines coins")
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/arm64/file", v.access, nil), http.StatusGone)
	shown := b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", v.access, nil).json(t)
	require.Equal(t, "revoked", shown["state"])
	require.Equal(t, "mines coins", shown["state_reason"])
	require.Empty(t, b.do("GET", "/v1/plugins?q=random", v.access, nil).json(t)["items"], "nothing listed is left")
	pl = b.do("GET", "/v1/plugins/acme/random-data", v.access, nil).json(t)
	require.Equal(t, "revoked", pl["versions"].([]any)[0].(map[string]any)["state"], "its page stays, for the record")
}

// Every refusal names its field and stores nothing: the version stays unpublished, so the
// same version then publishes.
func TestPublishRefusesWhatIsWrongAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxPluginBytes: 4096})
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	key := b.author(u, "acme")
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	b.author(v, "other")

	good := randomData(key, "1.0.0")
	withArt := func(a artifact) version {
		ver := good
		ver.artifacts = []artifact{a}
		return ver
	}
	amd := good.artifacts[0]
	for name, c := range map[string]struct {
		v      version
		bearer string
		status int
		field  string
	}{
		"a bad signature": {v: func() version { x := good; x.key = stranger; return x }(), status: 422, field: "manifest.signature"},
		"a sha256 that does not match": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: amd.data,
			sha256: hex.EncodeToString(make([]byte, 32))}), status: 422, field: "artifacts[0].sha256"},
		"a size larger than sent": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: amd.data, size: int64(len(amd.data) + 1)}),
			status: 422, field: "artifacts[0].size"},
		"a size smaller than sent": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: amd.data, size: int64(len(amd.data) - 1)}),
			status: 422, field: "artifacts[0].size"},
		"a version that is not SemVer": {v: func() version { x := good; x.version = "1.0"; return x }(), status: 422, field: "manifest.version"},
		"a file over the limit": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: tinyELF("amd64", string(make([]byte, 5000)))}),
			status: 413},
		"a file that is not executable": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: []byte("#!/bin/sh\necho hi\n")}),
			status: 422, field: "artifacts[0]"},
		"an executable cut short": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: tinyELF("amd64", "")[:125]}),
			status: 422, field: "artifacts[0]"},
		"an executable of another platform": {v: withArt(artifact{os: "linux", arch: "arm64", format: "elf", data: amd.data}),
			status: 422, field: "artifacts[0]"},
		"a setuid file in a zipapp": {v: withArt(artifact{os: "linux", arch: "amd64", format: "zipapp", data: zipapp(t, map[string]fs.FileMode{"evil": 0o755 | fs.ModeSetuid})}),
			status: 422, field: "artifacts[0]"},
		"a link in a zipapp": {v: withArt(artifact{os: "linux", arch: "amd64", format: "zipapp", data: zipapp(t, map[string]fs.FileMode{"link": fs.ModeSymlink | 0o777})}),
			status: 422, field: "artifacts[0]"},
		"an entry outside a zipapp": {v: withArt(artifact{os: "linux", arch: "amd64", format: "zipapp", data: zipapp(t, map[string]fs.FileMode{"../../evil": 0o644})}),
			status: 422, field: "artifacts[0]"},
		"a #! line longer than Linux reads": {v: withArt(artifact{os: "linux", arch: "amd64", format: "zipapp",
			data: append([]byte("#!/"+strings.Repeat("x", 300)), zipapp(t, nil)[2:]...)}), status: 422, field: "artifacts[0]"},
		"duplicate tags": {v: func() version { x := good; x.tags = []string{"data", "data"}; return x }(), status: 422, field: "manifest.tags[1]"},
		"a zipapp that is not one": {v: withArt(artifact{os: "linux", arch: "amd64", format: "zipapp", data: []byte("#!/usr/bin/python3\nnot a zip at all")}),
			status: 422, field: "artifacts[0]"},
		"a file named otherwise": {v: withArt(artifact{os: "linux", arch: "amd64", format: "elf", data: amd.data, file: "evil"}),
			status: 422, field: "manifest.artifacts[0].file"},
		"an unknown kind": {v: func() version { x := good; x.kinds = []string{"miner"}; return x }(), status: 422, field: "manifest.kinds[0]"},
		"an unknown field": {v: func() version {
			x := good
			x.tweak = func(m map[string]any) { m["setuid"] = true }
			return x
		}(), status: 422, field: "manifest.setuid"},
		"a config schema that is not one": {v: func() version {
			x := good
			x.tweak = func(m map[string]any) { m["config_schema"] = `{"type": 7}` }
			return x
		}(), status: 422, field: "manifest.config_schema"},
		"a description that is not UTF-8": {v: func() version {
			x := good
			x.mangle = func(b []byte) []byte { return bytes.Replace(b, []byte("Makes up"), []byte("Mak\xe9s up"), 1) }
			return x
		}(), status: 422, field: "manifest"},
		"a source URL that is not http": {v: func() version {
			x := good
			x.tweak = func(m map[string]any) { m["source_url"] = "javascript:alert(1)" }
			return x
		}(), status: 422, field: "manifest.source_url"},
		"an artifact declared and not sent": {v: func() version {
			x := randomData(key, "1.0.0")
			x.artifacts[0].data = tinyELF("amd64", "kept, then refused")
			x.artifacts[1].unsent = true
			return x
		}(), status: 422, field: "artifacts[1]"},
		"an upload to another user's namespace": {v: func() version { x := good; x.ns = "other"; return x }(), status: 404},
		"an upload to no namespace":             {v: func() version { x := good; x.ns = "nowhere"; return x }(), status: 404},
	} {
		bearer := c.bearer
		if bearer == "" {
			bearer = u.access
		}
		r := b.publish(bearer, c.v)
		p := requireProblem(t, r, c.status)
		if c.field != "" {
			requireField(t, p, c.field)
		}
		requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", u.access, nil), http.StatusNotFound)
		_ = name
	}

	// Another user cannot take the author's key to pass the author's signed versions off as
	// theirs: the author's proof was for acme, and they cannot make one for other.
	requireField(t, requireProblem(t, b.do("POST", "/v1/namespaces/other/keys", v.access, map[string]any{
		"public_key": registry.PublicKey(key.Public().(ed25519.PublicKey)).String(), "proof": registry.ProveKey(key, "acme")}), http.StatusUnprocessableEntity), "proof")

	// A token without plugins:write may not publish; one with it may.
	tok := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "rw", "scopes": []string{"read", "write"}}).json(t)
	requireProblem(t, b.publish(secret(tok["token"].(string)), good), http.StatusForbidden)
	ci := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "ci", "scopes": []string{"plugins:write"}}).json(t)

	// Not multipart: 415; multipart without a boundary, or not multipart inside: 400.
	requireProblem(t, b.do("POST", "/v1/plugins/acme/random-data/versions", u.access, map[string]any{"version": "1.0.0"}), http.StatusUnsupportedMediaType)
	p := requireProblem(t, b.do("POST", "/v1/plugins/acme/random-data/versions", u.access, "hello", "Content-Type", "multipart/form-data"), http.StatusBadRequest)
	require.Contains(t, p["detail"], "boundary")
	p = requireProblem(t, b.do("POST", "/v1/plugins/acme/random-data/versions", u.access, "hello", "Content-Type", "multipart/form-data; boundary=x"), http.StatusUnprocessableEntity)
	requireField(t, p, "manifest")

	// After every refusal, the version publishes; then it exists, also with other build metadata.
	r := b.publish(secret(ci["token"].(string)), good)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	requireProblem(t, b.publish(u.access, good), http.StatusConflict)
	build := randomData(key, "1.0.0+rebuild")
	p = requireProblem(t, b.publish(u.access, build), http.StatusConflict)
	require.Contains(t, p["detail"], "exists already")

	// The blobs of refused publishes went at once: the sweep finds none; the published
	// version's stay.
	n, err := b.mkt.SweepBlobs(context.Background(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Zero(t, n, "no blob of a refused publish is left to sweep")
	require.Len(t, b.blobSums(), 2)
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/amd64/file", u.access, nil).status)

	// A retired key signs nothing new.
	ns := b.do("GET", "/v1/namespaces/acme", u.access, nil).json(t)
	id := ns["keys"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/namespaces/acme/keys/"+id+"/retire", u.access, nil).status)
	requireField(t, requireProblem(t, b.publish(u.access, randomData(key, "1.1.0")), http.StatusUnprocessableEntity), "manifest.signature")
	// What it signed still verifies.
	d := b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", u.access, nil).json(t)
	require.Equal(t, id, d["signer"])
}

// zeros reads as many zero bytes as asked.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// countingReader counts what is read of r.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A publish refused before its artifacts (its manifest wrong, too large or too many values,
// an artifact it does not name, a body that claims to be JSON too) is refused having read
// little of them: a few MiB of the 100 MiB sent, which is what the kernel's buffers hold, and
// the connection is closed rather than drained. (The validator read every body whole first,
// into memory: two of 120 MB took serve from 77 to 520 MiB.)
func TestAPublishRefusedBeforeItsArtifactsIsNotReadFurther(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{asServed: true})
	_, u := b.adminAndUser()
	key := b.author(u, "acme")
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)

	const size = 100 << 20
	head := tinyELF("amd64", "")
	big := func() io.Reader {
		return io.MultiReader(bytes.NewReader(head), io.LimitReader(zeros{}, size-int64(len(head))))
	}
	h := sha256.New()
	_, err = io.Copy(h, big())
	require.NoError(t, err)
	sum := hex.EncodeToString(h.Sum(nil))
	file := registry.ArtifactFile("big", "1.0.0", "linux", "amd64")
	manifest := func(signer ed25519.PrivateKey) map[string]any {
		sums, err := registry.FormatSums([]registry.Sum{{SHA256: sum, Name: file}})
		require.NoError(t, err)
		return map[string]any{"version": "1.0.0", "kinds": []string{"session-element"}, "protocols": []int{1},
			"artifacts": []any{map[string]any{"os": "linux", "arch": "amd64", "file": file, "format": "elf", "sha256": sum, "size": size}},
			"signature": base64.StdEncoding.EncodeToString(registry.Sign(signer, sums))}
	}
	values := manifest(key)
	values["protocols"] = slices.Repeat([]int{1}, 300_000)
	for name, c := range map[string]struct {
		manifest    any // JSON-encoded unless a reader
		artifact    string
		contentType string
		status      int
		field       string
	}{
		"a signature by a key not of the namespace": {manifest: manifest(stranger), status: 422, field: "manifest.signature"},
		"an artifact the manifest does not name":    {manifest: manifest(key), artifact: "evil", status: 422, field: "artifact"},
		"a manifest of 100 MiB":                     {manifest: big(), status: 413},
		"a manifest of 300,000 values":              {manifest: values, status: 422, field: "manifest"},
		"a content type that says json": {manifest: manifest(stranger), contentType: "multipart/form-data; boundary=json",
			status: 422, field: "manifest.signature"},
	} {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		if c.contentType != "" {
			require.NoError(t, mw.SetBoundary("json"))
		}
		go func() {
			hdr := textproto.MIMEHeader{}
			hdr.Set("Content-Disposition", `form-data; name="manifest"`)
			hdr.Set("Content-Type", "application/json")
			w, err := mw.CreatePart(hdr)
			if err == nil {
				if r, ok := c.manifest.(io.Reader); ok {
					_, err = io.Copy(w, r)
				} else {
					err = json.NewEncoder(w).Encode(c.manifest)
				}
			}
			if err == nil {
				w, err = mw.CreateFormFile("artifact", cmp.Or(c.artifact, file))
			}
			if err == nil {
				_, err = io.Copy(w, big())
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		body := &countingReader{r: pr}
		req, err := http.NewRequest("POST", b.srv.URL+"/v1/plugins/acme/big/versions", body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+u.access)
		res, err := b.srv.Client().Do(req)
		require.NoError(t, err, name)
		answer, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		res.Body.Close()
		pr.CloseWithError(io.ErrClosedPipe)
		t.Logf("%s: %d after %d KiB of the body", name, res.StatusCode, body.n.Load()>>10)
		require.Equal(t, c.status, res.StatusCode, "%s: %s", name, answer)
		if c.field != "" {
			var p map[string]any
			require.NoError(t, json.Unmarshal(answer, &p))
			requireField(t, p, c.field)
		}
		require.Less(t, body.n.Load(), int64(24<<20), "%s: the body is not read past the refusal", name)
		require.True(t, res.Close, "%s: the connection is closed, not drained", name)
	}
	require.Empty(t, b.blobSums())
}

// blobSums lists the blobs the store keeps, sorted.
func (b *testBundle) blobSums() []string {
	b.t.Helper()
	var sums []string
	require.NoError(b.t, b.blobs.Walk(context.Background(), func(sum string, _ time.Time) error {
		sums = append(sums, sum)
		return nil
	}))
	slices.Sort(sums)
	return sums
}

// sumOf is the hex SHA-256 of data.
func sumOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// A publish refused after some of its artifacts were stored (the next one wrong, one declared
// and not sent, the client gone half-way) leaves no blob behind: the blob store holds only what
// published versions use, also when a refused publish sent bytes a published version uses.
func TestARefusedPublishLeavesNoBlobBehind(t *testing.T) {
	t.Parallel()
	// As served: the answer to a client that left (499, never sent) is no answer of the spec.
	b := setup(t, setupOpts{asServed: true})
	_, u := b.adminAndUser()
	key := b.author(u, "acme")

	badSecond := randomData(key, "1.0.0")
	badSecond.artifacts[1].sha256 = hex.EncodeToString(make([]byte, 32))
	requireField(t, requireProblem(t, b.publish(u.access, badSecond), http.StatusUnprocessableEntity), "artifacts[1].sha256")
	require.Empty(t, b.blobSums(), "the first artifact, stored before the second was refused")

	unsent := randomData(key, "1.0.0")
	unsent.artifacts[1].unsent = true
	requireField(t, requireProblem(t, b.publish(u.access, unsent), http.StatusUnprocessableEntity), "artifacts[1]")
	require.Empty(t, b.blobSums(), "the artifact sent, when the other was declared and not sent")

	// The client leaves after the first artifact and part of the second.
	body, ct := randomData(key, "1.0.0").body(t)
	cut := bytes.LastIndex(body, []byte("arm64 build of"))
	require.Positive(t, cut)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body[:cut])
		_ = pw.CloseWithError(errors.New("the client went away"))
	}()
	req, err := http.NewRequest("POST", b.srv.URL+"/v1/plugins/acme/random-data/versions", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+u.access)
	if res, err := b.srv.Client().Do(req); err == nil {
		res.Body.Close()
	}
	require.Eventually(t, func() bool { return len(b.blobSums()) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the first artifact of a publish whose client left")

	// A published version's blob stays when a refused publish sends the same bytes.
	good := randomData(key, "1.0.0")
	require.Equal(t, http.StatusCreated, b.publish(u.access, good).status)
	kept := []string{sumOf(good.artifacts[0].data), sumOf(good.artifacts[1].data)}
	slices.Sort(kept)
	require.Equal(t, kept, b.blobSums())
	same := randomData(key, "1.1.0")
	same.artifacts[0].data = good.artifacts[0].data
	same.artifacts[1].sha256 = hex.EncodeToString(make([]byte, 32))
	requireProblem(t, b.publish(u.access, same), http.StatusUnprocessableEntity)
	require.Equal(t, kept, b.blobSums(), "1.0.0's artifacts, and nothing of 1.1.0")
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/amd64/file", u.access, nil).status)
}

// Eight publishes of one version at once: exactly one wins, the others are 409. (The server lets
// the user have the eight in flight: the race is the point.) Only the winner's artifact is left
// in the blob store.
func TestConcurrentPublishesOfOneVersionOneWins(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{heavyPerUser: 8})
	_, u := b.adminAndUser()
	key := b.author(u, "acme")
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	sums := make([]string, 8)
	for i := range statuses {
		ver := randomData(key, "2.0.0")
		ver.artifacts = ver.artifacts[:1]
		ver.artifacts[0].data = tinyELF("amd64", fmt.Sprintf("build %d", i))
		sums[i] = sumOf(ver.artifacts[0].data)
		body, ct := ver.body(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", b.srv.URL+"/v1/plugins/acme/random-data/versions", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+u.access)
			res, err := b.srv.Client().Do(req)
			if err == nil {
				statuses[i] = res.StatusCode
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	won := 0
	for i, s := range statuses {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, s)
		if s == http.StatusCreated {
			won++
			require.Equal(t, []string{sums[i]}, b.blobSums(), "the winner's artifact alone")
		}
	}
	require.Equal(t, 1, won, "statuses: %v", statuses)
}

// Search pages through many plugins in name order with its cursor.
func TestSearchPagesWithItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	key := b.author(u, "acme")
	for i := range 5 {
		ver := randomData(key, "1.0.0")
		ver.name = fmt.Sprintf("plugin-%d", i)
		ver.artifacts = ver.artifacts[:1]
		require.Equal(t, http.StatusCreated, b.publish(u.access, ver).status)
		require.Equal(t, http.StatusOK, b.do("POST", "/v1/admin/plugins/acme/"+ver.name+"/versions/1.0.0/approve", admin.access, nil).status)
	}
	var names []string
	path := "/v1/plugins?q=plugin&limit=2"
	for path != "" {
		page := b.do("GET", path, u.access, nil).json(t)
		for _, it := range page["items"].([]any) {
			names = append(names, it.(map[string]any)["name"].(string))
		}
		path = ""
		if next, ok := page["next_cursor"].(string); ok {
			path = "/v1/plugins?q=plugin&limit=2&cursor=" + url.QueryEscape(next)
		}
	}
	require.Equal(t, []string{"plugin-0", "plugin-1", "plugin-2", "plugin-3", "plugin-4"}, names)
	for _, bad := range []string{"nonsense!", "_y8A", "YS8A"} { // not base64; invalid UTF-8; a NUL
		requireField(t, requireProblem(t, b.do("GET", "/v1/plugins?cursor="+bad, u.access, nil), http.StatusBadRequest), "cursor")
	}
	requireField(t, requireProblem(t, b.do("GET", "/v1/plugins?tag=%ff", u.access, nil), http.StatusBadRequest), "tag")
}

// Search keeps the plugins of a protocol or a platform, and orders them by downloads, runs or
// newest as well as by name, its cursor going on in the order it was given for.
func TestSearchFiltersAndSortsTheCatalogue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	key := b.author(u, "acme")
	for _, p := range []struct {
		name      string
		arm       bool
		protocols []int
	}{{"alpha", false, []int{1}}, {"bravo", true, []int{1, 2}}, {"charlie", false, []int{1}}} {
		ver := randomData(key, "1.0.0")
		ver.name = p.name
		if !p.arm {
			ver.artifacts = ver.artifacts[:1]
		}
		ver.tweak = func(m map[string]any) { m["protocols"] = p.protocols }
		require.Equal(t, http.StatusCreated, b.publish(u.access, ver).status)
		require.Equal(t, http.StatusOK, b.do("POST", "/v1/admin/plugins/acme/"+p.name+"/versions/1.0.0/approve", admin.access, nil).status)
	}
	for _, name := range []string{"charlie", "charlie", "bravo"} {
		require.Equal(t, http.StatusOK, b.do("GET", "/v1/plugins/acme/"+name+"/versions/1.0.0/download/linux/amd64", u.access, nil).status)
	}
	names := func(query string) []string {
		t.Helper()
		var out []string
		path := "/v1/plugins?limit=1&" + query
		for path != "" {
			r := b.do("GET", path, u.access, nil)
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			page := r.json(t)
			for _, it := range page["items"].([]any) {
				out = append(out, it.(map[string]any)["name"].(string))
			}
			path = ""
			if next, ok := page["next_cursor"].(string); ok {
				path = "/v1/plugins?limit=1&" + query + "&cursor=" + url.QueryEscape(next)
			}
		}
		return out
	}
	require.Equal(t, []string{"alpha", "bravo", "charlie"}, names(""))
	require.Equal(t, []string{"alpha", "bravo", "charlie"}, names("sort=name"))
	require.Equal(t, []string{"charlie", "bravo", "alpha"}, names("sort=downloads"))
	require.Equal(t, []string{"charlie", "bravo", "alpha"}, names("sort=newest"))
	require.Equal(t, []string{"alpha", "bravo", "charlie"}, names("sort=runs"), "none has runs: by name")
	require.Equal(t, []string{"bravo"}, names("platform=linux/arm64"))
	require.Equal(t, []string{"charlie", "bravo", "alpha"}, names("platform=linux/amd64&sort=downloads"))
	require.Equal(t, []string{"bravo"}, names("protocol=2"))
	require.Equal(t, []string{"alpha", "bravo", "charlie"}, names("namespace=acme"))
	require.Empty(t, names("namespace=acm"), "a namespace is whole")
	require.Empty(t, names("protocol=3"))

	summary := b.do("GET", "/v1/plugins?q=bravo", u.access, nil).json(t)["items"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"linux/amd64", "linux/arm64"}, summary["platforms"])
	require.Equal(t, []any{1.0, 2.0}, summary["protocols"])
	require.EqualValues(t, 1, summary["downloads"])
	require.EqualValues(t, 0, summary["runs"])

	// A version pending review changes nothing others see of the plugin, not even when it changed.
	other := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	alpha := func() map[string]any {
		return b.do("GET", "/v1/plugins?namespace=acme&q=alpha", other.access, nil).json(t)["items"].([]any)[0].(map[string]any)
	}
	was := alpha()
	next := randomData(key, "1.0.1")
	next.name, next.artifacts = "alpha", next.artifacts[:1]
	require.Equal(t, http.StatusCreated, b.publish(u.access, next).status)
	require.Equal(t, was, alpha())

	// A cursor goes on in its own order only.
	byName := b.do("GET", "/v1/plugins?limit=1", u.access, nil).json(t)["next_cursor"].(string)
	requireField(t, requireProblem(t, b.do("GET", "/v1/plugins?sort=downloads&cursor="+url.QueryEscape(byName), u.access, nil), http.StatusBadRequest), "cursor")
	byDownloads := b.do("GET", "/v1/plugins?limit=1&sort=downloads", u.access, nil).json(t)["next_cursor"].(string)
	requireField(t, requireProblem(t, b.do("GET", "/v1/plugins?sort=runs&cursor="+url.QueryEscape(byDownloads), u.access, nil), http.StatusBadRequest), "cursor")
	requireField(t, requireProblem(t, b.do("GET", "/v1/plugins?cursor="+url.QueryEscape(byDownloads), u.access, nil), http.StatusBadRequest), "cursor")
	for _, bad := range []string{"sort=popular", "platform=windows/amd64", "protocol=0", "protocol=x"} {
		requireProblem(t, b.do("GET", "/v1/plugins?"+bad, u.access, nil), http.StatusBadRequest)
	}
}

// A version's "+" comes percent-encoded in a path (%2B): the validator checks the unescaped
// value against the spec's pattern, and the handler finds the version by it.
func TestAVersionWithBuildMetadataIsFoundByItsEscapedPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	key := b.author(u, "acme")
	r := b.publish(u.access, randomData(key, "1.0.0+build.7"))
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r = b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0%2Bbuild.7", u.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "1.0.0+build.7", r.json(t)["version"])
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0%2Bbuild.8", u.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0%2F7.0", u.access, nil), http.StatusBadRequest)
}
