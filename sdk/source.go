package sdk

import "embed"

// Source is the SDK's own source, without its tests: `barrage plugin new` writes it beside a
// new plugin project (and points go.mod at it) so that the project builds before the SDK is
// published to a module proxy.
//
//go:embed go.mod go.sum sdk.go serve.go server.go client.go purecache.go stdout_unix.go stdout_other.go source.go generate.go
//go:embed proto/barrage/plugin/v1/plugin.proto proto/barrage/plugin/v1/plugin.pb.go proto/barrage/plugin/v1/plugin_grpc.pb.go
//go:embed sdktest/sdktest.go host/host.go internal/wire/wire.go config.go network.go dial.go
var Source embed.FS
