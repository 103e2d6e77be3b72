package engine

import (
	"bufio"
	"bytes"
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
	first := bytes.IndexByte(b, '\n')                                            // the status line's end
	if first < 0 || b[first-1] != '\r' || !plainValue(b[len(proto)+3:first-1]) { // the reason phrase
		return 0
	}
	chunked := false
	var end int // the block's length, up to its blank line
	for rest := b[first+1:]; ; {
		i := bytes.IndexByte(rest, '\n')
		if i < 1 || rest[i-1] != '\r' {
			return 0 // not all in b yet, or a bare LF
		}
		if i == 1 { // the blank line
			end = len(b) - len(rest) + 2
			break
		}
		line := rest[:i-1]
		rest = rest[i+1:]
		colon := bytes.IndexByte(line, ':')
		if colon < 1 || !plainName(line[:colon]) || !plainValue(line[colon+1:]) {
			return 0 // folded, nameless, or with bytes a header may not hold
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		switch {
		case equalFold(name, "Content-Length"):
			n, ok := parseDigits(value)
			if !ok || h.contentLength != unstated {
				return 0 // not a number, or stated twice
			}
			h.contentLength = n
		case equalFold(name, "Transfer-Encoding"):
			if chunked || !equalFold(value, "chunked") {
				return 0
			}
			chunked = true
		case equalFold(name, "Connection"):
			switch {
			case equalFold(value, "close"):
				h.close = true
			case !equalFold(value, "keep-alive"):
				return 0
			}
		case equalFold(name, "Location"):
			if h.location != nil {
				return 0
			}
			h.location = value
		case equalFold(name, "Set-Cookie"):
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

// plainName says whether a header name is a token; plainValue whether a value holds only
// visible characters, spaces and tabs. Anything else goes to fasthttp's parser.
func plainName(name []byte) bool {
	for _, c := range name {
		if !tokenChar[c] {
			return false
		}
	}
	return true
}

func plainValue(value []byte) bool {
	for _, c := range value {
		if !valueChar[c] {
			return false
		}
	}
	return true
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

// equalFold compares an ASCII header name or token with s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
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
