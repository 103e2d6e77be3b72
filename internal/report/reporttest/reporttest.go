// Package reporttest opens a report in a real headless Chromium for tests: the page is served
// from 127.0.0.1, every other address goes to a proxy that counts what reached it, and the test
// gets the page's DOM once its scripts ran and a screenshot.
package reporttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv makes a missing Chromium fail the tests instead of skipping them: .ci/run sets it
// after installing Debian's chromium.
const RequireEnv = "BARRAGE_REQUIRE_CHROMIUM"

// Page is a page as Chromium drew it.
type Page struct {
	// DOM is the document after its scripts ran.
	DOM string
	// Screenshot is what a 1200 px wide window showed.
	Screenshot image.Image
	// Served are the paths the page's server was asked for; Fetched, the request line of
	// each request for any other address (but the updater's and account checks Chromium
	// sends by itself whatever the page).
	Served, Fetched []string
}

// Chromium is the path of a Chromium, or the test is skipped (failed when RequireEnv is set).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BARRAGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("no chromium on PATH (%s is set): install Debian's package: apt-get install chromium", RequireEnv)
	}
	t.Skip("no chromium on PATH: apt-get install chromium to run the report's browser tests")
	return ""
}

// Open serves html at 127.0.0.1 and opens it in a headless Chromium whose proxy for every other
// address is a listener that records what reaches it.
func Open(t testing.TB, html []byte) Page {
	t.Helper()
	bin := Chromium(t)
	var (
		mu      sync.Mutex
		served  []string
		fetched []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/report.html" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(html)
	}))
	t.Cleanup(srv.Close)
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				// A connection that asked nothing (Chromium opens one ahead, speculatively)
				// fetched nothing.
				if strings.TrimSpace(line) != "" && !chromiumsOwn(line) {
					mu.Lock()
					fetched = append(fetched, line)
					mu.Unlock()
				}
				fmt.Fprint(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()

	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	url := srv.URL + "/report.html"
	dom := chromium(t, bin, dir, proxy.Addr().String(), "--dump-dom", url)
	chromium(t, bin, dir, proxy.Addr().String(), "--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return Page{DOM: dom, Screenshot: img, Served: served, Fetched: fetched}
}

// chromium runs one headless Chromium on url with the extra argument and returns its stdout.
// proxy takes every address but the page's (loopback is never proxied); the flags keep
// Chromium's own background traffic (updates, safe browsing, sync) from starting at all.
func chromium(t testing.TB, bin, dir, proxy, arg, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--disable-domain-reliability", "--metrics-recording-only",
		"--disable-client-side-phishing-detection", "--safebrowsing-disable-auto-update", "--no-default-browser-check",
		"--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,SigninIntercept,AccountConsistency",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1200,2400", "--virtual-time-budget=5000",
		"--proxy-server="+proxy, arg, url)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", arg, err, errOut.String())
	}
	return out.String()
}

// chromiumsOwn reports whether a proxied request line is one Chromium sends by itself, whatever
// the page, which its flags do not stop: the component updater's and the account check's.
func chromiumsOwn(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 {
		return false
	}
	host := f[1]
	if u, err := url.Parse(f[1]); err == nil && u.Host != "" {
		host = u.Host
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return h == "update.googleapis.com" || h == "accounts.google.com"
}

var inkRE = regexp.MustCompile(`id="(chart-[a-z0-9-]+)"[^>]*data-ink="(\d+)"`)

// Ink is, for each chart the page drew, how many pixels carry one of its series' colours, as
// the page's script counted them; and how many charts it drew.
func (p Page) Ink() (ink map[string]int, charts int) {
	ink = map[string]int{}
	for _, m := range inkRE.FindAllStringSubmatch(p.DOM, -1) {
		n, _ := strconv.Atoi(m[2])
		ink[m[1]] = n
	}
	if m := regexp.MustCompile(`data-charts="(\d+)"`).FindStringSubmatch(p.DOM); m != nil {
		charts, _ = strconv.Atoi(m[1])
	}
	return ink, charts
}

// Pixels counts the screenshot's pixels within 8 of the colour #rrggbb on each channel.
func (p Page) Pixels(hex string) int {
	want, _ := strconv.ParseUint(hex[1:], 16, 32)
	wr, wg, wb := int(want>>16), int(want>>8&0xff), int(want&0xff)
	near := func(a, b int) bool { return a-b < 8 && b-a < 8 }
	n := 0
	bounds := p.Screenshot.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := p.Screenshot.At(x, y).RGBA()
			if near(int(r>>8), wr) && near(int(g>>8), wg) && near(int(b>>8), wb) {
				n++
			}
		}
	}
	return n
}
