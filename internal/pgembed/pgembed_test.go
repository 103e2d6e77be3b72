package pgembed_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/pgembed"
)

func TestStartKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Database = "barrage"

	inst, err := pgembed.Start(t.Context(), cfg)
	require.NoError(t, err)
	conn := connect(t, inst.DSN())
	_, err = conn.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives')")
	require.NoError(t, err)
	var listen, sockets, db string
	require.NoError(t, conn.QueryRow(t.Context(),
		"SELECT current_setting('listen_addresses'), current_setting('unix_socket_directories'), current_database()").
		Scan(&listen, &sockets, &db))
	require.Equal(t, "127.0.0.1", listen)
	require.Empty(t, sockets)
	require.Equal(t, "barrage", db)
	require.NoError(t, conn.Close(t.Context()))
	requireMode(t, filepath.Join(cfg.DataDir, "password"), 0o600)
	requireMode(t, filepath.Join(cfg.DataDir, "pgdata"), 0o700|os.ModeDir)

	require.NoError(t, inst.Stop(t.Context()))
	require.NoError(t, inst.Stop(t.Context()), "a second Stop is harmless")
	requireClosed(t, inst.Done())

	inst, err = pgembed.Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, inst.Stop(context.Background())) })
	var v string
	require.NoError(t, connect(t, inst.DSN()).QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v))
	require.Equal(t, "survives", v)
}

func TestStartPassesNoSecretsToPostgres(t *testing.T) {
	t.Setenv("BARRAGE_TEST_SECRET", "hunter2") // forbids t.Parallel, which is the point of a separate test
	inst := start(t, testConfig(t))

	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", inst.PID()))
	if os.IsNotExist(err) {
		t.Skip("no /proc")
	}
	require.NoError(t, err)

	require.NotContains(t, string(env), "hunter2")
	require.Contains(t, strings.Split(string(env), "\x00"), "LC_ALL=C")
}

func TestStartRunsAsUnprivilegedUserWhenRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root has to switch users")
	}
	cfg := testConfig(t)
	cfg.OSUser = "nobody"

	inst := start(t, cfg)

	connect(t, inst.DSN())
	proc, err := os.Stat(fmt.Sprintf("/proc/%d", inst.PID()))
	require.NoError(t, err)
	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	require.Equal(t, nobody.Uid, strconv.Itoa(int(proc.Sys().(*syscall.Stat_t).Uid)), "postgres runs as nobody")
	fi, err := os.Stat(filepath.Join(cfg.DataDir, "pgdata"))
	require.NoError(t, err)
	require.Equal(t, nobody.Uid, strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)), "the cluster belongs to nobody")
}

func TestStartRefusesUnreachableDataDirWhenRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root has to switch users")
	}
	closed := filepath.Join(t.TempDir(), "closed")
	require.NoError(t, os.Mkdir(closed, 0o700))
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(closed, "data")

	_, err := pgembed.Start(t.Context(), cfg)

	require.ErrorContains(t, err, "cannot enter "+closed)
	require.ErrorContains(t, err, "BARRAGE_DATA_DIR")
}

func TestStartRecoversFromStalePidFile(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	inst := start(t, cfg)
	pidFile := filepath.Join(cfg.DataDir, "pgdata", "postmaster.pid")

	t.Run("postgres killed", func(t *testing.T) {
		require.NoError(t, syscall.Kill(inst.PID(), syscall.SIGKILL))
		requireClosed(t, inst.Done())
		require.FileExists(t, pidFile)

		inst = start(t, cfg)

		connect(t, inst.DSN())
	})
	t.Run("pid reused by another process", func(t *testing.T) {
		require.NoError(t, inst.Stop(t.Context()))
		// The test binary is alive and not postgres; postgres itself would refuse this file.
		stale := fmt.Sprintf("%d\n%s\n1700000000\n%d\n\n127.0.0.1\n0 0\nready\n", os.Getpid(), filepath.Dir(pidFile), inst.Port())
		require.NoError(t, os.WriteFile(pidFile, []byte(stale), 0o600))

		inst = start(t, cfg)

		connect(t, inst.DSN())
	})
}

func TestStartWhileRunning(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	first := start(t, cfg)

	t.Run("refused", func(t *testing.T) {
		_, err := pgembed.Start(t.Context(), cfg)

		require.ErrorIs(t, err, pgembed.ErrInUse)
	})
	t.Run("attached", func(t *testing.T) {
		cfg := cfg
		cfg.Attach = true

		second, err := pgembed.Start(t.Context(), cfg)

		require.NoError(t, err)
		require.Equal(t, first.PID(), second.PID())
		connect(t, second.DSN())
		require.NoError(t, second.Stop(t.Context()))
		connect(t, first.DSN()) // an attached Instance leaves the server running
	})
}

// testConfig returns a Config on a fresh data folder with the binaries shared by all tests, so
// that only the first test pays for extracting them.
func testConfig(t *testing.T) pgembed.Config {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// testing made the parent 0700; the account postgres runs as must pass through it.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	}
	return pgembed.Config{
		DataDir:      dir,
		BinDir:       binDir(t),
		Fast:         true,
		StartTimeout: 2 * time.Minute,
		Logger:       testLogger(t),
	}
}

var binaries struct {
	once sync.Once
	dir  string
	err  error
}

// binDir downloads (into the user's cache, once ever) and extracts the pinned binaries. As root
// they go to a folder kept in os.TempDir() between runs, since root's cache is closed to the
// account postgres runs as.
func binDir(t *testing.T) string {
	t.Helper()
	binaries.once.Do(func() {
		cfg := pgembed.Config{BinDir: os.Getenv("BARRAGE_POSTGRES_BIN")}
		if os.Geteuid() == 0 {
			cfg.DataDir = filepath.Join(os.TempDir(), "barrage-pgembed-test-0")
			if binaries.err = os.MkdirAll(cfg.DataDir, 0o711); binaries.err != nil {
				return
			}
			if binaries.err = os.Chmod(cfg.DataDir, 0o711); binaries.err != nil {
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		binaries.dir, binaries.err = pgembed.EnsureBinaries(ctx, cfg)
	})
	require.NoError(t, binaries.err)
	return binaries.dir
}

func start(t *testing.T, cfg pgembed.Config) *pgembed.Instance {
	t.Helper()
	inst, err := pgembed.Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, inst.Stop(context.Background())) })
	return inst
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	require.NoError(t, conn.Ping(t.Context()))
	return conn
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, want, fi.Mode(), path)
}

func requireClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("postgres did not exit")
	}
}

// testLogger logs through t until the test ends; the server's output goroutine may still write
// a line after that, which t.Log would turn into a panic.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
