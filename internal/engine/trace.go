package engine

import (
	"maps"
	"time"

	"github.com/barrage-load/barrage/internal/run"
)

// varsCopy is the iteration's variables so far, for a trace.
func (v *vu) varsCopy() map[string]string { return maps.Clone(v.vars) }

func (v *vu) trace(r *compiledRequest, ex *exchange, rep *reply, took time.Duration, failures []string) {
	vars := v.varsCopy()
	v.p.opts.Trace(run.TraceEvent{
		Request: r.r.Name, Method: ex.method, URL: ex.url.String(),
		RequestHeader: append([][2]string(nil), ex.header...), RequestBody: requestBody(ex),
		Redirects: append([]run.Redirect(nil), rep.redirects...),
		Status:    rep.status, ResponseHeader: rep.header.Clone(), ResponseBody: append([]byte(nil), rep.body...),
		BytesIn: rep.bytesIn, Encoding: rep.encoding, Decoded: rep.decoded, DecodedPart: rep.decodedPart, Duration: took, Err: rep.err, Vars: vars, Failures: failures,
	})
}

func (v *vu) traceFailure(r *compiledRequest, err error) {
	if v.p.opts.Trace != nil {
		// The URL as far as it renders: the variables that are set, and ${name} for the one
		// that is not (the failure names it).
		v.p.opts.Trace(run.TraceEvent{Request: r.r.Name, Method: r.r.Method, URL: r.r.URL.RenderKnown(v.lookup), Err: err, Failures: []string{err.Error()}})
	}
}

// requestBody is the body of ex as a trace shows it.
func requestBody(ex *exchange) []byte {
	if ex.stream != nil {
		return ex.stream.preview()
	}
	return append([]byte(nil), ex.body...)
}
