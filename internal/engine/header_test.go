package engine

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

var leanSeeds = []string{
	"HTTP/1.1 200 OK\r\nServer: nginx/1.26.3\r\nDate: Sun, 22 Nov 2026 08:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 100\r\nLast-Modified: Sun, 22 Nov 2026 07:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6740-64\"\r\nAccept-Ranges: bytes\r\n\r\n",
	"HTTP/1.1 201 Created\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 302 Found\r\nLocation: /next?x=1\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 500\r\nContent-Length: 2\r\n\r\nno",
	"HTTP/1.1 200 OK\r\nX-Tabs:\ta\tb c\t\r\nX-Obs: caf\xc3\xa9 long enough for a word or two\r\nContent-Length: 0\r\n\r\n",
	// Not plain: fasthttp's parser reads these.
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1",
	"HTTP/1.1 200 OK\r\nX-Del: a long value with a \x7f in it\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-CR: a bare\rCR inside a long value\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX Space: a\r\nContent-Length: 0\r\n\r\n",
}

// FuzzLeanHeaderAgreesWithFasthttp: whatever the lean parser accepts, fasthttp's reads the same
// way: status, body length, connection, Location and cookies. (What it declines goes to
// fasthttp's parser, so only acceptance needs checking.)
func FuzzLeanHeaderAgreesWithFasthttp(f *testing.F) {
	for _, s := range leanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h leanHeader
		n := parseLean(b, &h)
		if n == 0 {
			return
		}
		var want fasthttp.ResponseHeader
		if err := want.Read(bufio.NewReader(bytes.NewReader(b[:n]))); err != nil {
			t.Fatalf("lean accepted %q, fasthttp refused it: %v", b[:n], err)
		}
		got := leanResponse(t, b)
		if got.StatusCode() != want.StatusCode() || got.ContentLength() != want.ContentLength() ||
			got.ConnectionClose() != want.ConnectionClose() ||
			!bytes.Equal(got.Peek("Location"), want.Peek("Location")) ||
			cookies(got) != cookies(&want) {
			t.Fatalf("%q:\nlean     status %d length %d close %v location %q cookies %q\nfasthttp status %d length %d close %v location %q cookies %q",
				b[:n], got.StatusCode(), got.ContentLength(), got.ConnectionClose(), got.Peek("Location"), cookies(got),
				want.StatusCode(), want.ContentLength(), want.ConnectionClose(), want.Peek("Location"), cookies(&want))
		}
	})
}

// leanResponse reads b's headers with readLeanHeader, which must accept them and leave the body.
func leanResponse(t *testing.T, b []byte) *fasthttp.ResponseHeader {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(b), 64<<10)
	var resp fasthttp.Response
	var h leanHeader
	ok, err := readLeanHeader(br, &resp, &h)
	if !ok || err != nil {
		t.Fatalf("readLeanHeader(%q) = %v, %v", b, ok, err)
	}
	if rest, _ := br.Peek(br.Buffered()); !bytes.Equal(rest, b[parseLean(b, &h):]) {
		t.Fatalf("left %q, want the body", rest)
	}
	return &resp.Header
}

func cookies(h *fasthttp.ResponseHeader) string {
	var out []string
	for _, v := range h.Cookies() {
		out = append(out, string(v))
	}
	return strings.Join(out, "|")
}

func TestLeanHeaderTakesPlainResponsesOnly(t *testing.T) {
	var h leanHeader
	for i, s := range leanSeeds {
		plain := i < 7
		if got := parseLean([]byte(s), &h) > 0; got != plain {
			t.Errorf("parseLean(%q) accepted %v, want %v", s, got, plain)
		}
	}
}

// BenchmarkParseLean parses nginx's headers for a small file, the bench's every response.
func BenchmarkParseLean(b *testing.B) {
	buf := []byte(leanSeeds[0])
	var h leanHeader
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if parseLean(buf, &h) == 0 {
			b.Fatal("declined")
		}
	}
}

// A failed lookup's error does not name the agent's resolver, which a debug shows its users.
func TestALookupErrorDoesNotNameTheResolver(t *testing.T) {
	err := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "shop.invalid", Server: "10.255.255.53:53", IsNotFound: true}}
	got := withoutResolver(err).Error()
	if strings.Contains(got, "10.255.255.53") || !strings.Contains(got, "lookup shop.invalid: no such host") {
		t.Fatalf("withoutResolver: %s", got)
	}
}
