package sdk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// DialSocketEnv names the environment variable that holds the path of the host's dial socket,
// set only for a plugin the run grants hosts to. Dial uses it; a plugin in another language
// speaks HTTP CONNECT on it (docs/plugins.md, "Network").
const DialSocketEnv = "BARRAGE_DIAL_SOCKET"

// ErrNoNetwork is wrapped by Dial's error when the run grants the plugin no host.
var ErrNoNetwork = errors.New("the run grants this plugin no network")

// ErrDialRefused is wrapped by Dial's error when the host refuses the destination: it is not
// granted, or the host's dial policy refuses its address. Nothing was sent to it.
var ErrDialRefused = errors.New("the host refused the connection")

// maxDialAnswer bounds the host's answer to a CONNECT that Dial reads.
const maxDialAnswer = 4096

// Dial connects to addr (host:port) over TCP through the plugin's host: a sandboxed plugin has
// no network of its own, and the host connects for it to the hosts the run grants, under its
// own dial policy. network must be "tcp", "tcp4" or "tcp6" (the host chooses the address family
// when it resolves the name). Use it as a net.Dialer's DialContext would be used: for a
// database driver's dial function, or an http.Transport (see Transport).
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("dial %s %s: a plugin reaches hosts over TCP only", network, addr)
	}
	if strings.ContainsAny(addr, " \r\n") {
		return nil, fmt.Errorf("dial %q: not host:port", addr)
	}
	sock := os.Getenv(DialSocketEnv)
	if sock == "" {
		return nil, fmt.Errorf("dial %s: %w (no %s)", addr, ErrNoNetwork, DialSocketEnv)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("dial %s: the host's dial socket: %w", addr, err)
	}
	conn, err := connect(ctx, c, addr)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return conn, nil
}

// connect asks the host for addr on c, honouring ctx while it waits for the answer.
func connect(ctx context.Context, c net.Conn, addr string) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return nil, dialCtxErr(ctx, fmt.Errorf("dial %s: %w", addr, err))
	}
	br := bufio.NewReaderSize(c, maxDialAnswer)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, dialCtxErr(ctx, fmt.Errorf("dial %s: the host's answer: %w", addr, err))
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxDialAnswer))
		reason := strings.TrimSpace(string(body))
		if reason == "" {
			reason = resp.Status
		}
		if resp.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("dial %s: %w: %s", addr, ErrDialRefused, reason)
		}
		return nil, fmt.Errorf("dial %s: %s", addr, reason)
	}
	if !stop() {
		return nil, fmt.Errorf("dial %s: %w", addr, ctx.Err())
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The destination spoke first, and its first bytes came with the answer.
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

func dialCtxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// bufferedConn reads what was read ahead before the rest of the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Transport is an http.Transport, as http.DefaultTransport, that reaches hosts through Dial:
// http.Client{Transport: sdk.Transport()} in a plugin. TLS runs inside the connection, end to
// end: the host sees the destination's name and port, not what is sent.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = Dial
	return t
}
