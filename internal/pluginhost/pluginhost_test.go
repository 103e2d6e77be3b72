package pluginhost_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
)

// testPlugin is the binary of testdata/testplugin, built once, and testPluginSum its sha256;
// testLauncher is testdata/launcher's.
var testPlugin, testPluginSum, testLauncher string

func TestMain(m *testing.M) {
	pluginhost.Launch() // this test binary is the plugin launcher
	// For the launchers that inherit this environment (the sandbox probe's, and the hosts'
	// started in other processes); the hosts hand it to theirs (withLauncherEnv).
	_ = os.Setenv("GORACE", launcherRaceOptions())
	if path := os.Getenv(killedHostEnv); path != "" {
		hostThenWait(path) // this test binary is a host that will be killed
	}
	if path := os.Getenv(testPluginEnv); path != "" {
		// This test binary was started as another user by a test: the binaries are built.
		testPlugin, testLauncher = path, os.Getenv(testLauncherEnv)
		os.Exit(runWithTestPlugin(m))
	}
	dir, err := os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		panic(err)
	}
	testPlugin, testLauncher = filepath.Join(dir, "testplugin"), filepath.Join(dir, "launcher")
	// Without symbol tables and debug information: every host copies the plugin and hashes
	// it, and the tests start it a few hundred times. (Its panics still name their functions.)
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", dir+"/", "./testdata/testplugin", "./testdata/launcher")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		panic(fmt.Sprintf("build the test plugin and launcher: %v\n%s", err, out))
	}
	code := runWithTestPlugin(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// runWithTestPlugin runs the tests once testPlugin is there.
func runWithTestPlugin(m *testing.M) int {
	sum, err := fileSum(testPlugin)
	if err != nil {
		panic(err)
	}
	testPluginSum = sum
	return m.Run()
}

// fileSum is the sha256 of a file, in hex.
func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

func sha(t testing.TB, path string) string {
	t.Helper()
	sum, err := fileSum(path)
	require.NoError(t, err)
	return sum
}

// launcherRaceOptions are the race detector's options (GORACE) for this test binary when it runs
// as a plugin's launcher: as any binary built with -race, it sleeps a second when it exits
// (atexit_sleep_ms, 1000 by default) for the races of the last goroutines, and a sandboxed
// plugin's launcher exits when its plugin ends: each plugin's end would take a second. The
// launcher's own races are still found while it runs.
func launcherRaceOptions() string {
	opts := os.Getenv("GORACE")
	if strings.Contains(opts, "atexit_sleep_ms=") {
		return opts
	}
	return strings.TrimSpace(opts + " atexit_sleep_ms=0")
}

// withLauncherEnv is a plugin environment (Options.Env) with the launcher's race options: a
// plugin's environment is its launcher's, which has nothing of the host's.
func withLauncherEnv(env []string) []string {
	return append(slices.Clone(env), "GORACE="+launcherRaceOptions())
}

// newHost returns a host of its own for one test, closed at the end.
func newHost(t *testing.T, opts pluginhost.Options) *pluginhost.Host {
	t.Helper()
	opts.Env = withLauncherEnv(opts.Env)
	h, err := pluginhost.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// spec names the test plugin in one of its modes.
func spec(mode string) pluginhost.Spec {
	return pluginhost.Spec{Name: mode, Version: "1.0.0", Path: testPlugin, SHA256: testPluginSum}
}

// script writes a shell-script plugin and returns its spec.
func script(t *testing.T, name, body string) pluginhost.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return pluginhost.Spec{Name: name, Version: "1.0.0", Path: path, SHA256: sha(t, path)}
}

func requireReason(t *testing.T, err error, want pluginhost.Reason) *pluginhost.Error {
	t.Helper()
	var pe *pluginhost.Error
	require.ErrorAs(t, err, &pe, "got %v", err)
	require.Equal(t, want, pe.Reason, "got %v", err)
	return pe
}

// pluginProcesses lists the live processes of h's plugins: those whose environment carries the
// host's marker, which a plugin and everything it started inherit. (Their working folders say
// nothing: a sandboxed plugin works in a root of its own.)
func pluginProcesses(h *pluginhost.Host) []int {
	entries, _ := os.ReadDir("/proc")
	want := []byte("BARRAGE_PLUGIN_HOST=" + h.Marker() + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, want) {
			if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); !bytes.Contains(st, []byte(") Z ")) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func requireNoPluginProcesses(t *testing.T, h *pluginhost.Host) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(pluginProcesses(h)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.Empty(t, pluginProcesses(h), "processes left by the plugins of host %s", h.Marker())
}

func TestStartRunsAPluginConfinedAndItsHooksWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{})
	p, err := h.Start(ctx, spec("good"))
	require.NoError(t, err)
	require.Equal(t, "good", p.Info().Name)
	require.Equal(t, []sdk.Kind{sdk.KindSessionElement, sdk.KindURL}, p.Info().Kinds)

	vars, err := p.Element().Configure(ctx, []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, []string{"n"}, vars)
	sets, err := p.Element().Next(ctx, 3)
	require.NoError(t, err)
	require.Len(t, sets, 3)
	req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1/", Header: http.Header{}}
	require.NoError(t, p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, req))
	require.Equal(t, "1", req.Header.Get("X-Test"))
	big := &sdk.Request{Method: "POST", URL: "http://127.0.0.1/upload", Header: http.Header{}, Body: make([]byte, 6<<20)}
	require.NoError(t, p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, big), "a body over gRPC's default 4 MiB")
	require.Len(t, big.Body, 6<<20)

	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.Pid()))
	require.NoError(t, err)
	require.Regexp(t, `Max address space\s+4294967296\s+4294967296`, string(limits))
	require.Regexp(t, `Max open files\s+1024\s+1024`, string(limits))
	require.Regexp(t, `Max file size\s+67108864\s+67108864`, string(limits))
	pgid, err := syscall.Getpgid(p.Pid())
	require.NoError(t, err)
	require.NotEqual(t, syscall.Getpgrp(), pgid, "the plugin is in a process group of its own (its launcher's)")
	requireSchedBatch(t, p.Pid())
	if os.Geteuid() == 0 {
		require.Regexp(t, `Max processes\s+512\s+512`, string(limits))
		uid, gid := pluginIDs(t, p.Pid())
		if h.Sandbox().Namespaces == nil {
			nobody, err := user.Lookup("nobody")
			require.NoError(t, err)
			require.Equal(t, nobody.Uid+"/"+nobody.Gid, fmt.Sprintf("%d/%d", uid, gid), "runs as nobody, root of its user namespace")
		} else {
			requireOwnUser(t, uid, gid)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
		require.NoError(t, err)
		require.Regexp(t, `(?m)^Groups:\s*$`, string(status), "no supplementary group of root's")
		// Every thread, not only the first: credentials and the parent-death signal are per
		// thread in Linux.
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Pid()))
		require.NoError(t, err)
		for _, task := range tasks {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", p.Pid(), task.Name()))
			require.NoError(t, err)
			require.Regexp(t, `(?m)^Groups:\s*$`, string(st), "thread %s", task.Name())
		}
	}

	require.Contains(t, pluginProcesses(h), p.Pid(), "the marker finds the plugin")
	p.Close()
	requireNoPluginProcesses(t, h)
}

// pluginIDs are the user and group a process runs as, which must be the same real, effective,
// saved and file system ids.
func pluginIDs(t *testing.T, pid int) (uid, gid int) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	ids := func(field string) int {
		m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$`).FindStringSubmatch(string(status))
		require.NotNil(t, m, "%s of %d", field, pid)
		require.Equal(t, []string{m[1], m[1], m[1]}, m[2:], "%s of %d: one id", field, pid)
		id, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		return id
	}
	return ids("Uid"), ids("Gid")
}

// requireOwnUser checks that a plugin without a user namespace runs as a user and group of its
// own from the default range.
func requireOwnUser(t *testing.T, uid, gid int) {
	t.Helper()
	r := pluginhost.DefaultUsers
	require.Equal(t, uid, gid, "a group of its own")
	require.GreaterOrEqual(t, uid, int(r.First))
	require.Less(t, uid, int(r.First+r.Count))
}

// Without a user namespace RLIMIT_NPROC counts every process and thread of a user, so each
// plugin of a root host runs as a user of its own: a plugin's process limit counts its own
// processes, not those of the other plugins, nor of whatever else runs as nobody (an embedded
// PostgreSQL, another test's host), which made a plugin's first exec fail with EAGAIN.
func TestAPluginsProcessLimitCountsItsProcessesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a host that is not root runs its plugins as itself")
	}
	t.Parallel()
	lim := pluginhost.Limits{AddressSpace: 4 << 30, OpenFiles: 1024, Processes: 64}
	holdAsNobody(t, int(lim.Processes)+8)
	h := newHost(t, pluginhost.Options{Sandbox: pluginhost.SandboxOff, Limits: lim})
	var uids []int
	for range 2 {
		// Each bomb while the ones before hold their processes.
		res, p := attack(t, h, ar{"kind": "forkbomb", "n": 200, "token": randomToken(t)})
		t.Logf("fork bomb: %s", res)
		n, err := strconv.Atoi(strings.TrimPrefix(res, "ok: "))
		require.NoError(t, err, res)
		require.Positive(t, n, "the plugin has its own allowance")
		require.Less(t, n, 200, "and its limit holds")
		limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.Pid()))
		require.NoError(t, err)
		require.Regexp(t, `Max processes\s+64\s+64`, string(limits))
		uid, gid := pluginIDs(t, p.Pid())
		requireOwnUser(t, uid, gid)
		require.NotContains(t, uids, uid, "a user of its own")
		uids = append(uids, uid)
	}
}

// holdAsNobody starts n processes as nobody, which end with the test.
func holdAsNobody(t *testing.T, n int) {
	t.Helper()
	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	for range n {
		cmd := exec.Command("sleep", "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// requireSchedBatch checks that every thread of a process runs under SCHED_BATCH.
func requireSchedBatch(t *testing.T, pid int) {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/sched", pid))
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	for _, task := range tasks {
		sched, err := os.ReadFile(task)
		require.NoError(t, err)
		require.Regexp(t, `(?m)^policy\s+:\s+3$`, string(sched), "%s: SCHED_BATCH", task)
	}
}

func TestSchedBatchMovesEveryThreadOfTheProcess(t *testing.T) {
	// The test binary's own threads: the policy changes nothing the other tests check.
	require.NoError(t, pluginhost.SchedBatch())
	requireSchedBatch(t, os.Getpid())
}

func TestTamperedBinaryIsRefusedBeforeItRuns(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	s := script(t, "tampered", "touch ran; exit 0")
	s.SHA256 = strings.Repeat("ab", 32)
	_, err := h.Start(context.Background(), s)
	pe := requireReason(t, err, pluginhost.ReasonChecksum)
	require.ErrorContains(t, pe, "it was not started")
	require.NoFileExists(t, filepath.Join(h.RunDir(), "ran"))
	require.Empty(t, pluginProcesses(h))
}

func TestPrintingToStdoutBeforeTheHandshakeIsNamed(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{StartTimeout: 5 * time.Second})
	_, err := h.Start(context.Background(), script(t, "chatty", "echo 'starting up, hello'; sleep 30"))
	pe := requireReason(t, err, pluginhost.ReasonStdout)
	require.ErrorContains(t, pe, `"starting up, hello"`)
	require.ErrorContains(t, pe, "plugin chatty@1.0.0: printed to stdout before the handshake")
	requireNoPluginProcesses(t, h)
}

func TestTheSDKKeepsAnAuthorsPrintsOffTheHandshake(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	p, err := h.Start(context.Background(), spec("stdio"))
	require.NoError(t, err)
	p.Close()
}

func TestProtocolMismatchIsNamed(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	_, err := h.Start(context.Background(), script(t, "future", "echo '1|99|tcp|127.0.0.1:1|grpc'; sleep 30"))
	pe := requireReason(t, err, pluginhost.ReasonProtocol)
	require.ErrorContains(t, pe, "plugin protocol 1")
	requireNoPluginProcesses(t, h)
}

func TestAPluginThatHangsAtStartIsKilledWithItsChildren(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{StartTimeout: time.Second})
	_, err := h.Start(context.Background(), script(t, "sleepy", "sleep 300 & sleep 300"))
	requireReason(t, err, pluginhost.ReasonTimeout)
	requireNoPluginProcesses(t, h)
}

func TestAPluginThatHangsInAHookIsKilledAtTheDeadlineWithItsChildren(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{CallTimeout: time.Second})
	p, err := h.Start(ctx, spec("hang"))
	require.NoError(t, err)
	err = p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, &sdk.Request{Header: http.Header{}})
	pe := requireReason(t, err, pluginhost.ReasonTimeout)
	require.ErrorContains(t, pe, "killed")
	requireNoPluginProcesses(t, h)
}

func TestAPluginSeesNoHostSecrets(t *testing.T) {
	// Not parallel: it sets the host's environment.
	t.Setenv("DATABASE_URL", "postgres://admin:hunter2@127.0.0.1/barrage")
	t.Setenv("BARRAGE_JWT_KEY", "hunter2-signing-key")
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{Env: []string{"PLUGIN_SETTING=allowed"}})
	p, err := h.Start(ctx, spec("env"))
	require.NoError(t, err)
	defer p.Close()
	sets, err := p.Element().Next(ctx, 1)
	require.NoError(t, err)
	require.Len(t, sets, 1)
	env := sets[0]
	require.Equal(t, "allowed", env["PLUGIN_SETTING"])
	require.NotContains(t, env, "DATABASE_URL")
	require.NotContains(t, env, "BARRAGE_JWT_KEY")
	for k, v := range env {
		require.NotContains(t, v, "hunter2", "variable %s", k)
	}
}

func TestAPluginThatCrashesMidRunFailsItsCallsWithAReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{})
	p, err := h.Start(ctx, spec("crash"))
	require.NoError(t, err)
	call := func() error {
		return p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, &sdk.Request{Header: http.Header{}})
	}
	require.NoError(t, call())
	require.NoError(t, call())
	pe := requireReason(t, call(), pluginhost.ReasonCrashed)
	require.ErrorContains(t, pe, "exit status 3")
	requireReason(t, call(), pluginhost.ReasonCrashed) // later calls say why too

	// The host goes on: another plugin starts and works.
	good, err := h.Start(ctx, spec("good"))
	require.NoError(t, err)
	_, err = good.Element().Next(ctx, 1)
	require.NoError(t, err)
}

func TestAPluginThatAllocatesWithoutBoundIsStoppedByItsLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{Limits: pluginhost.Limits{AddressSpace: 1 << 30, OpenFiles: 256}})
	p, err := h.Start(ctx, spec("alloc"))
	require.NoError(t, err)
	_, err = p.Element().Next(ctx, 1)
	pe := requireReason(t, err, pluginhost.ReasonCrashed)
	require.Regexp(t, `out of memory|cannot allocate memory`, pe.Error())
}

func TestStartSweepsPluginsLeftByADeadHost(t *testing.T) {
	t.Parallel()
	orphan := exec.Command("sleep", "300")
	orphan.Env = []string{"BARRAGE_PLUGIN_HOST=999999999.12345"}
	require.NoError(t, orphan.Start())
	done := make(chan error, 1)
	go func() { done <- orphan.Wait() }()
	newHost(t, pluginhost.Options{})
	select {
	case err := <-done:
		require.ErrorContains(t, err, "killed")
	case <-time.After(5 * time.Second):
		_ = orphan.Process.Kill()
		t.Fatal("the orphan was not swept")
	}
}

// Environment variables of a host that waits to be killed (hostThenWait): the test plugin, and
// for the hostile one the attack it tries and whether the sandbox is off.
const (
	killedHostEnv       = "PLUGINHOST_TEST_HOST"
	killedHostAttackEnv = "PLUGINHOST_TEST_HOST_ATTACK"
	killedHostOffEnv    = "PLUGINHOST_TEST_HOST_SANDBOX_OFF"
)

// hostThenWait starts the good test plugin at path, prints its pid, and waits to be killed.
// With an attack in its environment, it starts the hostile plugin instead, has it try the
// attack, and prints its answer on the line before the pid. Its plugins' launcher is the one
// its environment names (testLauncherEnv), else this test binary.
func hostThenWait(path string) {
	opts := pluginhost.Options{Env: withLauncherEnv(nil), Launcher: os.Getenv(testLauncherEnv)}
	if os.Getenv(killedHostOffEnv) != "" {
		opts.Sandbox = pluginhost.SandboxOff
	}
	h, err := pluginhost.New(opts)
	if err != nil {
		panic(err)
	}
	sum, err := fileSum(path)
	if err != nil {
		panic(err)
	}
	attack := os.Getenv(killedHostAttackEnv)
	name := "good"
	if attack != "" {
		name = "hostile"
	}
	ctx := context.Background()
	p, err := h.Start(ctx, pluginhost.Spec{Name: name, Version: "1.0.0", Path: path, SHA256: sum})
	if err != nil {
		panic(err)
	}
	if attack != "" {
		if _, err := p.Element().Configure(ctx, []byte(attack)); err != nil {
			panic(err)
		}
		sets, err := p.Element().Next(ctx, 1)
		if err != nil {
			panic(err)
		}
		fmt.Println(sets[0]["result"])
	}
	fmt.Println(p.Pid())
	time.Sleep(time.Minute)
	os.Exit(3)
}

func TestAPluginDiesWithItsHost(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	host := exec.Command(exe, "-test.run=^$")
	host.Env = append(os.Environ(), killedHostEnv+"="+testPlugin)
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	var pid int
	_, err = fmt.Fscan(out, &pid)
	require.NoError(t, err, "the host printed the plugin's pid")
	require.NoError(t, syscall.Kill(pid, 0), "the plugin runs")

	require.NoError(t, host.Process.Kill()) // SIGKILL: the host has no chance to clean up
	_ = host.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return // gone: the parent-death signal killed it
		}
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(st), ") Z ") {
			return // a zombie waiting for init to reap it: dead
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("plugin %d outlived its host", pid)
}

func TestAnOversizedCallFailsAloneAndTheStreamGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, pluginhost.Options{})
	p, err := h.Start(ctx, spec("good"))
	require.NoError(t, err)
	huge := &sdk.Request{Method: "POST", URL: "http://127.0.0.1/", Header: http.Header{}, Body: make([]byte, host.MaxMessageSize+1)}
	err = p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, huge)
	requireReason(t, err, pluginhost.ReasonTooLarge)
	require.NoError(t, p.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, &sdk.Request{Method: "GET", URL: "http://127.0.0.1/", Header: http.Header{}}))
}

func TestStartRemovesThePluginCopiesOfADeadHost(t *testing.T) {
	t.Parallel()
	dead := filepath.Join(os.TempDir(), "barrage-plugins-999999999.12345-test")
	require.NoError(t, os.MkdirAll(dead, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dead, "good-abc"), []byte("a copy"), 0o500))
	h := newHost(t, pluginhost.Options{})
	require.NoDirExists(t, dead)
	require.DirExists(t, h.RunDir(), "its own folder stays")
	require.Contains(t, filepath.Base(h.RunDir()), fmt.Sprintf("barrage-plugins-%d.", os.Getpid()))
}

// A plugin's crash line reaches the operator's terminal in the error: its control characters
// are escaped, so that it cannot clear the screen, retitle the window or write the clipboard.
func TestACrashLineCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	_, err := h.Start(context.Background(), script(t, "escapes", `printf 'panic: \033]0;TITLE\007\033[2J\033[31mRED\n' >&2; exit 2`))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "\x1b")
	require.NotContains(t, err.Error(), "\a")
	require.Contains(t, err.Error(), `panic: \x1b]0;TITLE\x07\x1b[2J\x1b[31mRED`)
}

// A plugin that announces an address the host refuses to dial is told why, not that it was
// killed (which it is, for announcing it).
func TestARefusedAddressIsTheReasonAPluginDidNotStart(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	_, err := h.Start(context.Background(), script(t, "tcp", `echo "1|1|tcp|127.0.0.1:9|grpc"; sleep 10`))
	pe := requireReason(t, err, pluginhost.ReasonHandshake)
	require.ErrorContains(t, pe, `the plugin announced tcp "127.0.0.1:9": a plugin serves on a Unix socket in its socket folder`)
}

// A plugin ends as it ends, whatever its launcher (its namespace's init) sees: a plugin that
// signals its process group or pid 1 does not end the launcher (it took the plugin with it, and
// the host reported the launcher's status), and an exit status above 128 is not a signal.
func TestAPluginEndsAsItEnds(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	for body, want := range map[string]string{
		`trap "" TERM HUP INT; kill -TERM 0; kill -HUP 1; kill -INT 1; kill -QUIT 1; kill -SEGV 1; sleep 1; echo "alive after kill 0" >&2; exit 7`: `exit status 7: alive after kill 0`,
		`echo "panic: gone" >&2; exit 137`: `exit status 137: panic: gone`,
		`kill -KILL $$`:                    `signal: killed`,
	} {
		_, err := h.Start(context.Background(), script(t, "ends", body))
		pe := requireReason(t, err, pluginhost.ReasonCrashed)
		require.ErrorContains(t, pe, want, body)
	}
}

// A script plugin whose interpreter the sandbox does not show is told which, and how to show it.
func TestAMissingInterpreterIsNamed(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginhost.Options{})
	if h.Sandbox().Namespaces != nil {
		t.Skipf("no namespaces here: %v", h.Sandbox().Namespaces)
	}
	path := filepath.Join(t.TempDir(), "py")
	require.NoError(t, os.WriteFile(path, []byte("#!/opt/nowhere/python3\nprint(1)\n"), 0o755))
	_, err := h.Start(context.Background(), pluginhost.Spec{Name: "py", Version: "1.0.0", Path: path, SHA256: sha(t, path)})
	require.ErrorContains(t, err, "interpreter /opt/nowhere/python3 is not in the sandbox: let plugins see its folder (barrage --plugin-path DIR)")
}
