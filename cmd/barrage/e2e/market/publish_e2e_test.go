package market_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/registry/registrytest"
)

// zeros reads as many zero bytes as asked.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bigELF is an executable for linux/amd64 of size bytes: a tiny one that exits 0, then zeros but
// for one byte, salt, so that two differ.
func bigELF(size int64, salt byte) io.Reader {
	h := registrytest.TinyELF("amd64", []byte{salt})
	return io.MultiReader(bytes.NewReader(h), io.LimitReader(zeros{}, size-int64(len(h))))
}

// Two authors publish plugins of 120 MB at once, twice each, while two others send what an attacker
// would (a manifest signed by no key of the namespace, then 120 MB; a manifest of 120 MB): serve's
// resident memory, sampled from /proc while they are in flight, stays within 100 MiB of what it
// was, the refused are refused, and the valid are published. (Each upload was read whole into
// memory before any check: two of 120 MB took serve from 77 to 520 MiB.)
func TestPublishingLargePluginsKeepsServesMemoryBounded(t *testing.T) {
	t.Parallel()
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	admin := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, admin, "admin@example.com", "Admin")
	invite := strings.TrimSpace(e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo", "--uses", "4"))
	// Four authors, each with a namespace and a key: a user has two publishes in flight at most.
	type author struct {
		ns, token string
		key       ed25519.PrivateKey
	}
	authors := make([]author, 4)
	for i := range authors {
		cfg := t.TempDir()
		email := fmt.Sprintf("u%d@example.com", i)
		e2etest.MustCLI(t, p, cfg, "user password 123\n", "signup", "--code", invite, "--email", email, "--name", "U")
		e2etest.MustCLI(t, p, cfg, "user password 123\n", "login", "--email", email)
		e2etest.MustCLI(t, p, cfg, "", "plugin", "keygen")
		a := author{ns: fmt.Sprintf("acme%d", i)}
		e2etest.MustCLI(t, p, cfg, "", "namespaces", "create", a.ns)
		e2etest.MustCLI(t, p, cfg, "", "namespaces", "add-key", a.ns)
		a.token = strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "ci", "--scopes", "plugins:write"))
		pem, err := os.ReadFile(filepath.Join(cfg, "signing-key.pem"))
		require.NoError(t, err)
		a.key, err = registry.ParsePrivateKey(pem)
		require.NoError(t, err)
		authors[i] = a
	}
	_, stranger, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)

	const size = 120 << 20
	// publish sends a version of 120 MB, signed by signer, and says what came back.
	publish := func(a author, version string, salt byte, signer ed25519.PrivateKey, hugeManifest bool) (int, string) {
		h := sha256.New()
		if _, err := io.Copy(h, bigELF(size, salt)); err != nil {
			return 0, err.Error()
		}
		sum := hex.EncodeToString(h.Sum(nil))
		file := registry.ArtifactFile("big", version, "linux", "amd64")
		sums, err := registry.FormatSums([]registry.Sum{{SHA256: sum, Name: file}})
		if err != nil {
			return 0, err.Error()
		}
		manifest, err := json.Marshal(map[string]any{"version": version, "kinds": []string{"session-element"}, "protocols": []int{1},
			"artifacts": []any{map[string]any{"os": "linux", "arch": "amd64", "file": file, "format": "elf", "sha256": sum, "size": size}},
			"signature": base64.StdEncoding.EncodeToString(registry.Sign(signer, sums))})
		if err != nil {
			return 0, err.Error()
		}
		pr, pw := io.Pipe()
		defer pr.Close()
		mw := multipart.NewWriter(pw)
		go func() {
			hdr := textproto.MIMEHeader{}
			hdr.Set("Content-Disposition", `form-data; name="manifest"`)
			hdr.Set("Content-Type", "application/json")
			w, err := mw.CreatePart(hdr)
			if err == nil && hugeManifest {
				_, err = io.Copy(w, io.LimitReader(zeros{}, size))
			} else if err == nil {
				_, err = w.Write(manifest)
			}
			if err == nil {
				w, err = mw.CreateFormFile("artifact", file)
			}
			if err == nil {
				_, err = io.Copy(w, bigELF(size, salt))
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		req, err := http.NewRequest("POST", p.URL+"/v1/plugins/"+a.ns+"/big/versions", pr)
		if err != nil {
			return 0, err.Error()
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+a.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		answer, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(answer)
	}

	pid := p.Cmd.Process.Pid
	stopWatching := e2etest.WatchRSS(t, pid)
	type sent struct {
		name   string
		status int
		answer string
	}
	var mu sync.Mutex
	var results []sent
	var wg sync.WaitGroup
	for i, c := range []struct {
		name         string
		stranger     bool
		hugeManifest bool
	}{{"valid", false, false}, {"valid", false, false}, {"signed by a stranger", true, false}, {"a manifest of 120 MB", false, true}} {
		a := authors[i]
		signer := a.key
		if c.stranger {
			signer = stranger
		}
		wg.Go(func() {
			for round := range 2 {
				status, answer := publish(a, fmt.Sprintf("1.0.%d", round), byte(2*i+round), signer, c.hugeManifest)
				mu.Lock()
				results = append(results, sent{c.name, status, answer})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	base, peak := stopWatching()
	statuses := map[string][]int{}
	for _, r := range results {
		statuses[r.name] = append(statuses[r.name], r.status)
		if r.status >= 500 {
			t.Errorf("%s: %d %s", r.name, r.status, r.answer)
		}
	}
	t.Logf("statuses %v; serve's RSS %d MiB, at most %d MiB while in flight", statuses, base>>10, peak>>10)
	require.Equal(t, []int{201, 201, 201, 201}, statuses["valid"])
	require.Equal(t, []int{422, 422}, statuses["signed by a stranger"])
	require.Equal(t, []int{413, 413}, statuses["a manifest of 120 MB"])
	require.Positive(t, peak, "the memory was sampled")
	require.Less(t, peak-base, int64(100<<10), "serve's memory grew by less than 100 MiB")
}
