// Package pluginhost starts plugins and speaks to them. Plugins are code written by strangers,
// so a plugin runs from a copy of its binary whose sha256 was verified, through go-plugin with
// gRPC only and AutoMTLS over a Unix socket, with no host environment beyond an allow-list,
// under resource limits, as an unprivileged user, in a kernel sandbox: its own user, PID,
// mount, network and IPC namespaces (a read-only view of the system's folders, a private /tmp
// and /proc, no network: a plugin granted hosts reaches them through the host's dial socket,
// under the host's dial policy), a cgroup with memory, process and CPU limits, no capability,
// no_new_privs and a seccomp filter. Where the machine lacks a primitive the host says so (see
// Sandbox) and falls back to what it has. A plugin and everything it started is killed when it
// misses a deadline or the host closes it, and a plugin outlives a dead host by no more than
// the host's next start (parent-death signal, then a sweep).
//
// A started plugin is a *Process whose hooks have the SDK's interfaces; their errors are
// *Error values that name the plugin and say what went wrong.
package pluginhost

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	gpr "github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
)

// Spec names a plugin binary and the sha256 it must have, and the hosts the run grants it.
type Spec struct {
	Name    string
	Version string
	Path    string
	SHA256  string // hex
	// Network is the hosts the run grants the plugin: it reaches them through the host's dial
	// socket (see Options.Targets), and nothing else. Empty: no network, and no dial socket.
	// A grant names hosts: *:port (HostPattern.Any) is refused.
	Network []sdk.HostPattern
}

// String is name@version.
func (s Spec) String() string { return s.Name + "@" + s.Version }

// Limits bound a plugin process; zero leaves a limit as inherited.
type Limits struct {
	AddressSpace uint64 // bytes of virtual memory of each process (RLIMIT_AS)
	OpenFiles    uint64 // file descriptors (RLIMIT_NOFILE)
	FileSize     uint64 // bytes of the largest file it may write (RLIMIT_FSIZE)
	// Processes bounds the processes and threads of the plugin and all it starts: the
	// cgroup's pids.max, and RLIMIT_NPROC, which counts them in the plugin's user namespace.
	// Without one it counts every process of the user, so it is applied only when each plugin
	// runs as a user of its own (Options.Users), the host being root.
	Processes uint64
	// Memory bounds the memory of the plugin and all it starts, together (the cgroup's
	// memory limit); the kernel kills a process of the plugin when it is exceeded.
	Memory uint64
	// CPU bounds the CPU time of the plugin and all it starts, in cores (the cgroup's quota).
	CPU float64
}

// DefaultLimits leave room for a Go or Python plugin with a few hundred VUs' worth of state.
var DefaultLimits = Limits{AddressSpace: 4 << 30, OpenFiles: 1024, FileSize: 64 << 20, Processes: 512, Memory: 1 << 30, CPU: 1}

// Options configure a Host.
type Options struct {
	// Launcher is a Barrage binary whose main calls Launch; empty means this executable.
	Launcher string
	// Env is the plugin's whole environment besides go-plugin's own variables: "NAME=value"
	// entries. Nothing of the host's environment reaches a plugin unless it is listed here.
	Env []string
	// Limits bound each plugin process; zero means DefaultLimits.
	Limits Limits
	// User the plugins run as when the host is root and they have user namespaces of their
	// own; empty means "nobody". Without a user namespace, each runs as a user of its own
	// from Users instead.
	User string
	// Users are the ids that plugins without a user namespace of their own (SandboxOff, or a
	// machine that gives none) run as when the host is root: each plugin a user and group of
	// its own, leased from the range while it runs, so that its process limit counts its own
	// processes, and no plugin signals or reads another. An id that names an account or a
	// group, or that a process runs as, is passed over. The hosts of a machine share the range
	// through locks in /run; hosts that share a machine's users but not its /run (containers
	// without user namespaces) want ranges of their own. Zero means DefaultUsers.
	Users IDRange
	// StartTimeout bounds the start and handshake; zero means 10 s.
	StartTimeout time.Duration
	// CallTimeout bounds each call into a plugin; a plugin that misses it is killed. Zero means
	// 10 s.
	CallTimeout time.Duration
	// Logger receives the plugins' stderr and lifecycle at debug level.
	Logger *slog.Logger
	// Sandbox says whether a host may start without the full kernel sandbox.
	Sandbox SandboxMode
	// Paths are more of the host's folders that sandboxed plugins see, read-only, at the same
	// place: an interpreter's prefix outside the system's folders, such as a Python
	// virtualenv. The system's own (/usr, /etc, /opt, ...) are always there.
	Paths []string
	// Targets is the dial policy of the connections a plugin makes to its granted hosts
	// (Spec.Network): the agent's, which its load goes through too, so that a grant reaches no
	// address the agent refuses. Nil allows every address, as a local barrage run does.
	Targets *netpolicy.Policy
}

// Host starts plugin processes and ends them.
type Host struct {
	opts    Options
	runDir  string
	marker  string // in each plugin's environment: the host and this Host
	uid     int
	gid     int
	sandbox Sandbox
	cgroups *cgroups // nil without cgroups

	mu    sync.Mutex
	procs map[*Process]struct{}
	// copies are the verified copies of plugin binaries, by sha256 and name: every process of
	// a plugin runs from the one copy, which lives as long as the host.
	copies map[string]string
}

// New returns a Host. It first kills the plugins a previous host left behind when it died.
func New(opts Options) (*Host, error) {
	launcher, err := launcherPath(opts.Launcher)
	if err != nil {
		return nil, err
	}
	opts.Launcher = launcher
	for _, p := range opts.Paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("plugin path %q: want an absolute path", p)
		}
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Users == (IDRange{}) {
		opts.Users = DefaultUsers
	}
	if err := opts.Users.check(); err != nil {
		return nil, err
	}
	as, err := pluginUser(opts.User)
	if err != nil {
		return nil, err
	}
	h := &Host{opts: opts, uid: as.uid, gid: as.gid, procs: make(map[*Process]struct{}), copies: make(map[string]string)}
	if opts.Sandbox == SandboxOff {
		h.sandbox = Sandbox{Off: true}
	} else {
		h.sandbox = probeNamespaces(opts.Launcher, as)
	}
	if h.uid < 0 && !h.namespaces() {
		// Without a user namespace of its own, RLIMIT_NPROC would count the host's threads.
		h.opts.Limits.Processes = 0
	}
	sweep(opts.Logger)
	// The folder is named for this host, so that a later host can remove it if this one dies.
	dir, err := os.MkdirTemp("", runDirPrefix+hostMarker()+"-")
	if err != nil {
		return nil, err
	}
	// Others may enter to run the copies but not list or change them.
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	h.runDir = dir
	h.marker = strings.TrimPrefix(filepath.Base(dir), runDirPrefix)
	if !h.sandbox.Off {
		if h.cgroups, err = newCgroups(filepath.Base(dir), opts.Logger); err != nil {
			h.sandbox.Cgroup = err
		} else {
			h.sandbox.CgroupKind = h.cgroups.String()
		}
		h.sandbox.SocketFolder = socketFolderBound(h.sandbox)
	}
	if opts.Sandbox == SandboxRequire && !h.sandbox.Full() {
		_ = h.Close()
		return nil, fmt.Errorf("%w: %s", ErrSandboxUnavailable, strings.Join(h.sandbox.Missing(), "; "))
	}
	return h, nil
}

// namespaces says whether plugins get namespaces of their own.
func (h *Host) namespaces() bool { return !h.sandbox.Off && h.sandbox.Namespaces == nil }

// ownUsers says whether each plugin runs as a user of its own (see Options.Users): the host is
// root, and plugins get no user namespace.
func (h *Host) ownUsers() bool { return h.uid >= 0 && !h.namespaces() }

// Sandbox says how this host confines its plugins.
func (h *Host) Sandbox() Sandbox { return h.sandbox }

// Close kills every plugin the host started and removes their copies.
func (h *Host) Close() error {
	h.mu.Lock()
	procs := make([]*Process, 0, len(h.procs))
	for p := range h.procs {
		procs = append(procs, p)
	}
	h.mu.Unlock()
	for _, p := range procs {
		p.Close()
	}
	if h.cgroups != nil {
		h.cgroups.remove()
	}
	return os.RemoveAll(h.runDir)
}

// Start starts the plugin spec names and asks it what it is. A binary that says it is another
// plugin or version is refused.
func (h *Host) Start(ctx context.Context, spec Spec) (*Process, error) {
	return h.start(ctx, spec, true)
}

// StartUnchecked starts the binary at path, which must have the sha256 sum, whatever plugin it
// says it is: how a binary is identified before it is added to a plugin directory, or checked.
func (h *Host) StartUnchecked(ctx context.Context, path, sum string) (*Process, error) {
	return h.start(ctx, Spec{Name: filepath.Base(path), Version: "unknown", Path: path, SHA256: sum}, false)
}

// Describe starts the binary at path as StartUnchecked does, asks it what it is, and ends it.
func (h *Host) Describe(ctx context.Context, path, sum string) (sdk.Info, error) {
	p, err := h.StartUnchecked(ctx, path, sum)
	if err != nil {
		return sdk.Info{}, err
	}
	defer p.Close()
	return p.Info(), nil
}

func (h *Host) start(ctx context.Context, spec Spec, checkIdentity bool) (*Process, error) {
	if err := checkGrants(spec); err != nil {
		return nil, err
	}
	path, err := h.copyVerified(spec)
	if err != nil {
		return nil, err
	}
	p := &Process{spec: spec, host: h}
	as := uidGid{uid: h.uid, gid: h.gid}
	if h.ownUsers() {
		if p.user, err = leaseUser(h.opts.Users); err != nil {
			return nil, err
		}
		as = p.user.as()
	}
	hlog := hclog.New(&hclog.LoggerOptions{
		Name: spec.String(), Level: hclog.Debug,
		Output: &slogWriter{log: h.opts.Logger.With(slog.String("plugin", spec.String()))},
	})
	unixCfg := &plugin.UnixSocketConfig{TempDir: h.runDir}
	if as.gid >= 0 && !h.namespaces() {
		// The plugin's group may enter the socket folder, to serve there.
		unixCfg.Group = strconv.Itoa(as.gid)
	}
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  host.Handshake,
		VersionedPlugins: host.PluginSets(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     h.opts.StartTimeout,
		Logger:           hlog,
		UnixSocketConfig: unixCfg,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(host.MaxMessageSize), grpc.MaxCallSendMsgSize(host.MaxMessageSize))},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, sockDir string) (gpr.Runner, error) {
			run, err := h.runner(spec, path, as, cmd.Env, sockDir)
			if err != nil {
				return nil, err
			}
			p.run = run
			return run, nil
		},
	}
	p.client = plugin.NewClient(cfg)
	started := time.Now()
	rpc, err := p.client.Client()
	if err != nil {
		p.kill()
		return nil, p.startError(err, time.Since(started))
	}
	sc, err := host.Dispense(rpc)
	if err != nil {
		p.kill()
		return nil, &Error{Plugin: spec.String(), Reason: ReasonHandshake, Err: err}
	}
	p.sdk = sc
	sc.SetCallTimeout(h.opts.CallTimeout)
	h.mu.Lock()
	h.procs[p] = struct{}{}
	h.mu.Unlock()

	dctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	info, err := sc.Describe(dctx)
	if err != nil {
		err = p.wrap(dctx, err)
		p.Close()
		return nil, err
	}
	if checkIdentity && (!SameName(info.Name, spec.Name) || info.Version != spec.Version) {
		p.Close()
		return nil, &Error{Plugin: spec.String(), Reason: ReasonHandshake,
			Err: fmt.Errorf("the binary says it is %s@%s", info.Name, info.Version)}
	}
	p.info = info
	if !checkIdentity {
		p.spec.Name, p.spec.Version = info.Name, info.Version // for its errors
	}
	return p, nil
}

// checkGrants refuses grants that name no host, or too many.
func checkGrants(spec Spec) error {
	if len(spec.Network) > sdk.MaxHostPatterns {
		return &Error{Plugin: spec.String(), Reason: ReasonGrant, Err: fmt.Errorf("%d hosts granted: at most %d", len(spec.Network), sdk.MaxHostPatterns)}
	}
	for _, g := range spec.Network {
		if g.Any() {
			return &Error{Plugin: spec.String(), Reason: ReasonGrant, Err: fmt.Errorf("%s: a grant names its hosts; * grants every host", g)}
		}
	}
	return nil
}

// copyVerified copies the plugin's binary into the host's own directory, hashing it on the
// way, and checks the copy with go-plugin's SecureConfig. The copy is what runs: nobody can
// swap it between the check and the start, and the plugin's user can execute it wherever the
// original lies. A binary already copied and checked is not copied again.
func (h *Host) copyVerified(spec Spec) (string, error) {
	want, err := hex.DecodeString(spec.SHA256)
	if err != nil || len(want) != sha256.Size {
		return "", &Error{Plugin: spec.String(), Reason: ReasonChecksum, Err: errors.New("the expected sha256 is not 64 hex digits")}
	}
	key := spec.SHA256 + "/" + safeName(spec.Name)
	h.mu.Lock()
	path, ok := h.copies[key]
	h.mu.Unlock()
	if ok {
		return path, nil
	}
	src, err := os.Open(spec.Path)
	if err != nil {
		return "", &Error{Plugin: spec.String(), Reason: ReasonNotFound, Err: err}
	}
	defer src.Close()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	// Only the base of the name, and a random part: the spec comes from outside.
	path = filepath.Join(h.runDir, fmt.Sprintf("%s-%x", safeName(spec.Name), rnd))
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o555)
	if err != nil {
		return "", err
	}
	hash := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, hash), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("copy plugin %s: %w", spec, err)
	}
	ok, err = (&plugin.SecureConfig{Checksum: want, Hash: sha256.New()}).Check(path)
	if err != nil || !ok {
		_ = os.Remove(path)
		return "", &Error{Plugin: spec.String(), Reason: ReasonChecksum,
			Err: fmt.Errorf("%s has sha256 %x, want %s; it was not started", spec.Path, hash.Sum(nil), spec.SHA256)}
	}
	h.mu.Lock()
	h.copies[key] = path
	h.mu.Unlock()
	return path, nil
}

// runner prepares the launcher command for a plugin that runs as the user as, whose socket
// folder is sockDir.
func (h *Host) runner(spec Spec, path string, as uidGid, pluginEnv []string, sockDir string) (_ *procRunner, err error) {
	lf := launchFlags{limits: h.opts.Limits, uid: as.uid, gid: as.gid, parent: os.Getpid(), path: path,
		seccomp: !h.sandbox.Off && h.sandbox.Seccomp == nil}
	namespaces := h.namespaces()
	env := append([]string{}, h.opts.Env...)
	cookie := host.Handshake.MagicCookieKey + "="
	for _, e := range pluginEnv {
		switch {
		case strings.HasPrefix(e, cookie):
			lf.cookie = e
		case namespaces && strings.HasPrefix(e, plugin.EnvUnixSocketDir+"="):
			env = append(env, plugin.EnvUnixSocketDir+"="+sandboxSocketDir)
		default:
			env = append(env, e)
		}
	}
	if !hasEnv(env, "PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	tmp := os.TempDir()
	if namespaces {
		tmp = "/tmp"
		lf.paths = h.opts.Paths
		if as.uid >= 0 {
			// go-plugin made the folder for root, who keeps it: the launcher, as the plugin's
			// user, only passes through to bind the dial socket in. The plugin serves in its
			// own folder (see mountSocketFolder).
			if err := os.Chmod(sockDir, 0o711); err != nil {
				return nil, fmt.Errorf("plugin socket folder: %w", err)
			}
		}
	}
	var dial *dialer
	if len(spec.Network) > 0 {
		// The dial socket lies in the host's socket folder for the plugin; sandboxed, the
		// launcher binds it into the plugin's own, sandboxSocketDir.
		if dial, err = listenDialer(dialSocketIn(sockDir), spec.String(), spec.Network, h.opts.Targets, h.opts.Logger); err != nil {
			return nil, err
		}
		sock := dialSocketIn(sockDir)
		if namespaces {
			lf.dialSock, sock = sock, dialSocketIn(sandboxSocketDir)
		}
		env = append(env, sdk.DialSocketEnv+"="+sock)
	}
	cmd, sync, err := sandboxCommand(h.opts.Launcher, &lf, h.runDir, as, namespaces, !h.sandbox.Off)
	if err != nil {
		dial.close()
		return nil, err
	}
	cmd.Env = append(env, "TMPDIR="+tmp, markerEnv+"="+h.marker)
	cmd.Dir = h.runDir
	r := &procRunner{cmd: cmd, name: spec.String(), sync: sync, dialer: dial, sockDir: sockDir, sandboxed: namespaces, done: make(chan struct{})}
	if h.cgroups != nil {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		if r.cgroup, err = h.cgroups.plugin(fmt.Sprintf("%s-%x", safeName(spec.Name), rnd), h.opts.Limits); err != nil {
			closeExtraFiles(cmd)
			_ = sync.Close()
			dial.close()
			return nil, err
		}
	}
	return r, nil
}

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
}

// Process is a started plugin.
type Process struct {
	spec   Spec
	info   sdk.Info
	host   *Host
	client *plugin.Client
	sdk    host.Client
	run    *procRunner
	// user is the id the plugin runs as, leased from the host's range; nil when it runs as the
	// host's plugin user, or as the host's own.
	user *userLease

	closeOnce sync.Once
	killed    bool
	ended     *Error // why the plugin was killed or died, for the calls after
	mu        sync.Mutex
}

// Info is what the plugin said it is.
func (p *Process) Info() sdk.Info { return p.info }

// Spec is the plugin's name, version and binary.
func (p *Process) Spec() Spec { return p.spec }

// Pid is the plugin's process id. Sandboxed, the plugin is the child of its launcher, which
// supervises it as the init of its PID namespace and leads its process group.
func (p *Process) Pid() int {
	if p.run == nil || p.run.cmd.Process == nil {
		return 0
	}
	pid := p.run.cmd.Process.Pid
	if !p.run.sandboxed {
		return pid // the launcher became the plugin
	}
	// The launcher started the plugin first, from its one thread that starts anything (its main
	// thread, see launch.go's init; every thread is read all the same). Orphans the plugin left
	// come later, reparented to the launcher as their init.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			if child, err := strconv.Atoi(f[0]); err == nil {
				return child
			}
		}
	}
	return pid
}

// Close ends the plugin and everything it started. The plugin is first asked to shut down
// (go-plugin's controller, with a two-second grace) so that it can flush what it holds; then
// the whole process group is killed.
func (p *Process) Close() { p.end(true) }

func (p *Process) end(graceful bool) {
	p.closeOnce.Do(func() {
		if p.sdk != nil {
			_ = p.sdk.Close()
		}
		if graceful && p.client != nil {
			p.mu.Lock()
			p.killed = true
			p.mu.Unlock()
			p.client.Kill()
		}
		p.kill()
		p.host.mu.Lock()
		delete(p.host.procs, p)
		p.host.mu.Unlock()
	})
}

// kill ends the process group at once, then lets go-plugin clean up, and gives back the
// plugin's user: go-plugin has waited for the plugin by then.
func (p *Process) kill() {
	p.mu.Lock()
	p.killed = true
	user := p.user
	p.user = nil
	p.mu.Unlock()
	if p.run != nil {
		_ = p.run.Kill(context.Background())
	}
	if p.client != nil {
		p.client.Kill()
	}
	user.release()
}

// startError says why a plugin did not start, from what the runner saw.
func (p *Process) startError(err error, took time.Duration) error {
	e := &Error{Plugin: p.spec.String(), Err: err}
	if p.run == nil {
		e.Reason = ReasonHandshake
		return e
	}
	line, gotLine, refused, exited, exitErr := p.run.observed()
	switch {
	case refused != nil:
		e.Reason, e.Err = ReasonHandshake, refused
	case gotLine && !looksLikeHandshake(line):
		e.Reason, e.Err = ReasonStdout, fmt.Errorf("its first line was %q", truncate(line, 120))
	case gotLine && !speaksProtocol(line):
		e.Reason, e.Err = ReasonProtocol, fmt.Errorf("it offered %q; this host speaks plugin protocol %d", line, sdk.ProtocolVersion)
	case took >= p.host.opts.StartTimeout:
		e.Reason, e.Err = ReasonTimeout, fmt.Errorf("no handshake within %s; killed", p.host.opts.StartTimeout)
	case exited:
		e.Reason, e.Err = ReasonCrashed, p.exitError(exitErr)
	default:
		e.Reason = ReasonHandshake
	}
	return e
}

func (p *Process) exitError(exitErr error) error {
	msg := "exited"
	if exitErr != nil {
		msg = exitErr.Error()
	}
	if line := p.run.stderr.headline(); line != "" {
		msg += ": " + line
	}
	return errors.New(msg)
}

// wrap turns an error of a call into the plugin into an *Error. A plugin that misses the
// deadline of a call is killed: on the request path, a hung plugin would stall every VU.
func (p *Process) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	p.mu.Lock()
	ended := p.ended
	p.mu.Unlock()
	if ended != nil && (errors.Is(err, host.ErrClosed) || errors.Is(err, host.ErrUnavailable)) {
		return ended // the plugin is gone: say why, not only that
	}
	e := &Error{Plugin: p.spec.String(), Err: err}
	defer func() {
		if e.Reason == ReasonTimeout || e.Reason == ReasonCrashed {
			p.mu.Lock()
			if p.ended == nil {
				p.ended = e
			}
			p.mu.Unlock()
		}
	}()
	var ce *sdk.ConfigError
	switch {
	case errors.As(err, &ce):
		e.Reason = ReasonConfig
	case errors.Is(err, host.ErrTimeout) && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Reason = ReasonFailed // the plugin's own deadline, not the host's
	case errors.Is(err, host.ErrTimeout), errors.Is(err, host.ErrNoAnswer):
		p.end(false) // a hung plugin gets no grace
		e.Reason, e.Err = ReasonTimeout, fmt.Errorf("no answer within %s; killed", p.host.opts.CallTimeout)
	case errors.Is(err, host.ErrUnavailable), errors.Is(err, host.ErrClosed):
		if p.run != nil {
			// The connection broke: the process is ending. Wait for it to be reaped, so that
			// its exit status says why (a loaded machine took more than 100 ms to reap a plugin
			// its memory limit killed); one that lives on past reapWait is unavailable.
			t := time.NewTimer(reapWait)
			select {
			case <-p.run.done:
			case <-t.C:
			}
			t.Stop()
			if _, _, _, exited, exitErr := p.run.observed(); exited {
				p.mu.Lock()
				killed := p.killed
				p.mu.Unlock()
				if !killed {
					e.Reason, e.Err = ReasonCrashed, p.exitError(exitErr)
					return e
				}
			}
		}
		e.Reason = ReasonUnavailable
	case errors.Is(err, host.ErrTooLarge):
		e.Reason = ReasonTooLarge
	case errors.Is(err, host.ErrUnimplemented):
		e.Reason = ReasonUnimplemented
	default:
		e.Reason = ReasonFailed
	}
	return e
}

// reapWait is how long a call whose connection broke waits for the plugin's process to be
// reaped before it calls the plugin unavailable rather than crashed.
const reapWait = 3 * time.Second

// callCtx bounds one call into the plugin.
func (p *Process) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.host.opts.CallTimeout)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// RunDir is the directory the host's plugins run in (and from).
func (h *Host) RunDir() string { return h.runDir }

// SameName reports whether a plugin that calls itself said is the plugin name: the same, or
// name is its marketplace name, namespace/said.
func SameName(said, name string) bool {
	return said == name || (!strings.Contains(said, "/") && strings.HasSuffix(name, "/"+said))
}

// safeName keeps the letters, digits, '.' and '_' of a plugin's name's last part, for a file
// name that says which plugin runs.
func safeName(name string) string {
	b := []byte(filepath.Base(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "plugin"
	}
	return string(b)
}
