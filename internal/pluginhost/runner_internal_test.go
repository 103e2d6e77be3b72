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
	// Sandboxed, the host finds the folder in the launcher's root, through its /proc/PID: a
	// folder with root/run/barrage in it stands for that here.
	proc := t.TempDir()
	for name, r := range map[string]*procRunner{
		"sandboxed": {sandboxed: true},
		"fallback":  {sockDir: t.TempDir()},
	} {
		dir, from := r.sockDir, r.sockDir
		if r.sandboxed {
			dir, from = filepath.Join(proc, "root", sandboxSocketDir), sandboxSocketDir
			require.NoError(t, os.MkdirAll(dir, 0o700))
			f, err := os.Open(proc)
			require.NoError(t, err)
			r.proc = f
		}
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
		// What the host holds ends with the plugin.
		r.mu.Lock()
		require.Len(t, r.held, 1)
		r.mu.Unlock()
		r.closeProc()
		if r.sandboxed {
			_, _, err := r.PluginToHost("unix", from+"/plugin.sock")
			require.Error(t, err, "the launcher has ended: its /proc is no longer held")
		}
	}
}
