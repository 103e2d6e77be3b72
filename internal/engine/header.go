package engine

import (
	"bufio"
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/valyala/fasthttp"
)

// leanHeader is what the engine needs of a response's headers when it keeps none of them
// whole: the status, how the body ends, and the headers that act on the next request.
type leanHeader struct {
	status        int
	contentLength int  // -1 for a chunked body
	close         bool // Connection: close
	// location and cookies alias the reader's buffer: valid until the next read.
	location []byte
	cookies  [][]byte // Set-Cookie values
}

// readLeanHeader reads a response's headers from br into resp when they are plain, which is
// most responses: HTTP/1.1, a final status, CRLF line ends, a body of stated length or chunked,
// nothing folded or repeated where it matters. It reads only the headers that act on the
// exchange (Content-Length, Transfer-Encoding, Connection, Location, Set-Cookie) where fasthttp's
// parser copies and indexes every one, which was the largest part of the generator's own CPU per
// request. ok is false, with nothing read, when the headers are not plain or not yet all in
// br's buffer: the caller then reads them with fasthttp, which knows every corner of HTTP/1.1.
func readLeanHeader(br *bufio.Reader, resp *fasthttp.Response, h *leanHeader) (ok bool, err error) {
	if _, err := br.Peek(1); err != nil { // the first read of the response
		return false, err
	}
	buf, _ := br.Peek(br.Buffered())
	n := parseLean(buf, h)
	if n == 0 {
		return false, nil
	}
	resp.Header.SetStatusCode(h.status)
	resp.Header.SetContentLength(h.contentLength)
	if h.close {
		resp.Header.SetConnectionClose()
	}
	if h.location != nil {
		resp.Header.SetBytesV("Location", h.location)
	}
	for _, c := range h.cookies {
		resp.Header.AddBytesV("Set-Cookie", c)
	}
	_, err = br.Discard(n)
	return true, err
}

// parseLean parses the header block at the start of b into h and returns its length, or 0 when
// b does not hold a whole block or the block is anything but plain (see readLeanHeader).
func parseLean(b []byte, h *leanHeader) int {
	const unstated = -3 // no Content-Length read yet
	*h = leanHeader{cookies: h.cookies[:0], contentLength: unstated}
	const proto = "HTTP/1.1 "
	if len(b) < len(proto)+4 || string(b[:len(proto)]) != proto {
		return 0 // HTTP/1.0 keeps connections by other rules: fasthttp's parser knows them
	}
	code := b[len(proto) : len(proto)+3]
	for _, c := range code {
		if c < '0' || c > '9' {
			return 0
		}
	}
	h.status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if h.status < 200 || h.status > 599 {
		return 0 // 1xx precede the real answer
	}
	if c := b[len(proto)+3]; c != ' ' && c != '\r' {
		return 0
	}
	i := lineEnd(b, len(proto)+3) // the reason phrase's end
	if i < 0 {
		return 0
	}
	chunked := false
	var end int // the block's length, up to its blank line
	for {
		if i+3 < len(b) && b[i+2] == '\r' && b[i+3] == '\n' { // the blank line
			end = i + 4
			break
		}
		start := i + 2
		colon := start // the name: a token up to its colon
		for colon < len(b) && tokenChar[b[colon]] {
			colon++
		}
		if colon == start || colon == len(b) || b[colon] != ':' {
			return 0 // folded, nameless, with bytes a name may not hold, or not all in b yet
		}
		if i = lineEnd(b, colon+1); i < 0 {
			return 0
		}
		name, value := b[start:colon], trimOWS(b[colon+1:i])
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseDigits(value)
			if !ok || h.contentLength != unstated {
				return 0 // not a number, or stated twice
			}
			h.contentLength = n
		case equalFold(name, "transfer-encoding"):
			if chunked || !equalFold(value, "chunked") {
				return 0
			}
			chunked = true
		case equalFold(name, "connection"):
			switch {
			case equalFold(value, "close"):
				h.close = true
			case !equalFold(value, "keep-alive"):
				return 0
			}
		case equalFold(name, "location"):
			if h.location != nil {
				return 0
			}
			h.location = value
		case equalFold(name, "set-cookie"):
			h.cookies = append(h.cookies, value)
		}
	}
	switch {
	case chunked && h.contentLength == unstated:
		h.contentLength = -1
	case chunked || h.contentLength == unstated:
		return 0 // both, or neither: a body to the connection's end
	}
	return end
}

// lineEnd returns the index of the CR LF that ends the header value or reason phrase starting
// at b[i], or -1 when the value holds a byte other than visible ones, spaces and tabs (a bare CR
// or LF among them), or b ends first. Anything else goes to fasthttp's parser.
func lineEnd(b []byte, i int) int {
	// Eight bytes at a time up to the first below ' ' or 0x7f: the lowest byte the masks flag
	// is such a byte (a borrow can only flag bytes above it).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i < len(b) {
		if i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			del := x ^ 0x7f*ones
			m := ((x-' '*ones)&^x | (del-ones)&^del) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		switch c := b[i]; {
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				return i
			}
			return -1
		case !valueChar[c]:
			return -1
		}
		i++
	}
	return -1
}

// tokenChar and valueChar are the bytes a header name and a header value may hold.
var tokenChar, valueChar = func() (token, value [256]bool) {
	for c := range 256 {
		value[c] = c >= ' ' && c != 0x7f || c == '\t'
		token[c] = c > ' ' && c < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, rune(c))
	}
	return token, value
}()

// trimOWS trims the spaces and tabs around a header value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold says whether an ASCII header name or token equals lower, a lower-case string,
// ignoring case. Its length test inlines: most names are told apart by it alone.
func equalFold(b []byte, lower string) bool {
	return len(b) == len(lower) && foldsTo(b, lower)
}

func foldsTo(b []byte, lower string) bool {
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// parseDigits parses a non-negative decimal of at most 15 digits.
func parseDigits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
