package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// Headers the WebSocket handshake writes itself: a script's would be sent twice.
var wsOwnHeaders = []string{"Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol"}

// websocket runs r's WebSocket session with ex's URL and headers: the upgrade, checked by the
// request's extractors and assertions and recorded under its connect label; then its steps, each
// receive recorded under its own label from the last message sent; the whole session under the
// request's label. A failed step ends the session. It returns the session's class and bytes.
func (v *vu) websocket(ctx context.Context, r *compiledRequest, ex *exchange, measureFrom time.Time) (metrics.ErrorClass, int64, int64) {
	t := v.t
	read, written := t.read.Load(), t.written.Load()
	bytes := func() (int64, int64) { return t.read.Load() - read, t.written.Load() - written }
	start := time.Now()
	rep := &v.rep
	*rep = reply{url: ex.url, body: rep.body[:0], header: rep.header, cookies: rep.cookies[:0]}

	conn, class, failures := v.wsConnect(ctx, r, ex, rep)
	connected := time.Now()
	if ctx.Err() != nil {
		if conn != nil {
			conn.Close()
		}
		return metrics.NoError, 0, 0 // the run ended: not a measurement
	}
	in, out := bytes()
	v.p.rec.Label(r.wsConnect).Record(connected.Sub(start), in, out, class)
	v.p.health.targetTime.Add(int64(connected.Sub(start)))
	if rep.err != nil && errors.Is(rep.err, netpolicy.ErrRefused) {
		// As for a request: every iteration would be refused alike, as fast as the CPU goes.
		v.p.exhaust(fmt.Errorf("request %s: %w", r.r.Name, rep.err))
	}
	if !measureFrom.IsZero() {
		v.p.rec.Label(v.p.scheduleLabel).Record(connected.Sub(measureFrom), 0, 0, class)
	}
	rep.bytesIn, rep.bytesOut = in, out
	v.traceWS(r, ex, "", rep, connected.Sub(start), failures)
	if class != metrics.NoError {
		v.p.errSamples.Add(r.r.WebSocket.Connect, class.String(), failureText(rep, failures), 1)
		in, out = bytes()
		v.p.rec.Label(r.label).Record(time.Since(start), in, out, class)
		return class, in, out
	}
	defer conn.Close()

	lastSend := connected
	for i, st := range r.r.WebSocket.Steps {
		if ctx.Err() != nil {
			return metrics.NoError, 0, 0
		}
		if st.Send != nil {
			msg, err := st.Send.Render(v.lookup, v.valBuf[:0])
			v.valBuf = msg
			// A round trip counts from the send's start: the answer may be in before the
			// write returns.
			lastSend = time.Now()
			if err != nil {
				class = metrics.ErrAssertion // a variable not set: the message is never sent
			} else {
				_ = conn.SetWriteDeadline(lastSend.Add(r.r.Timeout))
				if err = conn.WriteMessage(websocket.TextMessage, msg); err != nil {
					class = classify(err)
				}
			}
			v.traceWSSend(r, ex, msg, err)
			if err != nil {
				v.p.errSamples.Add(r.r.Name, class.String(), err.Error(), 1)
				break
			}
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(st.Timeout))
		*rep = reply{url: ex.url, body: rep.body[:0], header: rep.header}
		// A message is kept to the body cap and the rest read past, as a response's body is: a
		// server sending a giant one costs the generator its bytes, not its memory.
		_, msg, err := conn.NextReader()
		if err == nil {
			err = t.readBody(msg, rep)
			t.releaseBuf()
		}
		took := time.Since(lastSend)
		if ctx.Err() != nil {
			return metrics.NoError, 0, 0
		}
		v.p.health.targetTime.Add(int64(took))
		var stepFailures []string
		if err != nil {
			rep.err, class = err, classify(err)
		} else {
			rep.status = http.StatusOK
			class, stepFailures = v.checkWith(st.Extract, st.Assert, r.wsChecks[i], needsJSON(st), rep, took)
		}
		v.p.rec.Label(r.wsReceive[i]).Record(took, 0, 0, class) // the session counts the bytes
		v.traceWS(r, ex, st.Name, rep, took, stepFailures)
		if class != metrics.NoError {
			v.p.errSamples.Add(st.Name, class.String(), failureText(rep, stepFailures), 1)
			break
		}
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	in, out = bytes()
	v.p.rec.Label(r.label).Record(time.Since(start), in, out, class)
	return class, in, out
}

func needsJSON(st *script.WSStep) bool {
	for _, x := range st.Extract {
		if x.Kind == script.ExtractJSON {
			return true
		}
	}
	for _, a := range st.Assert {
		if a.Kind == script.AssertJSON {
			return true
		}
	}
	return false
}

// wsConnect opens r's WebSocket through the VU's policy, names and certificates, and checks the
// upgrade's response as a request's.
func (v *vu) wsConnect(ctx context.Context, r *compiledRequest, ex *exchange, rep *reply) (*websocket.Conn, metrics.ErrorClass, []string) {
	t := v.t
	dial := t.targets.Dialer(net.Dialer{LocalAddr: t.local, Timeout: r.r.Timeout})
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if t.nw.s.Proxy == nil { // through a proxy, the proxy resolves the name
				addr = t.nw.s.Dial(addr)
			}
			c, err := dial.DialContext(ctx, network, addr)
			if err != nil {
				return nil, withoutResolver(err)
			}
			return t.track(c)
		},
		TLSClientConfig:  t.nw.tlsFor(t.nw.h1TLS, ex.url.Hostname()),
		HandshakeTimeout: r.r.Timeout,
	}
	if p := t.nw.s.Proxy; p != nil {
		d.Proxy = http.ProxyURL(p)
	}
	if v.jar != nil {
		d.Jar = v.jar
	}
	header := http.Header{}
	for _, h := range ex.header {
		own := false
		for _, o := range wsOwnHeaders {
			own = own || strings.EqualFold(h[0], o)
		}
		if !own {
			header.Add(h[0], h[1])
		}
	}
	u := *ex.url
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	ctx, cancel := context.WithTimeout(ctx, r.r.Timeout)
	defer cancel()
	took := time.Now()
	conn, res, err := d.DialContext(ctx, u.String(), header)
	if res != nil {
		rep.status = res.StatusCode
		if v.t.keepHeader {
			rep.header = res.Header
		}
		rep.cookies = append(rep.cookies, res.Cookies()...)
	}
	if err != nil && res == nil {
		rep.err = err
		return nil, classify(err), nil
	}
	class, failures := v.check(r, rep, time.Since(took))
	if err != nil && class == metrics.NoError {
		rep.err, class = err, metrics.ErrAssertion // the server answered, but not with an upgrade
	}
	if class != metrics.NoError && conn != nil {
		conn.Close()
		conn = nil
	}
	return conn, class, failures
}

// traceWS traces the upgrade (step "") or a receive step.
func (v *vu) traceWS(r *compiledRequest, ex *exchange, step string, rep *reply, took time.Duration, failures []string) {
	if v.p.opts.Trace == nil {
		return
	}
	ev := run.TraceEvent{Request: r.r.Name, Method: "GET", URL: ex.url.String(), RequestHeader: append([][2]string(nil), ex.header...),
		Status: rep.status, ResponseHeader: rep.header.Clone(), BytesIn: rep.bytesIn, Duration: took, Err: rep.err, Failures: failures, Vars: v.varsCopy()}
	if step != "" {
		ev.Request, ev.Method, ev.RequestHeader, ev.ResponseHeader = step, "WS RECEIVE", nil, nil
		ev.ResponseBody = append([]byte(nil), rep.body...)
	}
	v.p.opts.Trace(ev)
}

// traceWSSend traces a message sent.
func (v *vu) traceWSSend(r *compiledRequest, ex *exchange, msg []byte, err error) {
	if v.p.opts.Trace == nil {
		return
	}
	ev := run.TraceEvent{Request: r.r.Name, Method: "WS SEND", URL: ex.url.String(), RequestBody: append([]byte(nil), msg...), Err: err, Vars: v.varsCopy()}
	if err != nil {
		ev.Failures = []string{err.Error()}
	}
	v.p.opts.Trace(ev)
}
