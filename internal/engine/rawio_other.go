//go:build !linux

package engine

import (
	"io"
	"net"
)

// newRawIO is Linux's (see rawio_linux.go): elsewhere connections are read and written through
// net.Conn.
func newRawIO(net.Conn) io.ReadWriter { return nil }
