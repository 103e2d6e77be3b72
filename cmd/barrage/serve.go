package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/agent"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/logging"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/server"
)

func runServe(ctx context.Context, e env, args []string) error {
	cfg, err := loadConfig(e, "serve", args)
	if err != nil {
		return err
	}
	log := logging.New(e.stderr, cfg.LogFormat, cfg.LogLevel)
	log.Info("starting barrage", slog.String("version", version), slog.Any("config", cfg))
	srv, err := server.Open(ctx, cfg, log, e.stdout, version)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		return err
	}
	// A stop asked for while the demo agent starts is a stop, not a failure: the server shuts
	// down as it would a moment later.
	if cfg.DemoAgent && ctx.Err() == nil {
		switch a, err := demoAgent(ctx, srv.Control.Fleet, cfg, srv.URL(), log); {
		case err == nil:
			go func() {
				if err := a.Run(ctx); err != nil {
					log.Error("the demo agent stopped", slog.String("error", err.Error()))
				}
			}()
		case ctx.Err() == nil:
			srv.Close()
			return fmt.Errorf("start the demo agent: %w", err)
		}
	}
	return srv.Wait(ctx)
}

// demoAgent returns the shared demo agent (500 VUs and 5 minutes per job), registered on the
// first start and its token kept in the data folder, ready to run against this server. Every
// user may use it, and it runs in the server's process: of the server's internal network it
// reaches only what the operator allows (the demo shop's address by default), so that no user
// aims it at the server's database or another service on its loopback.
func demoAgent(ctx context.Context, ctl *fleet.Service, cfg config.Config, server string, log *slog.Logger) (*agent.Agent, error) {
	dataDir := cfg.DataDir
	path := filepath.Join(dataDir, "demo-agent.token")
	token := ""
	if b, err := os.ReadFile(path); err == nil {
		token = strings.TrimSpace(string(b))
		if _, err := ctl.AuthenticateAgent(ctx, token); err != nil {
			token = "" // removed by an admin, or another database: register it again
		}
	}
	if token == "" {
		a, t, err := ctl.CreateAgent(ctx, barrage.Principal{}, fleet.AgentInput{
			Name: "demo", Limits: barrage.Limits{MaxVUs: 500, MaxRunDuration: 5 * time.Minute},
		}, true)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
			return nil, err
		}
		token = t
		log.Info("registered the shared demo agent", slog.String("agent_id", a.ID.String()))
	}
	// It also reaches what the server's ownership check may reach (--verify-allow), for the runs
	// of a user who proved a target there: a run on a shared agent dials only its destinations,
	// its owner's proved targets and the operator's open ones, so no one else's run reaches them.
	targets := cfg.DemoAgentTargets
	targets.Allow = append(slices.Clone(targets.Allow), cfg.VerifyTargets.Allow...)
	targets.AllowPorts = append(slices.Clone(targets.AllowPorts), cfg.VerifyTargets.AllowPorts...)
	return agent.New(agent.Config{
		Server: server, Token: token, Version: version, Log: log.With(slog.String("component", "demo-agent")),
		Targets: &targets,
	})
}

// localAccounts opens the database the way serve does, for admin commands that work without
// the API. A running serve's embedded database is attached to, not started twice.
func localAccounts(ctx context.Context, e env, args []string) (*account.Service, func(), error) {
	cfg, err := loadConfig(e, "admin", args)
	if err != nil {
		return nil, nil, err
	}
	log := logging.New(e.stderr, cfg.LogFormat, slog.LevelWarn)
	db, err := server.OpenDatabase(ctx, cfg, log, true)
	if err != nil {
		return nil, nil, err
	}
	if err := postgres.CheckSchema(ctx, db.Pool); err != nil {
		db.Close()
		return nil, nil, err
	}
	svc, err := server.NewAccounts(cfg, postgres.NewStore(db.Pool), log)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return svc, db.Close, nil
}
