// Package plugins admits the marketplace plugins of a user's script: it resolves each
// namespace/name@version (or range) to a version the user may use, not revoked or rejected, and
// pins it by the digest of its signed SHA256SUMS; it holds a generated script's pins and a new
// run's to what the marketplace has; and it says which agents may run them (a shared agent runs
// a plugin a user published only inside the whole kernel sandbox).
package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/script"
)

// Store is what plugin admission reads in PostgreSQL (*postgres.Store).
type Store interface {
	Namespace(ctx context.Context, name string) (barrage.Namespace, error)
	Plugin(ctx context.Context, viewer postgres.Viewer, namespace, name string) (barrage.Plugin, error)
	PluginVersion(ctx context.Context, viewer postgres.Viewer, namespace, name, version string) (barrage.PluginVersion, error)
	UserByID(ctx context.Context, id uuid.UUID) (barrage.User, error)
}

// Service admits marketplace plugins.
type Service struct {
	store Store
}

// New returns plugin admission on store.
func New(store Store) *Service { return &Service{store: store} }

// A script names a marketplace plugin as namespace/name@version (or a range); a name without a
// namespace is a plugin of the agent's own plugin directory. The server resolves each
// marketplace plugin for the user who runs it (a version they may use, not revoked) and pins it
// by its signed SHA256SUMS; agents fetch and verify what the pin names.

// Resolved is a marketplace plugin a script uses, resolved for its user.
type Resolved struct {
	pin barrage.PluginPin
	// deprecated is why the version is deprecated; empty when it is not.
	deprecated string
	// byAdmin says whether an admin published the version: shared agents without the kernel
	// sandbox run only those.
	byAdmin bool
}

// Resolve resolves the marketplace plugins of parsed for p.
func (s *Service) Resolve(ctx context.Context, p barrage.Principal, parsed *script.Script) ([]Resolved, error) {
	var out []Resolved
	for _, sp := range parsed.Plugins {
		m, ok, err := s.resolvePlugin(ctx, p, sp.As, sp.Name, sp.Version, sp.Kind.String())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// Admit resolves again, for a new run by p, the marketplace plugins a script pinned:
// each must still be a version p may use, not revoked, and pinned as the marketplace has it.
func (s *Service) Admit(ctx context.Context, p barrage.Principal, pins []barrage.PluginPin) ([]Resolved, error) {
	var out []Resolved
	for _, pin := range pins {
		if !pin.Marketplace() {
			continue
		}
		m, ok, err := s.resolvePlugin(ctx, p, pin.Alias, pin.Name, pin.Version, pin.Kind)
		if err != nil {
			return nil, err
		}
		if !ok || !pinEqual(m.pin, pin) {
			return nil, barrage.Invalid("plugins."+pin.Alias, fmt.Sprintf("the script pins %s as the marketplace no longer has it: generate the script again", pin.Ref()))
		}
		out = append(out, m)
	}
	return out, nil
}

// resolvePlugin resolves plugin name@version, of the kind the script says, for p, if it is a
// marketplace plugin (ok).
func (s *Service) resolvePlugin(ctx context.Context, p barrage.Principal, alias, fullName, version, kind string) (m Resolved, ok bool, err error) {
	namespace, name, found := strings.Cut(fullName, "/")
	if !found {
		return m, false, nil
	}
	field, ref := "plugins."+alias, fullName+"@"+version
	ns, err := s.store.Namespace(ctx, namespace)
	if errors.Is(err, barrage.ErrNotFound) {
		// Never a plugin of the agent's directory: whoever claimed the namespace later would
		// have the script run theirs.
		return m, false, barrage.Invalid(field, fmt.Sprintf("%s is not a version of the marketplace that you may use "+
			"(it has no namespace %s); a plugin of an agent's own directory is named without a namespace", ref, namespace))
	}
	if err != nil {
		return m, false, err
	}
	viewer := postgres.Viewer{User: p.User.ID, Admin: p.User.Role == barrage.RoleAdmin}
	if c, err := registry.ParseConstraint(version); err == nil && !c.Exact() {
		// A range is pinned to the newest published (or deprecated) version it matches.
		if version, err = s.newest(ctx, viewer, namespace, name, c); err != nil {
			return m, false, barrage.Invalid(field, fmt.Sprintf("%s: %v", ref, err))
		}
		ref = fullName + "@" + version
	}
	v, err := s.store.PluginVersion(ctx, viewer, namespace, name, version)
	if errors.Is(err, barrage.ErrNotFound) {
		return m, false, barrage.Invalid(field, fmt.Sprintf("%s is not a version of the marketplace that you may use", ref))
	}
	if err != nil {
		return m, false, err
	}
	switch v.State {
	case barrage.VersionRevoked:
		return m, false, barrage.Invalid(field, fmt.Sprintf("%s was revoked (%s): no new run may use it", ref, v.StateReason))
	case barrage.VersionRejected:
		return m, false, barrage.Invalid(field, fmt.Sprintf("%s was rejected by review (%s)", ref, v.StateReason))
	}
	if !slices.Contains(v.Kinds, kind) {
		return m, false, barrage.Invalid(field+".kind", fmt.Sprintf("%s is not a %s plugin (it is %s)", ref, kind, strings.Join(v.Kinds, ", ")))
	}
	i := slices.IndexFunc(ns.Keys, func(k barrage.SigningKey) bool { return k.ID == v.Signer })
	if i < 0 {
		return m, false, fmt.Errorf("%s: its signer %s is not a key of namespace %s", ref, v.Signer, namespace)
	}
	sum := sha256.Sum256(v.Sums)
	m.pin = barrage.PluginPin{
		Alias: alias, Name: fullName, Version: version, Kind: kind, SHA256: hex.EncodeToString(sum[:]),
		Source: barrage.PinMarketplace, Signer: registry.PublicKey(ns.Keys[i].PublicKey).String(), SignerID: v.Signer,
		Shasums: string(v.Sums), Signature: v.Signature, Network: v.Network,
	}
	if v.State == barrage.VersionDeprecated {
		m.deprecated = v.StateReason
	}
	if m.byAdmin, err = s.byAdmin(ctx, v); err != nil {
		return m, false, err
	}
	return m, true, nil
}

// byAdmin says whether an admin published v (and is an admin still).
func (s *Service) byAdmin(ctx context.Context, v barrage.PluginVersion) (bool, error) {
	if v.PublishedBy == nil {
		return false, nil
	}
	u, err := s.store.UserByID(ctx, *v.PublishedBy)
	if errors.Is(err, barrage.ErrNotFound) {
		return false, nil
	}
	return err == nil && u.Role == barrage.RoleAdmin, err
}

// SandboxRefuses says why shared agent a, which holds the whole kernel sandbox or not
// (sandbox), may not be handed work whose marketplace plugins are in pins; "" when it may.
// Admission checked the agent as it was then; this checks it as it is when it takes the work.
func (s *Service) SandboxRefuses(ctx context.Context, a barrage.Agent, sandbox bool, pins []barrage.PluginPin) (string, error) {
	if !a.Shared() || sandbox {
		return "", nil
	}
	for _, pin := range pins {
		if !pin.Marketplace() {
			continue
		}
		namespace, name, _ := strings.Cut(pin.Name, "/")
		v, err := s.store.PluginVersion(ctx, postgres.Viewer{Admin: true}, namespace, name, pin.Version)
		if err != nil {
			return "", err
		}
		admin, err := s.byAdmin(ctx, v)
		if err != nil {
			return "", err
		}
		if !admin {
			return fmt.Sprintf("shared agent %q does not hold the kernel sandbox now, and %s, published by a user, "+
				"runs on a shared agent only inside it: run it on your own agent (barrage agent). %s", a.Name, pin.Ref(), pluginRule), nil
		}
	}
	return "", nil
}

// newest is the version of namespace/name a range c is pinned to, among those viewer may see:
// the newest published one it matches, else the newest deprecated one.
func (s *Service) newest(ctx context.Context, viewer postgres.Viewer, namespace, name string, c registry.Constraint) (string, error) {
	pl, err := s.store.Plugin(ctx, viewer, namespace, name)
	if err != nil && !errors.Is(err, barrage.ErrNotFound) {
		return "", err
	}
	v, ok := registry.Pick(c, pl.Versions, func(v barrage.PluginVersion) (string, string) { return v.Version, string(v.State) })
	if !ok {
		return "", fmt.Errorf("no published version that you may use matches %s%s", c, revokedMatches(c, pl.Versions))
	}
	return v, nil
}

// revokedMatches says which revoked versions of vs range c would have matched, and why each
// was revoked: what a user whose test ran yesterday needs to know today ("" when none).
func revokedMatches(c registry.Constraint, vs []barrage.PluginVersion) string {
	var gone []string
	for _, v := range vs {
		parsed, err := registry.ParseVersion(v.Version)
		if v.State == barrage.VersionRevoked && err == nil && c.Matches(parsed) {
			gone = append(gone, fmt.Sprintf("%s (%s)", v.Version, v.StateReason))
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return ": revoked, " + strings.Join(gone, ", ")
}

// Pins are the pins of plugins.
func Pins(plugins []Resolved) []barrage.PluginPin {
	out := make([]barrage.PluginPin, len(plugins))
	for i, m := range plugins {
		out[i] = m.pin
	}
	return out
}

// pluginRule is the rule of plugins on shared agents, said the same way wherever a refusal
// needs it.
const pluginRule = "(A shared agent runs a plugin published by a user only inside the kernel sandbox; an admin's approval " +
	"lists a version in the marketplace, it does not vouch for its code. The demo agent inside serve runs no plugin at all.)"

// CanRunOn refuses to give agent a the marketplace plugins it must not run: a shared agent runs
// strangers' plugins only inside the whole kernel sandbox; without it, only those admins
// published. field names the agent in the request.
func CanRunOn(a barrage.Agent, plugins []Resolved, field string) error {
	if !a.Shared() || a.Sandbox {
		return nil
	}
	for _, m := range plugins {
		if !m.byAdmin {
			return barrage.Invalid(field, fmt.Sprintf("shared agent %q does not hold the kernel sandbox, and %s, published by a user, "+
				"runs on a shared agent only inside it: run it on your own agent (barrage agent). %s", a.Name, m.pin.Ref(), pluginRule))
		}
	}
	return nil
}

// Deprecations are the warnings a run of plugins carries: one per deprecated version.
func Deprecations(plugins []Resolved) []string {
	var out []string
	for _, m := range plugins {
		if m.deprecated != "" {
			out = append(out, fmt.Sprintf("plugin %s is deprecated: %s", m.pin.Ref(), m.deprecated))
		}
	}
	return out
}

// CheckPins holds the pins of a generated script to the marketplace plugins resolved
// for it: each marketplace plugin the script uses is pinned as resolved, and the agent pinned
// no other plugin of those names from elsewhere.
func CheckPins(pins []barrage.PluginPin, plugins []Resolved) error {
	for _, pin := range pins {
		i := slices.IndexFunc(plugins, func(m Resolved) bool { return m.pin.Name == pin.Name && m.pin.Version == pin.Version })
		if i < 0 {
			if pin.Marketplace() || strings.Contains(pin.Name, "/") {
				return barrage.Invalid("plugins."+pin.Alias, fmt.Sprintf("the agent pinned %s as a marketplace plugin that the server did not resolve for the test "+
					"(a source plugin may not add one: name it in the test)", pin.Ref()))
			}
			continue
		}
		want := plugins[i].pin
		want.Alias, want.Kind = pin.Alias, pin.Kind
		if !pinEqual(pin, want) {
			return barrage.Invalid("plugins."+pin.Alias, fmt.Sprintf("the agent did not pin %s as the marketplace has it", pin.Ref()))
		}
	}
	return nil
}

func pinEqual(a, b barrage.PluginPin) bool {
	return a.Alias == b.Alias && a.Name == b.Name && a.Version == b.Version && a.Kind == b.Kind && a.SHA256 == b.SHA256 &&
		a.Source == b.Source && a.Signer == b.Signer && a.SignerID == b.SignerID && a.Shasums == b.Shasums &&
		string(a.Signature) == string(b.Signature) && slices.Equal(a.Network, b.Network)
}
