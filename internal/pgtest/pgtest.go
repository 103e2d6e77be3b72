// Package pgtest gives each test a PostgreSQL database of its own with Barrage's schema applied:
// a clone of a template database that is migrated once per schema version and named by the hash
// of the migrations, so that a test costs a CREATE DATABASE, not a migration.
//
// The server comes from, in order:
//
//  1. TEST_DATABASE_URL, when set: any PostgreSQL 13 or newer, with a role that may create
//     databases.
//  2. A postgres:17-alpine container (testcontainers-go), when a Docker engine answers.
//  3. The embedded PostgreSQL of package pgembed, shared by all test binaries of a run: `go test
//     ./...` runs packages in parallel processes, which attach to the one server the first of
//     them started in os.TempDir()/barrage-pgtest-<uid> (with the cluster's files in
//     /dev/shm/barrage-pgtest-<uid> when that is a tmpfs with room: cloning is ten times faster
//     there). It is left running when the tests end, so the next run starts at once; a server
//     killed meanwhile is noticed and started again, a broken cluster is rebuilt.
//     BARRAGE_POSTGRES_BIN, BARRAGE_POSTGRES_USER and BARRAGE_POSTGRES_MIRROR are honoured as
//     by `barrage serve`.
package pgtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/barrage-load/barrage/internal/pgembed"
	"github.com/barrage-load/barrage/internal/postgres"
)

// templateLockKey is the advisory lock that serialises template creation between test
// processes (the first eight bytes of sha256("barrage.pgtest.template")).
const templateLockKey int64 = 0x1b6e0f3a9c2d4e57

// testDBPrefix starts the name of every test database; the pid of the test process follows, so
// that databases left by a killed process can be told from those of a live one.
const testDBPrefix = "barrage_test_"

// Pool returns a pool on a fresh database of its own for this test, with the schema applied.
// The pool is closed and the database dropped when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return open(t, URL(t))
}

// open is a pool on dsn, closed when the test ends (before the database is dropped).
func open(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before fresh's clean-up, which drops the database
	return pool
}

// URL creates a fresh database of its own for this test, with the schema applied, and returns
// a postgres URL for it. The database is dropped when the test ends, even with connections
// still open.
func URL(t testing.TB) string {
	t.Helper()
	return fresh(t, "")
}

// fresh creates a database of its own for this test from template (the migrated template when
// ""), dropped when the test ends, and returns a postgres URL for it.
func fresh(t testing.TB, template string) string {
	t.Helper()
	s, err := get()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name, err := s.create(t.Context(), cmp.Or(template, s.template))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when clean-ups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.drop(ctx, name); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	t.Logf("pgtest: database %s (%s)", name, s.kind)
	dsn, err := s.urlFor(name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// EmptyPool returns a pool on a fresh database of its own for this test without any schema
// (postgres.MigrateTo brings it where a test of a migration needs it), dropped when the test
// ends.
func EmptyPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return open(t, fresh(t, "template0"))
}

// server is the PostgreSQL this test process uses, found once.
type server struct {
	kind     string        // where the server comes from, in a word
	source   string        // and in a sentence, printed once
	admin    *pgxpool.Pool // on the maintenance database: CREATE and DROP DATABASE
	urlFor   func(database string) (string, error)
	template string
}

var (
	setupOnce sync.Once
	shared    *server
	setupErr  error
)

func get() (*server, error) {
	setupOnce.Do(func() {
		// Not a test's context: the server outlives the test that happens to come first. The
		// first run ever downloads PostgreSQL, hence the generous bound.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared, setupErr = setup(ctx)
	})
	return shared, setupErr
}

func setup(ctx context.Context) (*server, error) {
	s, local, err := locate(ctx)
	if err != nil {
		return nil, err
	}
	hash, err := postgres.MigrationsHash()
	if err != nil {
		return nil, err
	}
	s.template = "barrage_tpl_" + hash[:16]
	if local {
		s.dropLeftovers(ctx)
	}
	if err := s.ensureTemplate(ctx); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("template database %s: %w", s.template, err)
	}
	fmt.Fprintf(os.Stderr, "pgtest: using %s, template %s\n", s.source, s.template)
	return s, nil
}

// locate finds the server; local reports one on this machine, whose process ids mean something.
func locate(ctx context.Context) (s *server, local bool, err error) {
	if dsn := os.Getenv("TEST_DATABASE_URL"); dsn != "" {
		s, err := newServer(ctx, "TEST_DATABASE_URL", "TEST_DATABASE_URL", dsn, func(db string) (string, error) { return withDatabase(dsn, db) })
		return s, false, err
	}
	if dockerAnswers(ctx) {
		dsn, err := startContainer(ctx)
		if err == nil {
			s, err := newServer(ctx, "testcontainers", "a postgres:17-alpine container (testcontainers)", dsn,
				func(db string) (string, error) { return withDatabase(dsn, db) })
			return s, false, err
		}
		fmt.Fprintf(os.Stderr, "pgtest: Docker answers but the container did not start, using the embedded PostgreSQL: %v\n", err)
	}
	inst, dir, err := startEmbedded(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	source := fmt.Sprintf("embedded PostgreSQL %s on 127.0.0.1:%d (in %s, left running for later runs; stop it with kill -INT %d)",
		pgembed.Version, inst.Port(), dir, inst.PID())
	s, err = newServer(ctx, "embedded", source, inst.URL("postgres"), func(db string) (string, error) { return inst.URL(db), nil })
	return s, true, err
}

func newServer(ctx context.Context, kind, source, adminURL string, urlFor func(string) (string, error)) (*server, error) {
	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	cfg.MaxConns = 4
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := admin.Ping(ctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &server{kind: kind, source: source, admin: admin, urlFor: urlFor}, nil
}

// ensureTemplate creates the template once per schema version. Test processes running at the
// same time serialise on an advisory lock, and the template is built under another name and
// renamed when complete, so that a process killed half-way never leaves a template that others
// would trust.
func (s *server) ensureTemplate(ctx context.Context) error {
	if exists, err := s.databaseExists(ctx, s.template); err != nil || exists {
		return err
	}
	conn, err := s.admin.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("take lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey)
	}()
	if exists, err := s.databaseExists(ctx, s.template); err != nil || exists {
		return err // another process made it while we waited
	}

	build := s.template + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(build)+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(build)); err != nil {
		return err
	}
	dsn, err := s.urlFor(build)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	_, err = postgres.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	// Renaming and cloning need the database to have no sessions; the pool's may take a moment
	// to end on the server after Close.
	err = retryInUse(ctx, func() error {
		_, err := conn.Exec(ctx, "ALTER DATABASE "+ident(build)+" RENAME TO "+ident(s.template))
		return err
	})
	if err != nil {
		return err
	}
	// No one may connect to the template any more, for a session there would make every clone
	// fail until it ends.
	_, err = conn.Exec(ctx, "ALTER DATABASE "+ident(s.template)+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
	return err
}

func (s *server) databaseExists(ctx context.Context, name string) (bool, error) {
	var exists bool
	err := s.admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	return exists, err
}

// clone creates a database for one test from the template and returns its name.
// create makes a database of its own from template.
func (s *server) create(ctx context.Context, template string) (string, error) {
	for attempt := 0; ; attempt++ {
		name := fmt.Sprintf("%s%d_%s", testDBPrefix, os.Getpid(), randomHex(4))
		err := retryInUse(ctx, func() error {
			_, err := s.admin.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(template))
			return err
		})
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return name, nil
		case attempt > 0 || !errors.As(err, &pgErr):
		case pgErr.Code == "42P04": // duplicate_database: a name drawn twice
			continue
		case pgErr.Code == "3D000" && template == s.template: // invalid_catalog_name: someone dropped the template
			if err := s.ensureTemplate(ctx); err != nil {
				return "", fmt.Errorf("recreate template %s: %w", s.template, err)
			}
			continue
		}
		return "", fmt.Errorf("clone %s: %w", template, err)
	}
}

func (s *server) drop(ctx context.Context, name string) error {
	_, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	return err
}

// dropLeftovers drops the databases of test processes that died before their clean-ups ran, so
// that a long-lived local server does not fill up. Only for a server on this machine: elsewhere
// a pid means nothing.
func (s *server) dropLeftovers(ctx context.Context) {
	rows, err := s.admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", testDBPrefix)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		pidPart, _, _ := strings.Cut(strings.TrimPrefix(name, testDBPrefix), "_")
		pid, err := strconv.Atoi(pidPart)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = s.drop(ctx, name)
	}
}

// retryInUse runs f again while it fails with object_in_use (55006): a database whose sessions
// are still ending cannot be renamed or cloned yet.
func retryInUse(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// dockerAnswers pings the Docker engine with a short deadline, so that a machine with the docker
// CLI but no daemon (or none at all) costs the tests two seconds at most.
func dockerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return false
	}
	defer cli.Close()
	_, err = cli.Ping(ctx, client.PingOptions{})
	return err == nil
}

// startContainer starts, or reuses by name, one container for all test binaries of the run;
// testcontainers' reaper removes it when the run ends.
func startContainer(ctx context.Context) (string, error) {
	ctr, err := tcpostgres.Run(ctx, "postgres:17-alpine",
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithCmd("postgres",
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "max_connections=300"),
		testcontainers.WithReuseByName("barrage-pgtest"),
	)
	if err != nil {
		return "", err
	}
	return ctr.ConnectionString(ctx, "sslmode=disable")
}

// startEmbedded starts the embedded server in a fixed folder per user, or attaches to the one
// another test process started there. pgtest's own lock covers the start and the rebuild of a
// broken cluster, so that no process wipes a folder another is starting from.
func startEmbedded(ctx context.Context) (*pgembed.Instance, string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("barrage-pgtest-%d", os.Geteuid()))
	if err := ownDir(dir); err != nil {
		return nil, "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "pgtest.lock"))
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	cfg := pgembed.Config{
		DataDir: filepath.Join(dir, "data"),
		Fast:    true,
		// WAL beyond this is recycled at the next checkpoint, which costs little with fsync
		// off; it bounds the memory the cluster takes on a tmpfs.
		Settings:       map[string]string{"max_wal_size": "256MB"},
		Attach:         true,
		Detach:         true,
		MaxConnections: 300, // parallel tests in parallel packages, each with a pool
		BinDir:         os.Getenv("BARRAGE_POSTGRES_BIN"),
		OSUser:         os.Getenv("BARRAGE_POSTGRES_USER"),
		MirrorURL:      os.Getenv("BARRAGE_POSTGRES_MIRROR"),
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if shm := tmpfsDir(); shm != "" {
		if err := ownDir(shm); err != nil {
			return nil, "", err
		}
		cfg.ClusterDir = filepath.Join(shm, "pgdata")
		dir += " and " + shm
	}
	inst, err := pgembed.Start(ctx, cfg)
	if errors.Is(err, pgembed.ErrStartup) {
		// Test data is disposable, and with fsync off a crash of the machine can break the
		// cluster: build a new one rather than fail every run from now on.
		fmt.Fprintf(os.Stderr, "pgtest: embedded PostgreSQL in %s did not start, recreating it: %v\n", dir, err)
		for _, d := range []string{cfg.DataDir, cfg.ClusterDir} {
			if d == "" {
				continue
			}
			if err := os.RemoveAll(d); err != nil {
				return nil, "", err
			}
		}
		inst, err = pgembed.Start(ctx, cfg)
	}
	return inst, dir, err
}

// ownDir makes sure dir is a folder of ours and not, say, a symlink another local user planted
// in the shared temporary folder.
func ownDir(dir string) error {
	perm := fs.FileMode(0o700)
	if os.Geteuid() == 0 {
		perm = 0o711 // postgres runs as another user and must pass through
	}
	if err := os.Mkdir(dir, perm); err == nil {
		return os.Chmod(dir, perm) // whatever the umask
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is not a folder owned by uid %d: remove it", dir, os.Geteuid())
	}
	return nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the wait. The kernel
// releases it when the process dies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withDatabase points a connection string at another database: the path of a URL, or a later
// dbname keyword, which wins, in the key=value form.
func withDatabase(dsn, database string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			return "", fmt.Errorf("invalid connection URL: %w", uerr.Err) // url.Error quotes the password
		} else if err != nil {
			return "", err
		}
		u.Path, u.RawPath = "/"+database, ""
		return u.String(), nil
	}
	return dsn + " dbname=" + database, nil
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
