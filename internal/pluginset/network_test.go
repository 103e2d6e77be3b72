package pluginset_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// greeter listens on 127.0.0.1, greets each connection with "hello" and echoes the line it
// reads. It returns its address.
func greeter(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("hello\n"))
				if line, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					_, _ = c.Write([]byte(line))
				}
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// netWorld is a plugin directory holding the hostile test plugin, which declares it needs to
// reach need, and the granter source plugin; and the host options that run them, with a dial
// policy that lets them reach loopback.
type netWorld struct {
	dir  pluginset.Dir
	host pluginhost.Options
}

func newNetWorld(t *testing.T, need string) *netWorld {
	t.Helper()
	w := &netWorld{
		dir: pluginset.Dir(t.TempDir()),
		host: pluginhost.Options{
			Env:     []string{"TESTPLUGIN_NETWORK=" + need},
			Targets: &netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		},
	}
	h, err := pluginhost.New(w.host)
	require.NoError(t, err)
	defer h.Close()
	for _, name := range []string{"hostile", "granter", "good"} {
		m, err := w.dir.Add(context.Background(), h, named(t, name))
		require.NoError(t, err)
		if name == "hostile" {
			require.Equal(t, []string{need}, m.Network, "the manifest records what the plugin declares")
		}
	}
	return w
}

// open writes the script and starts its plugins.
func (w *netWorld) open(t *testing.T, text string, grants map[string][]script.Grant) (*pluginset.Set, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "net.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	s, err := script.Load(path, script.ParseOptions{})
	require.NoError(t, err)
	origin, err := pluginset.FileOrigin(path)
	require.NoError(t, err)
	set, _, err := pluginset.Open(context.Background(), origin, s, pluginset.Options{Source: w.dir, Host: w.host, VUs: 1, Grants: grants})
	if set != nil {
		t.Cleanup(func() { _ = set.Close() })
	}
	return set, err
}

// netScript is a script whose element plugin, the hostile one, tries to reach target, with
// plugins' entries (YAML lines) before it and its own extra keys.
func netScript(target, before, extra string) string {
	return fmt.Sprintf(`version: 1
plugins:%s
  - use: hostile@1.0.0
    kind: session-element
    config: { kind: reach, target: "%s", token: tok }%s
session: { groups: [ { name: g, requests: [ { name: r, url: "http://127.0.0.1:1/" } ] } ] }
load: { vus: 1, iterations: 1 }
`, before, target, extra)
}

func reachResult(t *testing.T, set *pluginset.Set) string {
	t.Helper()
	sets, err := set.Plugins["hostile"].Element.Next(context.Background(), 1)
	require.NoError(t, err)
	return sets[0]["result"]
}

// TestAGrantWithinTheNeedReachesTheHost: a plugin whose manifest declares 127.0.0.1:port,
// granted it by the script or by whoever runs it, reaches it through the host; declared and not
// granted, it has no network.
func TestAGrantWithinTheNeedReachesTheHost(t *testing.T) {
	t.Parallel()
	addr := greeter(t)
	w := newNetWorld(t, addr)

	set, err := w.open(t, netScript(addr, "", "\n    network: [\""+addr+"\"]"), nil)
	require.NoError(t, err)
	require.Equal(t, "ok: via the dial socket: hello|tok", reachResult(t, set))

	host, err := sdk.ParseHostPattern(addr)
	require.NoError(t, err)
	set, err = w.open(t, netScript(addr, "", ""), map[string][]script.Grant{"hostile": {{Host: host, Path: "--plugin-grant hostile=" + addr}}})
	require.NoError(t, err)
	require.Equal(t, "ok: via the dial socket: hello|tok", reachResult(t, set))

	set, err = w.open(t, netScript(addr, "", ""), nil)
	require.NoError(t, err)
	res := reachResult(t, set)
	require.Contains(t, res, "err: dial socket: dial "+addr+": the host's dial socket: dial unix /run/barrage/dial.sock: connect: no such file or directory", "declared, not granted: no network")
}

// TestAGrantOutsideTheNeedIsRefusedAtLoad: a grant the manifest does not declare is a script
// error at the grant's line (or naming the flag it came from), before any plugin starts.
func TestAGrantOutsideTheNeedIsRefusedAtLoad(t *testing.T) {
	t.Parallel()
	addr := greeter(t)
	w := newNetWorld(t, addr)
	other := "127.0.0.1:1"

	_, err := w.open(t, netScript(addr, "\n  - { use: good@1.0.0, kind: session-element, network: [\"db.example:5432\"] }", "\n    network: [\""+addr+"\", \""+other+"\"]"), nil)
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.ErrorIs(t, err, barrage.ErrInvalid)
	require.Len(t, list, 2, "%v", err)
	require.Regexp(t, `net\.yaml:3: plugins\[0\]\.network\[0\]: grants db\.example:5432 to good@1\.0\.0, which declares no need of the network$`, list[0].Error())
	require.Regexp(t, `net\.yaml:7: plugins\[1\]\.network\[1\]: grants 127\.0\.0\.1:1 to hostile@1\.0\.0, which declares it needs only `+strings.ReplaceAll(addr, ".", `\.`)+`$`, list[1].Error())

	host, err := sdk.ParseHostPattern(other)
	require.NoError(t, err)
	_, err = w.open(t, netScript(addr, "", ""), map[string][]script.Grant{
		"hostile": {{Host: host, Path: "--plugin-grant hostile=" + other}},
		"nobody":  {{Host: host, Path: "--plugin-grant nobody=" + other}},
	})
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 2, "%v", err)
	require.Equal(t, "--plugin-grant nobody=127.0.0.1:1: no plugin of the script is named nobody", list[0].Error())
	require.Equal(t, "--plugin-grant hostile=127.0.0.1:1: grants 127.0.0.1:1 to hostile@1.0.0, which declares it needs only "+addr, list[1].Error())
}

// TestASourcePluginGrantsNoNetwork: a source plugin that adds a grant to another plugin's
// entry, even one within its need, is refused.
func TestASourcePluginGrantsNoNetwork(t *testing.T) {
	t.Parallel()
	addr := greeter(t)
	w := newNetWorld(t, addr)
	_, err := w.open(t, netScript(addr, "\n  - { use: granter@1.0.0, kind: source-modifier, config: { hosts: [\""+addr+"\"] } }", ""), nil)
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 1, "%v", err)
	require.Contains(t, list[0].Error(), "net.yaml (after source plugins)")
	require.Contains(t, list[0].Error(), "plugins[1].network[0]: source plugins granted "+addr+" to hostile@1.0.0, which the script does not: a source plugin grants no network")
}

// TestAManifestWithABadNeedIsRefused: a manifest whose network is not host:port patterns
// describes no plugin that can run.
func TestAManifestWithABadNeedIsRefused(t *testing.T) {
	t.Parallel()
	w := newNetWorld(t, "127.0.0.1:5432")
	path := filepath.Join(string(w.dir), "hostile", "1.0.0", "plugin.json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), `"127.0.0.1:5432"`, `"db.example"`, 1)), 0o644))
	_, err = w.dir.Locate(context.Background(), "hostile", "1.0.0")
	require.ErrorContains(t, err, `plugin.json: network: [0] "db.example": want host:port`)
}
