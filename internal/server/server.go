// Package server is `barrage serve` composed: its database (DATABASE_URL, else the embedded
// PostgreSQL), migrated; the accounts, control plane and marketplace services; the HTTP API, its
// docs and the portal; the background jobs and the metrics listener. cmd/barrage starts it, and
// tests build it, serve with it and close it in their own process.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/notifications"
	"github.com/barrage-load/barrage/internal/control/schedules"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/httpapi"
	"github.com/barrage-load/barrage/internal/jobs"
	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/ownership"
	"github.com/barrage-load/barrage/internal/portal"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
	"github.com/barrage-load/barrage/internal/telemetry"
)

// Server is a composed `barrage serve`: Open builds it, Start serves, Wait serves until its
// context ends and shuts it down.
type Server struct {
	// Accounts, Control and Market are its services, for what the process does beside the API
	// (registering the demo agent, say).
	Accounts *account.Service
	Control  *control.Plane
	Market   *market.Service

	cfg     config.Config
	log     *slog.Logger
	ln      net.Listener
	db      *Database
	http    *http.Server
	metrics *telemetry.Metrics
	runner  *jobs.Runner

	serveErr    chan error
	stopMetrics func()
	jobsStarted bool
}

// Open listens on cfg.Addr, opens and migrates the database and composes the services. The
// first-admin invitation code, when no account exists yet, is written to console, never to the
// log. Close what Open returns once done with it (Wait does).
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, console io.Writer, version string) (_ *Server, err error) {
	s := &Server{cfg: cfg, log: log, serveErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	// The address first: a busy port fails at once, before a database is unpacked, migrated
	// or handed a first-admin code that no server will take.
	if s.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if s.db, err = OpenDatabase(ctx, cfg, log, false); err != nil {
		return nil, err
	}
	res, err := postgres.Migrate(ctx, s.db.Pool)
	if err != nil {
		return nil, err
	}
	if len(res.Applied) > 0 {
		log.Info("database migrated", slog.Int("from", res.From), slog.Int("to", res.To))
	}
	store := postgres.NewStore(s.db.Pool)
	if s.Accounts, err = NewAccounts(cfg, store, log); err != nil {
		return nil, err
	}
	code, err := s.Accounts.EnsureFirstAdmin(ctx)
	if err != nil {
		return nil, fmt.Errorf("issue the first-admin invitation: %w", err)
	}
	if code != "" {
		// Printed to the console, never logged: logs are shipped and kept, codes are secrets.
		fmt.Fprintf(console, "\nNo account exists yet. Sign up the first admin with this single-use code (valid %s):\n", account.FirstAdminTTL)
		fmt.Fprintf(console, "First-admin invitation code: %s\n\n", code)
	}

	s.metrics = telemetry.New(s.db.Pool, store, log.With(slog.String("component", "metrics")))
	ring, err := seal.Load(cfg.SecretKeysFile)
	if err != nil {
		return nil, err
	}
	notify, err := notifyConfig(cfg, version)
	if err != nil {
		return nil, err
	}
	s.Control = control.New(store, log.With(slog.String("component", "control")), control.Config{IngestLag: s.metrics.IngestLag, Secrets: ring, Quotas: cfg.Quotas,
		Targets: targets.Config{Open: cfg.OpenTargets, All: cfg.OpenAllTargets, MaxVUsPerAddress: cfg.DestinationMaxVUs,
			Checker: ownership.New(&cfg.VerifyTargets, ownership.Resolver(cfg.VerifyDNS))},
		Notify: notify, Schedules: schedules.Config{MinInterval: cfg.ScheduleMinInterval}})
	blobs, err := OpenBlobs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.Market = market.New(store, blobs, log.With(slog.String("component", "market")), market.Config{MaxArtifactBytes: cfg.MaxPluginBytes,
		ReservedNamespaces: cfg.ReservedNamespaces, Quotas: cfg.Quotas})
	auditLog := audit.New(store, log.With(slog.String("component", "audit")), cfg.AuditRetention)
	// The live streams end when the shutdown begins, not at the end of its grace: their clients
	// go on from another replica at once.
	draining, drain := context.WithCancel(context.WithoutCancel(ctx))
	handler, err := httpapi.NewServer(httpapi.Deps{
		Log: log, Accounts: s.Accounts, Control: s.Control, Market: s.Market, Audit: auditLog, Ready: store.Ready,
		TrustedProxies: cfg.TrustedProxies, MaxBodyBytes: cfg.MaxBodyBytes, MaxFileBytes: cfg.MaxFileBytes,
		Version:        version,
		ObserveRequest: s.metrics.Request,
		Portal:         portal.Handler(),
		Draining:       draining,
	})
	if err != nil {
		drain()
		return nil, err
	}
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	s.http.RegisterOnShutdown(drain)
	s.runner, err = jobs.New(s.db.Pool, log, jobs.Work{
		CleanUp: func(ctx context.Context) error {
			n, err := store.DeleteExpired(ctx, time.Now().Add(-24*time.Hour))
			log.Debug("clean-up", slog.Int64("deleted", n))
			if err != nil {
				return err
			}
			swept, sweepErr := s.Market.SweepBlobs(ctx, time.Now().Add(-market.SweepGrace))
			log.Debug("plugin blobs swept", slog.Int("deleted", swept))
			pruned, pruneErr := auditLog.Prune(ctx)
			log.Debug("audit log pruned", slog.Int64("deleted", pruned))
			return errors.Join(sweepErr, pruneErr)
		},
		Reap: func(ctx context.Context) error {
			return errors.Join(s.Control.Runs.Reap(ctx), s.Control.Notify.AgentsOffline(ctx))
		},
		Finalize:        s.Control.Runs.FinalizeRun,
		RunEnded:        s.Control.Notify.RunEnded,
		Deliver:         s.Control.Notify.Deliver,
		Tick:            s.Control.Schedules.Tick,
		Fire:            s.Control.Schedules.Fire,
		DeliverAttempts: cfg.NotifyAttempts,
		DeliverBackoff:  cfg.NotifyBackoff,
	})
	if err != nil {
		return nil, err
	}
	store.UseFinalizer(s.runner)
	store.UseNotifier(s.runner)
	store.UseLog(log.With(slog.String("component", "store")))
	return s, nil
}

// notifyConfig is what notifications take of cfg: the policy of webhooks, the links' server,
// and the mail server with its password read from its file.
func notifyConfig(cfg config.Config, version string) (notifications.Config, error) {
	policy := cfg.NotifyPolicy
	nc := notifications.Config{Policy: &policy, PublicURL: cfg.PublicURL, Version: version}
	if cfg.SMTPAddr != "" {
		nc.SMTP = &notifications.SMTP{Addr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername}
		if cfg.SMTPPasswordFile != "" {
			b, err := os.ReadFile(cfg.SMTPPasswordFile)
			if err != nil {
				return nc, fmt.Errorf("--smtp-password-file: %w", err)
			}
			nc.SMTP.Password = strings.TrimRight(string(b), "\r\n")
		}
	}
	return nc, nil
}

// URL is where the server serves: http:// and the address it listens on.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Start serves the API, the metrics (when asked for), the control plane's notifications and
// the background jobs, and returns. A stop asked for while the jobs start (ctx ended) is not an
// error: Wait shuts down as it would a moment later.
func (s *Server) Start(ctx context.Context) error {
	s.log.Info("serving", slog.String("addr", s.URL()), slog.String("portal", s.URL()+"/"), slog.String("docs", s.URL()+"/docs"))
	go func() { s.serveErr <- s.http.Serve(s.ln) }()
	if s.cfg.MetricsAddr != "" {
		addr, stop, err := telemetry.Listen(s.cfg.MetricsAddr, s.metrics.Handler(), s.log)
		if err != nil {
			return err
		}
		s.stopMetrics = stop
		s.log.Info("serving metrics", slog.String("addr", "http://"+addr+"/metrics"))
	}
	go s.Control.Listen(ctx)
	switch err := s.runner.Start(ctx); {
	case err == nil:
		s.jobsStarted = true
	case ctx.Err() == nil:
		// The jobs' first connection fails when the embedded PostgreSQL has just died: say
		// that, as Wait would a moment later, rather than what it broke. Its death is told
		// when its process has been reaped, a moment after its connections end.
		if died := s.db.Died(); died != nil {
			select {
			case <-died:
				return errEmbeddedDied
			case <-time.After(2 * time.Second):
			}
		}
		return fmt.Errorf("start background jobs: %w", err)
	}
	return nil
}

// errEmbeddedDied is why serve stops when its embedded PostgreSQL exits.
var errEmbeddedDied = errors.New("the embedded PostgreSQL exited (its output went to serve's log, above): serve stops; start it again " +
	"with the same --data-dir, which starts PostgreSQL and recovers the database, or run serve under a supervisor that restarts it " +
	"(systemd Restart=on-failure, a Kubernetes Deployment)")

// Wait serves until ctx ends, then shuts down within the configured grace and closes the
// server; it returns early with why, when serving fails or the embedded database dies.
func (s *Server) Wait(ctx context.Context) error {
	defer s.Close()
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", slog.Duration("grace", s.cfg.ShutdownTimeout))
	case err := <-s.serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-s.db.Died():
		// Not restarted here: a database that died once may die again mid-write, and its
		// supervisor (systemd, Kubernetes, a person) decides; starting serve again recovers it.
		return errEmbeddedDied
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("shutdown cut short", slog.String("error", err.Error()))
	}
	s.log.Info("stopped")
	return nil
}

// Close stops the background jobs and the metrics listener, and closes the listener and the
// database (the embedded PostgreSQL stops). Wait calls it; call it after Open when not serving.
func (s *Server) Close() {
	if s.jobsStarted {
		stopCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		if err := s.runner.Stop(stopCtx); err != nil {
			s.log.Warn("background jobs stopped uncleanly", slog.String("error", err.Error()))
		}
		cancel()
		s.jobsStarted = false
	}
	if s.stopMetrics != nil {
		s.stopMetrics()
		s.stopMetrics = nil
	}
	if s.ln != nil {
		s.ln.Close()
	}
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
}
