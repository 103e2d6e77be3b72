package engine

import (
	"fmt"
	"maps"
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

// TraceEvent is one exchange in full, for `barrage debug`.
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

// varsCopy is the iteration's variables so far, for a trace.
func (v *vu) varsCopy() map[string]string { return maps.Clone(v.vars) }

func (v *vu) trace(r *compiledRequest, ex *exchange, rep *reply, took time.Duration, failures []string) {
	vars := v.varsCopy()
	v.p.opts.Trace(TraceEvent{
		Request: r.r.Name, Method: ex.method, URL: ex.url.String(),
		RequestHeader: append([][2]string(nil), ex.header...), RequestBody: requestBody(ex),
		Redirects: append([]Redirect(nil), rep.redirects...),
		Status:    rep.status, ResponseHeader: rep.header.Clone(), ResponseBody: append([]byte(nil), rep.body...),
		BytesIn: rep.bytesIn, Encoding: rep.encoding, Decoded: rep.decoded, DecodedPart: rep.decodedPart, Duration: took, Err: rep.err, Vars: vars, Failures: failures,
	})
}

func (v *vu) traceFailure(r *compiledRequest, err error) {
	if v.p.opts.Trace != nil {
		// The URL as far as it renders: the variables that are set, and ${name} for the one
		// that is not (the failure names it).
		v.p.opts.Trace(TraceEvent{Request: r.r.Name, Method: r.r.Method, URL: r.r.URL.RenderKnown(v.lookup), Err: err, Failures: []string{err.Error()}})
	}
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

// requestBody is the body of ex as a trace shows it.
func requestBody(ex *exchange) []byte {
	if ex.stream != nil {
		return ex.stream.preview()
	}
	return append([]byte(nil), ex.body...)
}
