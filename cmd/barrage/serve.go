package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/agent"
	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/httpapi"
	"github.com/barrage-load/barrage/internal/jobs"
	"github.com/barrage-load/barrage/internal/logging"
	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/ownership"
	"github.com/barrage-load/barrage/internal/pgembed"
	"github.com/barrage-load/barrage/internal/portal"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
	"github.com/barrage-load/barrage/internal/telemetry"
)

func runServe(ctx context.Context, e env, args []string) error {
	cfg, err := loadConfig(e, "serve", args)
	if err != nil {
		return err
	}
	log := logging.New(e.stderr, cfg.LogFormat, cfg.LogLevel)
	log.Info("starting barrage", slog.String("version", version), slog.Any("config", cfg))
	// The address first: a busy port fails at once, before a database is unpacked, migrated
	// or handed a first-admin code that no server will take.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close() // Serve closes it too, once it serves

	db, err := openDatabase(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	defer db.close()

	res, err := postgres.Migrate(ctx, db.pool)
	if err != nil {
		return err
	}
	if len(res.Applied) > 0 {
		log.Info("database migrated", slog.Int("from", res.From), slog.Int("to", res.To))
	}
	store := postgres.NewStore(db.pool)
	accounts, err := newAccounts(cfg, store, log)
	if err != nil {
		return err
	}
	code, err := accounts.EnsureFirstAdmin(ctx)
	if err != nil {
		return fmt.Errorf("issue the first-admin invitation: %w", err)
	}
	if code != "" {
		// Printed to the console, never logged: logs are shipped and kept, codes are secrets.
		fmt.Fprintf(e.stdout, "\nNo account exists yet. Sign up the first admin with this single-use code (valid %s):\n", account.FirstAdminTTL)
		fmt.Fprintf(e.stdout, "First-admin invitation code: %s\n\n", code)
	}

	metrics := telemetry.New(db.pool, store, log.With(slog.String("component", "metrics")))
	ring, err := seal.Load(cfg.SecretKeysFile)
	if err != nil {
		return err
	}
	ctl := control.New(store, log.With(slog.String("component", "control")), control.Config{IngestLag: metrics.IngestLag, Secrets: ring, Quotas: cfg.Quotas,
		Targets: control.TargetsConfig{Open: cfg.OpenTargets, All: cfg.OpenAllTargets, MaxVUsPerAddress: cfg.DestinationMaxVUs,
			Checker: ownership.New(&cfg.VerifyTargets, ownership.Resolver(cfg.VerifyDNS))}})
	blobs, err := openBlobs(ctx, cfg)
	if err != nil {
		return err
	}
	mkt := market.New(store, blobs, log.With(slog.String("component", "market")), market.Config{MaxArtifactBytes: cfg.MaxPluginBytes,
		ReservedNamespaces: cfg.ReservedNamespaces, Quotas: cfg.Quotas})
	handler, err := httpapi.NewServer(httpapi.Deps{
		Log: log, Accounts: accounts, Control: ctl, Market: mkt, Ready: store.Ready,
		TrustedProxies: cfg.TrustedProxies, MaxBodyBytes: cfg.MaxBodyBytes, MaxFileBytes: cfg.MaxFileBytes,
		Version:        version,
		ObserveRequest: metrics.Request,
		Portal:         portal.Handler(),
	})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving", slog.String("addr", "http://"+ln.Addr().String()), slog.String("portal", "http://"+ln.Addr().String()+"/"),
		slog.String("docs", "http://"+ln.Addr().String()+"/docs"))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if cfg.MetricsAddr != "" {
		addr, stop, err := telemetry.Listen(cfg.MetricsAddr, metrics.Handler(), log)
		if err != nil {
			return err
		}
		defer stop()
		log.Info("serving metrics", slog.String("addr", "http://"+addr+"/metrics"))
	}
	go ctl.Listen(ctx)
	runner, err := jobs.New(db.pool, log, jobs.Work{
		CleanUp: func(ctx context.Context) error {
			n, err := store.DeleteExpired(ctx, time.Now().Add(-24*time.Hour))
			log.Debug("clean-up", slog.Int64("deleted", n))
			if err != nil {
				return err
			}
			swept, err := mkt.SweepBlobs(ctx, time.Now().Add(-market.SweepGrace))
			log.Debug("plugin blobs swept", slog.Int("deleted", swept))
			return err
		},
		Reap:     ctl.Reap,
		Finalize: ctl.FinalizeRun,
	})
	if err != nil {
		return err
	}
	ctl.UseFinalizer(runner)
	// A stop asked for while the jobs or the demo agent start is a stop, not a failure: it
	// cancels their start, and the server shuts down as it would a moment later.
	switch err := runner.Start(ctx); {
	case err == nil:
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
			defer cancel()
			if err := runner.Stop(stopCtx); err != nil {
				log.Warn("background jobs stopped uncleanly", slog.String("error", err.Error()))
			}
		}()
	case ctx.Err() == nil:
		return fmt.Errorf("start background jobs: %w", err)
	}
	if cfg.DemoAgent && ctx.Err() == nil {
		switch a, err := demoAgent(ctx, ctl, cfg, "http://"+ln.Addr().String(), log); {
		case err == nil:
			go func() {
				if err := a.Run(ctx); err != nil {
					log.Error("the demo agent stopped", slog.String("error", err.Error()))
				}
			}()
		case ctx.Err() == nil:
			return fmt.Errorf("start the demo agent: %w", err)
		}
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down", slog.Duration("grace", cfg.ShutdownTimeout))
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-db.died():
		// Not restarted here: a database that died once may die again mid-write, and its
		// supervisor (systemd, Kubernetes, a person) decides; starting serve again recovers it.
		return errors.New("the embedded PostgreSQL exited (its output went to serve's log, above): serve stops; start it again " +
			"with the same --data-dir, which starts PostgreSQL and recovers the database, or run serve under a supervisor that restarts it " +
			"(systemd Restart=on-failure, a Kubernetes Deployment)")
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown cut short", slog.String("error", err.Error()))
	}
	log.Info("stopped")
	return nil
}

func newAccounts(cfg config.Config, store *postgres.Store, log *slog.Logger) (*account.Service, error) {
	key, err := auth.LoadOrCreateKey(cfg.JWTKeyFile, true)
	if err != nil {
		return nil, err
	}
	tokens := auth.NewTokens(key, cfg.JWTIssuer, "barrage-api", cfg.AccessTokenTTL)
	return account.New(store, auth.NewHasher(auth.OWASPParams), tokens, log, account.Config{RefreshTTL: cfg.RefreshTokenTTL}), nil
}

// demoAgent returns the shared demo agent (500 VUs and 5 minutes per job), registered on the
// first start and its token kept in the data folder, ready to run against this server. Every
// user may use it, and it runs in the server's process: of the server's internal network it
// reaches only what the operator allows (the demo shop's address by default), so that no user
// aims it at the server's database or another service on its loopback.
func demoAgent(ctx context.Context, ctl *control.Service, cfg config.Config, server string, log *slog.Logger) (*agent.Agent, error) {
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
		a, t, err := ctl.CreateAgent(ctx, barrage.Principal{}, control.AgentInput{
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

// database is an open pool, and the embedded server behind it if there is one.
type database struct {
	pool *pgxpool.Pool
	pg   *pgembed.Instance
	log  *slog.Logger
}

// openDatabase connects to DATABASE_URL or, without one, starts the embedded PostgreSQL in the
// data folder. With attach, a running embedded server (of a serve in progress) is used as is.
func openDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, attach bool) (*database, error) {
	db := &database{log: log}
	url := cfg.DatabaseURL
	if url == "" {
		pgCfg := pgembed.Config{
			DataDir:   filepath.Join(cfg.DataDir, "postgres"),
			Port:      cfg.PostgresPort,
			Database:  "barrage",
			BinDir:    cfg.PostgresBin,
			OSUser:    cfg.PostgresUser,
			MirrorURL: cfg.PostgresMirror,
			Attach:    attach,
			Logger:    log.With(slog.String("component", "postgres")),
		}
		log.Info("no DATABASE_URL: starting the embedded PostgreSQL", slog.String("data_dir", pgCfg.DataDir))
		pg, err := pgembed.Start(ctx, pgCfg)
		if errors.Is(err, pgembed.ErrUnreachable) {
			// Run as root from a private folder (a clone in /root, say): PostgreSQL's account
			// cannot enter it. Keep the database in a system folder named after the data
			// folder instead, so that restarts find it again.
			pgCfg.DataDir = rootFallbackDir(pgCfg.DataDir)
			log.Warn("the data folder is closed to PostgreSQL's unprivileged account; keeping the database elsewhere",
				slog.String("reason", err.Error()), slog.String("data_dir", pgCfg.DataDir))
			pg, err = pgembed.Start(ctx, pgCfg)
		}
		if err != nil {
			return nil, err
		}
		db.pg, url = pg, pg.DSN()
	}
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		db.close()
		return nil, err
	}
	db.pool = pool
	return db, nil
}

// rootFallbackDir is where the embedded database of dataDir lives when dataDir is closed to
// PostgreSQL's account: /var/lib/barrage/postgres-<hash of dataDir>.
func rootFallbackDir(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join("/var/lib/barrage", "postgres-"+hex.EncodeToString(sum[:6]))
}

func (db *database) died() <-chan struct{} {
	if db.pg == nil {
		return nil
	}
	return db.pg.Done()
}

func (db *database) close() {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.pg.Stop(ctx); err != nil {
			db.log.Warn("stop the embedded PostgreSQL", slog.String("error", err.Error()))
		}
	}
}

// localAccounts opens the database the way serve does, for admin commands that work without
// the API. A running serve's embedded database is attached to, not started twice.
func localAccounts(ctx context.Context, e env, args []string) (*account.Service, func(), error) {
	cfg, err := loadConfig(e, "admin", args)
	if err != nil {
		return nil, nil, err
	}
	log := logging.New(e.stderr, cfg.LogFormat, slog.LevelWarn)
	db, err := openDatabase(ctx, cfg, log, true)
	if err != nil {
		return nil, nil, err
	}
	if err := postgres.CheckSchema(ctx, db.pool); err != nil {
		db.close()
		return nil, nil, err
	}
	svc, err := newAccounts(cfg, postgres.NewStore(db.pool), log)
	if err != nil {
		db.close()
		return nil, nil, err
	}
	return svc, db.close, nil
}

// openBlobs opens the store of plugin artifacts: the S3-compatible bucket when one is named,
// else the local folder.
func openBlobs(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.BlobS3URL != "" {
		s3cfg, err := config.ParseS3URL(cfg.BlobS3URL)
		if err != nil {
			return nil, err
		}
		return blob.NewS3(ctx, s3cfg)
	}
	return blob.NewLocal(cfg.BlobDir)
}
