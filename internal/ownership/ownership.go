// Package ownership checks that a user controls a target before shared agents load it, the
// Loader.io way: the target serves its token at /barrage-verify-<token>.txt, or a named host
// carries it in a TXT record at _barrage-verify.<host>. A shared agent runs strangers' scripts;
// without the proof, anyone could aim its load at a host they do not own.
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
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
)

// Timeout bounds one check, both ways of proving included; MaxBody is the most of the file read.
const (
	Timeout = 5 * time.Second
	MaxBody = 4 << 10
)

// Checker checks targets.
type Checker struct {
	client   *http.Client
	resolver *net.Resolver
}

// New returns a Checker whose requests go through policy, and whose lookups (of the addresses it
// dials and of TXT records) ask resolver (nil: the system's).
func New(policy *netpolicy.Policy, resolver *net.Resolver) *Checker {
	if policy == nil {
		policy = &netpolicy.Policy{}
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	d := policy.Dialer(net.Dialer{Timeout: Timeout, Resolver: resolver})
	return &Checker{
		resolver: resolver,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:       nil, // straight to the target: a proxy would answer for it
				DialContext: d.DialContext, DisableKeepAlives: true, MaxResponseHeaderBytes: MaxBody,
				TLSHandshakeTimeout: Timeout, ResponseHeaderTimeout: Timeout,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout:       Timeout,
		},
	}
}

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

// Check returns nil when t proves its owner controls it, by its file or its TXT record (both are
// tried at once), else an error that says what each way found.
func (c *Checker) Check(ctx context.Context, t barrage.Target) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if t.IsAddress() {
		return c.file(ctx, t) // an address has no TXT record of its own
	}
	dns := make(chan error, 1)
	go func() { dns <- c.txt(ctx, t) }()
	fileErr := c.file(ctx, t)
	if fileErr == nil {
		return nil
	}
	dnsErr := <-dns
	if dnsErr == nil {
		return nil
	}
	return fmt.Errorf("%w; and %w", fileErr, dnsErr)
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

// txt looks for the target's TXT record.
func (c *Checker) txt(ctx context.Context, t barrage.Target) error {
	records, err := c.resolver.LookupTXT(ctx, t.DNSName())
	if err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) {
			dns.Server = "" // the server's own resolver is nobody's business
			if dns.IsNotFound {
				return fmt.Errorf("no TXT record at %s", t.DNSName())
			}
		}
		return fmt.Errorf("TXT record at %s: %w", t.DNSName(), err)
	}
	if slices.ContainsFunc(records, func(r string) bool { return strings.TrimSpace(r) == t.DNSValue() }) {
		return nil
	}
	return fmt.Errorf("the TXT records at %s do not hold %q", t.DNSName(), t.DNSValue())
}

// cause is err without the method and URL net/http puts before it (the message names them).
func cause(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
