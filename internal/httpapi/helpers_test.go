package httpapi_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustPrefixes(t testing.TB, s string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, p := range strings.Split(s, ",") {
		pr, err := netip.ParsePrefix(strings.TrimSpace(p))
		require.NoError(t, err)
		out = append(out, pr)
	}
	return out
}
