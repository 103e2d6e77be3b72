package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/barrage-load/barrage/internal/agent"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/logging"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/telemetry"
)

func runAgent(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "agent", "--server URL [--token-file FILE]")
	server := fs.String("server", e.getenv("BARRAGE_SERVER"), "the server's URL (BARRAGE_SERVER)")
	tokenFile := fs.String("token-file", "", "read the agent's token from this file (else BARRAGE_AGENT_TOKEN)")
	maxVUs := fs.Int("max-vus", 0, "this agent's own limit of VUs per job, whatever the server asks (0: none)")
	maxDuration := durationFlag(fs, "max-duration", 0, "this agent's own limit of time per job (0: none)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	var allow multiFlag
	fs.Var(&allow, "allow-target", "let the load reach this internal CIDR, address, or address:port (loopback, private, link-local are refused otherwise); repeat for several")
	internal := fs.Bool("internal-targets", false, "let the load reach every internal address: for an agent that tests its operator's own network")
	pf := addPluginFlags(fs, e)
	cache := fs.String("plugin-cache", defaultCacheDir(e.getenv), "where marketplace plugins are kept once fetched and verified, by sha256")
	metricsAddr := fs.String("metrics-addr", e.getenv("BARRAGE_AGENT_METRICS_ADDR"), "serve /metrics (Prometheus text format) on this address (BARRAGE_AGENT_METRICS_ADDR); empty serves none")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	token := e.getenv("BARRAGE_AGENT_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("read the token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if *server == "" || token == "" {
		fs.Usage()
		fmt.Fprintln(e.stderr, "\nThe agent needs --server (or BARRAGE_SERVER) and its token in BARRAGE_AGENT_TOKEN or --token-file:")
		fmt.Fprintln(e.stderr, "register one with `barrage agents create NAME` (or POST /v1/agents); admins register shared ones.")
		return errUsage
	}
	prefixes, ports, err := netpolicy.ParseAllow(allow)
	if err != nil {
		fmt.Fprintf(e.stderr, "barrage agent: --allow-target: %v\n", err)
		return errUsage
	}
	hopts, err := pf.hostOptions()
	if err != nil {
		return err
	}
	// Plugins are strangers' code: say at start how this machine confines them, and refuse to
	// start without the whole sandbox when the operator requires it.
	sb, err := pluginhost.Probe(hopts)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stderr, "barrage agent: "+sb.String())
	if *pf.require && !sb.Full() {
		return fmt.Errorf("barrage agent: --require-sandbox: %w", pluginhost.ErrSandboxUnavailable)
	}
	log := logging.New(e.stderr, *logFormat, slog.LevelInfo)
	var metrics *telemetry.Agent
	if *metricsAddr != "" {
		metrics = telemetry.NewAgent()
		addr, stop, err := telemetry.Listen(*metricsAddr, metrics.Handler(), log)
		if err != nil {
			return err
		}
		defer stop()
		log.Info("serving metrics", slog.String("addr", "http://"+addr+"/metrics"))
	}
	a, err := agent.New(agent.Config{
		Plugins: pluginset.Dir(*pf.dir), PluginHost: hopts, PluginCache: *cache, Sandbox: sb.Full(),
		Server: *server, Token: token, Version: version,
		Limits:  barrage.Limits{MaxVUs: *maxVUs, MaxRunDuration: *maxDuration},
		Targets: &netpolicy.Policy{Internal: *internal, Allow: prefixes, AllowPorts: ports},
		Log:     log, Metrics: metrics,
	})
	if err != nil {
		return err
	}
	if err := a.Run(ctx); errors.Is(err, agent.ErrRefused) {
		return err
	}
	return nil
}

// defaultCacheDir is $XDG_CACHE_HOME/barrage/artifacts, else ~/.cache/barrage/artifacts.
func defaultCacheDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "barrage", "artifacts")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".cache", "barrage", "artifacts")
}
