package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/barrage-load/barrage/migrations"
)

// migrationLockKey is the advisory lock that serialises migrations between replicas
// (the first eight bytes of sha256("barrage.migrate")).
const migrationLockKey int64 = 0x4a1f3c2d5e6b7a80

// ErrSchemaTooNew means the database was migrated by a newer Barrage than this one.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary knows")

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	return readMigrations(migrations.FS)
}

func readMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// MigrationsHash identifies the embedded schema, River's included: equal hashes mean equal
// migrations. Test harnesses name their template databases with it.
func MigrationsHash() (string, error) {
	ms, err := Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Name, m.SQL)
	}
	rm, err := riverMigrator(nil)
	if err != nil {
		return "", err
	}
	for _, m := range rm.AllVersions() {
		fmt.Fprintf(h, "river %d\x00%s\x00", m.Version, m.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// MigrateResult tells what Migrate did.
type MigrateResult struct {
	From, To int
	Applied  []string
	// River lists the versions of River's own schema (its job queue) applied.
	River []int
}

// riverMigrator is River's migrator: its job queue's tables are migrated with Barrage's, under the
// same lock, so one command (and serve's start) brings the whole schema up to date. pool may be
// nil for reading the migrations only.
func riverMigrator(pool *pgxpool.Pool) (*rivermigrate.Migrator[pgx.Tx], error) {
	return rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
}

// Migrate applies the pending migrations, each in its own transaction, under an advisory lock so
// that replicas starting together apply each migration once. It refuses a database whose schema
// is newer than the embedded migrations.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (MigrateResult, error) {
	return MigrateTo(ctx, pool, math.MaxInt)
}

// MigrateTo is Migrate up to version alone: what a test of a migration on a database holding data
// from before it needs.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int) (MigrateResult, error) {
	ms, err := Migrations()
	if err != nil {
		return MigrateResult{}, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()

	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return MigrateResult{}, fmt.Errorf("migrate: take lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must be released even when ctx is done.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockKey)
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return MigrateResult{}, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	current, err := schemaVersion(ctx, conn.Conn())
	if err != nil {
		return MigrateResult{}, err
	}
	res := MigrateResult{From: current, To: current}
	if latest := ms[len(ms)-1].Version; current > latest {
		return res, fmt.Errorf("%w: database at version %d, binary knows up to %d", ErrSchemaTooNew, current, latest)
	}
	for _, m := range ms {
		if m.Version <= current || m.Version > version {
			continue
		}
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("migrate: apply %s: %w", m.Name, err)
		}
		res.To = m.Version
		res.Applied = append(res.Applied, m.Name)
	}
	// Still under the lock, so replicas starting together run River's migrations one at a time;
	// on a pool of their own, since callers waiting for the lock may hold every connection of
	// theirs.
	cfg := pool.Config()
	cfg.MinConns, cfg.MaxConns = 0, 1
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("migrate: River's job queue: %w", err)
	}
	defer own.Close()
	rm, err := riverMigrator(own)
	if err != nil {
		return res, err
	}
	r, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return res, fmt.Errorf("migrate: River's job queue: %w", err)
	}
	for _, v := range r.Versions {
		res.River = append(res.River, v.Version)
	}
	return res, nil
}

// CheckSchema returns nil when the database is at exactly the version this binary knows, an error
// wrapping ErrSchemaTooNew when it is ahead, and a plain error when migrations are pending.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	current, err := schemaVersion(ctx, conn.Conn())
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	switch {
	case current > latest:
		return fmt.Errorf("%w: database at version %d, binary knows up to %d", ErrSchemaTooNew, current, latest)
	case current < latest:
		return fmt.Errorf("database schema at version %d, %d pending: run `barrage migrate up`", current, latest-current)
	}
	rm, err := riverMigrator(pool)
	if err != nil {
		return err
	}
	v, err := rm.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("check River's job queue schema: %w", err)
	}
	if !v.OK {
		return fmt.Errorf("the job queue's schema (River's) is not current (%s): run `barrage migrate up`", strings.Join(v.Messages, "; "))
	}
	return nil
}

func schemaVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
