// Package market is the plugin marketplace: authors publish signed versions of their plugins
// in their namespaces, admins review them, testers find them, and clients and agents fetch
// them with what they need to verify them. Versions are immutable; artifacts are kept in a blob
// store by their SHA-256, streamed in and out, never held in memory.
//
// The server never executes a plugin: what a plugin says of itself (its kinds, config schema,
// protocols, network) comes from the author's `plugin check` in the manifest, is checked for
// form here, and is held against the plugin by the agent that starts it.
package market

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/sdk"
)

// DefaultMaxArtifactBytes is the default limit on one artifact's size.
const DefaultMaxArtifactBytes = 128 << 20

// Config tunes the marketplace; zero fields take the defaults.
type Config struct {
	// MaxArtifactBytes caps an artifact's size (default 128 MiB).
	MaxArtifactBytes int64
	// TempDir is where a zipapp waits while its entries are checked (default os.TempDir()).
	TempDir string
	// ReservedNamespaces are names no user may claim, each exactly as written, beside those
	// registry.Reserved reserves of itself.
	ReservedNamespaces []string
	// Quotas bound what each user with a license keeps (none when zero).
	Quotas barrage.Quotas
}

// Service is the marketplace.
type Service struct {
	store *postgres.Store
	blobs blob.Store
	log   *slog.Logger
	cfg   Config

	// mu guards held, and is held while an unused blob is deleted: an upload that takes a blob
	// waits for its deletion to end, then puts it again.
	mu sync.Mutex
	// held counts, by sha256, the uploads under way here that put, or are putting, that blob.
	held map[string]int
}

// New returns the marketplace on store, keeping artifacts in blobs.
func New(store *postgres.Store, blobs blob.Store, log *slog.Logger, cfg Config) *Service {
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	return &Service{store: store, blobs: blobs, log: log, cfg: cfg, held: make(map[string]int)}
}

// MaxArtifactBytes is the limit on one artifact's size.
func (s *Service) MaxArtifactBytes() int64 { return s.cfg.MaxArtifactBytes }

func viewer(p barrage.Principal) postgres.Viewer {
	return postgres.Viewer{User: p.User.ID, Admin: p.User.Role == barrage.RoleAdmin}
}

// Manifest is what an author sends of a version before its artifacts.
type Manifest struct {
	Version      string
	Kinds        []string
	Description  string
	Readme       string
	License      string
	SourceURL    string
	Tags         []string
	Protocols    []int
	ConfigSchema string
	Network      []string
	Artifacts    []barrage.PluginArtifact
	Signature    []byte
}

// Upload is a version being published: its manifest checked, its artifacts arriving. An upload
// that does not commit is aborted (Abort), which deletes the blobs it put that nothing else uses.
type Upload struct {
	s    *Service
	p    barrage.Principal
	v    barrage.PluginVersion
	kept map[string]bool // by file
	// held are the sha256 of the blobs it put or was putting, once for each artifact.
	held []string
	done bool // committed or aborted
}

// Publish checks everything of a version that needs none of its bytes (p owns the namespace;
// the version is SemVer and new; the manifest's fields; the signature of the artifacts'
// SHA256SUMS by an active key of the namespace; their sizes within the limit) and returns
// the upload that takes its artifacts.
func (s *Service) Publish(ctx context.Context, p barrage.Principal, namespace, name string, m Manifest) (*Upload, error) {
	ns, err := s.ownNamespace(ctx, p, namespace, barrage.Errorf(barrage.ErrNotFound, "namespace %q not found among yours", namespace))
	if err != nil {
		return nil, err
	}
	if err := registry.CheckName("name", name); err != nil {
		return nil, barrage.Invalid("name", err.Error())
	}
	ver, err := registry.ParseVersion(m.Version)
	if err != nil {
		return nil, barrage.Invalid("manifest.version", err.Error())
	}
	v := barrage.PluginVersion{Namespace: namespace, Name: name, Version: m.Version, State: barrage.VersionPending,
		Kinds: m.Kinds, Description: m.Description, Readme: m.Readme, License: m.License, SourceURL: m.SourceURL,
		Tags: m.Tags, Protocols: m.Protocols, ConfigSchema: m.ConfigSchema, Network: m.Network,
		Artifacts: m.Artifacts, Signature: m.Signature}
	if err := s.checkManifest(&v); err != nil {
		return nil, err
	}
	exists, err := s.store.PluginVersionExists(ctx, namespace, name, ver)
	if err != nil {
		return nil, err
	}
	if exists {
		return nil, barrage.Errorf(barrage.ErrConflict, "%s/%s@%s exists already: a version never changes, publish a new one", namespace, name, m.Version)
	}
	var size int64
	for _, a := range v.Artifacts {
		size += a.Size
	}
	// Checked on what the manifest declares, before an artifact is stored.
	if err := s.store.CheckQuotas(ctx, postgres.QuotaOf(p, s.cfg.Quotas), barrage.Adding{Quota: barrage.QuotaPendingVersions, N: 1},
		barrage.Adding{Quota: barrage.QuotaStorageBytes, N: size}); err != nil {
		return nil, err
	}
	sums := make([]registry.Sum, len(v.Artifacts))
	for i, a := range v.Artifacts {
		sums[i] = registry.Sum{SHA256: a.SHA256, Name: a.File}
	}
	if v.Sums, err = registry.FormatSums(sums); err != nil {
		return nil, barrage.Invalid("manifest.artifacts", err.Error())
	}
	var active []registry.PublicKey
	for _, k := range ns.Keys {
		if k.RetiredAt == nil {
			active = append(active, registry.PublicKey(k.PublicKey))
		}
	}
	signer, err := registry.Verify(active, v.Sums, v.Signature)
	if err != nil {
		return nil, barrage.Invalid("manifest.signature", fmt.Sprintf(
			"not a signature of the artifacts' SHA256SUMS by an active key of %q (%d active): sign with a key registered there (barrage namespaces add-key %s)",
			namespace, len(active), namespace))
	}
	v.Signer = signer.ID()
	return &Upload{s: s, p: p, v: v, kept: make(map[string]bool)}, nil
}

// checkManifest checks the form of what the manifest says, naming every field refused. A
// declared size over the limit is an ErrTooLarge.
func (s *Service) checkManifest(v *barrage.PluginVersion) error {
	var errs []barrage.FieldError
	add := func(field, reason string) {
		errs = append(errs, barrage.FieldError{Field: "manifest." + field, Reason: reason})
	}
	known := []string{string(sdk.KindSessionElement), string(sdk.KindURL), string(sdk.KindSourceModifier)}
	if len(v.Kinds) == 0 {
		add("kinds", "name at least one of "+strings.Join(known, ", "))
	}
	for i, k := range v.Kinds {
		switch {
		case !slices.Contains(known, k):
			add(fmt.Sprintf("kinds[%d]", i), fmt.Sprintf("%q is not one of %s", k, strings.Join(known, ", ")))
		case slices.Index(v.Kinds, k) != i:
			add(fmt.Sprintf("kinds[%d]", i), fmt.Sprintf("%q is named twice", k))
		}
	}
	for field, text := range map[string]string{"description": v.Description, "readme": v.Readme, "license": v.License, "source_url": v.SourceURL} {
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
			add(field, "must be UTF-8 text without NUL")
		}
	}
	if v.SourceURL != "" {
		if u, err := url.Parse(v.SourceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("source_url", "must be an http or https URL")
		}
	}
	for i, t := range v.Tags {
		switch {
		case registry.CheckName("tag", t) != nil || len(t) > 32:
			add(fmt.Sprintf("tags[%d]", i), "a tag is lower-case letters, digits and single hyphens, at most 32 long")
		case slices.Index(v.Tags, t) != i:
			add(fmt.Sprintf("tags[%d]", i), fmt.Sprintf("%q is named twice", t))
		}
	}
	if len(v.Protocols) == 0 {
		add("protocols", "name the plugin protocol versions it speaks")
	}
	if !slices.Contains(v.Protocols, sdk.ProtocolVersion) {
		add("protocols", fmt.Sprintf("this marketplace's agents speak protocol %d, which the version does not", sdk.ProtocolVersion))
	}
	if v.ConfigSchema != "" {
		if _, err := sdk.CompileConfigSchema(v.ConfigSchema); err != nil {
			add("config_schema", err.Error())
		}
	}
	if _, err := sdk.ParseHostPatterns(v.Network); err != nil {
		add("network", err.Error())
	}
	if len(v.Signature) != 64 {
		add("signature", "an Ed25519 signature is 64 bytes, base64")
	}
	var tooLarge []string
	for i, a := range v.Artifacts {
		field := fmt.Sprintf("artifacts[%d]", i)
		if err := registry.CheckPlatform(a.OS, a.Arch); err != nil {
			add(field, err.Error())
		}
		if slices.IndexFunc(v.Artifacts, func(b barrage.PluginArtifact) bool { return b.OS == a.OS && b.Arch == a.Arch }) != i {
			add(field, fmt.Sprintf("%s/%s has two artifacts", a.OS, a.Arch))
		}
		if want := registry.ArtifactFile(v.Name, v.Version, a.OS, a.Arch); a.File != want {
			add(field+".file", fmt.Sprintf("want %q", want))
		}
		if a.Format != registry.FormatELF && a.Format != registry.FormatZipapp {
			add(field+".format", fmt.Sprintf("want %s or %s", registry.FormatELF, registry.FormatZipapp))
		}
		if !blob.ValidSum(a.SHA256) {
			add(field+".sha256", "want 64 lower-case hex digits")
		}
		switch {
		case a.Size <= 0:
			add(field+".size", "must be more than 0")
		case a.Size > s.cfg.MaxArtifactBytes:
			tooLarge = append(tooLarge, fmt.Sprintf("%s is %d bytes", a.File, a.Size))
		}
	}
	if len(v.Artifacts) == 0 {
		add("artifacts", "a version has an artifact for one platform at least")
	}
	if len(errs) > 0 {
		return &barrage.InvalidError{Fields: errs}
	}
	if len(tooLarge) > 0 {
		return barrage.Errorf(barrage.ErrTooLarge, "%s: an artifact may be %d bytes at most", strings.Join(tooLarge, ", "), s.cfg.MaxArtifactBytes)
	}
	return nil
}

// Artifact takes the artifact file, streamed from r: it must be one the manifest declared, not
// sent yet, of its declared type, size and sha256. Its bytes are kept in the blob store as
// they arrive; what is refused is not kept, and the blobs of artifacts taken before a later
// refusal go when the upload is aborted.
func (u *Upload) Artifact(ctx context.Context, file string, r io.Reader) error {
	if u.done {
		return errors.New("upload: artifact after commit or abort")
	}
	i := slices.IndexFunc(u.v.Artifacts, func(a barrage.PluginArtifact) bool { return a.File == file })
	if i < 0 {
		return barrage.Invalid("artifact", fmt.Sprintf("%q is not an artifact of the manifest", file))
	}
	if u.kept[file] {
		return barrage.Invalid("artifact", fmt.Sprintf("%q is sent twice", file))
	}
	a := u.v.Artifacts[i]
	field := fmt.Sprintf("artifacts[%d]", i)
	br := bufio.NewReaderSize(r, 64<<10)
	// An ELF's segments are checked against the declared size, before a byte is stored: Put
	// keeps the artifact only when it is that size.
	if err := registry.Sniff(br, a.Format, a.Arch, a.Size); err != nil {
		return barrage.Invalid(field, fmt.Sprintf("%s: %v", a.File, err))
	}
	var src io.Reader = br
	if a.Format == registry.FormatZipapp {
		f, err := u.s.spool(br, a, field)
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		src = f
	}
	u.s.hold(a.SHA256)
	u.held = append(u.held, a.SHA256)
	info, err := u.s.blobs.Put(ctx, src, a.Size, a.SHA256)
	switch {
	case errors.Is(err, blob.ErrTooLarge):
		return barrage.Invalid(field+".size", fmt.Sprintf("%s is larger than its declared %d bytes", a.File, a.Size))
	case errors.Is(err, blob.ErrMismatch):
		return barrage.Invalid(field+".sha256", fmt.Sprintf("%s does not have its declared sha256 %s", a.File, a.SHA256))
	case err != nil:
		return fmt.Errorf("keep %s: %w", a.File, err)
	case info.Size != a.Size:
		return barrage.Invalid(field+".size", fmt.Sprintf("%s is %d bytes, not its declared %d", a.File, info.Size, a.Size))
	}
	u.kept[file] = true
	return nil
}

// spool writes a zipapp to a temporary file, within its declared size, and checks its
// entries, which a zip lists at its end.
func (s *Service) spool(r io.Reader, a barrage.PluginArtifact, field string) (*os.File, error) {
	f, err := os.CreateTemp(s.cfg.TempDir, "zipapp-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	n, err := io.Copy(f, io.LimitReader(r, a.Size+1))
	if err != nil {
		return fail(err)
	}
	if n != a.Size {
		return fail(barrage.Invalid(field+".size", fmt.Sprintf("%s is %d bytes or more, not its declared %d", a.File, n, a.Size)))
	}
	if err := registry.CheckZipapp(f, n); err != nil {
		return fail(barrage.Invalid(field, fmt.Sprintf("%s: %v", a.File, err)))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return f, nil
}

// Commit stores the version once every artifact declared has arrived: pending review, seen
// by its owners and admins only. Refused, the upload is aborted.
func (u *Upload) Commit(ctx context.Context) (barrage.PluginVersion, error) {
	if u.done {
		return barrage.PluginVersion{}, errors.New("upload: committed or aborted already")
	}
	for i, a := range u.v.Artifacts {
		if !u.kept[a.File] {
			u.Abort(ctx)
			return barrage.PluginVersion{}, barrage.Invalid(fmt.Sprintf("artifacts[%d]", i), fmt.Sprintf("%s was declared and not sent", a.File))
		}
	}
	v, err := u.s.store.InsertPluginVersion(ctx, u.p.User.ID, u.v, postgres.QuotaOf(u.p, u.s.cfg.Quotas), func(ctx context.Context, sum string) error {
		_, err := u.s.blobs.Stat(ctx, sum)
		if errors.Is(err, blob.ErrNotFound) {
			// Deleted by a refused publish of the same bytes on another server, after this one
			// put them.
			return barrage.Errorf(barrage.ErrConflict, "the artifact of sha256 %s was deleted as this version was published: publish it again", sum)
		}
		return err
	})
	if err != nil {
		u.Abort(ctx)
		return v, err
	}
	u.done = true
	for _, sum := range u.held {
		u.s.release(sum)
	}
	u.s.log.InfoContext(ctx, "plugin version received, pending review", slog.String("plugin", v.Ref()), slog.String("signer", v.Signer))
	return v, nil
}

// Abort ends an upload that was refused, or whose client left: the blobs it put are deleted at
// once, but for those a version uses or another upload under way here is putting. It does
// nothing once the upload is committed or aborted. A blob it fails to delete is logged, and
// left to SweepBlobs.
func (u *Upload) Abort(ctx context.Context) {
	if u.done {
		return
	}
	u.done = true
	// The client may have left: what it stored is deleted all the same.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, sum := range u.held {
		if err := u.s.releaseOrDelete(ctx, sum); err != nil {
			u.s.log.WarnContext(ctx, "delete the blob of a refused publish", slog.String("sha256", sum), slog.String("error", err.Error()))
		}
	}
}

// hold counts one more upload putting the blob of sum, once any deletion of it has ended.
func (s *Service) hold(sum string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[sum]++
}

// release counts one upload less putting the blob of sum, which a version now uses.
func (s *Service) release(sum string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[sum]--; s.held[sum] <= 0 {
		delete(s.held, sum)
	}
}

// releaseOrDelete counts one upload less putting the blob of sum and, when it was the last,
// deletes the blob unless a version uses it. The lock is held while it deletes: an upload of the
// same bytes that begins meanwhile puts them after.
func (s *Service) releaseOrDelete(ctx context.Context, sum string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[sum]--; s.held[sum] > 0 {
		return nil
	}
	delete(s.held, sum)
	_, err := s.store.DeleteUnusedPluginBlob(ctx, sum, func(ctx context.Context) error { return s.blobs.Delete(ctx, sum) })
	return err
}

// SweepGrace is how long a blob no artifact uses is kept: longer than any upload takes, so
// that the blobs of an upload still under way are not swept.
const SweepGrace = 24 * time.Hour

// SweepBlobs deletes the blobs that no version's artifact uses, but a rejected version's, and
// that were last put before cutoff (now less SweepGrace, in service): those of versions an admin
// rejected (or that went with a namespace taken back), and those a refused publish failed to
// delete (its server stopped, its storage failed). It says how many it deleted.
func (s *Service) SweepBlobs(ctx context.Context, cutoff time.Time) (int, error) {
	keep, err := s.store.PluginArtifactSums(ctx)
	if err != nil {
		return 0, err
	}
	return blob.Sweep(ctx, s.blobs, cutoff, keep)
}

// Approve publishes a pending version; admins only.
func (s *Service) Approve(ctx context.Context, p barrage.Principal, namespace, name, version, reason string) (barrage.PluginVersion, error) {
	reason, err := review(p, reason, 0)
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	return s.store.SetPluginVersionState(ctx, viewer(p), namespace, name, version, barrage.VersionPublished, reason, barrage.VersionPending)
}

// Reject refuses a pending version, saying why; admins only.
func (s *Service) Reject(ctx context.Context, p barrage.Principal, namespace, name, version, reason string) (barrage.PluginVersion, error) {
	reason, err := review(p, reason, 1)
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	return s.store.SetPluginVersionState(ctx, viewer(p), namespace, name, version, barrage.VersionRejected, reason, barrage.VersionPending)
}

// Revoke withdraws a published (or deprecated) version from new runs and downloads, saying
// why; admins only. A revoked version stays shown to everyone, for the runs that used it, so a
// pending one, which nobody but its owners has seen, is rejected instead.
func (s *Service) Revoke(ctx context.Context, p barrage.Principal, namespace, name, version, reason string) (barrage.PluginVersion, error) {
	reason, err := review(p, reason, 1)
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	v, err := s.store.PluginVersion(ctx, viewer(p), namespace, name, version)
	if err != nil {
		return v, err
	}
	if v.State == barrage.VersionPending {
		return barrage.PluginVersion{}, barrage.Errorf(barrage.ErrConflict,
			"%s is pending: reject it (.../reject) rather than revoke it, which would show it to everyone", v.Ref())
	}
	return s.store.SetPluginVersionState(ctx, viewer(p), namespace, name, version, barrage.VersionRevoked, reason,
		barrage.VersionPublished, barrage.VersionDeprecated)
}

// Deprecate marks a published version as one to move away from, saying why: its owners and
// admins may. Anyone else's attempt finds no such version.
func (s *Service) Deprecate(ctx context.Context, p barrage.Principal, namespace, name, version, reason string) (barrage.PluginVersion, error) {
	reason, err := needReason(reason, 1)
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	if p.User.Role != barrage.RoleAdmin {
		notFound := barrage.Errorf(barrage.ErrNotFound, "plugin version %s/%s@%s not found among yours", namespace, name, version)
		if _, err := s.ownNamespace(ctx, p, namespace, notFound); err != nil {
			return barrage.PluginVersion{}, err
		}
	}
	return s.store.SetPluginVersionState(ctx, viewer(p), namespace, name, version, barrage.VersionDeprecated, reason, barrage.VersionPublished)
}

// ownNamespace reads namespace, one of p's; another user's, or none, is notFound.
func (s *Service) ownNamespace(ctx context.Context, p barrage.Principal, namespace string, notFound error) (barrage.Namespace, error) {
	ns, err := s.store.Namespace(ctx, namespace)
	switch {
	case errors.Is(err, barrage.ErrNotFound):
		return ns, notFound
	case err != nil:
		return ns, err
	case !slices.Contains(ns.Owners, p.User.ID):
		return ns, notFound
	}
	return ns, nil
}

// review checks that p may review plugins (an admin: the routes say so too, and the service
// holds it whatever calls it) and the reason the decision gives.
func review(p barrage.Principal, reason string, minLen int) (string, error) {
	if p.User.Role != barrage.RoleAdmin {
		return "", barrage.Errorf(barrage.ErrForbidden, "only admins review plugin versions")
	}
	return needReason(reason, minLen)
}

// needReason checks the reason a decision gives, required (min 1) or not (0), and returns it
// trimmed: text, as names are (barrage.CheckText).
func needReason(reason string, minLen int) (string, error) {
	if minLen > 0 && strings.TrimSpace(reason) == "" {
		return "", barrage.Invalid("reason", "say why: the version's owners and users see it")
	}
	return barrage.CheckText("reason", reason, minLen, 1000)
}

// Pending lists the versions waiting for review, oldest first.
func (s *Service) Pending(ctx context.Context, limit int) ([]barrage.PluginVersion, error) {
	return s.store.PendingPluginVersions(ctx, limit)
}

// Plugin reads namespace/name and the versions p may see.
func (s *Service) Plugin(ctx context.Context, p barrage.Principal, namespace, name string) (barrage.Plugin, error) {
	pl, err := s.store.Plugin(ctx, viewer(p), namespace, name)
	if err != nil {
		return pl, err
	}
	if len(pl.Versions) == 0 {
		return barrage.Plugin{}, barrage.Errorf(barrage.ErrNotFound, "plugin %s/%s not found", namespace, name)
	}
	return pl, nil
}

// Version reads namespace/name@version, if p may see it.
func (s *Service) Version(ctx context.Context, p barrage.Principal, namespace, name, version string) (barrage.PluginVersion, error) {
	return s.store.PluginVersion(ctx, viewer(p), namespace, name, version)
}

// Search is a search of the marketplace: q's words, a kind and a tag, each when not empty.
type Search struct {
	Q, Namespace, Kind, Tag string
	Protocol                int    // 0 for any
	Platform                string // os/arch, empty for any
	Sort                    string // a postgres.PluginsBy order, empty by name
	// After is where the page before ended.
	After postgres.PluginCursor
	Limit int
}

// Search finds the plugins p may see, and says whether more follow the last. A query of
// punctuation alone finds nothing, as no plugin has such a word.
func (s *Service) Search(ctx context.Context, p barrage.Principal, q Search) ([]barrage.Plugin, bool, error) {
	query := TSQuery(q.Q)
	if query == "" && strings.TrimSpace(q.Q) != "" {
		return nil, false, nil
	}
	return s.store.SearchPlugins(ctx, viewer(p), postgres.PluginSearch{Query: query, Namespace: q.Namespace, Kind: q.Kind, Tag: q.Tag,
		Protocol: q.Protocol, Platform: q.Platform, Sort: q.Sort, After: q.After, Limit: cmp.Or(q.Limit, 50)})
}

// TSQuery turns what a person typed into a PostgreSQL text query that finds every word given
// as the prefix of a word: "rand dat" finds random-data. Only letters and digits are kept, so
// nothing typed is query syntax; "" when q holds none.
func TSQuery(q string) string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > 8 {
		words = words[:8]
	}
	for i, w := range words {
		words[i] = w + ":*"
	}
	return strings.Join(words, " & ")
}

// Download says where the artifact of namespace/name@version for os/arch is and how to
// verify it, and counts a download. A revoked version is gone.
func (s *Service) Download(ctx context.Context, p barrage.Principal, namespace, name, version, os, arch string) (barrage.PluginDownload, error) {
	v, a, err := s.artifact(ctx, p, namespace, name, version, os, arch)
	if err != nil {
		return barrage.PluginDownload{}, err
	}
	ns, err := s.store.Namespace(ctx, namespace)
	if err != nil {
		return barrage.PluginDownload{}, err
	}
	if err := s.store.CountPluginDownload(ctx, namespace, name, version); err != nil {
		return barrage.PluginDownload{}, err
	}
	return barrage.PluginDownload{Version: v, Artifact: a, Keys: ns.Keys}, nil
}

// Open streams the artifact's bytes, checked against its sha256 as they go.
func (s *Service) Open(ctx context.Context, p barrage.Principal, namespace, name, version, os, arch string) (io.ReadCloser, barrage.PluginArtifact, error) {
	_, a, err := s.artifact(ctx, p, namespace, name, version, os, arch)
	if err != nil {
		return nil, a, err
	}
	rc, _, err := s.blobs.Open(ctx, a.SHA256)
	if err != nil {
		return nil, a, fmt.Errorf("open %s: %w", a.File, err)
	}
	return rc, a, nil
}

// AgentOpen streams the artifact with sha256 to agent a, if a may fetch it (see
// postgres.Store.AgentArtifact), checked against its sha256 as it goes.
func (s *Service) AgentOpen(ctx context.Context, a barrage.Agent, sha256 string) (io.ReadCloser, int64, error) {
	size, err := s.store.AgentArtifact(ctx, sha256, a.OwnerID)
	if err != nil {
		return nil, 0, err
	}
	rc, _, err := s.blobs.Open(ctx, sha256)
	if err != nil {
		return nil, 0, fmt.Errorf("open artifact %s: %w", sha256, err)
	}
	return rc, size, nil
}

func (s *Service) artifact(ctx context.Context, p barrage.Principal, namespace, name, version, os, arch string) (barrage.PluginVersion, barrage.PluginArtifact, error) {
	v, err := s.store.PluginVersion(ctx, viewer(p), namespace, name, version)
	if err != nil {
		return v, barrage.PluginArtifact{}, err
	}
	if v.State == barrage.VersionRevoked {
		return v, barrage.PluginArtifact{}, barrage.Errorf(barrage.ErrGone, "%s was revoked: %s", v.Ref(), v.StateReason)
	}
	a, ok := v.Artifact(os, arch)
	if !ok {
		return v, a, barrage.Errorf(barrage.ErrNotFound, "%s has no artifact for %s/%s", v.Ref(), os, arch)
	}
	return v, a, nil
}
