package server_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/stretchr/testify/require"
)

// TestSharedAgentsLoadOnlyVerifiedTargets: the server, a shared `barrage agent` allowed all of
// loopback by its operator, and targets on 127.0.0.1 and 127.0.0.2. A run against a target its
// owner has not proved control of is refused before any byte reaches it; proved, it runs; a
// redirect to a host not proved reaches nothing; a target that stopped serving its token is
// refused at the next run's start.
func TestSharedAgentsLoadOnlyVerifiedTargets(t *testing.T) {
	// elsewhere is another host on loopback: no run proved control of it, so whatever reaches
	// it, a connection even, is a failure.
	var elsewhereConns atomic.Int64
	elsewhereLn, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	elsewhere := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				elsewhereConns.Add(1)
			}
		}}
	go func() { _ = elsewhere.Serve(elsewhereLn) }()
	t.Cleanup(func() { _ = elsewhere.Close() })

	// shop counts the load's requests apart from the checks' fetches of its proof.
	var loadHits atomic.Int64
	shop := newProofTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			loadHits.Add(1)
			http.Redirect(w, r, "http://"+elsewhereLn.Addr().String()+"/", http.StatusFound)
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		default:
			loadHits.Add(1)
			fmt.Fprint(w, "ok")
		}
	})
	shopURL, serveProof := shop.url, shop.serve

	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil, "BARRAGE_VERIFY_ALLOW=127.0.0.0/8")
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")
	e2etest.StartAgent(t, p, strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "platform", "--shared")))
	e2etest.Eventually(t, 30*time.Second, "the shared agent online", func() bool {
		return regexp.MustCompile(`(?m)\splatform\s+shared\s+online\s`).MatchString(e2etest.MustCLI(t, p, cfg, "", "agents", "list"))
	})

	dir := t.TempDir()
	// script writes a script of one request to url (with extra fields) for 2 VUs and 2 s.
	script := func(name, url, extra string) string {
		file := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`version: 1
name: %s
session:
  groups:
    - name: home
      requests:
        - { name: %s, url: "%s"%s }
load:
  vus: 2
  duration: 2s
`, name, name, url, extra)), 0o644))
		return file
	}
	start := func(file string) (string, string, error) {
		return e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", file, "--watch")
	}

	// Not registered: refused before any agent is asked, and nothing reached the target.
	out, errOut, err := start(script("home", shopURL+"/", ""))
	require.Error(t, err)
	require.Contains(t, out+errOut, strings.TrimPrefix(shopURL, "http://")+" is not a target of the project")
	require.Zero(t, loadHits.Load(), "a refused run sends nothing")

	// Registered, then proved.
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "targets", "add", shopURL)
	require.NoError(t, err, "stderr: %s", errOut)
	id := strings.TrimSpace(out)
	require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "targets", "list"), id)
	file := regexp.MustCompile(`/barrage-verify-([a-z0-9]+)\.txt`).FindStringSubmatch(errOut)
	require.NotNil(t, file, "the instructions name the file to serve: %s", errOut)
	token := file[1]
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "targets", "verify", id)
	require.Error(t, err, "not served yet")
	require.Contains(t, out+errOut, "answered 404")
	out, errOut, err = start(script("home", shopURL+"/", ""))
	require.Error(t, err, "registered is not proved")
	require.Contains(t, out+errOut, "is not verified")
	require.Zero(t, loadHits.Load())

	serveProof(token)
	require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "targets", "verify", id), "verified")
	out, errOut, err = start(script("home", shopURL+"/", ""))
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, errOut, "finished")
	require.Positive(t, loadHits.Load(), "a proved target is loaded")

	// A redirect to a host not proved is not followed: it reaches nothing there.
	out, errOut, _ = start(script("away", shopURL+"/away", ", redirects: 3"))
	require.Contains(t, out, "errors: connect", "the redirect's dial is refused: stdout: %s\nstderr: %s", out, errOut)
	require.Zero(t, elsewhereConns.Load(), "nothing reached the host the redirect named")

	// A debug on the shared agent reaches what a run could: the proved target, nothing else.
	push := func(name, url, extra string) string {
		return strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tests", "push", script(name+"-test", url, extra)))
	}
	require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "tests", "debug", push("shop", shopURL+"/", "")), "ok")
	out, errOut, _ = e2etest.CLI(t, p, cfg, "", "tests", "debug", push("elsewhere", "http://"+elsewhereLn.Addr().String()+"/", ""))
	require.Contains(t, out+errOut, "is not a target the run's owner proved control of")
	require.Zero(t, elsewhereConns.Load(), "a debug reached nothing it may not")
	// A redirect to the cloud's metadata address is refused by name before any dial, whatever
	// the agent's operator allowed: the debug says so, and no connection was attempted.
	out, errOut, _ = e2etest.CLI(t, p, cfg, "", "tests", "debug", push("metadata", shopURL+"/metadata", ", redirects: 2"))
	require.Contains(t, out+errOut, "169.254.169.254:80 is not a target the run's owner proved control of", "stdout: %s\nstderr: %s", out, errOut)

	// The target stops serving its token: the next run's start finds it out.
	serveProof("")
	before := loadHits.Load()
	out, errOut, err = start(script("home", shopURL+"/", ""))
	require.Error(t, err)
	require.Contains(t, out+errOut, "answered 404")
	require.Equal(t, before, loadHits.Load())
	require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "targets", "list"), "false", "shown as not verified")
}

// TestTheDemoAgentLoadsATargetYouProved walks the README: serve with its demo agent, the
// server's check allowed loopback (BARRAGE_VERIFY_ALLOW=127.0.0.0/8), a target of yours on
// 127.0.0.1 added and verified: your runs on the demo agent load it, and another user's do not.
func TestTheDemoAgentLoadsATargetYouProved(t *testing.T) {
	var hits atomic.Int64
	target := newProofTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "ok")
	})
	targetURL := target.url

	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil, "BARRAGE_DEMO_AGENT=true", "BARRAGE_VERIFY_ALLOW=127.0.0.0/8")
	ada, bob := t.TempDir(), t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, ada, "ada@example.com", "Ada")
	bobCode := regexp.MustCompile(`brg_inv_[a-z2-7]+`).FindString(e2etest.MustCLI(t, p, ada, "", "admin", "invite", "--template", "demo"))
	require.NotEmpty(t, bobCode)
	e2etest.MustCLI(t, p, bob, "bobs password 123\n", "signup", "--code", bobCode, "--email", "bob@example.com", "--name", "Bob")
	e2etest.MustCLI(t, p, bob, "bobs password 123\n", "login", "--email", "bob@example.com")
	e2etest.Eventually(t, 30*time.Second, "the demo agent online", func() bool {
		return regexp.MustCompile(`(?m)\sdemo\s.*\sonline\s`).MatchString(e2etest.MustCLI(t, p, ada, "", "agents", "list"))
	})

	out, errOut, err := e2etest.CLI(t, p, ada, "", "targets", "add", targetURL)
	require.NoError(t, err, "stderr: %s", errOut)
	id := strings.TrimSpace(out)
	token := regexp.MustCompile(`/barrage-verify-([a-z0-9]+)\.txt`).FindStringSubmatch(errOut)
	require.NotNil(t, token, errOut)
	target.serve(token[1])
	require.Contains(t, e2etest.MustCLI(t, p, ada, "", "targets", "verify", id), "verified")

	file := filepath.Join(t.TempDir(), "mine.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: mine
session: { groups: [ { name: g, requests: [ { name: home, url: "`+targetURL+`/" } ] } ] }
load: { vus: 2, duration: 2s }
`), 0o644))
	out, errOut, err = e2etest.CLI(t, p, ada, "", "runs", "start", "--file", file, "--watch")
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "errors") // the summary printed
	require.NotContains(t, out, "errors: connect", "the demo agent reached it: %s", out)
	require.Positive(t, hits.Load(), "your proved target is loaded from the demo agent")

	before := hits.Load()
	out, errOut, err = e2etest.CLI(t, p, bob, "", "runs", "start", "--file", file, "--watch")
	require.Error(t, err)
	require.Contains(t, out+errOut, "is not a target of the project", "another user's run does not reach it")
	require.Equal(t, before, hits.Load())
}

// proofTarget is a target on 127.0.0.1 that serves the proof of the token it is given (none
// before: 404) and hands every other request to next.
type proofTarget struct {
	url   string
	mu    sync.Mutex
	token string
}

func newProofTarget(t *testing.T, next http.HandlerFunc) *proofTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pt := &proofTarget{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/barrage-verify-") {
			next(w, r)
			return
		}
		pt.mu.Lock()
		token := pt.token
		pt.mu.Unlock()
		if token == "" || r.URL.Path != "/barrage-verify-"+token+".txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, token)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return pt
}

// serve serves the proof of token from now on; "" serves none.
func (pt *proofTarget) serve(token string) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.token = token
}
