package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/logging"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyClientIP
	keyPrincipal
	keyBody
	keySecure
	keyCookies
)

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

// ClientIP returns the client address the request came from, as decided by the trusted-proxy
// setting.
func ClientIP(ctx context.Context) netip.Addr {
	ip, _ := ctx.Value(keyClientIP).(netip.Addr)
	return ip
}

// validRequestID accepts a client-sent X-Request-ID only when it cannot forge log lines.
func validRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// requestID gives each request an id, kept from X-Request-ID when sane, echoed in the response
// and carried by every log line of the request.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !validRequestID(id) {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-ID", id)
		ctx := context.WithValue(r.Context(), keyRequestID, id)
		ctx = logging.With(ctx, slog.String("request_id", id))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// clientIP decides the client's address, and whether it came over TLS. X-Forwarded-For (and
// X-Forwarded-Proto) is believed only from trusted proxies, and then only up to the first address
// that is not itself a trusted proxy, read from the right: whatever a client writes to the left of
// that is spoofable.
func clientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip := remoteAddr(r)
			secure := r.TLS != nil
			if ip.IsValid() && isTrusted(ip) {
				secure = secure || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
				hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
				for i := len(hops) - 1; i >= 0; i-- {
					hop, ok := parseHop(hops[i])
					if !ok {
						break
					}
					ip = hop.Unmap()
					if !isTrusted(ip) {
						break
					}
				}
			}
			ctx := context.WithValue(r.Context(), keyClientIP, ip)
			next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, keySecure, secure)))
		})
	}
}

// parseHop reads one X-Forwarded-For entry: an address, or an address with a port as some
// balancers write it.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	return netip.Addr{}, false
}

func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

// statusRecorder remembers the status and size of a response for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessLog logs one line per request, and turns a panic into a logged 500 problem. It logs the
// path without the query string, which is the client's to fill.
func accessLog(log *slog.Logger, observe func(route, method string, status int, d time.Duration)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w}
			// The principal is learned deeper in the chain; a holder lets this line report it.
			holder := &principalHolder{}
			r = r.WithContext(context.WithValue(r.Context(), keyPrincipal, holder))
			defer func() {
				if v := recover(); v != nil {
					if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
						panic(v)
					}
					log.ErrorContext(r.Context(), "panic", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
					if rec.status == 0 {
						writeProblem(rec, r, problemFor(fmt.Errorf("panic: %v", v)))
					}
				}
				attrs := []slog.Attr{
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", rec.status),
					slog.Int64("bytes", rec.bytes),
					slog.Duration("duration", time.Since(start)),
					slog.String("client_ip", ClientIP(r.Context()).String()),
				}
				level := slog.LevelInfo
				switch p := holder.p; {
				case p != nil && p.Agent != nil:
					attrs = append(attrs, slog.String("agent_id", p.Agent.ID.String()))
					if rec.status < 400 {
						// An agent asks for work every few seconds and reports every second:
						// what went well is for debugging.
						level = slog.LevelDebug
					}
				case p != nil:
					attrs = append(attrs, slog.String("user_id", p.User.ID.String()))
				}
				log.LogAttrs(r.Context(), level, "request", attrs...)
				if observe != nil {
					route := ""
					if rctx := chi.RouteContext(r.Context()); rctx != nil {
						route = rctx.RoutePattern()
					}
					observe(route, r.Method, rec.status, time.Since(start))
				}
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// fileRoute is the path of a test's data file, whose uploads have a limit of their own.
var fileRoute = regexp.MustCompile(`^/v1/tests/[^/]+/files/[^/]+$`)

// limitBody bounds the request's body: more than max bytes (fileMax for a data file's upload)
// is refused with 413, a body sent by no one in particular is read a few at a time and small,
// and a compressed one is refused with 415. It reads nothing itself: bufferBody reads the body
// whole once the route knows who sends it (authorize), so that a request with a token that is
// not one costs the server no body at all. A plugin version's upload is the exception: it is
// streamed to storage as it arrives, within uploadMax, and never read whole.
func limitBody(bodyMax, fileMax, uploadMax int64, anonReaders int) func(http.Handler) http.Handler {
	// Bodies sent by no one in particular are small, read so many at a time, a few of them from
	// each address, and each within anonReadTimeout: a crowd of anonymous connections each
	// trickling a body can neither pin the server's memory (150 of them held 150 MiB for 30 s)
	// nor, from one address, take every place and keep everyone else from signing in (64
	// connections trickling a byte every 2 s did).
	anon := make(chan struct{}, anonReaders)
	var mu sync.Mutex
	fromClient := map[string]int{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			for _, ce := range strings.Split(strings.Join(r.Header.Values("Content-Encoding"), ","), ",") {
				if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
					// Read as sent, a gzip body would be taken for garbage, or ignored: refused, saying so.
					writeProblem(w, r, problem{Type: "about:blank", Status: http.StatusUnsupportedMediaType,
						Detail: fmt.Sprintf("Request bodies are read as sent: Content-Encoding %q is not supported.", ce)})
					return
				}
			}
			max := bodyMax
			if !sendsCredentials(r) {
				// Sign-up, login and refresh need a few hundred bytes; a protected route will
				// refuse the request whatever its body.
				max = min(max, anonBodyMax)
				client := account.ClientKey(ClientIP(r.Context()))
				mu.Lock()
				crowded := fromClient[client] >= anonPerClient
				if !crowded {
					fromClient[client]++
				}
				mu.Unlock()
				if crowded {
					writeProblem(w, r, problem{Type: "about:blank", Status: http.StatusServiceUnavailable, retryAfter: 1,
						Detail: "Too many requests without credentials from your address are being read at once: try again in a second."})
					return
				}
				defer func() {
					mu.Lock()
					defer mu.Unlock()
					if fromClient[client]--; fromClient[client] <= 0 {
						delete(fromClient, client)
					}
				}()
				select {
				case anon <- struct{}{}:
					defer func() { <-anon }()
				default:
					writeProblem(w, r, problem{Type: "about:blank", Status: http.StatusServiceUnavailable, retryAfter: 1,
						Detail: "Too many requests without credentials are being read at once: try again in a second."})
					return
				}
				_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(anonReadTimeout))
			}
			if uploadMax > 0 && r.Method == http.MethodPost && publishRoute.MatchString(routePath(r)) && sendsCredentials(r) {
				if r.ContentLength > uploadMax {
					writeProblem(w, r, problem{Type: typeTooLarge, Status: http.StatusRequestEntityTooLarge,
						Detail: fmt.Sprintf("The request body is larger than %d bytes.", uploadMax)})
					return
				}
				r.Body = http.MaxBytesReader(w, r.Body, uploadMax)
				// The server's read timeout is for requests that fit in memory; an upload of
				// hundreds of megabytes gets the time a slow link needs.
				_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(transferTimeout))
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyBody, &body{streamed: true})))
				return
			}
			// Only a request that says who it is may make the server hold a data file's size.
			if r.Method == http.MethodPut && fileRoute.MatchString(routePath(r)) && sendsCredentials(r) {
				max = fileMax
			}
			if r.ContentLength > max {
				writeProblem(w, r, tooLarge(max))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyBody, &body{max: max})))
		})
	}
}

// body is what limitBody decided of a request's body, and what bufferBody read of it.
type body struct {
	max      int64
	streamed bool
	raw      []byte
}

func tooLarge(max int64) problem {
	return problem{Type: typeTooLarge, Status: http.StatusRequestEntityTooLarge,
		Detail: fmt.Sprintf("The request body is larger than %d bytes.", max)}
}

// unread reports whether r has a body that nothing has read yet: refused by limitBody, or
// before bufferBody.
func unread(r *http.Request) bool {
	b, _ := r.Context().Value(keyBody).(*body)
	if b == nil {
		return r.Body != nil && r.Body != http.NoBody
	}
	return !b.streamed && b.raw == nil
}

// bufferBody reads r's body whole, within what limitBody allowed, so that the validator and the
// handler can both read it; the handler finds the bytes as they came in rawBody. It answers the
// request itself (413, 400) and returns false when the body cannot be read.
func bufferBody(w http.ResponseWriter, r *http.Request) bool {
	b, _ := r.Context().Value(keyBody).(*body)
	if b == nil || b.streamed || b.raw != nil {
		return true
	}
	raw, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeProblem(w, r, tooLarge(b.max))
		return false
	case err != nil:
		writeProblem(w, r, problem{Type: typeMalformed, Status: http.StatusBadRequest, Detail: "The request body could not be read."})
		return false
	}
	b.raw = raw
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	return true
}

// routePath is the path as the router matches it: escaped when the request's path holds
// escapes (chi routes on RawPath), so that /v1/plugins/a%2Fb/versions, which no publish
// route takes, is not streamed as one.
func routePath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

// Bounds of the bodies of requests that say nothing of who sends them: their size, how many of
// one client address are read at once, and how long one may take to come in (16 KiB in 10 s is a
// link of 13 kbit/s).
const (
	anonBodyMax     = 16 << 10
	anonPerClient   = 4
	anonReadTimeout = 10 * time.Second
)

// rawBody is the request's body as it came: a test's source keeps its lines, so that errors
// name them.
func rawBody(ctx context.Context) []byte {
	if b, _ := ctx.Value(keyBody).(*body); b != nil {
		return b.raw
	}
	return nil
}

// transferTimeout is how long a plugin artifact may take to come in or go out, whatever the
// server's read and write timeouts: 128 MiB at 100 kB/s.
const transferTimeout = 30 * time.Minute

// artifactRoute is the path of a plugin artifact's bytes.
var artifactRoute = regexp.MustCompile(`^(/v1/plugins/[^/]+/[^/]+/versions/[^/]+/download/[^/]+/[^/]+/file|/v1/agent/artifacts/[^/]+)$`)

// longDownloads gives a plugin artifact's download the time a slow link needs, past the
// server's write timeout.
func longDownloads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && artifactRoute.MatchString(r.URL.Path) {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(transferTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets headers every response should carry.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			// The API's answers are one user's: tokens, invitation codes, agent tokens, their
			// data. No cache between the server and the client keeps any of them.
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}
