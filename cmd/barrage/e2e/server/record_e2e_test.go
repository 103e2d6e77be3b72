package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/demoshop"
	"github.com/barrage-load/barrage/internal/e2etest"
)

// recording is a `barrage record` and a client whose proxy it is, trusting its CA.
type recording struct {
	*e2etest.Proc
	client *http.Client
	caPath string
}

func startRecording(t *testing.T, dir string, args ...string) *recording {
	t.Helper()
	p := e2etest.StartProc(t, []string{"XDG_DATA_HOME=" + filepath.Join(dir, "data")},
		append([]string{"record", "--listen", "127.0.0.1:0", "-o", filepath.Join(dir, "test.yaml"), "--har", filepath.Join(dir, "visit.har")}, args...)...)
	addr := p.WaitFor(t, regexp.MustCompile(`proxy on (127\.0\.0\.1:\d+), recording`))[1]
	caPath := p.WaitFor(t, regexp.MustCompile(`--cacert (\S+) https`))[1]
	require.Equal(t, filepath.Join(dir, "data", "barrage", "ca", "ca.pem"), caPath, "the CA is kept in Barrage's data folder")
	caPEM, err := os.ReadFile(caPath)
	require.NoError(t, err)
	trust := x509.NewCertPool()
	require.True(t, trust.AppendCertsFromPEM(caPEM))
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	proxyURL, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	cl := &http.Client{Jar: jar, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: trust}}}
	t.Cleanup(cl.CloseIdleConnections)
	return &recording{Proc: p, client: cl, caPath: caPath}
}

// newPage presses Enter in the recorder's terminal and waits until it says the next request
// starts page n.
func (r *recording) newPage(t *testing.T, n int) {
	t.Helper()
	_, err := io.WriteString(r.Stdin, "\n")
	require.NoError(t, err)
	r.WaitFor(t, regexp.MustCompile(fmt.Sprintf(`page %d starts with the next request`, n)))
}

func (r *recording) do(t *testing.T, method, u, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := r.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(data)
}

// visit is a customer's visit to the shop at base through the recorder: the home page, a login
// with ada's password and the token the page gave (the client follows the redirect), a search,
// a product into the cart, and the checkout with ada's card; a page for each step.
func (r *recording) visit(t *testing.T, base string) {
	t.Helper()
	status, home := r.do(t, "GET", base+"/", "", "")
	require.Equal(t, http.StatusOK, status)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(home)[1]
	r.newPage(t, 2)
	form := url.Values{"csrf": {csrf}, "email": {"ada@example.test"}, "password": {"lovelace-1815"}}.Encode()
	status, account := r.do(t, "POST", base+"/login", "application/x-www-form-urlencoded", form)
	require.Equal(t, http.StatusOK, status, account)
	require.Contains(t, account, "Signed in as ada@example.test")
	r.newPage(t, 3)
	status, products := r.do(t, "GET", base+"/api/products?q=coffee", "", "")
	require.Equal(t, http.StatusOK, status)
	product := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(products)[1]
	status, cart := r.do(t, "POST", base+"/api/cart/items", "application/json", `{"product":"`+product+`","quantity":1}`)
	require.Equal(t, http.StatusCreated, status)
	r.newPage(t, 4)
	cartID := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(cart)[1]
	status, order := r.do(t, "POST", base+"/api/orders", "application/json", `{"cart":"`+cartID+`","payment":{"card":"4242424242424242"}}`)
	require.Equal(t, http.StatusCreated, status, order)
	r.WaitFor(t, regexp.MustCompile(`recorded 6, page 4: POST \S+/api/orders 201`))
}

// runResult runs `barrage run` with args and env and returns its exit status and result.
func runResult(t *testing.T, env []string, args ...string) (int, replayDoc, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	stdout, stderr, code := e2etest.RunWithEnv(t, env, append([]string{"run", "--quiet", "--out", out}, args...)...)
	var doc replayDoc
	if data, err := os.ReadFile(out); err == nil {
		require.NoError(t, json.Unmarshal(data, &doc))
	}
	return code, doc, stdout + stderr
}

type replayDoc struct {
	Iterations int64 `json:"iterations"`
	Total      struct {
		Count     int64   `json:"count"`
		ErrorRate float64 `json:"error_rate"`
	} `json:"total"`
	Requests []struct {
		Name      string  `json:"name"`
		Count     int64   `json:"count"`
		ErrorRate float64 `json:"error_rate"`
	} `json:"requests"`
}

func (d replayDoc) count(name string) int64 {
	for _, r := range d.Requests {
		if r.Name == name {
			return r.Count
		}
	}
	return 0
}

// requireReplays runs the script for a few seconds and requires every request of every
// iteration to pass, with more iterations than users.csv has rows: each of its users logged in
// with its own password and the token its session was given, and checked out.
func requireReplays(t *testing.T, env []string, args ...string) {
	t.Helper()
	code, doc, out := runResult(t, env, append([]string{"--vus", "2", "--duration", "2s"}, args...)...)
	require.Equal(t, 0, code, out)
	require.Zero(t, doc.Total.ErrorRate, out)
	require.GreaterOrEqual(t, doc.count("POST /login"), int64(5), "every user of users.csv logged in: %s", out)
	require.Equal(t, doc.count("POST /login"), doc.count("POST /api/orders"), "and checked out")
}

func copyUsers(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile("../../../../examples/scripts/users.csv")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.csv"), data, 0o644))
}

// A visit to `barrage demo-shop` recorded through the proxy becomes a script that logs in and
// checks out for every user of users.csv: the CSRF token its session was given, the product and
// the cart are correlated, the session cookie rides in the jar, and the email, password and card
// are users.csv's columns. The HAR written beside it makes the same script through
// `barrage import har`; without the correlation, the shop refuses the login.
func TestRecordTheDemoShopAndReplayIt(t *testing.T) {
	t.Parallel()
	shop := e2etest.StartDemoShop(t)
	dir := t.TempDir()
	copyUsers(t, dir)
	rec := startRecording(t, dir, "--users", filepath.Join(dir, "users.csv"))
	rec.visit(t, shop)
	rec.Interrupt(t)

	for _, want := range []string{"6 requests in 4 groups", "correlated 3 values:", `csrf: regex name="csrf" value="([^"]+)" of GET / -> POST /login (form field csrf)`,
		"product: json $.items[0].id of GET /api/products", "cart: json $.id of POST /api/cart/items -> POST /api/orders (JSON $.cart)",
		"from the data file: email (POST /login, form field email) password (POST /login, form field password) card (POST /api/orders, JSON $.payment.card)",
		"wrote " + filepath.Join(dir, "visit.har") + ": 6 exchanges"} {
		require.Contains(t, rec.Stderr.String(), want)
	}
	script, err := os.ReadFile(filepath.Join(dir, "test.yaml"))
	require.NoError(t, err)
	for _, want := range []string{"base_url: ${target}", "default: '" + shop + "'", "- file: users.csv", "cookies: true",
		"# csrf: ", "- {var: csrf, regex: 'name=\"csrf\" value=\"([^\"]+)\"'}", "csrf: ${csrf}", "email: ${email}", "password: ${password}",
		"product: ${product}", "cart: ${cart}", "card: ${card}", "assert: [{status: 303}]"} {
		require.Contains(t, string(script), want)
	}
	require.NotContains(t, string(script), "lovelace-1815", "ada's password is users.csv's column now")

	// One converter, two front ends: the HAR of the same visit makes the same script.
	out, errOut, code := e2etest.RunWithEnv(t, nil, "import", "har", filepath.Join(dir, "visit.har"), "-o", filepath.Join(dir, "imported.yaml"), "--users", filepath.Join(dir, "users.csv"))
	require.Equal(t, 0, code, out+errOut)
	imported, err := os.ReadFile(filepath.Join(dir, "imported.yaml"))
	require.NoError(t, err)
	require.Equal(t, string(script), string(imported))

	requireReplays(t, nil, filepath.Join(dir, "test.yaml"))

	// The token is the session's own: the recorded one, sent as it was, is refused.
	stale := strings.Replace(string(script), "csrf: ${csrf}", "csrf: recorded-token-0000", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stale.yaml"), []byte(stale), 0o644))
	code, doc, out := runResult(t, nil, "--vus", "1", "--duration", "1s", filepath.Join(dir, "stale.yaml"))
	require.Equal(t, 99, code, "the error-rate threshold fails: %s", out)
	require.Positive(t, doc.Total.ErrorRate)
}

// HTTPS goes through CONNECT: the recorder opens it with a certificate its CA signs for the
// host, reaches the shop over the shop's own TLS (trusted with --target-ca), and the recording
// replays against the HTTPS shop like the plain one.
func TestRecordHTTPSThroughConnect(t *testing.T) {
	t.Parallel()
	shop := httptest.NewTLSServer(demoshop.New().Handler())
	t.Cleanup(shop.Close)
	dir := t.TempDir()
	copyUsers(t, dir)
	shopCA := filepath.Join(dir, "shop-ca.pem")
	require.NoError(t, os.WriteFile(shopCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: shop.Certificate().Raw}), 0o644))
	rec := startRecording(t, dir, "--users", filepath.Join(dir, "users.csv"), "--target-ca", shopCA)
	rec.visit(t, shop.URL)
	rec.Interrupt(t)
	require.Contains(t, rec.Stderr.String(), "correlated 3 values:")

	script, err := os.ReadFile(filepath.Join(dir, "test.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(script), "default: '"+shop.URL+"'")
	var visit struct {
		Log struct {
			Entries []struct{ Request struct{ URL string } }
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "visit.har"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &visit))
	require.Len(t, visit.Log.Entries, 6)
	require.True(t, strings.HasPrefix(visit.Log.Entries[0].Request.URL, "https://127.0.0.1:"))

	requireReplays(t, nil, "--insecure", filepath.Join(dir, "test.yaml"))

	// A second recording keeps the CA the first one made: a browser told to trust it once
	// goes on trusting it.
	first, err := os.ReadFile(rec.caPath)
	require.NoError(t, err)
	again := startRecording(t, dir)
	require.NotContains(t, again.Stderr.String(), "made now")
	second, err := os.ReadFile(again.caPath)
	require.NoError(t, err)
	require.Equal(t, first, second)
}

// A browser's HAR export of a visit to the shop (another session, its tokens long gone) becomes
// a script that runs against a fresh shop for every user of users.csv, TARGET_URL aiming it.
func TestImportABrowserHARAndReplayIt(t *testing.T) {
	t.Parallel()
	shop := e2etest.StartDemoShop(t)
	dir := t.TempDir()
	copyUsers(t, dir)
	script := filepath.Join(dir, "test.yaml")
	out, errOut, code := e2etest.RunWithEnv(t, nil, "import", "har", "../../../../internal/har/testdata/shop-chrome.har", "-o", script,
		"--users", filepath.Join(dir, "users.csv"), "--max-think", "200ms")
	require.Equal(t, 0, code, out+errOut)
	require.Empty(t, out, "the script went to its file")
	require.Contains(t, errOut, "6 requests in 4 groups; 1 static asset left out (--assets keeps them)")
	require.Contains(t, errOut, "correlated 3 values:")
	require.Contains(t, errOut, "from the data file: email")

	requireReplays(t, []string{"TARGET_URL=" + shop}, script)

	// Without -o the script goes to stdout, the summary to stderr.
	out, errOut, code = e2etest.RunWithEnv(t, nil, "import", "har", "../../../../internal/har/testdata/shop-chrome.har")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "# Converted by barrage from a HAR written by WebInspector 537.36"), out)
	require.Contains(t, errOut, "typed in, left as recorded")

	// The password the recording typed in is a secret of the user's: the script reads it by
	// name, nothing printed holds it, and the script replays with the secret's value.
	secretEnv := []string{"BARRAGE_SECRET_SHOP_PASSWORD=lovelace-1815"}
	secretive := filepath.Join(dir, "secretive.yaml")
	out, errOut, code = e2etest.RunWithEnv(t, secretEnv, "import", "har", "../../../../internal/har/testdata/shop-chrome.har", "-o", secretive, "--secret", "SHOP_PASSWORD")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "your secrets SHOP_PASSWORD: the recording sent them; the script reads each as ${secret.NAME}")
	src, err := os.ReadFile(secretive)
	require.NoError(t, err)
	st, err := os.Stat(secretive)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a recording's script is its owner's alone, as the HAR is")
	require.Contains(t, string(src), "password: ${secret.SHOP_PASSWORD}")
	require.NotContains(t, string(src)+out+errOut, "lovelace-1815")
	code, doc, runOut := runResult(t, append([]string{"TARGET_URL=" + shop}, secretEnv...), "--vus", "1", "--duration", "1s", secretive)
	require.Equal(t, 0, code, runOut)
	require.Zero(t, doc.Total.ErrorRate, "the shop took the password: %s", runOut)
	require.Positive(t, doc.count("POST /api/orders"), runOut)
	_, errOut, code = e2etest.RunWithEnv(t, nil, "import", "har", "../../../../internal/har/testdata/shop-chrome.har", "--secret", "SHOP_PASSWORD")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--secret SHOP_PASSWORD: BARRAGE_SECRET_SHOP_PASSWORD is not set")

	// What is wrong says where, with its own exit status; wrong usage is 2.
	bad := filepath.Join(dir, "bad.har")
	require.NoError(t, os.WriteFile(bad, []byte(`{"log": {"entries": [{"startedDateTime": "soon", "request": {"method": "GET", "url": "/x"}, "response": {"status": 200}}]}}`), 0o644))
	_, errOut, code = e2etest.RunWithEnv(t, nil, "import", "har", bad)
	require.Equal(t, 65, code, errOut)
	require.Contains(t, errOut, "log.entries[0].startedDateTime: must be a date and time")
	require.Contains(t, errOut, "log.entries[0].request.url: must be an absolute URL")
	_, errOut, code = e2etest.RunWithEnv(t, nil, "import", "har", "../../../../internal/har/testdata/shop-chrome.har", "-o", script, "--users", "../../../../examples/scripts/users.csv")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "a script reads its data files from its own folder")
	_, errOut, code = e2etest.RunWithEnv(t, nil, "record", "--listen", "127.0.0.1:0")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "-o: name the script to write")
	_, errOut, code = e2etest.RunWithEnv(t, nil, "record", "--listen", "0.0.0.0:0", "-o", script)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "loopback address only")
}

// `barrage import har --push` sends the HAR to the server, which converts it with the same
// converter and saves it as a test of the signed-in user; a HAR the server refuses says which
// field is wrong.
func TestImportHARPushSavesATestOnTheServer(t *testing.T) {
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")

	const chrome = "../../../../internal/har/testdata/shop-chrome.har"
	out, errOut, err := e2etest.CLI(t, p, cfg, "", "import", "har", chrome, "--push", "--name", "shop visit")
	require.NoError(t, err, "stderr: %s", errOut)
	id := strings.TrimSpace(out)
	require.Contains(t, errOut, "correlated 3 values:")
	require.Contains(t, errOut, `csrf: regex name="csrf" value="([^"]+)" of GET / -> POST /login (form field csrf)`)
	require.Contains(t, errOut, `Test "shop visit" saved as revision 1`)
	local, _, status := e2etest.RunWithEnv(t, nil, "import", "har", chrome)
	require.Equal(t, 0, status)
	require.Equal(t, local, e2etest.MustCLI(t, p, cfg, "", "tests", "show", id), "the server saved what the CLI converts")

	bad := filepath.Join(t.TempDir(), "bad.har")
	require.NoError(t, os.WriteFile(bad, []byte(`{"log": {"entries": [{"startedDateTime": "2025-01-01T00:00:00Z", "request": {"method": "GET", "url": "/x"}, "response": {"status": 200}}]}}`), 0o644))
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "import", "har", bad, "--push")
	require.Error(t, err)
	require.Contains(t, out+errOut, "422")
	require.Contains(t, out+errOut, "log.entries[0].request.url")
}
