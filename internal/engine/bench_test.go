package engine_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
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
			s := parseB(b, src)
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
			b.ReportMetric(float64(b.N)/res.Elapsed.Seconds(), "req/s")
		})
	}
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
		})
	}
}
