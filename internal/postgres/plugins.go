package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
	"github.com/barrage-load/barrage/internal/registry"
)

// Viewer is who reads the marketplace: a user sees listed plugins and the versions open to all,
// and everything of their own namespaces; an admin sees everything.
type Viewer struct {
	User  uuid.UUID
	Admin bool
}

// InsertPluginVersion stores v, a version of a plugin in one of actor's namespaces (another
// user's namespace is not found), with its artifacts, whose blobs are kept already. The
// plugin is made with its first version. A version of the same precedence is an ErrConflict:
// of two publishing it at once, one wins. It is held to q. It holds the lock of each artifact's blob (see
// DeleteUnusedPluginBlob) and calls kept with each blob's sha256 under it: kept says whether
// the blob is still there, as a refused publish of the same bytes elsewhere may have deleted it.
func (s *Store) InsertPluginVersion(ctx context.Context, actor uuid.UUID, v barrage.PluginVersion, q Quota, kept func(ctx context.Context, sha256 string) error) (barrage.PluginVersion, error) {
	core, err := registry.ParseVersion(v.Version)
	if err != nil {
		return barrage.PluginVersion{}, barrage.Invalid("version", err.Error())
	}
	core.Build = ""
	v.Tags, v.Network = nonNil(v.Tags), nonNil(v.Network) // NOT NULL arrays
	sums := make([]string, 0, len(v.Artifacts))
	for _, a := range v.Artifacts {
		sums = append(sums, a.SHA256)
	}
	slices.Sort(sums) // locks taken in one order: two versions of the same bytes do not deadlock
	sums = slices.Compact(sums)
	err = s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, v.Namespace, actor); err != nil {
			return err
		}
		for _, sum := range sums {
			if err := s.q.PluginBlobLock(ctx, tx, sum); err != nil {
				return err
			}
			if err := kept(ctx, sum); err != nil {
				return err
			}
		}
		if err := s.q.PluginUpsert(ctx, tx, dbsqlc.PluginUpsertParams{Namespace: v.Namespace, Name: v.Name, Latest: v.Version,
			Kinds: v.Kinds, Description: v.Description, License: v.License, SourceUrl: v.SourceURL, Tags: v.Tags,
			SearchText: searchText(v)}); err != nil {
			return translate(err, "plugin")
		}
		if _, err := s.q.PluginLock(ctx, tx, dbsqlc.PluginLockParams{Namespace: v.Namespace, Name: v.Name}); err != nil {
			return err
		}
		protocols := make([]int32, len(v.Protocols))
		for i, p := range v.Protocols {
			protocols[i] = int32(p)
		}
		_, err := s.q.PluginVersionInsert(ctx, tx, dbsqlc.PluginVersionInsertParams{Namespace: v.Namespace, Name: v.Name,
			Version: v.Version, VersionCore: core.String(), Kinds: v.Kinds, Description: v.Description, Readme: v.Readme,
			License: v.License, SourceUrl: v.SourceURL, Tags: v.Tags, Protocols: protocols, ConfigSchema: v.ConfigSchema,
			Network: v.Network, Sums: v.Sums, Signature: v.Signature, Signer: v.Signer, PublishedBy: &actor})
		if errors.Is(translate(err, "version"), barrage.ErrConflict) {
			return barrage.Errorf(barrage.ErrConflict, "%s/%s@%s exists already: a version never changes, publish a new one", v.Namespace, v.Name, core)
		}
		if err != nil {
			return translate(err, "version")
		}
		for _, a := range v.Artifacts {
			if err := s.q.PluginArtifactInsert(ctx, tx, dbsqlc.PluginArtifactInsertParams{Namespace: v.Namespace, Name: v.Name,
				Version: v.Version, Os: a.OS, Arch: a.Arch, File: a.File, Format: a.Format, Sha256: a.SHA256, Size: a.Size}); err != nil {
				return translate(err, "artifact")
			}
		}
		return s.refreshPlugin(ctx, tx, v.Namespace, v.Name)
	})
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	return s.PluginVersion(ctx, Viewer{User: actor}, v.Namespace, v.Name, v.Version)
}

// PluginVersionExists reports whether namespace/name has a version of version's precedence.
func (s *Store) PluginVersionExists(ctx context.Context, namespace, name string, version registry.Version) (bool, error) {
	version.Build = ""
	return s.q.PluginVersionExists(ctx, s.pool, dbsqlc.PluginVersionExistsParams{Namespace: namespace, Name: name, VersionCore: version.String()})
}

// refreshPlugin sets, in tx, what the plugin says of itself: its latest listed version's
// words, or, while no version is listed, its latest version's (shown to its owners only).
func (s *Store) refreshPlugin(ctx context.Context, tx pgx.Tx, namespace, name string) error {
	rows, err := s.q.PluginVersions(ctx, tx, dbsqlc.PluginVersionsParams{Namespace: namespace, Name: name})
	if err != nil {
		return err
	}
	vs := make([]barrage.PluginVersion, len(rows))
	for i, r := range rows {
		vs[i] = pluginVersionFromRow(r)
	}
	sortNewestFirst(vs)
	latest := vs[0]
	i := slices.IndexFunc(vs, func(v barrage.PluginVersion) bool { return v.State.Listed() })
	if i >= 0 {
		latest = vs[i]
	}
	return s.q.PluginRefresh(ctx, tx, dbsqlc.PluginRefreshParams{Namespace: namespace, Name: name, Listed: i >= 0,
		Latest: latest.Version, Kinds: latest.Kinds, Description: latest.Description, License: latest.License,
		SourceUrl: latest.SourceURL, Tags: latest.Tags, SearchText: searchText(latest)})
}

// searchText is what a search finds a plugin by: its names (whole, and word by word), its
// description and its tags.
func searchText(v barrage.PluginVersion) string {
	return strings.Join([]string{v.Namespace, v.Name, strings.ReplaceAll(v.Name, "-", " "), v.Description, strings.Join(v.Tags, " ")}, " ")
}

// sortNewestFirst orders versions by SemVer precedence, highest first.
func sortNewestFirst(vs []barrage.PluginVersion) {
	slices.SortFunc(vs, func(a, b barrage.PluginVersion) int {
		va, _ := registry.ParseVersion(a.Version)
		vb, _ := registry.ParseVersion(b.Version)
		return vb.Compare(va)
	})
}

// ownsOrAdmin reports whether viewer may see everything of namespace.
func (s *Store) ownsOrAdmin(ctx context.Context, viewer Viewer, namespace string) (bool, error) {
	if viewer.Admin {
		return true, nil
	}
	return s.q.NamespaceIsOwner(ctx, s.pool, dbsqlc.NamespaceIsOwnerParams{Namespace: namespace, UserID: viewer.User})
}

// versionOpen reports whether a version in state st is shown to a reader who does not own it:
// listed ones, and revoked ones, so that the runs that used them can be explained.
func versionOpen(st barrage.VersionState) bool { return st.Listed() || st == barrage.VersionRevoked }

// Plugin reads namespace/name as viewer may see it, with the versions viewer may see, newest
// first. A plugin viewer may not see is not found.
func (s *Store) Plugin(ctx context.Context, viewer Viewer, namespace, name string) (barrage.Plugin, error) {
	row, err := s.q.PluginGet(ctx, s.pool, dbsqlc.PluginGetParams{Namespace: namespace, Name: name, Admin: viewer.Admin, UserID: viewer.User})
	if err != nil {
		return barrage.Plugin{}, translate(err, fmt.Sprintf("plugin %s/%s", namespace, name))
	}
	owner, err := s.ownsOrAdmin(ctx, viewer, namespace)
	if err != nil {
		return barrage.Plugin{}, err
	}
	p := pluginFromRow(row)
	rows, err := s.q.PluginVersions(ctx, s.pool, dbsqlc.PluginVersionsParams{Namespace: namespace, Name: name})
	if err != nil {
		return barrage.Plugin{}, err
	}
	arts, err := s.q.PluginArtifactsOf(ctx, s.pool, dbsqlc.PluginArtifactsOfParams{Namespace: namespace, Name: name})
	if err != nil {
		return barrage.Plugin{}, err
	}
	for _, r := range rows {
		v := pluginVersionFromRow(r)
		if owner || versionOpen(v.State) {
			p.Versions = append(p.Versions, withArtifacts(v, arts))
		}
	}
	sortNewestFirst(p.Versions)
	return p, nil
}

// PluginVersion reads namespace/name@version with its artifacts, as viewer may see it.
func (s *Store) PluginVersion(ctx context.Context, viewer Viewer, namespace, name, version string) (barrage.PluginVersion, error) {
	return s.pluginVersion(ctx, s.pool, viewer, namespace, name, version)
}

func (s *Store) pluginVersion(ctx context.Context, db dbsqlc.DBTX, viewer Viewer, namespace, name, version string) (barrage.PluginVersion, error) {
	notFound := barrage.Errorf(barrage.ErrNotFound, "plugin version %s/%s@%s not found", namespace, name, version)
	row, err := s.q.PluginVersionGet(ctx, db, dbsqlc.PluginVersionGetParams{Namespace: namespace, Name: name, Version: version})
	if errors.Is(err, pgx.ErrNoRows) {
		return barrage.PluginVersion{}, notFound
	}
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	v := pluginVersionFromRow(row)
	if !versionOpen(v.State) {
		owner, err := s.ownsOrAdmin(ctx, viewer, namespace)
		if err != nil {
			return barrage.PluginVersion{}, err
		}
		if !owner {
			return barrage.PluginVersion{}, notFound
		}
	}
	arts, err := s.q.PluginArtifacts(ctx, db, dbsqlc.PluginArtifactsParams{Namespace: namespace, Name: name, Version: version})
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	return withArtifacts(v, arts), nil
}

// SetPluginVersionState moves namespace/name@version to state with reason, when its state now
// is one of from (else an ErrConflict naming it), and updates what the plugin says of itself.
// by is who decided; the caller has checked that they may.
func (s *Store) SetPluginVersionState(ctx context.Context, by Viewer, namespace, name, version string,
	state barrage.VersionState, reason string, from ...barrage.VersionState) (barrage.PluginVersion, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.PluginLock(ctx, tx, dbsqlc.PluginLockParams{Namespace: namespace, Name: name}); err != nil {
			return translate(err, fmt.Sprintf("plugin %s/%s", namespace, name))
		}
		v, err := s.pluginVersion(ctx, tx, by, namespace, name, version)
		if err != nil {
			return err
		}
		if !slices.Contains(from, v.State) {
			return barrage.Errorf(barrage.ErrConflict, "%s is %s: it cannot become %s", v.Ref(), v.State, state)
		}
		if _, err := s.q.PluginVersionSetState(ctx, tx, dbsqlc.PluginVersionSetStateParams{Namespace: namespace, Name: name,
			Version: version, State: string(state), StateReason: reason, ReviewedBy: &by.User}); err != nil {
			return err
		}
		return s.refreshPlugin(ctx, tx, namespace, name)
	})
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	return s.PluginVersion(ctx, by, namespace, name, version)
}

// PluginSearch is a search of the marketplace.
type PluginSearch struct {
	Query     string // a tsquery, or empty for every plugin
	Namespace string // empty for any
	Kind, Tag string // empty for any
	Protocol  int    // 0 for any
	Platform  string // os/arch, empty for any
	// Sort is the order: PluginsByName (""), or most first PluginsByDownloads, PluginsByRuns,
	// PluginsByNewest.
	Sort string
	// After is the plugin to continue after.
	After PluginCursor
	Limit int
}

// The orders a search may give plugins in.
const (
	PluginsByName      = "name"
	PluginsByDownloads = "downloads"
	PluginsByRuns      = "runs"
	PluginsByNewest    = "newest"
)

// PluginCursor is where a page of plugins ended: the last plugin's sort key (SortKey) and its
// names. The zero cursor is before the first.
type PluginCursor struct {
	Key             int64
	Namespace, Name string
}

// SortKey is what plugin p is ordered by in sort, ascending: its downloads, runs or first
// publication negated (most first), 0 by name.
func SortKey(sort string, p barrage.Plugin) int64 {
	switch sort {
	case PluginsByDownloads:
		return -p.Downloads
	case PluginsByRuns:
		return -p.Runs
	case PluginsByNewest:
		return -p.CreatedAt.UnixMicro()
	}
	return 0
}

// SearchPlugins finds the plugins viewer may see, in q's order, and says whether more follow.
func (s *Store) SearchPlugins(ctx context.Context, viewer Viewer, q PluginSearch) ([]barrage.Plugin, bool, error) {
	after := q.After
	if after == (PluginCursor{}) {
		after.Key = math.MinInt64
	}
	rows, err := s.q.PluginSearch(ctx, s.pool, dbsqlc.PluginSearchParams{Admin: viewer.Admin, UserID: viewer.User,
		Query: q.Query, Namespace: q.Namespace, Kind: q.Kind, Tag: q.Tag, Protocol: int32(q.Protocol), Platform: q.Platform, Sort: q.Sort,
		AfterKey: after.Key, AfterNamespace: after.Namespace, AfterName: after.Name, MaxRows: int32(q.Limit + 1)})
	if err != nil {
		return nil, false, translate(err, "search")
	}
	more := len(rows) > q.Limit
	if more {
		rows = rows[:q.Limit]
	}
	out := make([]barrage.Plugin, len(rows))
	for i, r := range rows {
		out[i] = pluginFromRow(r)
	}
	return out, more, nil
}

// PendingPluginVersions lists the versions waiting for review, oldest first.
func (s *Store) PendingPluginVersions(ctx context.Context, limit int) ([]barrage.PluginVersion, error) {
	rows, err := s.q.PluginVersionsPending(ctx, s.pool, int32(limit))
	if err != nil {
		return nil, err
	}
	arts, err := s.q.PluginArtifactsPending(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.PluginVersion, len(rows))
	for i, r := range rows {
		out[i] = withArtifacts(pluginVersionFromRow(r), arts)
	}
	return out, nil
}

// DeleteUnusedPluginBlob calls del to delete the blob of sha256 when no version's artifact is
// kept in it, under the blob's lock (see InsertPluginVersion), and says whether it did.
func (s *Store) DeleteUnusedPluginBlob(ctx context.Context, sha256 string, del func(ctx context.Context) error) (bool, error) {
	deleted := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.PluginBlobLock(ctx, tx, sha256); err != nil {
			return err
		}
		used, err := s.q.PluginArtifactSumUsed(ctx, tx, sha256)
		if err != nil || used {
			return err
		}
		if err := del(ctx); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	return deleted, err
}

// PluginArtifactSums is the set of the blobs plugin artifacts are kept in.
func (s *Store) PluginArtifactSums(ctx context.Context) (map[string]bool, error) {
	sums, err := s.q.PluginArtifactSums(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(sums))
	for _, sum := range sums {
		out[sum] = true
	}
	return out, nil
}

// CountPluginDownload counts one download of namespace/name@version.
func (s *Store) CountPluginDownload(ctx context.Context, namespace, name, version string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.PluginVersionCountDownload(ctx, tx, dbsqlc.PluginVersionCountDownloadParams{Namespace: namespace, Name: name, Version: version}); err != nil {
			return err
		}
		return s.q.PluginCountDownload(ctx, tx, dbsqlc.PluginCountDownloadParams{Namespace: namespace, Name: name})
	})
}

func pluginFromRow(r dbsqlc.Plugin) barrage.Plugin {
	return barrage.Plugin{Namespace: r.Namespace, Name: r.Name, Listed: r.Listed, Latest: r.Latest, Kinds: r.Kinds,
		Description: r.Description, License: r.License, SourceURL: r.SourceUrl, Tags: r.Tags, Protocols: ints(r.Protocols),
		Platforms: r.Platforms, Downloads: r.Downloads, Runs: r.Runs, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func ints(v []int32) []int {
	out := make([]int, len(v))
	for i, n := range v {
		out[i] = int(n)
	}
	return out
}

func pluginVersionFromRow(r dbsqlc.PluginVersion) barrage.PluginVersion {
	return barrage.PluginVersion{Namespace: r.Namespace, Name: r.Name, Version: r.Version, State: barrage.VersionState(r.State),
		StateReason: r.StateReason, Kinds: r.Kinds, Description: r.Description, Readme: r.Readme, License: r.License,
		SourceURL: r.SourceUrl, Tags: r.Tags, Protocols: ints(r.Protocols), ConfigSchema: r.ConfigSchema, Network: r.Network,
		Sums: r.Sums, Signature: r.Signature, Signer: r.Signer, PublishedBy: r.PublishedBy, ReviewedBy: r.ReviewedBy,
		ReviewedAt: r.ReviewedAt, Downloads: r.Downloads, Runs: r.Runs, CreatedAt: r.CreatedAt}
}

// withArtifacts gives v those of arts that are its own.
func withArtifacts(v barrage.PluginVersion, arts []dbsqlc.PluginArtifact) barrage.PluginVersion {
	for _, a := range arts {
		if a.Namespace == v.Namespace && a.Name == v.Name && a.Version == v.Version {
			v.Artifacts = append(v.Artifacts, barrage.PluginArtifact{OS: a.Os, Arch: a.Arch, File: a.File, Format: a.Format, SHA256: a.Sha256, Size: a.Size})
		}
	}
	return v
}

// nonNil is s, or an empty slice for nil: what a NOT NULL array column takes.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// AgentArtifact checks that an agent whose owner is owner (nil: a shared agent) may fetch the
// artifact with sha256, and returns its size: an artifact of a published or deprecated version,
// or of a pending one in a namespace of the agent's owner. An artifact only of revoked versions
// is ErrGone; any other is not found.
func (s *Store) AgentArtifact(ctx context.Context, sha256 string, owner *uuid.UUID) (int64, error) {
	rows, err := s.q.PluginArtifactUses(ctx, s.pool, dbsqlc.PluginArtifactUsesParams{Sha256: sha256, OwnerID: owner})
	if err != nil {
		return 0, err
	}
	var revoked []string
	for _, r := range rows {
		switch st := barrage.VersionState(r.State); {
		case st.Listed(), st == barrage.VersionPending && r.Owned:
			return r.Size, nil
		case st == barrage.VersionRevoked:
			revoked = append(revoked, fmt.Sprintf("%s/%s@%s was revoked: %s", r.Namespace, r.Name, r.Version, r.StateReason))
		}
	}
	if len(revoked) > 0 {
		return 0, barrage.Errorf(barrage.ErrGone, "%s", strings.Join(revoked, "; "))
	}
	return 0, barrage.Errorf(barrage.ErrNotFound, "no plugin artifact with sha256 %s that this agent may fetch", sha256)
}

// countPluginRuns counts a run of each version of pins, in the transaction that stores the run,
// and refuses the run when one of them was revoked meanwhile.
func (s *Store) countPluginRuns(ctx context.Context, tx pgx.Tx, pins []barrage.PluginPin) error {
	for _, p := range pins {
		if !p.Marketplace() {
			continue
		}
		namespace, name, _ := strings.Cut(p.Name, "/")
		n, err := s.q.PluginVersionCountRun(ctx, tx, dbsqlc.PluginVersionCountRunParams{Namespace: namespace, Name: name, Version: p.Version})
		if err != nil {
			return err
		}
		if n == 0 {
			return barrage.Invalid("plugins."+p.Alias, fmt.Sprintf("%s was revoked: no new run may use it", p.Ref()))
		}
		if err := s.q.PluginCountRun(ctx, tx, dbsqlc.PluginCountRunParams{Namespace: namespace, Name: name}); err != nil {
			return err
		}
	}
	return nil
}
