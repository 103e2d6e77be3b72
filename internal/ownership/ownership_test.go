package ownership_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/ownership"
)

// loopback is the policy of a server whose operator lets the check reach loopback, where the
// tests' targets listen.
var loopback = &netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// target is a Target of the test server at url with token.
func target(t *testing.T, url, token string) barrage.Target {
	t.Helper()
	tg, err := barrage.ParseTarget(url)
	require.NoError(t, err)
	tg.Token = token
	return tg
}

func TestTheFileProvesControlOnlyWithTheTargetsOwnToken(t *testing.T) {
	t.Parallel()
	served := map[string]string{ // path: body
		"/barrage-verify-mine.txt":   "mine\n",
		"/barrage-verify-theirs.txt": "theirs",
		"/barrage-verify-stolen.txt": "theirs",
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch body, ok := served[r.URL.Path]; {
		case r.URL.Path == "/barrage-verify-moved.txt":
			http.Redirect(w, r, "http://169.254.169.254/barrage-verify-moved.txt", http.StatusFound)
		case r.URL.Path == "/barrage-verify-catchall.txt":
			fmt.Fprint(w, "welcome to our shop") // answers 200 to anything
		case r.URL.Path == "/barrage-verify-huge.txt":
			fmt.Fprint(w, "huge"+strings.Repeat(" ", ownership.MaxBody))
		case ok:
			fmt.Fprint(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := ownership.New(loopback, nil)
	ctx := context.Background()

	at, err := c.Check(ctx, target(t, srv.URL, "mine"))
	require.NoError(t, err, "the target serves its token")
	require.Equal(t, "127.0.0.1", at.String(), "the address that proved it")
	require.ErrorContains(t, check(c, target(t, srv.URL, "removed")), "/barrage-verify-removed.txt answered 404",
		"a target that does not serve the token is not proved")
	// Another account's token, even at this target's path, proves nothing for it: the path
	// and the body must both be this target's.
	require.ErrorContains(t, check(c, target(t, srv.URL, "stolen")), "without this target's token as its body")
	require.ErrorContains(t, check(c, target(t, srv.URL, "catchall")), "without this target's token as its body",
		"a server that answers 200 to any path proves nothing")
	require.ErrorContains(t, check(c, target(t, srv.URL, "huge")), "larger than 4096 bytes")

	// A redirect is not followed, wherever it leads.
	before := hits.Load()
	err = check(c, target(t, srv.URL, "moved"))
	require.ErrorContains(t, err, "answered 302")
	require.ErrorContains(t, err, "redirects are not followed")
	require.Equal(t, before+1, hits.Load(), "one request, to the target; none after the redirect")
}

// The check goes through the server's policy: without its operator's leave, it reaches no
// internal address, and a listener there counts no connection.
func TestTheCheckReachesNoInternalAddressUnlessAllowed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	for _, url := range []string{"http://" + ln.Addr().String(), "http://169.254.169.254", "http://[::1]:" + portOf(ln)} {
		err := check(ownership.New(nil, nil), target(t, url, "tok"))
		require.ErrorContains(t, err, "the server's policy refuses this destination", url)
	}
	require.Zero(t, accepted.Load())
}

func portOf(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }

// check is c.Check without the address.
func check(c *ownership.Checker, t barrage.Target) error {
	_, err := c.Check(context.Background(), t)
	return err
}

// A named host is proved at the address its name resolved to for the check, and only there:
// the address is what a shared agent loads for the name, whatever it resolves to afterwards.
func TestANamedHostIsProvedAtTheAddressThatServedTheFile(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/barrage-verify-tok1.txt" && strings.HasPrefix(r.Host, "shop.example:") {
			fmt.Fprint(w, "tok1")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dns := startDNS(t, map[string]string{"shop.example.": "127.0.0.1", "gone.example.": "127.0.0.9"})
	c := ownership.New(loopback, dns)
	at, err := c.Check(context.Background(), target(t, "http://shop.example:"+portOf(srv.Listener), "tok1"))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", at.String())
	require.ErrorContains(t, check(c, target(t, "http://gone.example:"+portOf(srv.Listener), "tok1")), "cannot be reached")
	require.ErrorContains(t, check(c, target(t, "http://none.example:"+portOf(srv.Listener), "tok1")), "no such host")
}

// startDNS answers A questions over UDP on 127.0.0.1 from records (name: IPv4 address), and
// returns a resolver that asks it alone.
func startDNS(t *testing.T, records map[string]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			addr, ok := records[q.Name.String()]
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
			if !ok {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0},
					dnsmessage.AResource{A: netip.MustParseAddr(addr).As4()})
			}
			out, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return ownership.Resolver(pc.LocalAddr().String())
}
