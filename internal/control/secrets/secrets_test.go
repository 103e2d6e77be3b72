package secrets_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/seal"
)

// A secret is listed without its value and opened only by its owner's name: a name its owner has
// no secret of is refused naming it, whoever else has one of that name.
func TestASecretIsOpenedForItsOwnerAlone(t *testing.T) {
	t.Parallel()
	p := controltest.New(t, control.Config{})
	ctx := context.Background()
	u := p.User("tester@example.com", &barrage.DemoLicense)
	other := p.User("other@example.com", &barrage.DemoLicense)
	_, created, err := p.Secrets.PutSecret(ctx, u, nil, "API_TOKEN", "s3cret")
	require.NoError(t, err)
	require.True(t, created)
	_, created, err = p.Secrets.PutSecret(ctx, u, nil, "API_TOKEN", "s3cret-2")
	require.NoError(t, err)
	require.False(t, created, "set again, not created")

	list, err := p.Secrets.Secrets(ctx, u, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "API_TOKEN", list[0].Name)
	values, err := p.Secrets.Values(ctx, controltest.Home(t, u), []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"API_TOKEN": "s3cret-2"}, values)

	_, err = p.Secrets.Values(ctx, controltest.Home(t, other), []string{"API_TOKEN"})
	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "secrets.API_TOKEN", inv.Fields[0].Field)
	require.Contains(t, inv.Fields[0].Reason, "barrage secrets set API_TOKEN")
	all, err := p.Secrets.All(ctx, controltest.Home(t, other))
	require.NoError(t, err)
	require.Empty(t, all)
	require.ErrorIs(t, p.Secrets.DeleteSecret(ctx, other, nil, "API_TOKEN"), barrage.ErrNotFound)

	_, _, err = p.Secrets.PutSecret(ctx, u, nil, "not a name", "x")
	require.ErrorIs(t, err, barrage.ErrInvalid)
}

// A secret is sealed with the server's keyring, bound to its owner and name: the store never
// holds its value, and a keyring without the key that sealed it cannot open it.
func TestASecretIsSealedWithTheKeyring(t *testing.T) {
	t.Parallel()
	p := controltest.New(t, control.Config{})
	ctx := context.Background()
	u := p.User("tester@example.com", &barrage.DemoLicense)
	ring := func(b byte) *seal.Ring {
		r, err := seal.New(bytes.Repeat([]byte{b}, seal.KeySize))
		require.NoError(t, err)
		return r
	}
	sealer := secrets.New(p.Store, ring(1))
	_, _, err := sealer.PutSecret(ctx, u, nil, "API_TOKEN", "s3cret")
	require.NoError(t, err)
	sealed, err := p.Store.SealedSecrets(ctx, controltest.Home(t, u), []string{"API_TOKEN"})
	require.NoError(t, err)
	require.NotContains(t, string(sealed["API_TOKEN"].Value), "s3cret")

	_, err = secrets.New(p.Store, ring(2)).Values(ctx, controltest.Home(t, u), []string{"API_TOKEN"})
	require.ErrorContains(t, err, "is the key that sealed it still in the keyring?")
	require.NotContains(t, err.Error(), "s3cret")
	values, err := secrets.New(p.Store, ring(1)).Values(ctx, controltest.Home(t, u), []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, "s3cret", values["API_TOKEN"])
}

// A project's secret is the project's: set by one member and replaced by another, it opens for
// the project's runs with the value last set; someone outside the project reaches none of it.
func TestAProjectsSecretIsItsMembers(t *testing.T) {
	t.Parallel()
	p := controltest.New(t, control.Config{})
	ctx := context.Background()
	owner := p.User("owner@example.com", &barrage.DemoLicense)
	ed := p.User("ed@example.com", &barrage.DemoLicense)
	vi := p.User("vi@example.com", &barrage.DemoLicense)
	team := p.Share(&owner, "team", barrage.ProjectEditor, &ed)
	_, _, err := p.Secrets.PutSecret(ctx, owner, &team, "API_KEY", "set by the owner")
	require.NoError(t, err)
	_, created, err := p.Secrets.PutSecret(ctx, ed, &team, "API_KEY", "replaced by ed")
	require.NoError(t, err)
	require.False(t, created)
	values, err := p.Secrets.Values(ctx, team, []string{"API_KEY"})
	require.NoError(t, err)
	require.Equal(t, "replaced by ed", values["API_KEY"], "opened bound to who set it last")

	_, _, err = p.Secrets.PutSecret(ctx, vi, &team, "API_KEY", "not a member")
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = p.Secrets.Secrets(ctx, vi, &team)
	require.ErrorIs(t, err, barrage.ErrNotFound)
}
