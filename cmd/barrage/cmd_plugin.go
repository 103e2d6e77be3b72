package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// pluginFlags adds the flags that say where plugins come from and what they may see.
type pluginFlags struct {
	dir     *string
	env     *multiFlag
	paths   *multiFlag
	verbose *bool
	require *bool
	grants  *multiFlag // nil for commands that run no script
	e       env
}

// addGrantFlag adds --plugin-grant, for the commands that run a script's plugins.
func (pf *pluginFlags) addGrantFlag(fs *flag.FlagSet) {
	pf.grants = &multiFlag{}
	fs.Var(pf.grants, "plugin-grant", "let the script's plugin AS reach HOST:PORT, within what it declares it needs (as network: on its entry in the script): AS=HOST:PORT; repeatable")
}

// grantsByAlias reads --plugin-grant AS=HOST:PORT.
func (pf *pluginFlags) grantsByAlias() (map[string][]script.Grant, error) {
	if pf.grants == nil || len(*pf.grants) == 0 {
		return nil, nil
	}
	out := make(map[string][]script.Grant)
	for _, v := range *pf.grants {
		as, host, ok := strings.Cut(v, "=")
		if !ok || as == "" {
			return nil, fmt.Errorf("--plugin-grant %q: want AS=HOST:PORT, AS the plugin's name in the script", v)
		}
		h, err := sdk.ParseHostPattern(host)
		if err != nil {
			return nil, fmt.Errorf("--plugin-grant %q: %w", v, err)
		}
		if h.Any() {
			return nil, fmt.Errorf("--plugin-grant %q: a grant names its hosts; * grants every host", v)
		}
		out[as] = append(out[as], script.Grant{Host: h, Path: "--plugin-grant " + v})
	}
	return out, nil
}

func addPluginFlags(fs *flag.FlagSet, e env) *pluginFlags {
	pf := &pluginFlags{e: e, env: &multiFlag{}, paths: &multiFlag{}}
	pf.dir = fs.String("plugins", string(pluginset.DefaultDir(e.getenv)), "the local plugin directory ($BARRAGE_PLUGIN_DIR)")
	fs.Var(pf.env, "plugin-env", "give plugins this environment variable: NAME (its value here) or NAME=value; repeatable. Plugins see no other.")
	pf.verbose = fs.Bool("plugin-log", false, "print the plugins' stderr and lifecycle")
	fs.Var(pf.paths, "plugin-path", "let sandboxed plugins read this folder, at the same path (an interpreter's prefix, such as a Python virtualenv); repeatable")
	pf.require = addRequireSandbox(fs, e)
	return pf
}

// addRequireSandbox adds --require-sandbox: refuse to run plugins without the whole kernel
// sandbox.
func addRequireSandbox(fs *flag.FlagSet, e env) *bool {
	return fs.Bool("require-sandbox", e.getenv("BARRAGE_REQUIRE_SANDBOX") != "",
		"refuse to start plugins unless every part of the kernel sandbox is available: namespaces, a cgroup, seccomp ($BARRAGE_REQUIRE_SANDBOX)")
}

// sandboxMode is the host's sandbox mode for --require-sandbox.
func sandboxMode(require bool) pluginhost.SandboxMode {
	if require {
		return pluginhost.SandboxRequire
	}
	return pluginhost.SandboxAuto
}

func (pf *pluginFlags) hostOptions() (pluginhost.Options, error) {
	var opts pluginhost.Options
	for _, v := range *pf.env {
		name, value, ok := strings.Cut(v, "=")
		if !ok {
			value = pf.e.getenv(name)
		}
		if name == "" {
			return opts, fmt.Errorf("--plugin-env %q: want NAME or NAME=value", v)
		}
		opts.Env = append(opts.Env, name+"="+value)
	}
	opts.Paths = *pf.paths
	opts.Sandbox = sandboxMode(*pf.require)
	if *pf.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(pf.e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return opts, nil
}

// newHost starts a plugin host with the flags' options, and says how it confines plugins.
func (pf *pluginFlags) newHost() (*pluginhost.Host, error) {
	hopts, err := pf.hostOptions()
	if err != nil {
		return nil, err
	}
	h, err := pluginhost.New(hopts)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(pf.e.stderr, h.Sandbox())
	return h, nil
}

// loadScript loads the script the arguments name and starts its plugins, if it has any. The
// set is nil without plugins; close it when done. vus says how many VUs the run will have (the
// plugins are started for them), or why the flags are wrong.
func (pf *pluginFlags) loadScript(ctx context.Context, fs *flag.FlagSet, args []string, vus func(*script.Script) (int, error)) (*pluginset.Set, *script.Script, error) {
	path, err := positionalArg(fs, args)
	if err != nil {
		return nil, nil, err
	}
	s, err := loadScript(pf.e, path)
	if err != nil {
		return nil, nil, err
	}
	n, err := vus(s)
	if err != nil {
		return nil, nil, err
	}
	return pf.open(ctx, path, s, n)
}

// open starts the plugins of the script at path, if it has any.
func (pf *pluginFlags) open(ctx context.Context, path string, s *script.Script, vus int) (*pluginset.Set, *script.Script, error) {
	if len(s.Plugins) == 0 {
		return nil, s, nil
	}
	if err := pf.prepareMarket(ctx, s); err != nil {
		return nil, nil, err
	}
	hopts, err := pf.hostOptions()
	if err != nil {
		return nil, nil, err
	}
	origin, err := pluginset.FileOrigin(path)
	if err != nil {
		return nil, nil, err
	}
	grants, err := pf.grantsByAlias()
	if err != nil {
		return nil, nil, err
	}
	set, s, err := pluginset.Open(ctx, origin, s, pluginset.Options{Source: pluginset.Dir(*pf.dir), Host: hopts, VUs: vus, Grants: grants})
	if err != nil {
		var list script.ErrorList
		if errors.Is(err, barrage.ErrInvalid) || errors.As(err, &list) {
			return nil, nil, &exitError{exitScriptError, fmt.Errorf("the script is not valid:\n%w", err)}
		}
		return nil, nil, err
	}
	if sb, ok := set.Sandbox(); ok {
		fmt.Fprintln(pf.e.stderr, sb)
	}
	return set, s, nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runPlugin(ctx context.Context, e env, args []string) error {
	subs := map[string]func(context.Context, env, []string) error{
		"add": runPluginAdd, "list": runPluginList, "check": runPluginCheck, "new": runPluginNew,
		"keygen": runPluginKeygen, "publish": runPluginPublish, "search": runPluginSearch, "info": runPluginInfo,
		"install": runPluginInstall,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		fmt.Fprintln(e.stderr, `Usage: barrage plugin <command>

Commands:
  add BINARY...   check each plugin binary and copy it into the local plugin directory
  list            list the plugins in the local plugin directory
  check BINARY    start a plugin and check its handshake, Describe and each of its hooks
  new NAME --kind url|session-element|source-modifier
                  create a Go plugin project that builds and passes its test
  keygen          make the Ed25519 key that signs the versions you publish
  publish PATH... check a plugin, sign its builds' SHA256SUMS and publish them as a version
  search [WORDS]  find plugins in the marketplace
  info NS/NAME    a marketplace plugin: its versions, their states, its README
  install NS/NAME@VERSION
                  fetch a marketplace plugin, verify its signature and sha256, and add it
                  to the local plugin directory`)
		return errUsage
	}
	return subs[args[0]](ctx, e, args[1:])
}

func runPluginAdd(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin add", "[flags] BINARY...")
	pf := addPluginFlags(fs, e)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	h, err := pf.newHost()
	if err != nil {
		return err
	}
	defer h.Close()
	dir := pluginset.Dir(*pf.dir)
	for _, path := range fs.Args() {
		m, err := dir.Add(ctx, h, path)
		if err != nil {
			return fmt.Errorf("add %s: %w", path, err)
		}
		fmt.Fprintf(e.stdout, "added %s@%s (%s) sha256 %s to %s\n", m.Name, m.Version, kindList(m), m.SHA256, dir)
	}
	return nil
}

func kindList(m *pluginset.Manifest) string {
	var ks []string
	for _, k := range m.Kinds {
		ks = append(ks, string(k))
	}
	return strings.Join(ks, ", ")
}

func runPluginList(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin list", "[flags]")
	pf := addPluginFlags(fs, e)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	ms, err := pluginset.Dir(*pf.dir).List()
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintf(e.stdout, "no plugins in %s; add one with barrage plugin add BINARY\n", *pf.dir)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tKINDS\tSHA256")
	for i := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ms[i].Name, ms[i].Version, kindList(&ms[i]), shortSum(ms[i].SHA256))
	}
	return tw.Flush()
}

// shortSum is the start of a sha256, enough to tell versions apart in a listing.
func shortSum(sum string) string {
	if len(sum) <= 16 {
		return sum
	}
	return sum[:16] + "…"
}

// runPluginKeygen makes an author's signing key: the private key in a file only its owner may
// read, the public key (to register on a namespace) on stdout. It never replaces a key: the
// versions a key signed stay verifiable only by it.
func runPluginKeygen(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin keygen", "[--out FILE]")
	out := fs.String("out", "", "the private key's file (default: signing-key.pem in Barrage's config folder)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	path := *out
	if path == "" {
		var err error
		if path, err = configPath(e, "signing-key.pem"); err != nil {
			return err
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	pemBytes, err := registry.MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists: a key is never replaced, since what it signed is verified by it alone; give --out another file", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(pemBytes); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	k := registry.PublicKey(pub)
	fmt.Fprintf(e.stderr, "Private key written to %s (keep it; only you may read it). Its public key, id %s, to register on your namespace:\n", path, k.ID())
	fmt.Fprintln(e.stdout, k)
	return nil
}
