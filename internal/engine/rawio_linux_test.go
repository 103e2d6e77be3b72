package engine

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dialRaw returns the raw reader and writer of a connection to a fresh listener, and the
// listener's end of it.
func dialRaw(t *testing.T) (io.ReadWriter, *net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	rw := newRawIO(c)
	require.IsType(t, &rawIO{}, rw)
	return rw, c.(*net.TCPConn), s.(*net.TCPConn)
}

// Raw calls carry bytes both ways, also when the socket's buffers fill and a write must wait
// for the peer to read, and one goroutine may read while another writes.
func TestRawIOCarriesBytesBothWays(t *testing.T) {
	t.Parallel()
	rw, _, peer := dialRaw(t)
	out := make([]byte, 8<<20) // well past the socket buffers: writes wait for the peer
	_, _ = rand.Read(out)
	go func() { _, _ = io.Copy(peer, peer) }() // the peer echoes everything back, until closed
	wrote := make(chan error, 1)
	go func() {
		n, err := rw.Write(out)
		if err == nil && n != len(out) {
			err = io.ErrShortWrite
		}
		wrote <- err
	}()
	in := make([]byte, len(out))
	_, err := io.ReadFull(rw, in)
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	require.True(t, bytes.Equal(out, in), "the bytes read back differ from those written")
	n, err := rw.Read(nil)
	require.Zero(t, n)
	require.NoError(t, err)
}

// Errors read as net.Conn's do, so that the engine classifies them and users read them alike.
func TestRawIOErrorsReadAsNetConns(t *testing.T) {
	t.Parallel()
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		rw, c, _ := dialRaw(t)
		require.NoError(t, c.SetDeadline(time.Now().Add(50*time.Millisecond)))
		_, err := rw.Read(make([]byte, 16))
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout())
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.True(t, strings.HasPrefix(err.Error(), "read tcp 127.0.0.1:"), err.Error())
		_, err = rw.Write([]byte("x"))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.True(t, strings.HasPrefix(err.Error(), "write tcp 127.0.0.1:"), err.Error())
	})
	t.Run("peer closes", func(t *testing.T) {
		t.Parallel()
		rw, _, peer := dialRaw(t)
		_, err := peer.Write([]byte("last"))
		require.NoError(t, err)
		require.NoError(t, peer.Close())
		b, err := io.ReadAll(rw)
		require.NoError(t, err) // io.EOF, which ReadAll takes as the end
		require.Equal(t, "last", string(b))
	})
	t.Run("peer resets", func(t *testing.T) {
		t.Parallel()
		rw, _, peer := dialRaw(t)
		require.NoError(t, peer.SetLinger(0))
		require.NoError(t, peer.Close())
		_, err := rw.Read(make([]byte, 16))
		require.ErrorIs(t, err, syscall.ECONNRESET)
		require.Regexp(t, `^read tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:\d+: read: connection reset by peer$`, err.Error())
	})
	t.Run("closed here", func(t *testing.T) {
		t.Parallel()
		rw, c, _ := dialRaw(t)
		require.NoError(t, c.Close())
		_, err := rw.Read(make([]byte, 16))
		require.ErrorIs(t, err, net.ErrClosed)
		_, err = rw.Write([]byte("x"))
		require.ErrorIs(t, err, net.ErrClosed)
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
	})
}

// The engine's plain TCP connections take the raw path; TLS runs over it.
func TestTrackedConnectionsUseRawIO(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	tr := newTransport(nil, nil, 1<<20, false, false, nil)
	defer tr.close()
	c, err := tr.dial(&hostConn{addr: ln.Addr().String(), dial: ln.Addr().String()}, time.Second, time.Now().Add(time.Second))
	require.NoError(t, err)
	defer c.Close()
	require.IsType(t, &rawIO{}, c.(*trackedConn).rw)
}
