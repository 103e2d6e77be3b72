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
	for vars, want := range map[[2]string]string{
		{"BARRAGE_ADDR", "nope"}:                        "--addr (BARRAGE_ADDR): want host:port",
		{"BARRAGE_METRICS_ADDR", "9090"}:                "--metrics-addr (BARRAGE_METRICS_ADDR): want host:port",
		{"DATABASE_URL", "mysql://x"}:                   "--database-url (DATABASE_URL): want a postgres:// URL",
		{"BARRAGE_POSTGRES_MIRROR", "ftp://x"}:          "--postgres-mirror (BARRAGE_POSTGRES_MIRROR): want an http(s) URL",
		{"BARRAGE_BLOB_S3_URL", "http://host/bucket"}:   "--blob-s3-url (BARRAGE_BLOB_S3_URL): want http(s)://KEY:SECRET@HOST",
		{"BARRAGE_ACCESS_TOKEN_TTL", "1h"}:              "--access-token-ttl (BARRAGE_ACCESS_TOKEN_TTL): must be between 1m and 15m",
		{"BARRAGE_ACCESS_TOKEN_TTL", "15"}:              "--access-token-ttl (BARRAGE_ACCESS_TOKEN_TTL): must be a duration such as 500ms",
		{"BARRAGE_REFRESH_TOKEN_TTL", "-1h"}:            "--refresh-token-ttl (BARRAGE_REFRESH_TOKEN_TTL): must not be negative",
		{"BARRAGE_SHUTDOWN_TIMEOUT", "11m"}:             "--shutdown-timeout (BARRAGE_SHUTDOWN_TIMEOUT): must be between 0s and 10m",
		{"BARRAGE_TRUSTED_PROXIES", "10.0.0.0/33"}:      "--trusted-proxies (BARRAGE_TRUSTED_PROXIES)",
		{"BARRAGE_RESERVED_NAMESPACES", "ok,Bad Name"}:  "--reserved-namespaces (BARRAGE_RESERVED_NAMESPACES): namespace \"Bad Name\"",
		{"BARRAGE_QUOTA_TESTS", "-1"}:                   "--quota-tests (BARRAGE_QUOTA_TESTS): want a whole number, 0 or more",
		{"BARRAGE_MAX_BODY_BYTES", "12"}:                "--max-body-bytes (BARRAGE_MAX_BODY_BYTES): want a number of bytes between 1024 and 1073741824",
		{"BARRAGE_MAX_PLUGIN_BYTES", "2000000000"}:      "--max-plugin-bytes (BARRAGE_MAX_PLUGIN_BYTES): want a number of bytes",
		{"BARRAGE_LOG_LEVEL", "loud"}:                   "--log-level (BARRAGE_LOG_LEVEL): want debug, info, warn or error",
		{"BARRAGE_LOG_FORMAT", "xml"}:                   "--log-format (BARRAGE_LOG_FORMAT): want text or json",
		{"BARRAGE_POSTGRES_PORT", "70000"}:              "--postgres-port (BARRAGE_POSTGRES_PORT): want a port number, or 0",
		{"BARRAGE_DEMO_AGENT_ALLOW", "nope"}:            "--demo-agent-allow (BARRAGE_DEMO_AGENT_ALLOW)",
		{"BARRAGE_OPEN_TARGETS", "a.example:80,noport"}: "--open-targets (BARRAGE_OPEN_TARGETS): \"noport\": want host:port or *",
		{"BARRAGE_VERIFY_ALLOW", "nope"}:                "--verify-allow (BARRAGE_VERIFY_ALLOW)",
		{"BARRAGE_DESTINATION_MAX_VUS", "-5"}:           "--destination-max-vus (BARRAGE_DESTINATION_MAX_VUS): want a number of VUs, or 0 for no cap",
		{"BARRAGE_VERIFY_DNS", "1.1.1.1"}:               "--verify-dns (BARRAGE_VERIFY_DNS): want host:port",
	} {
		_, err := config.Load("serve", nil, env(map[string]string{vars[0]: vars[1]}), io.Discard)
		require.ErrorContains(t, err, want, "%s=%s", vars[0], vars[1])
	}
	_, err := config.Load("serve", []string{"--data-dir=", "--jwt-issuer="}, env(nil), io.Discard)
	require.ErrorContains(t, err, "--data-dir (BARRAGE_DATA_DIR): must not be empty")
	require.ErrorContains(t, err, "--jwt-issuer (BARRAGE_JWT_ISSUER): must not be empty")
	_, err = config.Load("serve", []string{"extra"}, env(nil), io.Discard)
	require.Error(t, err)
}

// Every wrong setting is reported at once, not the first alone.
func TestEveryBadValueIsReported(t *testing.T) {
	t.Parallel()
	_, err := config.Load("serve", nil, env(map[string]string{
		"BARRAGE_POSTGRES_MIRROR": "ftp://x", "BARRAGE_ADDR": "nope", "BARRAGE_LOG_FORMAT": "xml", "BARRAGE_VERIFY_DNS": "1.1.1.1",
	}), io.Discard)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 4)
	for i, flag := range []string{"--postgres-mirror", "--addr", "--log-format", "--verify-dns"} {
		require.True(t, strings.HasPrefix(lines[i], flag+" "), lines[i])
	}
}

func TestGoodValuesOfEveryKind(t *testing.T) {
	t.Parallel()
	c, err := config.Load("serve", nil, env(map[string]string{
		"BARRAGE_METRICS_ADDR": ":9090", "DATABASE_URL": "postgresql://u:p@h/db", "BARRAGE_POSTGRES_MIRROR": "https://m.example//",
		"BARRAGE_BLOB_S3_URL": "http://k:s@host:9000/bucket", "BARRAGE_DATA_DIR": "data", "BARRAGE_JWT_KEY_FILE": "/keys/jwt.pem",
		"BARRAGE_REFRESH_TOKEN_TTL": "1h", "BARRAGE_SHUTDOWN_TIMEOUT": "0", "BARRAGE_RESERVED_NAMESPACES": "acme, ,other",
		"BARRAGE_QUOTA_TESTS": "0", "BARRAGE_MAX_FILE_BYTES": "1073741824", "BARRAGE_LOG_LEVEL": "DEBUG", "BARRAGE_LOG_FORMAT": "json",
		"BARRAGE_POSTGRES_PORT": "5433", "BARRAGE_DEMO_AGENT": "1", "BARRAGE_DEMO_AGENT_ALLOW": "127.0.0.1:8081",
		"BARRAGE_OPEN_TARGETS": "*, a.example:80", "BARRAGE_VERIFY_ALLOW": "10.1.2.3", "BARRAGE_DESTINATION_MAX_VUS": "0",
		"BARRAGE_VERIFY_DNS": "1.1.1.1:53",
	}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, ":9090", c.MetricsAddr)
	require.Equal(t, "https://m.example", c.PostgresMirror)
	require.True(t, filepath.IsAbs(c.DataDir))
	require.Equal(t, "/keys/jwt.pem", c.JWTKeyFile)
	require.Equal(t, filepath.Join(c.DataDir, "secret-keys"), c.SecretKeysFile)
	require.Equal(t, filepath.Join(c.DataDir, "blobs"), c.BlobDir)
	require.Equal(t, time.Hour, c.RefreshTokenTTL)
	require.Zero(t, c.ShutdownTimeout)
	require.Equal(t, []string{"acme", "other"}, c.ReservedNamespaces)
	require.Zero(t, c.Quotas.Tests)
	require.Equal(t, int64(5), c.Quotas.Namespaces)
	require.Equal(t, int64(1<<30), c.MaxFileBytes)
	require.Equal(t, slog.LevelDebug, c.LogLevel)
	require.Equal(t, 5433, c.PostgresPort)
	require.True(t, c.DemoAgent)
	require.True(t, c.OpenAllTargets)
	require.Equal(t, map[string]bool{"a.example:80": true, "127.0.0.1:8081": true}, c.OpenTargets, "the demo agent's address is open while it runs")
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32")}, c.VerifyTargets.Allow)
	require.Equal(t, "the server's", c.VerifyTargets.Holder)
	require.Zero(t, c.DestinationMaxVUs)
	require.Equal(t, "1.1.1.1:53", c.VerifyDNS)
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
