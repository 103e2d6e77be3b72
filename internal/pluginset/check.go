package pluginset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// Finding is one check of `barrage plugin check`: what was checked, and what went wrong.
type Finding struct {
	Check string
	Err   error
}

var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// sampleScript is what a source modifier is checked with.
const sampleScript = `{"version": 1, "name": "check", "session": {"groups": [{"name": "g", "requests": [
  {"name": "home", "url": "http://127.0.0.1:8081/"},
  {"name": "login", "method": "POST", "url": "http://127.0.0.1:8081/login", "headers": {"Accept": "application/json"}}
]}]}, "load": {"vus": 1, "iterations": 1}}`

// Check starts the plugin binary at path (against its own sha256) and exercises it as a run
// would: the handshake (which fails on anything printed to stdout before it), Describe, the
// config schema, config (the JSON given, validated against the schema), and each hook it
// declares with sample input. It returns what the plugin says it is (zero when it did not
// start) and a finding per check; a nil Err passed.
func Check(ctx context.Context, h *pluginhost.Host, path string, config []byte) (info sdk.Info, out []Finding) {
	add := func(check string, err error) bool {
		out = append(out, Finding{Check: check, Err: err})
		return err == nil
	}
	sum, err := FileSHA256(path)
	if !add("read the binary", err) {
		return info, out
	}
	p, err := h.StartUnchecked(ctx, path, sum)
	if !add("start and handshake (gRPC, mTLS, protocol "+fmt.Sprint(sdk.ProtocolVersion)+", nothing on stdout before it)", err) {
		return info, out
	}
	defer p.Close()
	info = p.Info()
	var derr []string
	if info.Name == "" {
		derr = append(derr, "no name")
	}
	if !semverRe.MatchString(info.Version) {
		derr = append(derr, fmt.Sprintf("version %q is not a semantic version", info.Version))
	}
	if info.ProtocolVersion != sdk.ProtocolVersion {
		derr = append(derr, fmt.Sprintf("protocol version %d, want %d", info.ProtocolVersion, sdk.ProtocolVersion))
	}
	if len(info.Kinds) == 0 {
		derr = append(derr, "declares no hook")
	}
	if slices.Contains(info.Kinds, sdk.KindSessionElement) && info.Scope == "" {
		derr = append(derr, "a session element must declare its scope")
	}
	if _, err := sdk.ParseHostPatterns(info.Network); err != nil {
		derr = append(derr, "network: "+err.Error())
	}
	what := fmt.Sprintf("describe: %s@%s %v", info.Name, info.Version, info.Kinds)
	if len(info.Network) > 0 {
		what += fmt.Sprintf(", needs to reach %v (no network unless a run grants it)", info.Network)
	}
	add(what, joinErrs(derr))
	sp := &script.Plugin{Ref: info.Name + "@" + info.Version, As: "plugin"}
	if string(config) != "" && string(config) != "{}" {
		var cfg map[string]any
		if err := json.Unmarshal(config, &cfg); err != nil {
			add("config", err)
			return info, out
		}
		sp.Config = cfg
	}
	if !add("config against the plugin's JSON Schema", validateConfig(sp, info.ConfigSchema)) {
		return info, out
	}
	cfg := configJSON(sp)
	if slices.Contains(info.Kinds, sdk.KindSessionElement) {
		vars, err := p.Element().Configure(ctx, cfg)
		if add(fmt.Sprintf("session element: configure (variables %v)", vars), err) {
			sets, err := p.Element().Next(ctx, 3)
			if errors.Is(err, sdk.ErrExhausted) && len(sets) > 0 {
				err = nil
			}
			if err == nil {
				for _, s := range sets {
					for _, v := range vars {
						if _, ok := s[v]; !ok {
							err = fmt.Errorf("a set of values lacks the declared variable %s", v)
						}
					}
				}
			}
			add(fmt.Sprintf("session element: next 3 gave %d sets", len(sets)), err)
		}
	}
	if slices.Contains(info.Kinds, sdk.KindURL) {
		if add("url: configure", p.URL().Configure(ctx, cfg)) {
			call := sdk.Call{VU: 1, Iteration: 1, Request: "check"}
			req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1:8081/check?x=1", Header: http.Header{"Accept": {"*/*"}}}
			if add("url: before on GET http://127.0.0.1:8081/check", p.URL().Before(ctx, call, req)) {
				resp := &sdk.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, BodyPreview: []byte(`{"ok":true}`), Duration: 12 * time.Millisecond}
				outc, err := p.URL().After(ctx, call, req, resp)
				add(fmt.Sprintf("url: after on a 200 (vars %v, fail %q)", outc.Vars, outc.Fail), err)
			}
		}
	}
	if slices.Contains(info.Kinds, sdk.KindSourceModifier) {
		res, err := p.Modify(ctx, []byte(sampleScript), cfg)
		if err == nil {
			_, err = script.Parse(res, script.ParseOptions{Filename: "the modified sample script"})
		}
		add("source modifier: modify a sample script into a valid one", err)
	}
	return info, out
}

func joinErrs(msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
