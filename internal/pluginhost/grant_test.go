package pluginhost_test

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/sdk"
)

// loopbackAllowed is a dial policy that refuses internal addresses but loopback, as an
// operator's --allow-target 127.0.0.0/8 does.
var loopbackAllowed = &netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// newGreeter is a listener that greets each connection with "hello", then echoes.
func newGreeter(t *testing.T) *pluginhost.Greeter { return pluginhost.NewGreeter(t, true) }

// requireNothingReached checks that no connection reached g before now: a connection of the
// test's own is the first g accepts.
func requireNothingReached(t *testing.T, g *pluginhost.Greeter) {
	t.Helper()
	c, err := net.Dial("tcp", g.Addr)
	require.NoError(t, err)
	defer c.Close()
	select {
	case first := <-g.Accepted:
		require.Equal(t, c.LocalAddr().String(), first.String(), "a connection reached the listener before the test's own")
	case <-time.After(10 * time.Second):
		t.Fatal("the listener accepted nothing")
	}
}

// granted is the hostile test plugin with the hosts granted.
func granted(t *testing.T, hosts ...string) pluginhost.Spec {
	t.Helper()
	s := spec("hostile")
	var err error
	s.Network, err = sdk.ParseHostPatterns(hosts)
	require.NoError(t, err)
	return s
}

// try has a started hostile plugin make attack a and returns its answer.
func try(t *testing.T, p *pluginhost.Process, a ar) string {
	t.Helper()
	cfg, err := json.Marshal(a)
	require.NoError(t, err)
	_, err = p.Element().Configure(context.Background(), cfg)
	require.NoError(t, err)
	sets, err := p.Element().Next(context.Background(), 1)
	require.NoError(t, err)
	return sets[0]["result"]
}

func startPlugin(t *testing.T, h *pluginhost.Host, s pluginhost.Spec) *pluginhost.Process {
	t.Helper()
	p, err := h.Start(context.Background(), s)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// TestAGrantedHostIsReachedThroughTheHostAndNoOther: a plugin granted 127.0.0.1:port reaches
// it through the host's dial socket, bytes both ways, the listener's first ones included; the
// same plugin is refused, with the reason, another port and the same port by another name, and
// nothing reaches them.
func TestAGrantedHostIsReachedThroughTheHostAndNoOther(t *testing.T) {
	t.Parallel()
	good, other := newGreeter(t), newGreeter(t)
	h := newHost(t, pluginhost.Options{Targets: loopbackAllowed})
	p := startPlugin(t, h, granted(t, good.Addr))
	token := randomToken(t)

	require.Equal(t, "ok: via the dial socket: hello|"+token, try(t, p, ar{"kind": "reach", "target": good.Addr, "token": token}))

	res := try(t, p, ar{"kind": "reach", "target": other.Addr, "token": token})
	require.Contains(t, res, "err: dial socket: dial "+other.Addr+": the host refused the connection: barrage: "+other.Addr+
		" is not granted to plugin hostile@1.0.0 (granted: "+good.Addr+")")
	requireNothingReached(t, other)

	_, port, _ := net.SplitHostPort(good.Addr)
	res = try(t, p, ar{"kind": "reach", "target": "localhost:" + port, "token": token})
	require.Contains(t, res, "localhost:"+port+" is not granted", "a grant of an address is no grant of a name for it")
	<-good.Accepted // the one connection that was granted
	requireNothingReached(t, good)
}

// TestAGrantReachesNothingTheHostsPolicyRefuses: with a dial policy that refuses loopback (a
// shared agent's), a plugin granted 127.0.0.1:port does not reach it, and says why.
func TestAGrantReachesNothingTheHostsPolicyRefuses(t *testing.T) {
	t.Parallel()
	g := newGreeter(t)
	h := newHost(t, pluginhost.Options{Targets: &netpolicy.Policy{}})
	p := startPlugin(t, h, granted(t, g.Addr))
	res := try(t, p, ar{"kind": "reach", "target": g.Addr, "token": randomToken(t)})
	require.Contains(t, res, "the host refused the connection: barrage: "+g.Addr+": the agent's policy refuses this destination: 127.0.0.1 is internal (127.0.0.0/8)")
	requireNothingReached(t, g)
}

// TestAPluginsConnectionsEndWithIt: a connection a plugin holds through the host ends when the
// plugin is closed.
func TestAPluginsConnectionsEndWithIt(t *testing.T) {
	t.Parallel()
	g := newGreeter(t)
	h := newHost(t, pluginhost.Options{Targets: loopbackAllowed})
	p := startPlugin(t, h, granted(t, g.Addr))
	token := randomToken(t)
	require.Equal(t, "ok: via the dial socket: hello|"+token, try(t, p, ar{"kind": "hold", "target": g.Addr, "token": token}))
	conn := <-g.Accepted
	p.Close()
	select {
	case ended := <-g.Ended:
		require.Equal(t, conn.String(), ended.String())
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's connection outlived it")
	}
}

// TestAGrantOfEveryHostIsRefused: a grant names its hosts.
func TestAGrantOfEveryHostIsRefused(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	_, err := h.Start(context.Background(), granted(t, "*:5432"))
	pe := requireReason(t, err, pluginhost.ReasonGrant)
	require.ErrorContains(t, pe, "*:5432: a grant names its hosts")
}
