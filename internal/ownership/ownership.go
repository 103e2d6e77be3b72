// Package ownership checks that a user controls a target before shared agents load it, the
// Loader.io way: the target serves its token at /barrage-verify-<token>.txt. A shared agent runs
// strangers' scripts; without the proof, anyone could aim its load at a host they do not own.
//
// What is proved is the address that served the file, not the name: a name belongs to whoever
// runs its DNS, who may point it at anyone's address (after the check, too: DNS rebinding). So
// the check returns the address it reached, and shared agents load that address alone for the
// name. For the same reason there is no proof by a DNS TXT record: it proves the name only.
//
// The check itself is an outside request the server makes on a user's word, so it goes through
// the server's dial policy (internal addresses refused unless its operator allows them), follows
// no redirect, gives up after 5 seconds, and reads at most 4 KB.
package ownership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
)

// Timeout bounds one check; MaxBody is the most of the file read.
const (
	Timeout = 5 * time.Second
	MaxBody = 4 << 10
)

// Checker checks targets.
type Checker struct {
	client *http.Client
}

// New returns a Checker whose requests go through policy, and whose lookups ask resolver (nil:
// the system's).
func New(policy *netpolicy.Policy, resolver *net.Resolver) *Checker {
	if policy == nil {
		policy = &netpolicy.Policy{Holder: "the server's"}
	}
	d := policy.Dialer(net.Dialer{Timeout: Timeout, Resolver: resolver})
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, address)
		if err == nil {
			if reached, ok := ctx.Value(reachedKey{}).(*netip.Addr); ok {
				*reached = c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
			}
		}
		return c, err
	}
	return &Checker{
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:       nil, // straight to the target: a proxy would answer for it
				DialContext: dial, DisableKeepAlives: true, MaxResponseHeaderBytes: MaxBody,
				TLSHandshakeTimeout: Timeout, ResponseHeaderTimeout: Timeout,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout:       Timeout,
		},
	}
}

// reachedKey carries, in a check's context, where its dial records the address it reached.
type reachedKey struct{}

// Resolver asks the DNS server at addr (host:port) alone; nil (the system's) when addr is empty.
func Resolver(addr string) *net.Resolver {
	if addr == "" {
		return nil
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// Check returns the address that proved its owner controls t, by serving its token file, or an
// error that says what the check found.
func (c *Checker) Check(ctx context.Context, t barrage.Target) (netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var reached netip.Addr
	if err := c.file(context.WithValue(ctx, reachedKey{}, &reached), t); err != nil {
		return netip.Addr{}, err
	}
	if !reached.IsValid() {
		// Never so with a connection per check; without the address nothing could be pinned.
		return netip.Addr{}, fmt.Errorf("%s: cannot tell which address answered", t.VerifyURL())
	}
	return reached, nil
}

// file fetches the target's token file: it must answer 200 with the token as its whole body.
func (c *Checker) file(ctx context.Context, t barrage.Target) error {
	where := t.VerifyURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	req.Header.Set("User-Agent", "barrage-verify")
	res, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s", where, cause(err))
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return fmt.Errorf("%s answered %d (to %q): the token must be served at that address itself; redirects are not followed",
			where, res.StatusCode, res.Header.Get("Location"))
	case res.StatusCode != http.StatusOK:
		return fmt.Errorf("%s answered %d", where, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxBody+1))
	if err != nil {
		return fmt.Errorf("%s: reading the body: %s", where, cause(err))
	}
	if len(body) > MaxBody {
		return fmt.Errorf("%s: the body is larger than %d bytes: serve the token alone", where, MaxBody)
	}
	if strings.TrimSpace(string(body)) != t.Token {
		return fmt.Errorf("%s answered 200 without this target's token as its body", where)
	}
	return nil
}

// cause says why the fetch failed: the policy's refusal, a name that does not resolve, or that
// the target could not be reached, without telling a refused connection from a silent port or a
// stranger protocol, which would map the ports of whatever network the operator lets the check
// reach.
func cause(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, netpolicy.ErrRefused):
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err.Error()
	case errors.As(err, &dns):
		dns.Server = ""
		return dns.Error()
	}
	return fmt.Sprintf("cannot be reached, or gave no HTTP answer within %s", Timeout)
}
