package sdk

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type closeBuffer struct {
	bytes.Buffer
	closed bool
}

func (c *closeBuffer) Close() error { c.closed = true; return nil }

func TestForwardStdoutKeepsOnlyTheHandshakeOnStdout(t *testing.T) {
	in := "hello from init\n1|1|tcp|127.0.0.1:4242|grpc|CERT\nlater print\n2|1|tcp|x|grpc\n"
	var hs closeBuffer
	var other bytes.Buffer
	forwardStdout(strings.NewReader(in), &hs, &other)
	require.Equal(t, "1|1|tcp|127.0.0.1:4242|grpc|CERT\n", hs.String())
	require.True(t, hs.closed)
	require.Equal(t, "hello from init\nlater print\n2|1|tcp|x|grpc\n", other.String())
}
