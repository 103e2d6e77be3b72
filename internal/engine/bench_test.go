package engine_test

import (
	"bufio"
	"context"
	"io"
	"net"
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
