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

	require.NoError(t, c.Check(ctx, target(t, srv.URL, "mine")), "the target serves its token")
	require.ErrorContains(t, c.Check(ctx, target(t, srv.URL, "removed")), "/barrage-verify-removed.txt answered 404",
		"a target that does not serve the token is not proved")
	// Another account's token, even at this target's path, proves nothing for it: the path
	// and the body must both be this target's.
	require.ErrorContains(t, c.Check(ctx, target(t, srv.URL, "stolen")), "without this target's token as its body")
	require.ErrorContains(t, c.Check(ctx, target(t, srv.URL, "catchall")), "without this target's token as its body",
		"a server that answers 200 to any path proves nothing")
	require.ErrorContains(t, c.Check(ctx, target(t, srv.URL, "huge")), "larger than 4096 bytes")

	// A redirect is not followed, wherever it leads.
	before := hits.Load()
	err := c.Check(ctx, target(t, srv.URL, "moved"))
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
		err := ownership.New(nil, nil).Check(context.Background(), target(t, url, "tok"))
		require.ErrorContains(t, err, "the agent's policy refuses this destination", url)
	}
	require.Zero(t, accepted.Load())
}

func portOf(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }

// A named host proves control by a TXT record as well, asked of the resolver the server uses.
func TestATXTRecordProvesControlOfANamedHost(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, map[string][]string{
		"_barrage-verify.shop.example.": {"v=spf1 -all", "barrage-verify=tok1"},
		"_barrage-verify.other.example": {"barrage-verify=someone-else"},
	})
	// The hosts are not served over HTTP here: their names resolve nowhere, and the file way
	// fails beside the record.
	c := ownership.New(loopback, dns)
	ctx := context.Background()
	require.NoError(t, c.Check(ctx, target(t, "https://shop.example", "tok1")))
	err := c.Check(ctx, target(t, "https://other.example", "tok2"))
	require.ErrorContains(t, err, `the TXT records at _barrage-verify.other.example do not hold "barrage-verify=tok2"`)
	require.ErrorContains(t, c.Check(ctx, target(t, "https://none.example", "tok3")), "no TXT record at _barrage-verify.none.example")
}

// startDNS answers TXT questions over UDP on 127.0.0.1 from records, and returns a resolver
// that asks it alone.
func startDNS(t *testing.T, records map[string][]string) *net.Resolver {
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
			name := q.Name.String()
			txt, ok := records[name]
			if !ok {
				txt, ok = records[strings.TrimSuffix(name, ".")]
			}
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
			if !ok {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.EnableCompression()
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeTXT {
				for _, r := range txt {
					_ = b.TXTResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.TXTResource{TXT: []string{r}})
				}
			}
			out, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return ownership.Resolver(pc.LocalAddr().String())
}
