// Package host is the host's end of a Barrage plugin: what starts a plugin process with
// go-plugin (Handshake, PluginSets) and speaks to it (Client). Plugin authors need none of it
// to write a plugin (package sdk), and meet only Client when they test one (package sdktest).
package host

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/internal/wire"
)

// Handshake is the go-plugin handshake between Barrage and its plugins.
var Handshake = wire.Handshake

// MaxMessageSize bounds one gRPC message between host and plugin: a host's calls stay under it.
const MaxMessageSize = wire.MaxMessageSize

// Client is the host's side of a plugin: the interfaces a plugin implements, carried over gRPC.
type Client interface {
	// Describe asks the plugin what it is.
	Describe(ctx context.Context) (sdk.Info, error)
	// Element is the plugin's session element.
	Element() sdk.SessionElement
	// URL is the plugin's URL hook. Calls from many goroutines share one stream and travel in
	// batches.
	URL() sdk.URLHook
	// Modify runs the plugin's source modifier.
	Modify(ctx context.Context, script, config []byte) ([]byte, error)
	// SetCallTimeout bounds every later URL-hook call: one the plugin does not answer within d
	// fails with ErrNoAnswer. Set it before the first call.
	SetCallTimeout(d time.Duration)
	// Close ends the URL hook's stream, if one was opened. The connection is go-plugin's.
	Close() error
}

// The errors a Client's calls return, besides *sdk.ConfigError for a config the plugin
// refused. They wrap the plugin's own message.
var (
	ErrUnavailable   = wire.ErrUnavailable
	ErrTimeout       = wire.ErrTimeout
	ErrUnimplemented = wire.ErrUnimplemented
	ErrPlugin        = wire.ErrPlugin
	ErrClosed        = wire.ErrClosed
	ErrTooLarge      = wire.ErrTooLarge
	ErrNoAnswer      = wire.ErrNoAnswer
)

// PluginSets is what a host gives go-plugin (ClientConfig.VersionedPlugins) to start plugins of
// this protocol; see Dispense for the Client.
func PluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{sdk.ProtocolVersion: {
		wire.PluginName: &wire.Plugin{Connect: func(conn *grpc.ClientConn) any { return wire.NewClient(conn) }},
	}}
}

// Dispense returns the Client of a started go-plugin client.
func Dispense(c plugin.ClientProtocol) (Client, error) {
	raw, err := c.Dispense(wire.PluginName)
	if err != nil {
		return nil, err
	}
	cl, ok := raw.(Client)
	if !ok {
		return nil, fmt.Errorf("host: dispensed %T, not a Client", raw)
	}
	return cl, nil
}
