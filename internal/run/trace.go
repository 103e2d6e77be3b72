package run

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Redirect is a redirect followed: the status that asked for it and the request sent next.
type Redirect struct {
	Status      int
	Method, URL string
}

// TraceEvent is one exchange of a traced iteration in full: what `barrage debug` prints, what an
// agent answers a debug job with (api.TraceEntryOf), and what the CLI reads back (TraceEntry.Event).
type TraceEvent struct {
	Request string // the request's name
	// Method, URL, RequestHeader and RequestBody are the request as first sent; Redirects the
	// requests that followed.
	Method, URL   string
	RequestHeader [][2]string
	RequestBody   []byte
	// Redirects are the redirects followed, in order: each hop's status and the request it led
	// to. Status, ResponseHeader and ResponseBody are the last hop's.
	Redirects      []Redirect
	Status         int
	ResponseHeader http.Header
	ResponseBody   []byte // the kept part (Options.BodyCap), decoded when it came compressed
	BytesIn        int64  // on the wire, every hop's
	// Encoding is the Content-Encoding the body was decoded from, "" when it came plain;
	// Decoded is its decoded size, which passed the body cap when DecodedPart.
	Encoding    string
	Decoded     int64
	DecodedPart bool
	Duration    time.Duration
	Err         error
	// Vars are the variables extracted so far in the iteration.
	Vars map[string]string
	// Failures lists the checks that failed; empty when all passed.
	Failures []string
}

// Preview shows up to n bytes of a body as text, or says it is binary: what a trace prints.
func Preview(b []byte, n int) string {
	cut := b
	if len(cut) > n {
		cut = cut[:n]
	}
	if !utf8.Valid(cut) && !utf8.Valid(cut[:max(0, len(cut)-3)]) {
		return fmt.Sprintf("(%d bytes of binary)", len(b))
	}
	s := strings.ToValidUTF8(string(cut), "�")
	if len(b) > n {
		s += fmt.Sprintf("\n… (%d more bytes)", len(b)-n)
	}
	return s
}
