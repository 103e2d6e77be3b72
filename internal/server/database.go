package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/pgembed"
	"github.com/barrage-load/barrage/internal/postgres"
)

// Database is an open pool, and the embedded server behind it if there is one.
type Database struct {
	Pool *pgxpool.Pool
	pg   *pgembed.Instance
	log  *slog.Logger
}

// OpenDatabase connects to DATABASE_URL or, without one, starts the embedded PostgreSQL in the
// data folder. With attach, a running embedded server (of a serve in progress) is used as is.
func OpenDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, attach bool) (*Database, error) {
	db := &Database{log: log}
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
		db.Close()
		return nil, err
	}
	db.Pool = pool
	return db, nil
}

// rootFallbackDir is where the embedded database of dataDir lives when dataDir is closed to
// PostgreSQL's account: /var/lib/barrage/postgres-<hash of dataDir>.
func rootFallbackDir(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join("/var/lib/barrage", "postgres-"+hex.EncodeToString(sum[:6]))
}

// Died is closed when the embedded PostgreSQL exits; nil without one.
func (db *Database) Died() <-chan struct{} {
	if db.pg == nil {
		return nil
	}
	return db.pg.Done()
}

// Close closes the pool and stops the embedded PostgreSQL, if there is one.
func (db *Database) Close() {
	if db.Pool != nil {
		db.Pool.Close()
	}
	if db.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.pg.Stop(ctx); err != nil {
			db.log.Warn("stop the embedded PostgreSQL", slog.String("error", err.Error()))
		}
	}
}

// NewAccounts is the accounts service of cfg: its signing key (made on the first start) and
// token lifetimes.
func NewAccounts(cfg config.Config, store *postgres.Store, log *slog.Logger) (*account.Service, error) {
	key, err := auth.LoadOrCreateKey(cfg.JWTKeyFile, true)
	if err != nil {
		return nil, err
	}
	tokens := auth.NewTokens(key, cfg.JWTIssuer, "barrage-api", cfg.AccessTokenTTL)
	return account.New(store, auth.NewHasher(auth.OWASPParams), tokens, log, account.Config{RefreshTTL: cfg.RefreshTokenTTL, Quotas: cfg.Quotas}), nil
}

// OpenBlobs opens the store of plugin artifacts: the S3-compatible bucket when one is named,
// else the local folder.
func OpenBlobs(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.BlobS3URL != "" {
		s3cfg, err := config.ParseS3URL(cfg.BlobS3URL)
		if err != nil {
			return nil, err
		}
		return blob.NewS3(ctx, s3cfg)
	}
	return blob.NewLocal(cfg.BlobDir)
}
