package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// fixedServer answers every request on 127.0.0.1 with the same small response, reading
// requests as cheaply as it can, so that a benchmark measures the client.
func fixedServer(b *testing.B) string {
	b.Helper()
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
	return rawServer(b, func(c net.Conn, br *bufio.Reader) bool {
		// A request without a body ends at the blank line.
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return false
			}
			if len(line) <= 2 {
				break
			}
		}
		_, err := io.WriteString(c, resp)
		return err == nil
	})
}

// BenchmarkClosedModelRequest is one request of a closed-model run, end to end through the
// engine: scheduling, the HTTP client, checks and recording. ns/op is the engine's and the
// in-process server's CPU per request together; allocs/op is the engine's (the server
// allocates nothing per request).
func BenchmarkClosedModelRequest(b *testing.B) {
	target := fixedServer(b)
	for _, cookies := range []bool{false, true} {
		name := "cookies=false"
		if cookies {
			name = "cookies=true"
		}
		b.Run(name, func(b *testing.B) {
			src := strings.NewReplacer("${target}", target, "${cookies}", map[bool]string{false: "false", true: "true"}[cookies]).Replace(`
version: 1
name: bench
session:
  cookies: ${cookies}
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", assert: [ { status: 200 } ] }
load:
  vus: 8
  iterations: 1
`)
			elapsed := runRequests(b, parseB(b, src))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
		})
	}
}

// idleServerEnv, when set, makes the test binary a server of fixed responses on 127.0.0.1 that
// prints its address: BenchmarkIdleVU's target, in a process of its own so that its connections
// are not counted in the VUs' memory.
const idleServerEnv = "BARRAGE_ENGINE_IDLE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(idleServerEnv) != "" {
		serveFixed()
		return
	}
	os.Exit(m.Run())
}

// serveFixed answers every request with the same small response until its standard input
// closes.
func serveFixed() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("http://" + ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) > 2 {
					continue
				}
				if _, err := io.WriteString(c, resp); err != nil {
					return
				}
			}
		}()
	}
}

// BenchmarkIdleVU is the memory a VU holds while it thinks after one request, its keep-alive
// connection open: the resident anonymous memory of the process (rss-B/VU) and the heap and
// stacks in use (heap+stack-B/VU), each once every VU has made its request, less the same
// before the run, over the VUs. Both are read after two collections (which shrink the VUs'
// stacks as far as they go) and the return of the freed pages to the system: what the VUs hold,
// not the garbage a collection would free, which comes and goes with the collector's timing
// (the process's resident size read without this moved by a fifth between runs). With -short,
// 500 VUs rather than 10,000.
func BenchmarkIdleVU(b *testing.B) {
	vus := 10000
	if testing.Short() {
		vus = 500
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(vus)+256 {
		b.Skipf("%d VUs need %d open files, and the limit is %d", vus, vus+256, lim.Cur)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	srv := exec.Command(self)
	srv.Env = append(os.Environ(), idleServerEnv+"=1")
	stdin, err := srv.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = srv.Wait() }()
	target, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	s := parseB(b, strings.NewReplacer("${target}", strings.TrimSpace(target), "${vus}", strconv.Itoa(vus)).Replace(`
version: 1
name: idle
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", think: { fixed: 10m } }
load:
  vus: ${vus}
  ramp_up: 1s
  duration: 10m
  graceful_stop: 0s
`))
	for range b.N {
		rss0, heap0 := idleMemory(b)
		ctx, cancel := context.WithCancel(context.Background())
		var requests atomic.Int64
		allIdle := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := engine.Run(ctx, s, engine.Options{OnSecond: func(sec run.Second) {
				if st := sec.Snapshot.Labels[metrics.RequestKey("r")]; st != nil && requests.Add(st.Requests) == int64(vus) {
					close(allIdle)
				}
			}})
			done <- err
		}()
		select {
		case <-allIdle:
		case err := <-done:
			cancel()
			b.Fatalf("the run ended before its VUs were idle: %v", err)
		}
		rss, heap := idleMemory(b)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rss-rss0)/float64(vus), "rss-B/VU")
		b.ReportMetric(float64(heap-heap0)/float64(vus), "heap+stack-B/VU")
	}
}

// idleMemory is the process's resident anonymous memory and its heap and stacks in use, after
// two collections and the return of the freed pages to the system.
func idleMemory(b *testing.B) (rss, heap int64) {
	b.Helper()
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for line := range strings.Lines(string(status)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssAnon:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb << 10
		}
	}
	return rss, int64(ms.HeapInuse + ms.StackInuse)
}

// BenchmarkCheckedRequest is one request of a closed-model run whose response is the 20 KB
// catalogue scripts/bench-compression.sh serves, checked in the ways a script can: its status
// alone, a regular expression over the body, one JSON assertion (the bench script's), and three
// JSON assertions, shallow, deep and near the end, reading the same body. ns/op is the engine's
// and the in-process server's CPU per request together; allocs/op is the engine's.
func BenchmarkCheckedRequest(b *testing.B) {
	doc, err := os.ReadFile("../script/testdata/catalogue.json")
	if err != nil {
		b.Fatal(err)
	}
	resp := append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(doc))+"\r\n\r\n"), doc...)
	target := rawServer(b, func(c net.Conn, br *bufio.Reader) bool {
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return false
			}
			if len(line) <= 2 {
				break
			}
		}
		_, err := c.Write(resp)
		return err == nil
	})
	for _, bc := range []struct{ name, assert string }{
		{"status", `{ status: 200 }`},
		{"regex", `{ body_matches: '"id": 100000,' }`},
		{"json", `{ json: "$[0].id", exists: true }`},
		{"json3", `{ json: "$[0].id", exists: true }, { json: "$[16].price.amount", exists: true }, { json: "$[-1].images[-1]", exists: true }`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := parseB(b, strings.NewReplacer("${target}", target, "${assert}", bc.assert).Replace(`
version: 1
name: bench
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", assert: [ ${assert} ] }
load:
  vus: 8
  iterations: 1
`))
			runRequests(b, s)
		})
	}
}

// pureSigner sets a header made of the request's method and URL, as a signing plugin does,
// and says whether it is pure as its field says.
type pureSigner struct{ pure bool }

func (pureSigner) Configure(context.Context, []byte) error { return nil }

func (s pureSigner) PureBefore() bool { return s.pure }

func (pureSigner) Before(_ context.Context, _ sdk.Call, req *sdk.Request) error {
	req.Header.Set("X-Signature", req.Method+" "+req.URL)
	return nil
}

func (pureSigner) After(context.Context, sdk.Call, *sdk.Request, *sdk.Response) (sdk.Outcome, error) {
	return sdk.Outcome{}, nil
}

func (pureSigner) SkipAfter() bool { return true }

// BenchmarkURLHookRequest is BenchmarkClosedModelRequest with a URL hook on the request that
// adds a header, served over gRPC in this process (sdktest), pure (answered from what the host
// kept after the first call) and not (a call each time).
func BenchmarkURLHookRequest(b *testing.B) {
	target := fixedServer(b)
	for _, pure := range []bool{true, false} {
		b.Run(fmt.Sprintf("pure=%t", pure), func(b *testing.B) {
			s := parseB(b, strings.ReplaceAll(`
version: 1
name: bench
plugins:
  - { use: sign@1.0.0, as: sign, kind: url }
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", plugins: [sign], assert: [ { status: 200 } ] }
load:
  vus: 8
  iterations: 1
`, "${target}", target))
			hook := sdktest.Start(b, &sdk.Plugin{Name: "sign", Version: "1.0.0", URL: pureSigner{pure: pure}}).URL()
			if err := hook.Configure(context.Background(), []byte(`{}`)); err != nil {
				b.Fatal(err)
			}
			s.Load.Iterations = b.N
			b.ReportAllocs()
			b.ResetTimer()
			res, err := engine.Run(context.Background(), s, engine.Options{Plugins: map[string]engine.Plugin{"sign": {URL: []sdk.URLHook{hook}}}})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if st := res.Total.Labels[metrics.RequestKey("r")]; st == nil || st.Requests != int64(b.N) || st.Failed() != 0 {
				b.Fatalf("want %d clean requests, got %+v", b.N, st)
			}
			b.ReportMetric(float64(b.N)/res.Elapsed.Seconds(), "req/s")
		})
	}
}

// runRequests runs s, whose one request is named r, for b.N iterations, timing the run alone,
// and fails unless every request came back clean. It returns how long the run took.
func runRequests(b *testing.B, s *script.Script) time.Duration {
	s.Load.Iterations = b.N
	b.ReportAllocs()
	b.ResetTimer()
	res, err := engine.Run(context.Background(), s, engine.Options{})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if st := res.Total.Labels[metrics.RequestKey("r")]; st == nil || st.Requests != int64(b.N) || st.Failed() != 0 {
		b.Fatalf("want %d clean requests, got %+v", b.N, st)
	}
	return res.Elapsed
}
