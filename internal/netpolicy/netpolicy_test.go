package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/netpolicy"
)

func TestPolicyRefusesInternalAddressesUnlessAllowed(t *testing.T) {
	t.Parallel()
	refused := []string{"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254"}
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
	allow, err := netpolicy.ParsePrefixes([]string{"127.0.0.0/8", " 10.1.2.3 "})
	require.NoError(t, err)
	p.Allow = allow
	require.NoError(t, p.Check(netip.MustParseAddr("127.0.0.2")))
	require.NoError(t, p.Check(netip.MustParseAddr("10.1.2.3")))
	require.ErrorIs(t, p.Check(netip.MustParseAddr("10.1.2.4")), netpolicy.ErrRefused)
	require.NoError(t, (&netpolicy.Policy{Internal: true}).Check(netip.MustParseAddr("10.1.2.4")))
	require.NoError(t, (*netpolicy.Policy)(nil).Check(netip.MustParseAddr("127.0.0.1")), "no policy, no refusal")

	_, err = netpolicy.ParsePrefixes([]string{"10.0.0.0/33"})
	require.ErrorContains(t, err, "neither a CIDR")
	_, err = netpolicy.ParsePrefixes([]string{"example.com"})
	require.Error(t, err)
}
