package netpolicy_test

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/netpolicy"
)

func TestPolicyRefusesInternalAddressesUnlessAllowed(t *testing.T) {
	t.Parallel()
	refused := []string{"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
		"::1%lo", "fe80::1%eth0", "::7f00:1", "64:ff9b::7f00:1", "64:ff9b:1::a9fe:a9fe"} // zones, IPv4-compatible and NAT64 too
	public := []string{"8.8.8.8", "1.1.1.1", "172.32.0.1", "2001:4860:4860::8888"}
	var p netpolicy.Policy
	for _, a := range refused {
		err := p.Check(netip.MustParseAddr(a))
		require.ErrorIs(t, err, netpolicy.ErrRefused, a)
		require.Contains(t, err.Error(), "--allow-target")
	}
	for _, a := range public {
		require.NoError(t, p.Check(netip.MustParseAddr(a)), a)
	}
	allow, ports, err := netpolicy.ParseAllow([]string{"127.0.0.0/8", " 10.1.2.3 ", ""})
	require.NoError(t, err)
	require.Empty(t, ports)
	p.Allow = allow
	require.NoError(t, p.Check(netip.MustParseAddr("127.0.0.2")))
	require.NoError(t, p.Check(netip.MustParseAddr("10.1.2.3")))
	require.ErrorIs(t, p.Check(netip.MustParseAddr("10.1.2.4")), netpolicy.ErrRefused)
	require.NoError(t, (&netpolicy.Policy{Internal: true}).Check(netip.MustParseAddr("10.1.2.4")))
	require.NoError(t, (*netpolicy.Policy)(nil).Check(netip.MustParseAddr("127.0.0.1")), "no policy, no refusal")

	for _, bad := range []string{"10.0.0.0/33", "example.com", "example.com:80", "127.0.0.1:99999"} {
		_, _, err = netpolicy.ParseAllow([]string{bad})
		require.ErrorContains(t, err, "neither a CIDR", bad)
	}
}

// An address and port allows that one service of an internal address, as the demo agent allows
// only the demo shop on loopback: the same address's other ports stay refused, at dial time.
func TestPolicyAllowsASingleService(t *testing.T) {
	t.Parallel()
	_, ports, err := netpolicy.ParseAllow([]string{"127.0.0.1:8081", "[::1]:8081"})
	require.NoError(t, err)
	p := &netpolicy.Policy{AllowPorts: ports}
	require.NoError(t, p.CheckAddrPort(netip.MustParseAddrPort("127.0.0.1:8081")))
	require.NoError(t, p.CheckAddrPort(netip.MustParseAddrPort("[::ffff:127.0.0.1]:8081")))
	require.NoError(t, p.CheckAddrPort(netip.MustParseAddrPort("[::1]:8081")))
	require.NoError(t, p.Control("tcp", "127.0.0.1:8081", nil))
	for _, refused := range []string{"127.0.0.1:8080", "127.0.0.2:8081", "127.0.0.1:5432"} {
		require.ErrorIs(t, p.Control("tcp", refused, nil), netpolicy.ErrRefused, refused)
	}
	require.ErrorIs(t, p.Check(netip.MustParseAddr("127.0.0.1")), netpolicy.ErrRefused, "an address alone is not the service")
}

// A policy with destinations lets the load dial those hosts and ports alone, by the name it
// dials, however the name is spelled, and refuses the rest before a packet is sent: a listener
// the policy does not name is never connected to.
func TestDestinationsBoundTheHostsDialled(t *testing.T) {
	t.Parallel()
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer allowed.Close()
	other, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	defer other.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()

	_, port, _ := net.SplitHostPort(allowed.Addr().String())
	_, otherPort, _ := net.SplitHostPort(other.Addr().String())
	dests, err := netpolicy.ParseDestinations([]string{
		"127.0.0.1:" + port, "Shop.Example.com.:443",
		// A name pinned to the address that proved control is dialled there, whatever it
		// resolves to (here: nothing, the name does not exist).
		netpolicy.FormatDestination("pinned.invalid:"+port, netip.MustParseAddr("127.0.0.1")),
		// A name whose DNS now points elsewhere reaches only its pinned address.
		netpolicy.FormatDestination("localhost:"+otherPort, netip.MustParseAddr("127.0.0.1")),
	})
	require.NoError(t, err)
	p := netpolicy.Policy{Internal: true, Destinations: dests}
	for _, ok := range []string{"127.0.0.1:" + port, "shop.example.COM:443", "shop.example.com.:443"} {
		at, err := p.CheckDestination(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, at, "not pinned: dialled as named")
	}
	for _, refused := range []string{"127.0.0.1:1", "localhost:" + port, "shop.example.com:80", "evil.example.com:443", "[::ffff:127.0.0.2]:" + port, "no port"} {
		_, err := p.CheckDestination(refused)
		require.ErrorIs(t, err, netpolicy.ErrRefused, refused)
	}
	d := p.Dialer(net.Dialer{Timeout: time.Second})
	c, err := d.Dial("tcp", allowed.Addr().String())
	require.NoError(t, err)
	c.Close()
	c, err = d.Dial("tcp", "pinned.invalid:"+port)
	require.NoError(t, err, "a pinned name is dialled at its address, unresolved")
	require.Equal(t, allowed.Addr().String(), c.RemoteAddr().String())
	c.Close()
	_, err = d.Dial("tcp", other.Addr().String())
	require.ErrorIs(t, err, netpolicy.ErrRefused)
	require.ErrorContains(t, err, "not a target the run's owner proved control of")
	_, err = d.Dial("tcp", "localhost:"+otherPort)
	require.Error(t, err, "localhost pinned to 127.0.0.1 dials 127.0.0.1:%s, where nothing listens, never 127.0.0.2", otherPort)
	// Without destinations, the same dial connects: the refusal above was the policy's.
	c, err = (&netpolicy.Policy{Internal: true}).Dialer(net.Dialer{Timeout: time.Second}).Dial("tcp", other.Addr().String())
	require.NoError(t, err)
	c.Close()
	require.Eventually(t, func() bool { return reached.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "only the dial without destinations reached it")
	require.Equal(t, "[::1]:80", netpolicy.JoinDestination("[::1]", "80"))
	require.Equal(t, "127.0.0.1:80", netpolicy.JoinDestination("::ffff:127.0.0.1", "80"))
}
