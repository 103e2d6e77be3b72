//go:build unix

package sdk

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/barrage-load/barrage/sdk/internal/wire"
)

// handshakeOut is the host's end of stdout, kept for the handshake alone. When a host starts
// the plugin, init moves file descriptor 1 to stderr before the author's main runs, so that
// whatever the plugin prints (fmt.Println in an init, a C library) cannot break the handshake.
var handshakeOut *os.File

func init() {
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return // not started by a host: leave stdout alone (go test, a curious user)
	}
	fd, err := unix.Dup(1)
	if err != nil {
		return
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return
	}
	handshakeOut = os.NewFile(uintptr(fd), "handshake")
}

// routeStdout points os.Stdout at a pipe whose first handshake line goes to the host and whose
// every other line goes to stderr, for the time go-plugin prints its handshake.
func routeStdout() (restore func()) {
	if handshakeOut == nil {
		return func() {}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	orig := os.Stdout
	os.Stdout = w
	go forwardStdout(r, handshakeOut, os.Stderr)
	return func() { os.Stdout = orig }
}
