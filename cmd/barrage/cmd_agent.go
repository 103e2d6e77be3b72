package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/barrage-load/barrage/internal/agent"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/logging"
)

func runAgent(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "agent", "--server URL [--token-file FILE]")
	server := fs.String("server", e.getenv("BARRAGE_SERVER"), "the server's URL (BARRAGE_SERVER)")
	tokenFile := fs.String("token-file", "", "read the agent's token from this file (else BARRAGE_AGENT_TOKEN)")
	maxVUs := fs.Int("max-vus", 0, "this agent's own limit of VUs per job, whatever the server asks (0: none)")
	maxDuration := fs.Duration("max-duration", 0, "this agent's own limit of time per job (0: none)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
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
	a, err := agent.New(agent.Config{
		Server: *server, Token: token, Version: version,
		Limits: barrage.Limits{MaxVUs: *maxVUs, MaxRunDuration: *maxDuration},
		Log:    logging.New(e.stderr, *logFormat, slog.LevelInfo),
	})
	if err != nil {
		return err
	}
	if err := a.Run(ctx); errors.Is(err, agent.ErrRefused) {
		return err
	}
	return nil
}
