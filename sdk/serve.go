package sdk

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"runtime/pprof"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/barrage-load/barrage/sdk/proto/barrage/plugin/v1"
)

// Handshake is the go-plugin handshake between Barrage and its plugins. The cookie only keeps a
// plugin binary from being run by hand by mistake; it is not a secret and never changes.
var Handshake = plugin.HandshakeConfig{
	MagicCookieKey:   "BARRAGE_PLUGIN",
	MagicCookieValue: "7d1c0f3e-barrage-plugin",
}

// MaxMessageSize bounds one gRPC message between host and plugin: a batch of URL-hook calls
// with their bodies, or a whole script for a source modifier. gRPC's default, 4 MiB, is too
// small for either; the host keeps batches under batchBytes.
const MaxMessageSize = 64 << 20

// pluginName is the one entry of the go-plugin plugin set: a single gRPC connection carries
// every service a plugin serves.
const pluginName = "barrage"

// Serve runs p as a plugin process and returns when the host is done with it. Call it from
// main. It speaks gRPC only, negotiates the protocol version with the host, and keeps stdout
// for the handshake: anything the plugin prints to stdout goes to stderr, which the host logs.
func Serve(p *Plugin) {
	if err := p.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s %s is a Barrage plugin: Barrage starts it (barrage run, barrage plugin check); it is not run by hand\n", p.Name, p.Version)
		os.Exit(1)
	}
	restore := routeStdout()
	defer restore()
	if os.Getenv("GOGC") == "" {
		// A plugin holds little memory, and a URL hook allocates for every call it answers:
		// collecting less often buys CPU for the request path with memory it can spare.
		debug.SetGCPercent(400)
	}
	if path := os.Getenv("BARRAGE_PLUGIN_CPUPROFILE"); path != "" {
		// For authors measuring their plugin under load: barrage run --plugin-env
		// BARRAGE_PLUGIN_CPUPROFILE=/tmp/plugin.prof (the plugin's user must be able to write it).
		if f, err := os.Create(path); err == nil {
			defer f.Close()
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile() // runs before the Close above
			}
		}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: PluginSet(p)},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: p.Name, Output: os.Stderr, Level: hclog.Info, JSONFormat: true,
		}),
	})
}

// PluginSets is what a host gives go-plugin (ClientConfig.VersionedPlugins) to start plugins of
// this protocol; the dispensed value is a *Client (see Dispense).
func PluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: PluginSet(nil)}
}

// PluginSet is the go-plugin plugin set that serves p (nil on a host's side). Package sdktest
// uses it with go-plugin's test harness.
func PluginSet(p *Plugin) plugin.PluginSet {
	return plugin.PluginSet{pluginName: &grpcPlugin{impl: p}}
}

// Dispense returns the Client of a started go-plugin client.
func Dispense(c plugin.ClientProtocol) (*Client, error) {
	raw, err := c.Dispense(pluginName)
	if err != nil {
		return nil, err
	}
	cl, ok := raw.(*Client)
	if !ok {
		return nil, fmt.Errorf("sdk: dispensed %T, want *sdk.Client", raw)
	}
	return cl, nil
}

// grpcPlugin is the go-plugin glue: on the plugin's side it registers the services of impl, on
// the host's side it returns a Client.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl *Plugin
}

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	register(s, g.impl)
	return nil
}

func (g *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewClient(conn), nil
}

// register registers the services p implements on s.
func register(s *grpc.Server, p *Plugin) {
	pb.RegisterInfoServiceServer(s, &infoServer{p: p})
	if p.Element != nil {
		pb.RegisterSessionElementServiceServer(s, &elementServer{impl: p.Element})
	}
	if p.URL != nil {
		pb.RegisterURLServiceServer(s, &urlServer{impl: p.URL})
	}
	if p.Source != nil {
		pb.RegisterSourceModifierServiceServer(s, &sourceServer{impl: p.Source})
	}
}

// handshakeLine is go-plugin's handshake: core version|protocol version|network|address|protocol.
var handshakeLine = regexp.MustCompile(`^\d+\|\d+\|(tcp|unix)\|[^|]+\|grpc`)

// forwardStdout copies the lines written to r: the first handshake line to handshake (which is
// then closed), every other line to other. Nothing an author prints reaches the host's end of
// stdout, where it would break the handshake.
func forwardStdout(r io.Reader, handshake io.WriteCloser, other io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	done := false
	for sc.Scan() {
		line := sc.Bytes()
		if !done && handshakeLine.Match(line) {
			_, _ = handshake.Write(append(line, '\n'))
			_ = handshake.Close()
			done = true
			continue
		}
		_, _ = other.Write(append(line, '\n'))
	}
	if !done {
		_ = handshake.Close()
	}
}
