package pluginhost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/sdk"
)

// dialSocketName is the host's dial socket in a plugin's socket folder: the plugin sees it as
// /run/barrage/dial.sock.
const dialSocketName = "dial.sock"

// Bounds of a plugin's dial socket: the request it may send, how long it may take to send it,
// how long the host tries to connect, and how many connections it holds open at once.
const (
	maxConnectRequest = 4096
	connectReadTime   = 10 * time.Second
	dialTimeout       = 10 * time.Second
	maxTunnels        = 256
)

// dialer is the host's side of a plugin's network grant: a Unix socket in the plugin's socket
// folder on which the plugin asks for a TCP connection with HTTP CONNECT host:port. The host
// connects only to a destination a grant matches, by the name the plugin asks for, and through
// its dial policy (the one the load goes through), which is checked on the address actually
// dialled; then it relays the bytes both ways. A refusal is answered 403 with the reason, and
// nothing is sent to the destination.
type dialer struct {
	ln     *net.UnixListener
	plugin string
	grants []sdk.HostPattern
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// listenDialer opens the dial socket at path for the plugin, which the grants and the policy
// bound. Anyone who can reach the folder may connect: the plugin's user is another than the
// host's when the host is root.
func listenDialer(path, plugin string, grants []sdk.HostPattern, policy *netpolicy.Policy, log *slog.Logger) (*dialer, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: dial socket: %w", plugin, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("plugin %s: dial socket: %w", plugin, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &dialer{
		ln: ln, plugin: plugin, grants: grants, log: log.With(slog.String("plugin", plugin)),
		dial: policy.Dialer(net.Dialer{Timeout: dialTimeout}).DialContext,
		ctx:  ctx, cancel: cancel,
		slots: make(chan struct{}, maxTunnels), conns: make(map[net.Conn]struct{}),
	}
	d.wg.Add(1)
	go d.serve()
	return d, nil
}

func (d *dialer) serve() {
	defer d.wg.Done()
	for {
		c, err := d.ln.AcceptUnix()
		if err != nil {
			return
		}
		if !d.track(c) {
			_ = c.Close()
			return
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.untrack(c)
			select {
			case d.slots <- struct{}{}:
				defer func() { <-d.slots }()
				d.handle(c)
			default:
				refuse(c, http.StatusServiceUnavailable, fmt.Sprintf("this plugin already holds %d connections through the host", maxTunnels))
			}
		}()
	}
}

// track records an open connection, to close it with the dialer; false once it is closed.
func (d *dialer) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conns == nil {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *dialer) untrack(c net.Conn) {
	_ = c.Close()
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
}

// close stops the dial socket and ends every connection made through it: the plugin is gone.
func (d *dialer) close() {
	if d == nil {
		return
	}
	d.cancel()
	_ = d.ln.Close()
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	d.wg.Wait()
}

// handle answers one CONNECT, and relays the connection when it is made.
func (d *dialer) handle(c *net.UnixConn) {
	_ = c.SetReadDeadline(time.Now().Add(connectReadTime))
	br := bufio.NewReaderSize(io.LimitReader(c, maxConnectRequest), maxConnectRequest)
	req, err := http.ReadRequest(br)
	if err != nil {
		refuse(c, http.StatusBadRequest, "want CONNECT host:port HTTP/1.1, in at most 4096 bytes")
		return
	}
	if req.Method != http.MethodConnect {
		refuse(c, http.StatusMethodNotAllowed, "want CONNECT host:port HTTP/1.1")
		return
	}
	target := req.RequestURI
	host, port, err := splitTarget(target)
	if err != nil {
		refuse(c, http.StatusBadRequest, err.Error())
		return
	}
	if !d.granted(host, port) {
		d.log.Debug("plugin dial refused: not granted", slog.String("addr", target))
		refuse(c, http.StatusForbidden, fmt.Sprintf("%s is not granted to plugin %s (granted: %s)", target, d.plugin, patternList(d.grants)))
		return
	}
	ctx, cancel := context.WithTimeout(d.ctx, dialTimeout)
	up, err := d.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	cancel()
	if err != nil {
		d.log.Debug("plugin dial failed", slog.String("addr", target), slog.String("error", err.Error()))
		status := http.StatusBadGateway
		if errors.Is(err, netpolicy.ErrRefused) {
			status = http.StatusForbidden
		}
		refuse(c, status, fmt.Sprintf("%s: %v", target, dialCause(err)))
		return
	}
	if !d.track(up) {
		_ = up.Close()
		return
	}
	defer d.untrack(up)
	d.log.Debug("plugin dial", slog.String("addr", target), slog.String("remote", up.RemoteAddr().String()))
	_ = c.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// What the plugin sent after its request is the destination's.
	early, _ := br.Peek(br.Buffered())
	relay(c, up, early)
}

// granted says whether a grant lets the plugin reach host:port.
func (d *dialer) granted(host string, port int) bool {
	for _, g := range d.grants {
		if g.Match(host, port) {
			return true
		}
	}
	return false
}

// splitTarget reads the authority of a CONNECT: host:port, the host a name or an address.
func splitTarget(target string) (string, int, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" || strings.ContainsAny(host, "/@?#%") {
		return "", 0, fmt.Errorf("%q is not host:port", target)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("%q: the port is not a number from 1 to 65535", target)
	}
	return host, n, nil
}

// relay copies both ways until each side has finished sending, passing on half-closes: a
// client that ends its request with a shutdown still reads the whole answer.
func relay(plugin, up net.Conn, early []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if len(early) > 0 {
			if _, err := up.Write(early); err != nil {
				return
			}
		}
		_, _ = io.Copy(up, plugin)
		closeWrite(up)
	}()
	_, _ = io.Copy(plugin, up)
	closeWrite(plugin)
	<-done
}

// closeWrite shuts down the sending side of a TCP or Unix connection.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// refuse answers a CONNECT with an error status and the reason, which the SDK's Dial returns.
func refuse(c net.Conn, status int, reason string) {
	body := "barrage: " + reason + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(connectReadTime))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// dialCause says why a connection failed or was refused (the policy's reason, connection
// refused, no such host), without the dialler's wrapping, which names the host's own address.
func dialCause(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

func patternList(ps []sdk.HostPattern) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// dialSocketIn is the dial socket's path in a plugin's socket folder on the host.
func dialSocketIn(sockDir string) string { return filepath.Join(sockDir, dialSocketName) }
