package targets_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/script"
)

// testBundle is a control plane whose proofs are checked on loopback, a target there, and a
// user with the demo license.
type testBundle struct {
	*controltest.Plane
	shop *controltest.ProofServer
	user barrage.Principal
}

func setup(t *testing.T, cfg targets.Config) *testBundle {
	t.Helper()
	cfg.Checker = controltest.LoopbackChecker()
	p := controltest.New(t, control.Config{Targets: cfg})
	return &testBundle{Plane: p, shop: controltest.NewProofServer(t), user: p.User("tester@example.com", &barrage.DemoLicense)}
}

// parse is the script of the tests, loading url.
func parse(t *testing.T, url string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(`version: 1
name: shop
session:
  groups:
    - name: home
      requests:
        - { name: get home, url: "`+url+`/" }
load: { vus: 2, duration: 5s }
`), script.ParseOptions{})
	require.NoError(t, err)
	return sc
}

// A target is verified when it serves its token, and only while it does: a run on a shared agent
// may load it once verified, pinned to the address that proved it, and is refused it before, and
// once its proof is gone at the run's start.
func TestATargetIsLoadedFromSharedAgentsOnlyWhileItsProofHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, targets.Config{})
	ctx := context.Background()
	sc := parse(t, b.shop.URL)
	require.Contains(t, controltest.Invalid(t, b.dests(sc), "targets"), "is not a target of the project")

	tg, err := b.Targets.CreateTarget(ctx, b.user, nil, b.shop.URL)
	require.NoError(t, err)
	require.False(t, tg.Verified())
	require.Contains(t, controltest.Invalid(t, b.dests(sc), "targets"), "is not verified")
	tg, err = b.Targets.VerifyTarget(ctx, b.user, tg.ID)
	require.NoError(t, err)
	require.False(t, tg.Verified())
	require.NotEmpty(t, tg.CheckError, "the check says why it failed")

	b.shop.Serve(tg.Token, true)
	tg, err = b.Targets.VerifyTarget(ctx, b.user, tg.ID)
	require.NoError(t, err)
	require.True(t, tg.Verified())
	dests, err := b.Targets.Destinations(ctx, b.user, controltest.Home(t, b.user), sc)
	require.NoError(t, err)
	require.Equal(t, []string{tg.Pinned()}, dests)
	jobs, err := b.Targets.Verified(ctx, controltest.Home(t, b.user))
	require.NoError(t, err)
	require.Equal(t, []string{tg.Pinned()}, jobs, "a job on a shared agent reaches the verified targets")

	b.shop.Serve(tg.Token, false)
	require.Contains(t, controltest.Invalid(t, b.dests(sc), "targets"), "checked at each run's start")
	tg, err = b.Targets.Target(ctx, b.user, tg.ID)
	require.NoError(t, err)
	require.False(t, tg.Verified(), "the failed check is recorded")
}

func (b *testBundle) dests(sc *script.Script) error {
	home, err := b.user.HomeProject()
	if err != nil {
		return err
	}
	_, err = b.Targets.Destinations(context.Background(), b.user, home, sc)
	return err
}

// The operator's open destinations need no proof; with every target open, a run carries no
// destinations at all. Name overrides and proxies are for a user's own agents.
func TestOpenTargetsNeedNoProof(t *testing.T) {
	t.Parallel()
	b := setup(t, targets.Config{Open: map[string]bool{"127.0.0.1:9": true}})
	ctx := context.Background()
	dests, err := b.Targets.Destinations(ctx, b.user, controltest.Home(t, b.user), parse(t, "http://127.0.0.1:9"))
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:9"}, dests)
	tg, err := b.Targets.CreateTarget(ctx, b.user, nil, "http://127.0.0.1:9")
	require.NoError(t, err)
	require.True(t, tg.Open)

	hosts := parse(t, "http://shop.test")
	hosts.Network.Hosts = map[string]string{"shop.test": "127.0.0.1"}
	require.Contains(t, controltest.Invalid(t, b.dests(hosts), "hosts"), "for your own agents")

	all := setup(t, targets.Config{All: true})
	dests, err = all.Targets.Destinations(ctx, all.user, controltest.Home(t, all.user), parse(t, "http://shop.test"))
	require.NoError(t, err)
	require.Nil(t, dests)
}

// The VUs that runs on shared agents aim at one proved address are capped: a run's share is
// refused when the runs not ended aim more there with it, saying how many are there already.
func TestTheLoadOfARunIsHeldToTheCapAtEachAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, targets.Config{MaxVUsPerAddress: 10})
	r := barrage.Run{VUs: 5, Destinations: []string{netpolicy.FormatDestination("shop.test:80", netip.MustParseAddr("127.0.0.1"))}}
	addr := r.PinnedAddresses()
	require.Len(t, addr, 1)
	require.NoError(t, b.Targets.CheckLoads(r, map[string]int64{addr[0]: 10}))
	reason := controltest.Invalid(t, b.Targets.CheckLoads(r, map[string]int64{addr[0]: 11}), "vus")
	require.True(t, strings.HasPrefix(reason, "runs not ended aim 6 VUs at "+addr[0]+" already; with this run's 5 they would pass the 10"), reason)

	uncapped := setup(t, targets.Config{})
	require.NoError(t, uncapped.Targets.CheckLoads(r, map[string]int64{addr[0]: 1000}))
}

// Another user's target answers not found, and counts for nothing in their runs.
func TestAnotherUsersTargetIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, targets.Config{})
	ctx := context.Background()
	tg, err := b.Targets.CreateTarget(ctx, b.user, nil, b.shop.URL)
	require.NoError(t, err)
	b.shop.Serve(tg.Token, true)
	_, err = b.Targets.VerifyTarget(ctx, b.user, tg.ID)
	require.NoError(t, err)
	other := b.User("other@example.com", &barrage.DemoLicense)

	_, err = b.Targets.Target(ctx, other, tg.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = b.Targets.VerifyTarget(ctx, other, tg.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	require.ErrorIs(t, b.Targets.DeleteTarget(ctx, other, tg.ID), barrage.ErrNotFound)
	list, err := b.Targets.Targets(ctx, other, nil)
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = b.Targets.Destinations(ctx, other, controltest.Home(t, other), parse(t, b.shop.URL))
	require.Contains(t, controltest.Invalid(t, err, "targets"), "is not a target of the project")

	require.NoError(t, b.Targets.DeleteTarget(ctx, b.user, tg.ID))
	_, err = b.Targets.Target(ctx, b.user, tg.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
}
