package registry_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
)

func TestConstraintsMatchAsCargoAndNpmDo(t *testing.T) {
	t.Parallel()
	for c, cases := range map[string]map[string]bool{
		"1.2.3":  {"1.2.3": true, "1.2.3+build": true, "1.2.4": false, "1.2.3-rc.1": false},
		"^1.2":   {"1.2.0": true, "1.9.9": true, "2.0.0": false, "1.1.9": false, "1.3.0-rc.1": false},
		"^1.2.3": {"1.2.3": true, "1.2.2": false, "1.99.0": true, "2.0.0": false},
		"^1":     {"1.0.0": true, "1.5.0": true, "2.0.0": false, "0.9.0": false},
		"^0.2":   {"0.2.0": true, "0.2.9": true, "0.3.0": false},
		"^0.2.3": {"0.2.3": true, "0.2.9": true, "0.3.0": false, "0.2.2": false},
		"^0.0.3": {"0.0.3": true, "0.0.4": false},
		"^0":     {"0.0.1": true, "0.9.0": true, "1.0.0": false},
		"~1.2":   {"1.2.0": true, "1.2.9": true, "1.3.0": false},
		"~1.2.3": {"1.2.3": true, "1.2.9": true, "1.3.0": false, "1.2.2": false},
		"~1":     {"1.0.0": true, "1.9.0": true, "2.0.0": false},
	} {
		con, err := registry.ParseConstraint(c)
		require.NoError(t, err, c)
		require.Equal(t, c, con.String())
		for v, want := range cases {
			ver, err := registry.ParseVersion(v)
			require.NoError(t, err)
			require.Equal(t, want, con.Matches(ver), "%s matches %s", c, v)
		}
	}
	for _, bad := range []string{"", "^", "^1.2.3.4", "^01.2", "^1.2-rc.1", "^1.x", ">=1.0.0", "1.2", "v1.2.3", "~1.2.3+b"} {
		_, err := registry.ParseConstraint(bad)
		require.Error(t, err, bad)
	}
	con, err := registry.ParseConstraint("^1.2")
	require.NoError(t, err)
	newest, ok := con.Newest([]string{"1.2.0", "1.10.0", "2.0.0", "1.9.0", "1.11.0-rc.1", "junk"})
	require.True(t, ok)
	require.Equal(t, "1.10.0", newest)
	_, ok = con.Newest([]string{"2.0.0"})
	require.False(t, ok)
}

// A range is pinned to the newest published version it matches; a deprecated one only when no
// published one matches; never a pending, rejected or revoked one.
func TestARangePicksPublishedBeforeDeprecated(t *testing.T) {
	t.Parallel()
	c, err := registry.ParseConstraint("^1.0")
	require.NoError(t, err)
	type v struct{ version, state string }
	read := func(x v) (string, string) { return x.version, x.state }
	got, ok := registry.Pick(c, []v{{"1.4.0", "deprecated"}, {"1.0.0", "published"}, {"1.6.0", "revoked"}, {"1.7.0", "pending"}}, read)
	require.True(t, ok)
	require.Equal(t, "1.0.0", got)
	got, ok = registry.Pick(c, []v{{"1.4.0", "deprecated"}, {"1.2.0", "deprecated"}, {"2.0.0", "published"}}, read)
	require.True(t, ok)
	require.Equal(t, "1.4.0", got)
	_, ok = registry.Pick(c, []v{{"1.9.0", "rejected"}}, read)
	require.False(t, ok)
}
