package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
)

// publishRoute is the path a plugin version is published to: its body is streamed to the blob
// store, never read whole.
var publishRoute = regexp.MustCompile(`^/v1/plugins/[^/]+/[^/]+/versions$`)

// maxManifestBytes caps a publish's manifest part (its README is at most 64 KiB).
const maxManifestBytes = 1 << 20

// maxManifestValues caps the JSON values (members, items) a manifest holds, counted before it
// is decoded: the largest the contract allows has about 130.
const maxManifestValues = 2000

// jsonValues counts, at most, the values a JSON document holds, outside its strings: one, and
// one more for each comma and each array or object opened. It builds nothing.
func jsonValues(doc []byte) int {
	n := 1
	inString, escaped := false, false
	for _, c := range doc {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == '[' || c == '{'):
			n++
		}
	}
	return n
}

// uploadMax is the most a publish's body may hold: the manifest, and an artifact for each
// platform at the marketplace's limit.
func uploadMax(m *market.Service) int64 {
	if m == nil {
		return 0
	}
	return maxManifestBytes + int64(len(registry.Platforms))*(m.MaxArtifactBytes()+64<<10)
}

func (s *server) PublishPluginVersion(ctx context.Context, req api.PublishPluginVersionRequestObject) (api.PublishPluginVersionResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	part, err := req.Body.NextPart()
	if err != nil {
		return nil, multipartError(err, "manifest")
	}
	if part.FormName() != "manifest" {
		return nil, barrage.Invalid("manifest", "send the part manifest first, then the artifacts")
	}
	m, err := s.readManifest(part)
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, req.Namespace+"/"+req.Name+"@"+m.Version)
	up, err := s.market.Publish(ctx, p, req.Namespace, req.Name, m)
	if err != nil {
		return nil, err
	}
	// Refused, or cut short: the blobs it put go now (nothing once committed).
	defer up.Abort(ctx)
	for {
		part, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, multipartError(err, "artifact")
		}
		if part.FormName() != "artifact" {
			return nil, barrage.Invalid(part.FormName(), "after the manifest, send only parts named artifact")
		}
		if err := up.Artifact(ctx, part.FileName(), part); err != nil {
			return nil, cmp.Or(bodyError(err, "artifact"), err)
		}
	}
	v, err := up.Commit(ctx)
	if err != nil {
		return nil, err
	}
	return api.PublishPluginVersion201JSONResponse(toAPIPluginVersion(v)), nil
}

// multipartError says what went wrong reading the next part of a publish's body: a transfer
// error (bodyError), else a body that is not multipart. The reader's text is not shown.
func multipartError(err error, part string) error {
	if err := bodyError(err, part); err != nil {
		return err
	}
	return &badParam{field: part, reason: "not a part of a multipart/form-data body"}
}

// bodyError says what went wrong taking part of a publish's body: a refusal of what was read
// (as it is), past the size limit (413), too slow (408), cut short (422); nil when err is
// none of these. A reading error's text names sockets: it is not shown.
func bodyError(err error, part string) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, barrage.ErrInvalid), errors.Is(err, barrage.ErrTooLarge):
		return err
	case errors.As(err, &mbe):
		return barrage.Errorf(barrage.ErrTooLarge, "the request body is larger than %d bytes", mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return barrage.Errorf(barrage.ErrTimeout, "the request body did not arrive in time (%s at most)", transferTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return barrage.Invalid(part, "the body ended before it")
	}
	return nil
}

// readManifest reads and checks the manifest part against the contract's PublishManifest.
func (s *server) readManifest(r io.Reader) (market.Manifest, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return market.Manifest{}, multipartError(err, "manifest")
	}
	if len(raw) > maxManifestBytes {
		return market.Manifest{}, barrage.Errorf(barrage.ErrTooLarge, "the manifest is larger than %d bytes", maxManifestBytes)
	}
	if !utf8.Valid(raw) {
		// Go's decoder would put U+FFFD in place of what is not UTF-8: the text would change.
		return market.Manifest{}, barrage.Invalid("manifest", "not UTF-8")
	}
	if n := jsonValues(raw); n > maxManifestValues {
		// Decoded, a megabyte of "[1,1,..." would cost tens of megabytes: refused unread.
		return market.Manifest{}, barrage.Invalid("manifest", fmt.Sprintf("holds %d values or more, more than the %d a manifest may", n, maxManifestValues))
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return market.Manifest{}, barrage.Invalid("manifest", "not one JSON document")
	}
	if err := s.spec.Components.Schemas["PublishManifest"].Value.VisitJSON(numbersAsFloats(doc), openapi3.MultiErrors()); err != nil {
		return market.Manifest{}, &barrage.InvalidError{Fields: patternReasons(s.spec).schemaErrors(err, "manifest")}
	}
	var m api.PublishManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return market.Manifest{}, barrage.Invalid("manifest", err.Error())
	}
	out := market.Manifest{Version: m.Version, Protocols: m.Protocols, Signature: m.Signature,
		Description: deref(m.Description), Readme: deref(m.Readme), License: deref(m.License), SourceURL: deref(m.SourceUrl),
		ConfigSchema: deref(m.ConfigSchema), Tags: deref(m.Tags), Network: deref(m.Network)}
	for _, k := range m.Kinds {
		out.Kinds = append(out.Kinds, string(k))
	}
	for _, a := range m.Artifacts {
		out.Artifacts = append(out.Artifacts, barrage.PluginArtifact{OS: string(a.Os), Arch: string(a.Arch), File: a.File,
			Format: string(a.Format), SHA256: a.Sha256, Size: a.Size})
	}
	return out, nil
}

// numbersAsFloats turns json.Numbers into float64s, as the schema validator reads numbers.
func numbersAsFloats(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = numbersAsFloats(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbersAsFloats(e)
		}
	}
	return v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (s *server) SearchPlugins(ctx context.Context, req api.SearchPluginsRequestObject) (api.SearchPluginsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := market.Search{Q: deref(req.Params.Q), Namespace: deref(req.Params.Namespace), Kind: string(deref(req.Params.Kind)), Tag: deref(req.Params.Tag),
		Protocol: deref(req.Params.Protocol), Platform: string(deref(req.Params.Platform)), Sort: string(deref(req.Params.Sort)),
		Limit: deref(req.Params.Limit)}
	if q.Tag != "" && registry.CheckName("tag", q.Tag) != nil {
		return nil, &badParam{field: "tag", reason: "a tag is lower-case letters, digits and single hyphens"}
	}
	if c := deref(req.Params.Cursor); c != "" {
		after, ok := pluginCursor(c, q.Sort)
		if !ok {
			return nil, &badParam{field: "cursor", reason: "not a cursor this server gave for this order"}
		}
		q.After = after
	}
	items, more, err := s.market.Search(ctx, p, q)
	if err != nil {
		return nil, err
	}
	out := api.SearchPlugins200JSONResponse{Items: make([]api.PluginSummary, len(items))}
	for i, pl := range items {
		out.Items[i] = toAPIPluginSummary(pl)
	}
	if more {
		next := pluginCursorAfter(items[len(items)-1], q.Sort)
		out.NextCursor = &next
	}
	return out, nil
}

// pluginCursorAfter is the cursor of the page after plugin last, in order sort; pluginCursor
// reads it.
func pluginCursorAfter(last barrage.Plugin, sort string) string {
	cursor := last.Namespace + "/" + last.Name
	if sort != "" && sort != postgres.PluginsByName {
		cursor = fmt.Sprintf("%s:%d:%s", sort, postgres.SortKey(sort, last), cursor)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(cursor))
}

// pluginCursor reads a cursor of plugins in order sort: the last plugin of the page before,
// namespace/name, after its sort key and the order's name ("runs:-12:acme/tls") in any order
// but by name.
func pluginCursor(c, sort string) (postgres.PluginCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return postgres.PluginCursor{}, false
	}
	var after postgres.PluginCursor
	rest := string(raw)
	if sort != "" && sort != postgres.PluginsByName {
		order, tail, ok1 := strings.Cut(rest, ":")
		key, names, ok2 := strings.Cut(tail, ":")
		n, err := strconv.ParseInt(key, 10, 64)
		if !ok1 || !ok2 || order != sort || err != nil {
			return postgres.PluginCursor{}, false
		}
		after.Key, rest = n, names
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || registry.CheckName("namespace", ns) != nil || registry.CheckName("name", name) != nil {
		return postgres.PluginCursor{}, false
	}
	after.Namespace, after.Name = ns, name
	return after, true
}

func (s *server) GetPlugin(ctx context.Context, req api.GetPluginRequestObject) (api.GetPluginResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pl, err := s.market.Plugin(ctx, p, req.Namespace, req.Name)
	if err != nil {
		return nil, err
	}
	sum := toAPIPluginSummary(pl)
	out := api.Plugin{Namespace: sum.Namespace, Name: sum.Name, Latest: sum.Latest, Listed: sum.Listed, Kinds: sum.Kinds,
		Description: sum.Description, License: sum.License, SourceUrl: sum.SourceUrl, Tags: sum.Tags, Protocols: sum.Protocols,
		Platforms: sum.Platforms, Downloads: sum.Downloads, Runs: sum.Runs, CreatedAt: sum.CreatedAt, UpdatedAt: sum.UpdatedAt, Versions: make([]api.PluginVersion, len(pl.Versions))}
	for i, v := range pl.Versions {
		out.Versions[i] = toAPIPluginVersion(v)
		if v.Version == pl.Latest {
			out.Readme = v.Readme
		}
	}
	return api.GetPlugin200JSONResponse(out), nil
}

func (s *server) GetPluginVersion(ctx context.Context, req api.GetPluginVersionRequestObject) (api.GetPluginVersionResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := s.market.Version(ctx, p, req.Namespace, req.Name, req.Version)
	if err != nil {
		return nil, err
	}
	return api.GetPluginVersion200JSONResponse(toAPIPluginVersion(v)), nil
}

// review runs one review decision for the route's principal.
func (s *server) review(ctx context.Context, decide func(context.Context, barrage.Principal, string, string, string, string) (barrage.PluginVersion, error),
	namespace, name, version, reason string) (api.PluginVersion, error) {
	p, err := principal(ctx)
	if err != nil {
		return api.PluginVersion{}, err
	}
	v, err := decide(ctx, p, namespace, name, version, reason)
	return toAPIPluginVersion(v), err
}

func (s *server) DeprecatePluginVersion(ctx context.Context, req api.DeprecatePluginVersionRequestObject) (api.DeprecatePluginVersionResponseObject, error) {
	v, err := s.review(ctx, s.market.Deprecate, req.Namespace, req.Name, req.Version, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return api.DeprecatePluginVersion200JSONResponse(v), nil
}

func (s *server) ApprovePluginVersion(ctx context.Context, req api.ApprovePluginVersionRequestObject) (api.ApprovePluginVersionResponseObject, error) {
	var reason string
	if req.Body != nil {
		reason = deref(req.Body.Reason)
	}
	v, err := s.review(ctx, s.market.Approve, req.Namespace, req.Name, req.Version, reason)
	if err != nil {
		return nil, err
	}
	return api.ApprovePluginVersion200JSONResponse(v), nil
}

func (s *server) RejectPluginVersion(ctx context.Context, req api.RejectPluginVersionRequestObject) (api.RejectPluginVersionResponseObject, error) {
	v, err := s.review(ctx, s.market.Reject, req.Namespace, req.Name, req.Version, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return api.RejectPluginVersion200JSONResponse(v), nil
}

func (s *server) RevokePluginVersion(ctx context.Context, req api.RevokePluginVersionRequestObject) (api.RevokePluginVersionResponseObject, error) {
	v, err := s.review(ctx, s.market.Revoke, req.Namespace, req.Name, req.Version, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return api.RevokePluginVersion200JSONResponse(v), nil
}

func (s *server) ListPendingPluginVersions(ctx context.Context, req api.ListPendingPluginVersionsRequestObject) (api.ListPendingPluginVersionsResponseObject, error) {
	list, err := s.market.Pending(ctx, cmp.Or(deref(req.Params.Limit), 50))
	if err != nil {
		return nil, err
	}
	out := api.ListPendingPluginVersions200JSONResponse{Items: make([]api.PluginVersion, len(list))}
	for i, v := range list {
		out.Items[i] = toAPIPluginVersion(v)
	}
	return out, nil
}

func (s *server) GetPluginDownload(ctx context.Context, req api.GetPluginDownloadRequestObject) (api.GetPluginDownloadResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.market.Download(ctx, p, req.Namespace, req.Name, req.Version, string(req.Os), string(req.Arch))
	if err != nil {
		return nil, err
	}
	v, a := d.Version, d.Artifact
	out := api.GetPluginDownload200JSONResponse{Namespace: v.Namespace, Name: v.Name, Version: v.Version, State: api.PluginVersionState(v.State),
		Protocols: v.Protocols, Os: a.OS, Arch: a.Arch, Filename: a.File, Format: api.PluginDownloadFormat(a.Format), Size: a.Size,
		DownloadUrl: fmt.Sprintf("/v1/plugins/%s/%s/versions/%s/download/%s/%s/file", v.Namespace, v.Name, v.Version, a.OS, a.Arch),
		Shasum:      a.SHA256, Shasums: string(v.Sums), ShasumsSignature: v.Signature, Signer: v.Signer,
		SigningKeys: make([]api.SigningKey, len(d.Keys))}
	if v.StateReason != "" {
		out.StateReason = &v.StateReason
	}
	for i, k := range d.Keys {
		out.SigningKeys[i] = toAPISigningKey(k)
	}
	return out, nil
}

func (s *server) DownloadPluginArtifact(ctx context.Context, req api.DownloadPluginArtifactRequestObject) (api.DownloadPluginArtifactResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	rc, a, err := s.market.Open(ctx, p, req.Namespace, req.Name, req.Version, string(req.Os), string(req.Arch))
	if err != nil {
		return nil, err
	}
	return api.DownloadPluginArtifact200ApplicationoctetStreamResponse{Body: rc, ContentLength: a.Size}, nil
}

func (s *server) AgentFetchArtifact(ctx context.Context, req api.AgentFetchArtifactRequestObject) (api.AgentFetchArtifactResponseObject, error) {
	a, err := agentPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	rc, size, err := s.market.AgentOpen(ctx, a, req.Sha256)
	if err != nil {
		return nil, err
	}
	return api.AgentFetchArtifact200ApplicationoctetStreamResponse{Body: rc, ContentLength: size}, nil
}

func toAPIPluginSummary(p barrage.Plugin) api.PluginSummary {
	return api.PluginSummary{Namespace: p.Namespace, Name: p.Name, Latest: p.Latest, Listed: p.Listed, Kinds: toAPIKinds(p.Kinds),
		Description: p.Description, License: p.License, SourceUrl: p.SourceURL, Tags: p.Tags, Protocols: p.Protocols,
		Platforms: p.Platforms, Downloads: p.Downloads, Runs: p.Runs, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func toAPIKinds(kinds []string) []api.PluginKind {
	out := make([]api.PluginKind, len(kinds))
	for i, k := range kinds {
		out[i] = api.PluginKind(k)
	}
	return out
}

func toAPIPluginVersion(v barrage.PluginVersion) api.PluginVersion {
	out := api.PluginVersion{Namespace: v.Namespace, Name: v.Name, Version: v.Version, State: api.PluginVersionState(v.State),
		Kinds: toAPIKinds(v.Kinds), Description: v.Description, Readme: v.Readme, License: v.License, SourceUrl: v.SourceURL,
		Tags: v.Tags, Protocols: v.Protocols, ConfigSchema: v.ConfigSchema, Network: v.Network, Shasums: string(v.Sums),
		Signature: v.Signature, Signer: v.Signer, PublishedBy: v.PublishedBy, ReviewedAt: v.ReviewedAt, Downloads: v.Downloads,
		Runs: v.Runs, CreatedAt: v.CreatedAt, Artifacts: make([]api.PluginArtifact, len(v.Artifacts))}
	if v.StateReason != "" {
		out.StateReason = &v.StateReason
	}
	for i, a := range v.Artifacts {
		out.Artifacts[i] = api.PluginArtifact{Os: api.PluginArtifactOs(a.OS), Arch: api.PluginArtifactArch(a.Arch), File: a.File,
			Format: api.PluginArtifactFormat(a.Format), Sha256: a.SHA256, Size: a.Size}
	}
	return out
}
