// Package wire is what the two ends of a plugin's connection agree on: go-plugin's handshake,
// the plugin set's one entry, and the size of a message. Package sdk serves a plugin with it;
// package host starts and speaks to one.
package wire

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Handshake is the go-plugin handshake between Barrage and its plugins. The cookie only keeps a
// plugin binary from being run by hand by mistake; it is not a secret and never changes.
var Handshake = plugin.HandshakeConfig{
	MagicCookieKey:   "BARRAGE_PLUGIN",
	MagicCookieValue: "7d1c0f3e-barrage-plugin",
}

// MaxMessageSize bounds one gRPC message between host and plugin: a batch of URL-hook calls
// with their bodies, or a whole script for a source modifier. gRPC's default, 4 MiB, is too
// small for either; the host keeps its batches well under it.
const MaxMessageSize = 64 << 20

// PluginName is the one entry of the go-plugin plugin set: a single gRPC connection carries
// every service a plugin serves.
const PluginName = "barrage"

// Plugin is the go-plugin glue: on the plugin's side Register registers its services, on the
// host's side Connect wraps the connection.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Register func(*grpc.Server)
	Connect  func(*grpc.ClientConn) any
}

// GRPCServer implements plugin.GRPCPlugin.
func (g *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	g.Register(s)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (g *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return g.Connect(conn), nil
}

// The errors a host's calls to a plugin return, besides *ConfigError for a config the plugin refused.
// They wrap the plugin's own message.
var (
	// ErrUnavailable: the plugin process is gone or does not answer.
	ErrUnavailable = errors.New("plugin unavailable")
	// ErrTimeout: the call ran past its deadline.
	ErrTimeout = errors.New("plugin call timed out")
	// ErrUnimplemented: the plugin does not implement the hook.
	ErrUnimplemented = errors.New("plugin does not implement this hook")
	// ErrPlugin: the plugin's code returned an error.
	ErrPlugin = errors.New("plugin error")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("plugin client closed")
	// ErrTooLarge: the call (a request body, say) is too large to hand to a plugin.
	ErrTooLarge = errors.New("too large for a plugin call")
	// ErrNoAnswer: the plugin did not answer a URL-hook call within the client's call timeout
	// (SetCallTimeout). ErrTimeout, by contrast, is a deadline the caller or the plugin set.
	ErrNoAnswer = errors.New("plugin did not answer in time")
)

// ServerSet returns the plugin set that serves an *sdk.Plugin, and NewClient the host's end of
// a plugin's connection (an *sdk.client, which package host hands out as a host.Client).
// Package sdk sets both when it is loaded.
var (
	ServerSet func(p any) plugin.PluginSet
	NewClient func(conn *grpc.ClientConn) any
)
