package sdk_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
)

func TestParseHostPatternReadsEachForm(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"db.example:5432":       "db.example:5432",
		"DB.Example:5432":       "db.example:5432",
		"localhost:8080":        "localhost:8080",
		"*.example.com:443":     "*.example.com:443",
		"10.0.0.5:5432":         "10.0.0.5:5432",
		"[2001:db8::5]:443":     "[2001:db8::5]:443",
		"[::1]:5432":            "[::1]:5432",
		"*:5432":                "*:5432",
		"a-b.c-d.example:65535": "a-b.c-d.example:65535",
	} {
		p, err := sdk.ParseHostPattern(in)
		require.NoError(t, err, in)
		require.Equal(t, want, p.String(), in)
	}
}

func TestParseHostPatternRefusesWhatIsNotOne(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"db.example":                             "want host:port",
		"db.example:":                            "port",
		"db.example:0":                           "want a number from 1 to 65535",
		"db.example:65536":                       "want a number from 1 to 65535",
		"db.example:05432":                       "want a number from 1 to 65535",
		"db.example:+80":                         "want a number from 1 to 65535",
		"db.example:*":                           "want a number from 1 to 65535",
		"db.example:http":                        "want a number from 1 to 65535",
		":5432":                                  "no host",
		"db.example.:5432":                       "final dot",
		"db..example:5432":                       "label \"\"",
		"-db.example:5432":                       "not at either end",
		"db_1.example:5432":                      "'_' is not a letter",
		"*.com:443":                              "two labels at least",
		"**.example.com:443":                     "'*' is not a letter",
		"a.*.example.com:443":                    "'*' is not a letter",
		"*example.com:443":                       "'*' is not a letter",
		"1.2.3:80":                               "its last label is a number",
		"999.1.1.1:80":                           "its last label is a number",
		"2001:db8::5:443":                        "want host:port",
		"[10.0.0.5]:443":                         "IPv6 address",
		"[fe80::1%eth0]:443":                     "without a zone",
		"db.example:5432/path":                   "want a number",
		"http://db.example:5432":                 "want host:port",
		strings.Repeat("a", 64) + ".example:80":  "1 to 63",
		strings.Repeat("a.", 127) + "example:80": "longer than 253",
	} {
		_, err := sdk.ParseHostPattern(in)
		require.ErrorContains(t, err, want, in)
	}
}

func TestParseHostPatternsNamesTheEntry(t *testing.T) {
	t.Parallel()
	_, err := sdk.ParseHostPatterns([]string{"db.example:5432", "db.example"})
	require.EqualError(t, err, `[1] "db.example": want host:port, as db.example:5432, *.example.com:443 or 10.0.0.5:5432`)
	many := make([]string, sdk.MaxHostPatterns+1)
	for i := range many {
		many[i] = fmt.Sprintf("h%d.example:80", i)
	}
	_, err = sdk.ParseHostPatterns(many)
	require.ErrorContains(t, err, "at most 32")
}

func TestHostPatternMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, host string
		port          int
		want          bool
	}{
		{"db.example:5432", "db.example", 5432, true},
		{"db.example:5432", "DB.example", 5432, true},
		{"db.example:5432", "db.example", 5433, false},
		{"db.example:5432", "db.example.", 5432, false},
		{"db.example:5432", "x.db.example", 5432, false},
		{"*.example.com:443", "a.example.com", 443, true},
		{"*.example.com:443", "a.b.example.com", 443, true},
		{"*.example.com:443", "example.com", 443, false},
		{"*.example.com:443", "aexample.com", 443, false},
		{"*.example.com:443", "a.example.com", 80, false},
		{"127.0.0.1:80", "127.0.0.1", 80, true},
		{"127.0.0.1:80", "::ffff:127.0.0.1", 80, true},
		{"127.0.0.1:80", "localhost", 80, false},
		{"127.0.0.1:80", "127.0.0.2", 80, false},
		{"localhost:80", "127.0.0.1", 80, false},
		{"[::1]:80", "::1", 80, true},
		{"*:5432", "anything.example", 5432, true},
		{"*:5432", "10.1.2.3", 5432, true},
		{"*:5432", "10.1.2.3", 5433, false},
	} {
		p, err := sdk.ParseHostPattern(c.pattern)
		require.NoError(t, err)
		require.Equal(t, c.want, p.Match(c.host, c.port), "%s matches %s:%d", c.pattern, c.host, c.port)
	}
}

func TestHostPatternCovers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		need, grant string
		want        bool
	}{
		{"db.example:5432", "db.example:5432", true},
		{"db.example:5432", "db.example:5433", false},
		{"db.example:5432", "other.example:5432", false},
		{"*.example.com:443", "api.example.com:443", true},
		{"*.example.com:443", "*.example.com:443", true},
		{"*.example.com:443", "*.eu.example.com:443", true},
		{"*.example.com:443", "example.com:443", false},
		{"*.eu.example.com:443", "*.example.com:443", false},
		{"db.example:5432", "*.db.example:5432", false},
		{"*:5432", "db.example:5432", true},
		{"*:5432", "10.0.0.5:5432", true},
		{"*:5432", "*:5432", true},
		{"db.example:5432", "*:5432", false},
		{"10.0.0.5:5432", "10.0.0.5:5432", true},
		{"10.0.0.5:5432", "10.0.0.6:5432", false},
		{"*.example.com:443", "10.0.0.5:443", false},
		{"localhost:80", "127.0.0.1:80", false},
	} {
		need, err := sdk.ParseHostPattern(c.need)
		require.NoError(t, err)
		grant, err := sdk.ParseHostPattern(c.grant)
		require.NoError(t, err)
		require.Equal(t, c.want, need.Covers(grant), "%s covers %s", c.need, c.grant)
	}
}

func TestDialWithoutAGrantSaysSo(t *testing.T) {
	t.Setenv(sdk.DialSocketEnv, "")
	_, err := sdk.Dial(t.Context(), "tcp", "db.example:5432")
	require.ErrorIs(t, err, sdk.ErrNoNetwork)
	_, err = sdk.Dial(t.Context(), "udp", "db.example:5432")
	require.ErrorContains(t, err, "TCP only")
}

func TestServeRefusesABadNetworkDeclaration(t *testing.T) {
	t.Parallel()
	p := testPlugin()
	p.Network = []string{"db.example:5432", "db.example"}
	require.ErrorContains(t, sdk.ValidatePlugin(p), `sdk: Plugin.Network: [1] "db.example": want host:port`)
}
