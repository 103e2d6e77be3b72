// Command testplugin is the plugin host's test plugin. It behaves according to the name it
// was started under (the host runs a copy named name-version-random), so one build serves
// every test: a well-behaved plugin and several hostile ones.
package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/barrage-load/barrage/sdk"
)

func main() {
	if len(os.Args) > 1 {
		helper(os.Args[1], os.Args[2:]) // a process a hostile plugin started
		return
	}
	name, _, _ := strings.Cut(filepath.Base(os.Args[0]), "-")
	p := &sdk.Plugin{Name: name, Version: "1.0.0", Scope: sdk.ScopeIteration}
	switch name {
	case "evil":
		// Names a version that, used as a path, climbs out of the plugin directory.
		p.Version = "../../../../../../tmp/barrage-escaped"
	case "squatter":
		// Names itself with a namespace, as only a marketplace plugin may.
		p.Name = "mycorp/squatter"
	}
	switch name {
	case "good", "env", "alloc", "stdio", "evil", "squatter":
		p.Element = &element{mode: name}
		p.URL = &hook{mode: name}
	case "crash", "hang":
		p.URL = &hook{mode: name}
	case "granter":
		p.Source = granter{}
	case "hostile":
		p.Element = &hostile{}
		// What it declares it needs to reach, which a test sets through the host's Env.
		if need := os.Getenv("TESTPLUGIN_NETWORK"); need != "" {
			p.Network = strings.Split(need, ",")
		}
	}
	if name == "stdio" {
		// Prints to stdout before Serve: the SDK's guard must keep the handshake intact.
		os.Stdout.WriteString("hello from the plugin's main\n")
	}
	sdk.Serve(p)
}

// granter is a hostile source plugin: it grants every other plugin of the script the hosts
// its config lists.
type granter struct{}

func (granter) Modify(_ context.Context, script, config []byte) ([]byte, error) {
	var cfg struct {
		Hosts []string `json:"hosts"`
	}
	var doc map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(script, &doc); err != nil {
		return nil, err
	}
	plugins, _ := doc["plugins"].([]any)
	for _, p := range plugins {
		if m, ok := p.(map[string]any); ok && m["kind"] != "source" && m["kind"] != "source-modifier" {
			m["network"] = cfg.Hosts
		}
	}
	return json.Marshal(doc)
}

type element struct{ mode string }

func (e *element) Configure(context.Context, []byte) ([]string, error) { return []string{"n"}, nil }

func (e *element) Next(_ context.Context, n int) ([]sdk.Vars, error) {
	switch e.mode {
	case "env":
		// Dumps its whole environment, so the test can look for the host's secrets.
		vars := sdk.Vars{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		return []sdk.Vars{vars}, nil
	case "alloc":
		// Allocates without bound: the address-space limit must stop it.
		var hoard [][]byte
		for {
			b := make([]byte, 16<<20)
			for i := range b {
				b[i] = 1
			}
			hoard = append(hoard, b)
		}
	}
	out := make([]sdk.Vars, n)
	for i := range out {
		out[i] = sdk.Vars{"n": "x"}
	}
	return out, nil
}

type hook struct {
	mode  string
	calls atomic.Int64
}

func (h *hook) Configure(context.Context, []byte) error { return nil }

func (h *hook) Before(ctx context.Context, _ sdk.Call, req *sdk.Request) error {
	switch n := h.calls.Add(1); {
	case h.mode == "crash" && n == 3:
		os.Exit(3)
	case h.mode == "hang":
		// Starts a child, then never answers: the host must kill both at the deadline.
		_ = exec.Command("sleep", "300").Start()
		time.Sleep(time.Hour)
	}
	req.Header.Set("X-Test", "1")
	return nil
}

func (h *hook) After(context.Context, sdk.Call, *sdk.Request, *sdk.Response) (sdk.Outcome, error) {
	return sdk.Outcome{}, nil
}
