package plugins_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/script"
)

// testBundle is a control plane with a marketplace namespace of an author's, and a tester.
type testBundle struct {
	*controltest.Plane
	author, tester barrage.Principal
	reviewer       barrage.Principal
	key            ed25519.PublicKey
}

func setup(t *testing.T, ns string, author func(*controltest.Plane) barrage.Principal) *testBundle {
	t.Helper()
	ctx := context.Background()
	p := controltest.New(t, control.Config{})
	b := &testBundle{Plane: p, author: author(p), tester: p.User("tester@example.com", &barrage.DemoLicense),
		reviewer: p.Admin("reviewer@example.com")}
	_, err := p.Store.ClaimNamespace(ctx, ns, b.author.User.ID, false, postgres.Quota{})
	require.NoError(t, err)
	b.key, _, err = ed25519.GenerateKey(nil)
	require.NoError(t, err)
	_, err = p.Store.AddSigningKey(ctx, ns, b.author.User.ID, "k1", b.key)
	require.NoError(t, err)
	return b
}

func user(p *controltest.Plane) barrage.Principal {
	return p.User("author@example.com", &barrage.DemoLicense)
}

// publish has the author publish ns/random-data@version, and has it reviewed into state.
func (b *testBundle) publish(t *testing.T, ns, version string, state barrage.VersionState) barrage.PluginVersion {
	t.Helper()
	ctx := context.Background()
	v, err := b.Store.InsertPluginVersion(ctx, b.author.User.ID, barrage.PluginVersion{Namespace: ns, Name: "random-data", Version: version,
		Kinds: []string{"session-element"}, Sums: []byte("sums of " + version), Signature: []byte("signature"), Signer: "k1"},
		postgres.Quota{}, func(context.Context, string) error { return nil })
	require.NoError(t, err)
	if state != barrage.VersionPending {
		v, err = b.Store.SetPluginVersionState(ctx, postgres.Viewer{User: b.reviewer.User.ID, Admin: true}, ns, "random-data", version, state, "reviewed", barrage.VersionPending)
		require.NoError(t, err)
	}
	return v
}

// uses is a script that uses ref as a session element, and a plugin of its agent's own.
func uses(t *testing.T, ref string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(`version: 1
name: with plugins
plugins:
  - { use: `+ref+`, as: rnd, kind: session-element }
  - { use: local-thing@1.0.0, as: own, kind: session-element }
session:
  groups:
    - name: home
      requests:
        - { name: home, url: "http://127.0.0.1:9/?e=${rnd.email}&o=${own.x}" }
load: { vus: 1, duration: 2s }
`), script.ParseOptions{})
	require.NoError(t, err)
	return sc
}

// A marketplace plugin is resolved to a version its user may use and pinned by the digest of its
// signed SHA256SUMS, a range to the newest published version it matches; a plugin of the agent's
// own directory is the agent's to find. A run admits the pins again, as the marketplace has them.
func TestAMarketplacePluginIsPinnedByItsSignedSums(t *testing.T) {
	t.Parallel()
	b := setup(t, "acme", user)
	ctx := context.Background()
	b.publish(t, "acme", "1.0.0", barrage.VersionPublished)
	newest := b.publish(t, "acme", "1.1.0", barrage.VersionPublished)
	b.publish(t, "acme", "1.2.0", barrage.VersionPending)

	got, err := b.Plugins.Resolve(ctx, b.tester, uses(t, "acme/random-data@^1.0.0"))
	require.NoError(t, err)
	pins := plugins.Pins(got)
	require.Len(t, pins, 1, "the agent's own plugin is not the marketplace's")
	sum := sha256.Sum256(newest.Sums)
	require.Equal(t, barrage.PluginPin{Alias: "rnd", Name: "acme/random-data", Version: "1.1.0", Kind: "session-element",
		SHA256: hex.EncodeToString(sum[:]), Source: barrage.PinMarketplace, Signer: registry.PublicKey(b.key).String(), SignerID: "k1",
		Shasums: string(newest.Sums), Signature: newest.Signature, Network: []string{}}, pins[0])
	require.Empty(t, plugins.Deprecations(got))

	admitted, err := b.Plugins.Admit(ctx, b.tester, pins)
	require.NoError(t, err)
	require.Equal(t, pins, plugins.Pins(admitted))
	forged := pins[0]
	forged.SHA256 = strings.Repeat("0", 64)
	_, err = b.Plugins.Admit(ctx, b.tester, []barrage.PluginPin{forged})
	require.Contains(t, controltest.Invalid(t, err, "plugins.rnd"), "no longer has it: generate the script again")
	require.NoError(t, plugins.CheckPins(pins, got), "an agent's pins as resolved")
	require.Error(t, plugins.CheckPins([]barrage.PluginPin{forged}, got))
}

// What a user may not use is refused naming the plugin: a version still pending review (not its
// author's), a revoked one, a namespace nobody has; a deprecated one is used with a warning.
func TestAPluginVersionAUserMayNotUseIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "acme", user)
	ctx := context.Background()
	b.publish(t, "acme", "1.0.0", barrage.VersionPending)
	b.publish(t, "acme", "2.0.0", barrage.VersionRevoked)
	b.publish(t, "acme", "3.0.0", barrage.VersionDeprecated)
	resolve := func(ref string) ([]plugins.Resolved, error) { return b.Plugins.Resolve(ctx, b.tester, uses(t, ref)) }

	_, err := resolve("acme/random-data@1.0.0")
	require.Contains(t, controltest.Invalid(t, err, "plugins.rnd"), "is not a version of the marketplace that you may use")
	_, err = b.Plugins.Resolve(ctx, b.author, uses(t, "acme/random-data@1.0.0"))
	require.NoError(t, err, "its author may try a pending version")
	_, err = resolve("acme/random-data@2.0.0")
	require.Contains(t, controltest.Invalid(t, err, "plugins.rnd"), "was revoked (reviewed)")
	_, err = resolve("nobody/random-data@1.0.0")
	require.Contains(t, controltest.Invalid(t, err, "plugins.rnd"), "it has no namespace nobody")
	got, err := resolve("acme/random-data@3.0.0")
	require.NoError(t, err)
	require.Equal(t, []string{"plugin acme/random-data@3.0.0 is deprecated: reviewed"}, plugins.Deprecations(got))
}

// A shared agent runs a plugin a user published only inside the whole kernel sandbox, and one an
// admin published anywhere; a user's own agent runs either.
func TestASharedAgentRunsAUsersPluginOnlyInsideTheSandbox(t *testing.T) {
	t.Parallel()
	byUser := setup(t, "acme", user)
	byAdmin := setup(t, "core", func(p *controltest.Plane) barrage.Principal { return p.Admin("admin@example.com") })
	ctx := context.Background()
	for _, b := range []*testBundle{byUser, byAdmin} {
		ns := "acme"
		if b == byAdmin {
			ns = "core"
		}
		b.publish(t, ns, "1.0.0", barrage.VersionPublished)
		got, err := b.Plugins.Resolve(ctx, b.tester, uses(t, ns+"/random-data@1.0.0"))
		require.NoError(t, err)
		shared, _ := b.Agent(nil, "shared", barrage.Limits{})
		own, _ := b.Agent(&b.tester, "own", barrage.Limits{})
		require.NoError(t, plugins.CanRunOn(own, got, "agent_id"))
		why, err := b.Plugins.SandboxRefuses(ctx, shared, false, plugins.Pins(got))
		require.NoError(t, err)
		sandboxed, err := b.Plugins.SandboxRefuses(ctx, shared, true, plugins.Pins(got))
		require.NoError(t, err)
		require.Empty(t, sandboxed)
		if b == byAdmin {
			require.NoError(t, plugins.CanRunOn(shared, got, "agent_id"))
			require.Empty(t, why)
			continue
		}
		require.Contains(t, controltest.Invalid(t, plugins.CanRunOn(shared, got, "agent_id"), "agent_id"), "runs on a shared agent only inside it")
		require.Contains(t, why, `shared agent "shared" does not hold the kernel sandbox now`)
	}
}
