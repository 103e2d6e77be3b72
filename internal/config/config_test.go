package config_test

import (
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/config"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load("serve", nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Addr)
	require.Empty(t, c.DatabaseURL)
	require.True(t, filepath.IsAbs(c.DataDir))
	require.Equal(t, filepath.Join(c.DataDir, "jwt-ed25519.pem"), c.JWTKeyFile)
	require.Equal(t, 15*time.Minute, c.AccessTokenTTL)
	require.Equal(t, int64(1<<20), c.MaxBodyBytes)
	require.Empty(t, c.TrustedProxies)
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	t.Parallel()
	e := env(map[string]string{
		"BARRAGE_ADDR": "127.0.0.1:9000", "BARRAGE_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1",
		"BARRAGE_ACCESS_TOKEN_TTL": "5m", "DATABASE_URL": "postgres://u:pw@db/barrage",
	})
	c, err := config.Load("serve", []string{"--addr", "127.0.0.1:9100"}, e, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9100", c.Addr)
	require.Equal(t, 5*time.Minute, c.AccessTokenTTL)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.1/32")}, c.TrustedProxies)
	require.Equal(t, "postgres://u:pw@db/barrage", c.DatabaseURL)
}

func TestBadValuesNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"BARRAGE_ADDR":             {"BARRAGE_ADDR": "nope"},
		"BARRAGE_METRICS_ADDR":     {"BARRAGE_METRICS_ADDR": "9090"},
		"BARRAGE_ACCESS_TOKEN_TTL": {"BARRAGE_ACCESS_TOKEN_TTL": "1h"},
		"BARRAGE_TRUSTED_PROXIES":  {"BARRAGE_TRUSTED_PROXIES": "10.0.0.0/33"},
		"DATABASE_URL":             {"DATABASE_URL": "mysql://x"},
		"BARRAGE_LOG_LEVEL":        {"BARRAGE_LOG_LEVEL": "loud"},
		"BARRAGE_MAX_BODY_BYTES":   {"BARRAGE_MAX_BODY_BYTES": "12"},
	}
	for name, vars := range cases {
		_, err := config.Load("serve", nil, env(vars), io.Discard)
		require.ErrorContains(t, err, name)
	}
	_, err := config.Load("serve", []string{"extra"}, env(nil), io.Discard)
	require.Error(t, err)
}

func TestSecretsAreMaskedWhenLogged(t *testing.T) {
	t.Parallel()
	c, err := config.Load("serve", nil, env(map[string]string{"DATABASE_URL": "postgres://barrage:s3cr3t-pw@db:5432/barrage?password=other-s3cret"}), io.Discard)
	require.NoError(t, err)
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", slog.Any("config", c))
	require.NotContains(t, b.String(), "s3cr3t-pw")
	require.NotContains(t, b.String(), "other-s3cret")
	require.Contains(t, b.String(), "barrage:xxxxx@db:5432")
}

func TestASwitchNeedsNoValue(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	c, err := config.Load("serve", []string{"--demo-agent"}, env, io.Discard)
	require.NoError(t, err)
	require.True(t, c.DemoAgent)
	c, err = config.Load("serve", []string{"--demo-agent=false"}, func(k string) string {
		if k == "BARRAGE_DEMO_AGENT" {
			return "true"
		}
		return ""
	}, io.Discard)
	require.NoError(t, err)
	require.False(t, c.DemoAgent, "the flag wins over the environment")
	c, err = config.Load("serve", nil, func(k string) string {
		if k == "BARRAGE_DEMO_AGENT" {
			return "true"
		}
		return ""
	}, io.Discard)
	require.NoError(t, err)
	require.True(t, c.DemoAgent)
	_, err = config.Load("serve", []string{"--demo-agent=maybe"}, env, io.Discard)
	require.ErrorContains(t, err, "want true or false")
}
