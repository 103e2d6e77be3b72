package pluginhost

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
)

// Greeter is a TCP listener on 127.0.0.1 for the tests of grants: it greets each connection
// with "hello" when asked to, then echoes what it reads, and reports each connection it accepts
// and each the other side ends, by its remote address, in order (while nobody reads them, it
// drops the reports).
type Greeter struct {
	Addr            string
	Accepted, Ended chan net.Addr
}

// NewGreeter listens until the test ends.
func NewGreeter(tb testing.TB, greet bool) *Greeter {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = ln.Close() })
	g := &Greeter{Addr: ln.Addr().String(), Accepted: make(chan net.Addr, 64), Ended: make(chan net.Addr, 64)}
	report := func(ch chan net.Addr, a net.Addr) {
		select {
		case ch <- a:
		default:
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			report(g.Accepted, c.RemoteAddr())
			go func() {
				defer c.Close()
				if greet {
					_, _ = c.Write([]byte("hello\n"))
				}
				_, _ = io.Copy(c, c)
				report(g.Ended, c.RemoteAddr())
			}()
		}
	}()
	return g
}

// testDialer serves a dial socket granting hosts, with no dial policy, until the test ends.
func testDialer(tb testing.TB, hosts ...string) string {
	tb.Helper()
	grants, err := sdk.ParseHostPatterns(hosts)
	require.NoError(tb, err)
	path := filepath.Join(tb.TempDir(), dialSocketName)
	d, err := listenDialer(path, "test@1.0.0", grants, nil, slog.New(slog.DiscardHandler))
	require.NoError(tb, err)
	tb.Cleanup(d.close)
	return path
}

// TestDialSocketAnswersOnlyAConnectToAGrantedHost sends the dial socket what a hostile plugin
// could, byte for byte, and reads the status of the answer.
func TestDialSocketAnswersOnlyAConnectToAGrantedHost(t *testing.T) {
	t.Parallel()
	addr := NewGreeter(t, false).Addr
	sock := testDialer(t, addr)
	for _, c := range []struct {
		name, request, status string
	}{
		{"AConnectToTheGrantedHost", "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", "200"},
		{"AConnectWithoutAHostHeader", "CONNECT " + addr + " HTTP/1.1\r\n\r\n", "200"},
		{"AGet", "GET http://" + addr + "/ HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", "405"},
		{"AConnectToAURL", "CONNECT http://" + addr + "/ HTTP/1.1\r\n\r\n", "400"},
		{"AConnectWithUserInfo", "CONNECT user@" + addr + " HTTP/1.1\r\n\r\n", "400"},
		{"AConnectWithoutAPort", "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", "400"},
		{"AConnectToPortZero", "CONNECT 127.0.0.1:0 HTTP/1.1\r\n\r\n", "400"},
		{"AConnectToAnotherPort", "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n", "403"},
		{"AHeaderLongerThanTheLimit", "CONNECT " + addr + " HTTP/1.1\r\nX: " + strings.Repeat("x", 5000) + "\r\n\r\n", "400"},
		{"NotHTTP", "\x00\x01\x02\r\n\r\n", "400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("unix", sock)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, c.request)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
			require.NoError(t, err)
			require.Equal(t, c.status, strings.Fields(resp.Status)[0], resp.Status)
		})
	}
}

// TestDialSendsWhatFollowsTheRequestToTheDestination: bytes a client sends right behind its
// CONNECT, before the answer, reach the destination.
func TestDialSendsWhatFollowsTheRequestToTheDestination(t *testing.T) {
	t.Parallel()
	addr := NewGreeter(t, false).Addr
	conn, err := net.Dial("unix", testDialer(t, addr))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "CONNECT "+addr+" HTTP/1.1\r\n\r\nearly\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "early\n", line)
}

// BenchmarkGrantedDial is the cost of a connection through the host's dial socket against a
// direct one: connect, one round trip of 64 bytes, close.
func BenchmarkGrantedDial(b *testing.B) {
	addr := NewGreeter(b, false).Addr
	msg := make([]byte, 64)
	roundTrip := func(b *testing.B, c net.Conn) {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(b, c)
			_ = c.Close()
		}
	})
	b.Run("ThroughTheHost", func(b *testing.B) {
		b.Setenv(sdk.DialSocketEnv, testDialer(b, addr))
		ctx := context.Background()
		for b.Loop() {
			c, err := sdk.Dial(ctx, "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(b, c)
			_ = c.Close()
		}
	})
}

// BenchmarkGrantedRoundTrip is the cost of a round trip of 64 bytes on a connection already
// made: through the host's relay, against a direct one.
func BenchmarkGrantedRoundTrip(b *testing.B) {
	addr := NewGreeter(b, false).Addr
	msg := make([]byte, 64)
	run := func(b *testing.B, c net.Conn) {
		defer c.Close()
		for b.Loop() {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, msg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Direct", func(b *testing.B) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
	b.Run("ThroughTheHost", func(b *testing.B) {
		b.Setenv(sdk.DialSocketEnv, testDialer(b, addr))
		c, err := sdk.Dial(context.Background(), "tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
}
