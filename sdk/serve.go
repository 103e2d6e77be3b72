package sdk

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"runtime/pprof"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/barrage-load/barrage/sdk/internal/wire"
	pb "github.com/barrage-load/barrage/sdk/proto/barrage/plugin/v1"
)

// Serve runs p as a plugin process and returns when the host is done with it. Call it from
// main. It speaks gRPC only, negotiates the protocol version with the host, and keeps stdout
// for the handshake: anything the plugin prints to stdout goes to stderr, which the host logs.
func Serve(p *Plugin) {
	if err := p.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
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
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: serverSet(p)},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(wire.MaxMessageSize), grpc.MaxSendMsgSize(wire.MaxMessageSize))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: p.Name, Output: os.Stderr, Level: hclog.Info, JSONFormat: true,
		}),
	})
}

// serverSet is the go-plugin plugin set that serves p, and connects to it in the test harness.
func serverSet(p *Plugin) plugin.PluginSet {
	return plugin.PluginSet{wire.PluginName: &wire.Plugin{
		Register: func(s *grpc.Server) { register(s, p) },
		Connect:  func(conn *grpc.ClientConn) any { return newClient(conn) },
	}}
}

func init() {
	wire.ServerSet = func(p any) plugin.PluginSet { return serverSet(p.(*Plugin)) }
	wire.NewClient = func(conn *grpc.ClientConn) any { return newClient(conn) }
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
