package engine

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/script"
)

// network is how a run's VUs connect, built once from the script's hosts, tls and proxy: every
// VU's transport shares it and changes none of it.
type network struct {
	s     *script.Network
	h1TLS *tls.Config // HTTP/1.1: each host gets a copy with its name and certificate
	h2TLS *tls.Config // net/http, which adds h2 to NextProtos of the config it gets
	// certs are the client certificates of single hosts, by lower-case name.
	certs map[string]tls.Certificate
	// proxyAuth is the Proxy-Authorization the proxy URL's credentials make, or "".
	proxyAuth string
}

// newNetwork builds the run's network. A run whose destinations are pinned (a shared agent's)
// may not point names elsewhere or go through a proxy: its targets were proved at their own
// addresses, and the server refuses such a run before it comes here.
func newNetwork(s *script.Script, opts Options) (*network, error) {
	sn := &s.Network
	if sn.Overrides() && opts.Targets != nil && opts.Targets.Destinations != nil {
		return nil, errors.New("hosts and proxy are for your own agents: a shared agent dials each target at the address it was verified at")
	}
	n := &network{s: sn, certs: make(map[string]tls.Certificate, len(sn.TLS.Hosts))}
	pool, err := sn.TLS.Pool()
	if err != nil {
		return nil, err
	}
	n.h2TLS = &tls.Config{InsecureSkipVerify: opts.Insecure, RootCAs: pool} //nolint:gosec // only when the user asks for it
	if kp := sn.TLS.Cert; kp != nil {
		if kp.Certificate == nil {
			return nil, fmt.Errorf("tls.cert %s was not loaded", kp.Cert.Name)
		}
		n.h2TLS.Certificates = []tls.Certificate{*kp.Certificate}
	}
	for host, kp := range sn.TLS.Hosts {
		if kp.Certificate == nil {
			return nil, fmt.Errorf("tls.hosts.%s: %s was not loaded", host, kp.Cert.Name)
		}
		n.certs[host] = *kp.Certificate
	}
	n.h1TLS = n.h2TLS.Clone()
	n.h1TLS.NextProtos = []string{"http/1.1"}
	if u := sn.Proxy; u != nil && u.User != nil {
		pw, _ := u.User.Password()
		n.proxyAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
	}
	return n, nil
}

// tlsFor is the TLS configuration of a connection to host (a name or address, no port): the
// base's copy with the host's name and its own certificate when it has one.
func (n *network) tlsFor(base *tls.Config, host string) *tls.Config {
	c := base.Clone()
	c.ServerName = host
	if cert, ok := n.certs[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// certKey is which of the per-host certificates a connection to host presents: its name when it
// has its own, else "" for the script's (or none). HTTP/2 keeps a client of each.
func (n *network) certKey(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if _, ok := n.certs[h]; ok {
		return h
	}
	return ""
}

// dialAddr is where a connection to addr (host:port) goes: the proxy when there is one, else
// where hosts points it.
func (n *network) dialAddr(addr string) string {
	if n.s.Proxy != nil {
		return n.s.Proxy.Host
	}
	return n.s.Dial(addr)
}

// absolute says whether requests to a host of scheme are written in the proxy's absolute form
// (plain http through a proxy) rather than through a tunnel.
func (n *network) absolute(scheme string) bool { return n.s.Proxy != nil && scheme == "http" }

// connect opens a tunnel to addr (host:port) through the proxy on conn, by deadline: HTTPS goes
// through a proxy this way, so the proxy sees where, not what.
func (n *network) connect(conn net.Conn, addr string, deadline time.Time) error {
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", addr, addr)
	if n.proxyAuth != "" {
		fmt.Fprintf(&req, "Proxy-Authorization: %s\r\n", n.proxyAuth)
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	// The proxy answers and then waits for the client's TLS hello: nothing follows its headers
	// that a reader of one byte at a time could take from the tunnel.
	// At most 64 KiB of answer: a proxy sending headers without end gets no further.
	res, err := http.ReadResponse(bufio.NewReaderSize(&io.LimitedReader{R: oneByteReader{conn}, N: 64 << 10}, 1), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	// Its body is not read: after a 200 the tunnel follows, and a refusal closes the connection.
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy refused the tunnel to %s: %s", addr, res.Status)
	}
	return nil
}

// oneByteReader reads one byte at a time, so that a bufio.Reader on it never reads past what it
// returns.
type oneByteReader struct{ r net.Conn }

func (o oneByteReader) Read(b []byte) (int, error) { return o.r.Read(b[:min(len(b), 1)]) }

// proxyForm rewrites a serialized HTTP/1.1 request to origin (scheme://host) for a proxy: the
// absolute URL in its request line, and the proxy's credentials.
func (n *network) proxyForm(wire []byte, origin string) []byte {
	sp := bytes.IndexByte(wire, ' ')
	eol := bytes.Index(wire, []byte("\r\n"))
	if sp < 0 || eol < sp {
		return wire
	}
	out := make([]byte, 0, len(wire)+len(origin)+64)
	out = append(out, wire[:sp+1]...)
	out = append(out, origin...)
	out = append(out, wire[sp+1:eol+2]...)
	if n.proxyAuth != "" {
		out = append(out, "Proxy-Authorization: "+n.proxyAuth+"\r\n"...)
	}
	return append(out, wire[eol+2:]...)
}
