package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/script"
)

// localArtifact is a file to publish: what it is, and for which platform.
type localArtifact struct {
	path, os, arch, format, sha256 string
	size                           int64
}

// inspect says what the file at path is: an ELF executable (its platform read from it), or a
// Python zipapp (any platform: one artifact for each of platforms). A setuid or setgid file
// is refused, as the server refuses one inside a zipapp.
func inspect(path string, platforms []registry.Platform) ([]localArtifact, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file", path)
	}
	if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		return nil, fmt.Errorf("%s is setuid or setgid: a plugin never is", path)
	}
	sum, err := pluginset.FileSHA256(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, registry.ELFHead)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	one := localArtifact{path: path, sha256: sum, size: st.Size()}
	if bytes.HasPrefix(head, []byte("\x7fELF")) {
		ef, err := elf.NewFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[ef.Machine]
		if err := registry.SniffELF(head, st.Size(), arch); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		one.os, one.arch, one.format = "linux", arch, registry.FormatELF
		return []localArtifact{one}, nil
	}
	if err := registry.SniffZipapp(head); err != nil {
		if !bytes.HasPrefix(head, []byte("#!")) {
			return nil, fmt.Errorf("%s is neither an ELF executable nor a Python zipapp", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := registry.CheckZipapp(f, st.Size()); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []localArtifact
	for _, p := range platforms {
		a := one
		a.os, a.arch, a.format = p.OS, p.Arch, registry.FormatZipapp
		out = append(out, a)
	}
	return out, nil
}

// runnable reports whether this machine can start the artifact to check it.
func (a localArtifact) runnable() bool {
	return a.format == registry.FormatZipapp || (a.os == runtime.GOOS && a.arch == runtime.GOARCH)
}

func runPluginPublish(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin publish", "[flags] PATH...  (a build per platform, or one Python zipapp)")
	namespace := fs.String("namespace", "", "the namespace to publish in (default: the one in the plugin's name, namespace/name)")
	name := fs.String("name", "", "the plugin's name in the namespace (default: the name the plugin gives)")
	keyFile := fs.String("key", "", "the Ed25519 key that signs the version (default: signing-key.pem in the config folder, as plugin keygen writes it)")
	readme := fs.String("readme", "", "the version's README, Markdown (default: README.md beside the first PATH, if there is one)")
	license := fs.String("license", "", "the licence, an SPDX expression such as MIT")
	source := fs.String("source-url", "", "where its source is, http or https")
	config := fs.String("config", "{}", "the config object to check the plugin with, as JSON")
	var tags, platforms multiFlag
	fs.Var(&tags, "tag", "a tag to find it by; repeatable")
	fs.Var(&platforms, "platform", "for a Python zipapp, a platform to publish it for, os/arch; repeatable (default: every platform, "+fmt.Sprint(registry.Platforms)+")")
	pf := addPluginFlags(fs, e)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	plats := registry.Platforms
	if len(platforms) > 0 {
		plats = nil
		for _, p := range platforms {
			os, arch, _ := strings.Cut(p, "/")
			if err := registry.CheckPlatform(os, arch); err != nil {
				return fmt.Errorf("--platform %q: %w", p, err)
			}
			plats = append(plats, registry.Platform{OS: os, Arch: arch})
		}
	}
	var arts []localArtifact
	for _, path := range fs.Args() {
		more, err := inspect(path, plats)
		if err != nil {
			return err
		}
		for _, a := range more {
			for _, b := range arts {
				if a.os == b.os && a.arch == b.arch {
					return fmt.Errorf("%s and %s are both for %s/%s", b.path, a.path, a.os, a.arch)
				}
			}
			arts = append(arts, a)
		}
	}
	key, err := loadSigningKey(e, *keyFile)
	if err != nil {
		return err
	}

	// Check the plugin here, as a run would start it, and take what it says it is.
	var check *localArtifact
	for i := range arts {
		if arts[i].runnable() {
			check = &arts[i]
			break
		}
	}
	if check == nil {
		return fmt.Errorf("none of the files runs on this machine (%s/%s) to be checked: publish from one where a build of the plugin runs", runtime.GOOS, runtime.GOARCH)
	}
	if !json.Valid([]byte(*config)) {
		return errors.New("--config is not JSON")
	}
	h, err := pf.newHost()
	if err != nil {
		return err
	}
	defer h.Close()
	info, err := checkPlugin(ctx, e.stderr, h, check.path, []byte(*config))
	if err != nil {
		return fmt.Errorf("%s: %w; fix the plugin, or give --config the config a script would give it, before publishing it", check.path, err)
	}
	said := info.Name
	if ns, n, ok := strings.Cut(said, "/"); ok {
		said = n
		if *namespace == "" {
			*namespace = ns
		}
	}
	if *name == "" {
		*name = said
	}
	if *namespace == "" {
		return fmt.Errorf("the plugin calls itself %q: give --namespace to publish it in", info.Name)
	}

	m := api.PublishManifest{Version: info.Version, Protocols: []int{info.ProtocolVersion},
		Description: ptr(info.Description), ConfigSchema: ptr(info.ConfigSchema), Network: ptr(append([]string{}, info.Network...)),
		Tags: ptr(append([]string{}, tags...)), License: ptr(*license), SourceUrl: ptr(*source)}
	for _, k := range info.Kinds {
		m.Kinds = append(m.Kinds, api.PluginKind(k))
	}
	readmePath := *readme
	if readmePath == "" {
		if p := filepath.Join(filepath.Dir(fs.Arg(0)), "README.md"); fileExists(p) {
			readmePath = p
		}
	}
	if readmePath != "" {
		b, err := os.ReadFile(readmePath)
		if err != nil {
			return err
		}
		m.Readme = ptr(string(b))
	}
	var sums []registry.Sum
	for _, a := range arts {
		file := registry.ArtifactFile(*name, info.Version, a.os, a.arch)
		m.Artifacts = append(m.Artifacts, api.PluginArtifact{Os: api.PluginArtifactOs(a.os), Arch: api.PluginArtifactArch(a.arch),
			File: file, Format: api.PluginArtifactFormat(a.format), Sha256: a.sha256, Size: a.size})
		sums = append(sums, registry.Sum{SHA256: a.sha256, Name: file})
	}
	doc, err := registry.FormatSums(sums)
	if err != nil {
		return err
	}
	m.Signature = registry.Sign(key, doc)

	// Stream the body: the artifacts are never held in memory.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(writePublishBody(mw, m, arts)) }()
	cl, _, err := apiClientWith(ctx, e, true, &http.Client{})
	if err != nil {
		pr.Close()
		return err
	}
	res, err := cl.PublishPluginVersionWithBodyWithResponse(ctx, *namespace, *name, mw.FormDataContentType(), pr)
	pr.Close()
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	v := res.JSON201
	fmt.Fprintf(e.stdout, "published %s/%s@%s, %s: an admin reviews it before anyone else sees it\n", v.Namespace, v.Name, v.Version, v.State)
	for _, a := range v.Artifacts {
		fmt.Fprintf(e.stdout, "  %s/%s  %s  sha256 %s\n", a.Os, a.Arch, a.File, a.Sha256)
	}
	fmt.Fprintf(e.stdout, "  signed by key %s\n", v.Signer)
	return nil
}

func writePublishBody(mw *multipart.Writer, m api.PublishManifest, arts []localArtifact) error {
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="manifest"`}
	h["Content-Type"] = []string{"application/json"}
	w, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(w).Encode(m); err != nil {
		return err
	}
	for i, a := range arts {
		w, err := mw.CreateFormFile("artifact", m.Artifacts[i].File)
		if err != nil {
			return err
		}
		f, err := os.Open(a.path)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return mw.Close()
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// loadSigningKey reads the author's Ed25519 key: path, else signing-key.pem of the config
// folder.
func loadSigningKey(e env, path string) (ed25519.PrivateKey, error) {
	if path == "" {
		var err error
		if path, err = configPath(e, "signing-key.pem"); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no signing key in %s: make one with `barrage plugin keygen` and register its public key on your namespace", path)
	}
	if err != nil {
		return nil, err
	}
	return registry.ParsePrivateKey(b)
}

func runPluginSearch(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin search", "[--kind K] [--tag T] [--platform OS/ARCH] [--protocol N] [--sort ORDER] [WORDS...]")
	kind := fs.String("kind", "", "only plugins of this kind: session-element, url or source-modifier")
	tag := fs.String("tag", "", "only plugins with this tag")
	platform := fs.String("platform", "", "only plugins built for this platform: linux/amd64 or linux/arm64")
	protocol := fs.Int("protocol", 0, "only plugins that speak this plugin protocol version")
	sort := fs.String("sort", "name", "the order: name, or most first: downloads, runs, newest")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	params := api.SearchPluginsParams{Q: ptr(strings.Join(fs.Args(), " "))}
	if *kind != "" {
		params.Kind = ptr(api.PluginKind(*kind))
	}
	if *tag != "" {
		params.Tag = tag
	}
	if *platform != "" {
		params.Platform = ptr(api.SearchPluginsParamsPlatform(*platform))
	}
	if *protocol != 0 {
		params.Protocol = protocol
	}
	params.Sort = ptr(api.SearchPluginsParamsSort(*sort))
	return printTable(e, "PLUGIN\tLATEST\tKINDS\tDOWNLOADS\tRUNS\tDESCRIPTION",
		func(cursor *string) ([]api.PluginSummary, *string, error) {
			params.Cursor = cursor
			res, err := cl.SearchPluginsWithResponse(ctx, &params)
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(p api.PluginSummary) string {
			latest := p.Latest
			if !p.Listed {
				latest += " (unlisted)"
			}
			return fmt.Sprintf("%s/%s\t%s\t%s\t%d\t%d\t%s", p.Namespace, p.Name, latest, kindsText(p.Kinds), p.Downloads, p.Runs, p.Description)
		})
}

func kindsText(kinds []api.PluginKind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

func runPluginInfo(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin info", "NAMESPACE/NAME")
	arg, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	ns, name, ok := strings.Cut(strings.SplitN(arg, "@", 2)[0], "/")
	if !ok {
		return fmt.Errorf("%q: want namespace/name, as acme/random-data", arg)
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.GetPluginWithResponse(ctx, ns, name)
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	p := res.JSON200
	fmt.Fprintf(e.stdout, "%s/%s  %s\n", p.Namespace, p.Name, p.Description)
	fmt.Fprintf(e.stdout, "kinds: %s  licence: %s  source: %s  tags: %s  downloads: %d\n\n",
		kindsText(p.Kinds), orDash(p.License), orDash(p.SourceUrl), orDash(strings.Join(p.Tags, ",")), p.Downloads)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSTATE\tPLATFORMS\tPROTOCOLS\tDOWNLOADS\tRUNS\tSIGNER")
	for _, v := range p.Versions {
		state := string(v.State)
		if v.StateReason != nil {
			state += ": " + *v.StateReason
		}
		var plats []string
		for _, a := range v.Artifacts {
			plats = append(plats, string(a.Os)+"/"+string(a.Arch))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%d\t%s\n", v.Version, state, strings.Join(plats, ","), v.Protocols, v.Downloads, v.Runs, v.Signer)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Readme != "" {
		fmt.Fprintf(e.stdout, "\n%s\n", terminalText(strings.TrimRight(p.Readme, "\n")))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runPluginInstall(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin install", "[flags] NAMESPACE/NAME@VERSION")
	pf := addPluginFlags(fs, e)
	arg, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	ref, err := registry.ParseRef(arg)
	if err != nil {
		return err
	}
	cl, _, err := apiClientWith(ctx, e, true, &http.Client{})
	if err != nil {
		return err
	}
	return pf.install(ctx, cl, ref)
}

// install fetches ref from the server, verified, and adds it to the plugin directory.
func (pf *pluginFlags) install(ctx context.Context, cl *api.ClientWithResponses, ref registry.Ref) error {
	dir := pluginset.Dir(*pf.dir)
	path, signer, err := fetchPlugin(ctx, pf.e, cl, ref, string(dir))
	if err != nil {
		return err
	}
	defer os.Remove(path)
	h, err := pf.newHost()
	if err != nil {
		return err
	}
	defer h.Close()
	m, err := dir.AddAs(ctx, h, path, ref.Namespace+"/"+ref.Name, ref.Version.String())
	if err != nil {
		return fmt.Errorf("install %s: %w", ref, err)
	}
	fmt.Fprintf(pf.e.stdout, "installed %s@%s (%s) sha256 %s, signed by key %s, into %s\n", m.Name, m.Version, kindList(m), m.SHA256, signer, dir)
	return nil
}

// prepareMarket readies the marketplace plugins (namespace/name@version) of s for a run on this
// machine. One the plugin directory lacks is installed from the server the CLI is signed in to,
// verified as `plugin install` verifies it. One it has is checked against that server, when
// signed in: a version revoked since it was installed is refused, a deprecated one warned about.
func (pf *pluginFlags) prepareMarket(ctx context.Context, s *script.Script) error {
	dir := pluginset.Dir(*pf.dir)
	var cl *api.ClientWithResponses
	var server string
	var signedIn error // why there is no client, once asked
	client := func() (*api.ClientWithResponses, string, error) {
		if cl == nil && signedIn == nil {
			var creds credentials
			cl, creds, signedIn = apiClientWith(ctx, pf.e, true, &http.Client{}) // downloads take their time
			server = creds.Server
		}
		return cl, server, signedIn
	}
	for _, sp := range s.Plugins {
		if !strings.Contains(sp.Name, "/") {
			continue
		}
		loc, err := dir.Locate(ctx, sp.Name, sp.Version)
		if err == nil {
			if cl, _, err := client(); err == nil {
				if err := checkInstalled(ctx, pf.e, cl, loc.Manifest, dir); err != nil {
					return err
				}
			}
			continue
		}
		if !errors.Is(err, barrage.ErrNotFound) {
			return err
		}
		c, err := registry.ParseConstraint(sp.Version)
		if err != nil {
			return err
		}
		cl, server, err := client()
		if err != nil {
			return fmt.Errorf("plugin %s is not in %s, and it cannot be fetched from the marketplace: %w", sp.Ref, dir, err)
		}
		fmt.Fprintf(pf.e.stderr, "fetching %s from %s\n", sp.Ref, server)
		version := sp.Version
		if !c.Exact() {
			if version, err = newestListed(ctx, cl, sp.Name, c); err != nil {
				return fmt.Errorf("plugin %s: %w", sp.Ref, err)
			}
		}
		ref, err := registry.ParseRef(sp.Name + "@" + version)
		if err != nil {
			return err
		}
		// The install's report goes with the run's messages, not its output.
		quiet := *pf
		quiet.e.stdout = pf.e.stderr
		if err := quiet.install(ctx, cl, ref); err != nil {
			return err
		}
	}
	return nil
}

// checkInstalled holds the installed marketplace plugin m to what the server says of its
// version now: revoked is refused, deprecated warned about. A version the server does not know
// (installed from another server) or a server out of reach is let be, with a note.
func checkInstalled(ctx context.Context, e env, cl *api.ClientWithResponses, m pluginset.Manifest, dir pluginset.Dir) error {
	namespace, name, _ := strings.Cut(m.Name, "/")
	res, err := cl.GetPluginVersionWithResponse(ctx, namespace, name, m.Version)
	if err != nil || res.JSON200 == nil {
		fmt.Fprintf(e.stderr, "note: %s@%s could not be checked against the marketplace\n", m.Name, m.Version)
		return nil
	}
	v := res.JSON200
	switch v.State {
	case api.PluginVersionStateRevoked:
		return fmt.Errorf("plugin %s@%s was revoked (%s): no run may use it; remove %s from %s",
			m.Name, m.Version, deref(v.StateReason), filepath.Join(filepath.FromSlash(m.Name), m.Version), dir)
	case api.PluginVersionStateDeprecated:
		fmt.Fprintf(e.stderr, "warning: %s@%s is deprecated: %s\n", m.Name, m.Version, deref(v.StateReason))
	}
	return nil
}

// newestListed is the version of the marketplace plugin name a range c is pinned to: the newest
// published one it matches, else the newest deprecated one.
func newestListed(ctx context.Context, cl *api.ClientWithResponses, name string, c registry.Constraint) (string, error) {
	namespace, short, _ := strings.Cut(name, "/")
	res, err := cl.GetPluginWithResponse(ctx, namespace, short)
	if err != nil {
		return "", err
	}
	if res.JSON200 == nil {
		return "", api.ProblemError(res.HTTPResponse, res.Body)
	}
	v, ok := registry.Pick(c, res.JSON200.Versions, func(v api.PluginVersion) (string, string) { return v.Version, string(v.State) })
	if !ok {
		return "", fmt.Errorf("no published version of %s matches %s", name, c)
	}
	return v, nil
}

// fetchPlugin downloads the artifact of ref for this machine into a file of dir, verifying it
// as it must be before anything runs it: the version's SHA256SUMS signed by a key of its
// namespace, the file's sha256 on its line. It returns the file and the signer's id; a
// deprecated version is warned about.
func fetchPlugin(ctx context.Context, e env, cl *api.ClientWithResponses, ref registry.Ref, dir string) (string, string, error) {
	res, err := cl.GetPluginDownloadWithResponse(ctx, ref.Namespace, ref.Name, ref.Version.String(), api.PluginOS(runtime.GOOS), api.PluginArch(runtime.GOARCH))
	if err != nil {
		return "", "", err
	}
	if res.JSON200 == nil {
		return "", "", fmt.Errorf("%s: %w", ref, api.ProblemError(res.HTTPResponse, res.Body))
	}
	d := res.JSON200
	if d.State == api.PluginVersionStateDeprecated {
		fmt.Fprintf(e.stderr, "warning: %s is deprecated: %s\n", ref, deref(d.StateReason))
	}
	var keys []registry.PublicKey
	for _, k := range d.SigningKeys {
		pk, err := registry.ParsePublicKey(k.PublicKey)
		if err != nil {
			return "", "", fmt.Errorf("%s: a signing key of %s: %w", ref, ref.Namespace, err)
		}
		keys = append(keys, pk)
	}
	if _, err := registry.Verify(keys, []byte(d.Shasums), d.ShasumsSignature); err != nil {
		return "", "", fmt.Errorf("%s: %w: refused", ref, err)
	}
	file, err := cl.DownloadPluginArtifact(ctx, ref.Namespace, ref.Name, ref.Version.String(), api.PluginOS(runtime.GOOS), api.PluginArch(runtime.GOARCH))
	if err != nil {
		return "", "", err
	}
	defer file.Body.Close()
	if file.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(file.Body, 1<<20))
		return "", "", fmt.Errorf("%s: %w", ref, api.ProblemError(file, body))
	}
	path, sum, err := pluginset.Spool(dir, file.Body, d.Size)
	if err != nil {
		return "", "", fmt.Errorf("download %s: %w", ref, err)
	}
	signer, err := registry.VerifyDownload(keys, []byte(d.Shasums), d.ShasumsSignature, d.Filename, sum)
	if err != nil {
		os.Remove(path)
		return "", "", fmt.Errorf("%s: %w", ref, err)
	}
	return path, signer.ID(), nil
}

// runAdminPlugins lists the plugin versions waiting for review.
func runAdminPlugins(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "admin plugins", "(the versions pending review)"), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return printTable(e, "VERSION\tKINDS\tPLATFORMS\tSIGNER\tPUBLISHED",
		func(*string) ([]api.PluginVersion, *string, error) {
			res, err := cl.ListPendingPluginVersionsWithResponse(ctx, &api.ListPendingPluginVersionsParams{})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, nil, nil
		},
		func(v api.PluginVersion) string {
			var plats []string
			for _, a := range v.Artifacts {
				plats = append(plats, string(a.Os)+"/"+string(a.Arch))
			}
			return fmt.Sprintf("%s/%s@%s\t%s\t%s\t%s\t%s", v.Namespace, v.Name, v.Version, kindsText(v.Kinds), strings.Join(plats, ","), v.Signer, v.CreatedAt.Format("2006-01-02 15:04"))
		})
}

// runAdminPlugin approves, rejects or revokes a version.
func runAdminPlugin(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "admin plugin", "approve|reject|revoke NAMESPACE/NAME@VERSION [--reason TEXT]")
	reason := fs.String("reason", "", "why: required to reject and to revoke; its owners and users see it")
	if len(args) == 0 {
		fs.Usage()
		return errUsage
	}
	action := args[0]
	arg, err := positionalArg(fs, args[1:])
	if err != nil {
		return err
	}
	ref, err := registry.ParseRef(arg)
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	body := api.ReviewRequest{Reason: reason}
	ns, name, ver := ref.Namespace, ref.Name, ref.Version.String()
	decide := map[string]func() (*api.PluginVersion, *http.Response, []byte, error){
		"approve": func() (*api.PluginVersion, *http.Response, []byte, error) {
			r, err := cl.ApprovePluginVersionWithResponse(ctx, ns, name, ver, body)
			if err != nil {
				return nil, nil, nil, err
			}
			return r.JSON200, r.HTTPResponse, r.Body, nil
		},
		"reject": func() (*api.PluginVersion, *http.Response, []byte, error) {
			r, err := cl.RejectPluginVersionWithResponse(ctx, ns, name, ver, api.ReasonRequest{Reason: *reason})
			if err != nil {
				return nil, nil, nil, err
			}
			return r.JSON200, r.HTTPResponse, r.Body, nil
		},
		"revoke": func() (*api.PluginVersion, *http.Response, []byte, error) {
			r, err := cl.RevokePluginVersionWithResponse(ctx, ns, name, ver, api.ReasonRequest{Reason: *reason})
			if err != nil {
				return nil, nil, nil, err
			}
			return r.JSON200, r.HTTPResponse, r.Body, nil
		},
	}[action]
	if decide == nil {
		fs.Usage()
		return errUsage
	}
	v, hr, raw, err := decide()
	if err != nil {
		return err
	}
	if v == nil {
		return api.ProblemError(hr, raw)
	}
	fmt.Fprintf(e.stdout, "%s/%s@%s is %s\n", v.Namespace, v.Name, v.Version, v.State)
	return nil
}

// terminalText is s, an author's text, fit to print on a terminal: each control character but a
// newline and a tab is shown escaped (\x1b), so that no escape sequence in it retitles, clears
// or paints the reader's terminal, or plants a hidden link in it.
func terminalText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
