package pluginhost

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A plugin's handshake names the address the host dials. It is held to a Unix socket in the
// plugin's own socket folder: a TCP address, another socket of the host's, or a link out of the
// folder would have the host connect where the plugin says (from the host's own network, past
// every grant and policy) and send it every call.
func TestTheHostDialsOnlyTheSocketInThePluginsFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "plugin.sock"))
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	elsewhere := t.TempDir()
	other, err := net.Listen("unix", filepath.Join(elsewhere, "docker.sock"))
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "docker.sock"), filepath.Join(dir, "link.sock")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))

	for name, r := range map[string]*procRunner{
		"sandboxed": {sockDir: dir, sockHost: dir},
		"fallback":  {sockDir: dir},
	} {
		from := dir
		if r.sockHost != "" {
			from = sandboxSocketDir
		}
		for _, bad := range [][2]string{
			{"tcp", "127.0.0.1:19998"},
			{"unix", filepath.Join(elsewhere, "docker.sock")},
			{"unix", from + "/link.sock"},
			{"unix", from + "/file"},
			{"unix", from + "/../x"},
			{"unix", from + "/"},
			{"unix", from + "/missing"},
		} {
			_, _, err := r.PluginToHost(bad[0], bad[1])
			require.Error(t, err, "%s: %s %s", name, bad[0], bad[1])
		}
		network, addr, err := r.PluginToHost("unix", from+"/plugin.sock")
		require.NoError(t, err, name)
		c, err := net.Dial(network, addr)
		require.NoError(t, err, name)
		c.Close()
		<-accepted
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted <- struct{}{}
				c.Close()
			}
		}()
		// What the host holds ends with the plugin.
		r.mu.Lock()
		require.Len(t, r.held, 1)
		r.mu.Unlock()
	}
}
