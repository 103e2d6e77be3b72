// Package config reads the server's settings from flags and BARRAGE_* environment variables
// into one validated struct. Flags win over the environment, which wins over the defaults.
package config

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/quantity"
	"github.com/barrage-load/barrage/internal/registry"
)

// Config holds every setting of `barrage serve` and `barrage migrate`.
type Config struct {
	Addr string
	// MetricsAddr, when set, serves the server's metrics (Prometheus text format) at /metrics
	// on a listener of its own, apart from the API.
	MetricsAddr     string
	DatabaseURL     string // secret: its password is masked when logged
	DataDir         string
	JWTKeyFile      string
	SecretKeysFile  string
	JWTIssuer       string
	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	TrustedProxies  []netip.Prefix
	MaxBodyBytes    int64
	MaxFileBytes    int64
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogFormat       string
	PostgresBin     string
	PostgresUser    string
	PostgresPort    int
	PostgresMirror  string
	// BlobDir is the folder that keeps plugin artifacts when BlobS3URL is empty.
	BlobDir string
	// BlobS3URL names an S3-compatible bucket for plugin artifacts, which replicas share:
	// http(s)://KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX][?region=R]. Secret: masked when logged.
	BlobS3URL string
	// MaxPluginBytes caps one plugin artifact's size.
	MaxPluginBytes int64
	// ReservedNamespaces are names no user may claim in the marketplace, each exactly as
	// written, beside the built-in ones (registry.Reserved): a vendor's, the organisation's.
	ReservedNamespaces []string
	// Quotas bound what each user with a license keeps on the server.
	Quotas barrage.Quotas
	// DemoAgent runs the shared demo agent in the serve process, for a portal that works alone.
	DemoAgent bool
	// DemoAgentTargets are the internal destinations the demo agent may reach: by default the
	// demo shop's address alone, not the rest of the server's loopback.
	DemoAgentTargets netpolicy.Policy
	// OpenTargets are the destinations ("host:port", netpolicy.Destination) every user's runs
	// on shared agents may load without proving control of them; OpenAllTargets opens every
	// one (a portal whose users are all trusted).
	OpenTargets    map[string]bool
	OpenAllTargets bool
	// VerifyTargets is the policy of the ownership check's own requests: the internal
	// destinations it may reach (none by default).
	VerifyTargets netpolicy.Policy
	// VerifyDNS is the DNS server (host:port) the ownership check asks; empty: the system's.
	VerifyDNS string
	// DestinationMaxVUs caps the VUs every user's runs on shared agents together may aim at
	// one address that proved control of a target; 0 sets no cap.
	DestinationMaxVUs int
	// AuditRetention is how long the audit log keeps an entry.
	AuditRetention time.Duration
	// PublicURL is where people reach the server, for links in notifications; empty leaves
	// them relative.
	PublicURL string
	// NotifyPolicy is the policy of notifications' webhooks: the internal destinations they
	// may reach (none by default).
	NotifyPolicy netpolicy.Policy
	// NotifyAttempts bounds a delivery's attempts; NotifyBackoff is the wait before its second,
	// doubled before each next.
	NotifyAttempts int
	NotifyBackoff  time.Duration
	// SMTPAddr, when set, is the mail server email notifications go through, as SMTPFrom, with
	// SMTPUsername and the password in SMTPPasswordFile when set.
	SMTPAddr, SMTPFrom, SMTPUsername, SMTPPasswordFile string
	// ScheduleMinInterval is the shortest time between two firings of a schedule.
	ScheduleMinInterval time.Duration
}

// Setting documents one setting: its flag, its environment variable and its default.
type Setting struct {
	Flag, Env, Default, Usage string
}

// Settings lists every setting in the order the README's table shows them.
var Settings = []Setting{
	{"addr", "BARRAGE_ADDR", "127.0.0.1:8080", "address to serve HTTP on"},
	{"metrics-addr", "BARRAGE_METRICS_ADDR", "", "address to serve /metrics on (Prometheus text format), apart from the API; empty serves none"},
	{"database-url", "DATABASE_URL", "", "PostgreSQL URL; empty starts an embedded PostgreSQL in the data folder"},
	{"data-dir", "BARRAGE_DATA_DIR", ".barrage", "folder for the embedded database and generated keys"},
	{"jwt-key-file", "BARRAGE_JWT_KEY_FILE", "", "Ed25519 private key (PKCS#8 PEM) that signs access tokens; default <data-dir>/jwt-ed25519.pem, generated when missing"},
	{"jwt-issuer", "BARRAGE_JWT_ISSUER", "barrage", "iss claim of access tokens"},
	{"secret-keys-file", "BARRAGE_SECRET_KEYS_FILE", "", "keys that seal users' secrets (AES-256, base64, one a line, the first seals, each opens what it sealed); default <data-dir>/secret-keys, generated when missing; every replica needs the same"},
	{"access-token-ttl", "BARRAGE_ACCESS_TOKEN_TTL", "15m", "lifetime of access tokens (at most 15m)"},
	{"refresh-token-ttl", "BARRAGE_REFRESH_TOKEN_TTL", "720h", "lifetime of refresh tokens"},
	{"trusted-proxies", "BARRAGE_TRUSTED_PROXIES", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed"},
	{"max-body-bytes", "BARRAGE_MAX_BODY_BYTES", "1048576", "largest request body accepted"},
	{"max-file-bytes", "BARRAGE_MAX_FILE_BYTES", "16777216", "largest data file of a test accepted"},
	{"shutdown-timeout", "BARRAGE_SHUTDOWN_TIMEOUT", "15s", "how long in-flight requests get on SIGTERM (live streams end at once, their clients reconnecting)"},
	{"log-level", "BARRAGE_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"log-format", "BARRAGE_LOG_FORMAT", "text", "text or json"},
	{"postgres-bin", "BARRAGE_POSTGRES_BIN", "", "folder with initdb, pg_ctl and postgres for the embedded database; default downloads pinned binaries"},
	{"postgres-user", "BARRAGE_POSTGRES_USER", "", "unprivileged account that runs the embedded database when started as root; default postgres, else nobody"},
	{"postgres-port", "BARRAGE_POSTGRES_PORT", "0", "port of the embedded database on 127.0.0.1; 0 picks a free one"},
	{"postgres-mirror", "BARRAGE_POSTGRES_MIRROR", "https://repo1.maven.org/maven2", "Maven repository the embedded database's binaries are downloaded from"},
	{"blob-dir", "BARRAGE_BLOB_DIR", "", "folder that keeps plugin artifacts by their sha256; default <data-dir>/blobs"},
	{"blob-s3-url", "BARRAGE_BLOB_S3_URL", "", "S3-compatible bucket for plugin artifacts instead of the folder, for replicas: http(s)://KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX][?region=R]"},
	{"max-plugin-bytes", "BARRAGE_MAX_PLUGIN_BYTES", "134217728", "largest plugin artifact accepted"},
	{"quota-storage-bytes", "BARRAGE_QUOTA_STORAGE_BYTES", "268435456", "bytes each user with a license may keep: tests' sources and data files, scripts uploaded, plugin artifacts pending or published; 0 bounds nothing"},
	{"quota-tests", "BARRAGE_QUOTA_TESTS", "200", "tests each user with a license may have; 0 bounds nothing"},
	{"quota-namespaces", "BARRAGE_QUOTA_NAMESPACES", "5", "marketplace namespaces each user with a license may own; 0 bounds nothing"},
	{"quota-pending-versions", "BARRAGE_QUOTA_PENDING_VERSIONS", "5", "plugin versions each user with a license may have waiting for review; 0 bounds nothing"},
	{"quota-targets", "BARRAGE_QUOTA_TARGETS", "20", "targets each user with a license may have; 0 bounds nothing"},
	{"reserved-namespaces", "BARRAGE_RESERVED_NAMESPACES", "", "comma-separated marketplace namespaces no user may claim, each exactly as written, beside the built-in ones (barrage, official, admin..., and names with such a word, as barrage-official): an admin may reserve them"},
	{"demo-agent", "BARRAGE_DEMO_AGENT", "false", "also run the shared demo agent in this process (500 VUs and 5 minutes per job); make run sets it"},
	{"demo-agent-allow", "BARRAGE_DEMO_AGENT_ALLOW", "127.0.0.1:8081,[::1]:8081", "internal destinations the demo agent may load, comma-separated CIDRs, addresses or address:port; the default is barrage demo-shop's address alone"},
	{"open-targets", "BARRAGE_OPEN_TARGETS", "", "targets (comma-separated host:port) every user's runs on shared agents may load without proving control: the operator's own; * opens all (a portal whose users are all trusted); the demo agent's address:port entries are open while it runs"},
	{"verify-allow", "BARRAGE_VERIFY_ALLOW", "", "internal destinations the ownership check of targets may reach, comma-separated CIDRs, addresses or address:port; default none"},
	{"destination-max-vus", "BARRAGE_DESTINATION_MAX_VUS", "1000", "the most VUs every user's runs on shared agents together may aim at one address that proved control of a target; 0 sets no cap"},
	{"verify-dns", "BARRAGE_VERIFY_DNS", "", "DNS server (host:port) the ownership check of targets asks for the addresses of their names; default the system's"},
	{"audit-retention-days", "BARRAGE_AUDIT_RETENTION_DAYS", "400", "days the audit log keeps an entry (1 or more); older ones are deleted hourly"},
	{"public-url", "BARRAGE_PUBLIC_URL", "", "where people reach this server (https://barrage.example.com), for the links in notifications; empty leaves them relative"},
	{"notify-allow", "BARRAGE_NOTIFY_ALLOW", "", "internal destinations webhook and Slack notifications may reach, comma-separated CIDRs, addresses or address:port; default none"},
	{"notify-attempts", "BARRAGE_NOTIFY_ATTEMPTS", "8", "attempts of a notification's delivery before it fails; a channel whose deliveries fail 3 times in a row is paused"},
	{"notify-backoff", "BARRAGE_NOTIFY_BACKOFF", "30s", "wait before a delivery's second attempt, doubled before each next, an hour at most"},
	{"smtp-addr", "BARRAGE_SMTP_ADDR", "", "SMTP server (host:port) email notifications go through (STARTTLS when it offers it); empty sends no email"},
	{"smtp-from", "BARRAGE_SMTP_FROM", "", "sender address of email notifications (needed with --smtp-addr)"},
	{"smtp-username", "BARRAGE_SMTP_USERNAME", "", "user to log in to the SMTP server as; empty logs in as no one"},
	{"smtp-password-file", "BARRAGE_SMTP_PASSWORD_FILE", "", "file holding the SMTP user's password"},
	{"schedule-min-interval", "BARRAGE_SCHEDULE_MIN_INTERVAL", "1m", "the shortest time between two firings of a schedule (every ...)"},
}

// ErrFlags wraps Load's error when the command line does not parse; the flag package has then
// printed what was wrong and the usage.
var ErrFlags = errors.New("wrong flags")

// Load parses args (the subcommand's flags) and the environment into a validated Config. The
// error of a bad value names the flag and its environment variable.
func Load(name string, args []string, getenv func(string) string, output io.Writer) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	values := make(map[string]*string, len(Settings))
	for _, s := range Settings {
		def := s.Default
		if v := getenv(s.Env); v != "" {
			def = v
		}
		usage := fmt.Sprintf("%s (env %s)", s.Usage, s.Env)
		if s.Default == "true" || s.Default == "false" {
			// A switch: --demo-agent alone turns it on.
			v := boolString(def)
			fs.Var(&v, s.Flag, usage)
			values[s.Flag] = (*string)(&v)
			continue
		}
		values[s.Flag] = fs.String(s.Flag, def, usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("%w: %w", ErrFlags, err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return parse(values)
}

// boolString is a setting that is a switch on the command line (flag.Value with IsBoolFlag) and
// a string like every other setting for parse, which checks it.
type boolString string

func (b *boolString) String() string     { return string(*b) }
func (b *boolString) Set(s string) error { *b = boolString(s); return nil }
func (b *boolString) IsBoolFlag() bool   { return true }

// parse checks the settings' values, by flag name, into a Config: a line a setting, each read
// by a reader of its kind (below), in the order their errors are reported.
func parse(v map[string]*string) (Config, error) {
	r := &reader{v: v}
	c := Config{PostgresBin: *v["postgres-bin"], PostgresUser: *v["postgres-user"]}
	c.PostgresMirror = strings.TrimRight(r.url("postgres-mirror", "want an http(s) URL", "https", "http"), "/")
	c.Addr = r.hostPort("addr")
	c.MetricsAddr = r.optional("metrics-addr", r.hostPort)
	c.DatabaseURL = r.url("database-url", "want a postgres:// URL", "postgres", "postgresql")
	c.DataDir = r.folder("data-dir")
	c.JWTKeyFile = cmp.Or(*v["jwt-key-file"], filepath.Join(c.DataDir, "jwt-ed25519.pem"))
	c.SecretKeysFile = cmp.Or(*v["secret-keys-file"], filepath.Join(c.DataDir, "secret-keys"))
	c.BlobDir = cmp.Or(*v["blob-dir"], filepath.Join(c.DataDir, "blobs"))
	c.BlobS3URL = r.optional("blob-s3-url", r.s3URL)
	c.JWTIssuer = r.nonEmpty("jwt-issuer")
	c.AccessTokenTTL = r.duration("access-token-ttl", time.Minute, 15*time.Minute)
	c.RefreshTokenTTL = r.duration("refresh-token-ttl", time.Hour, 24*365*time.Hour)
	c.ShutdownTimeout = r.duration("shutdown-timeout", 0, 10*time.Minute)
	c.TrustedProxies = r.prefixes("trusted-proxies")
	c.ReservedNamespaces = r.namespaces("reserved-namespaces")
	c.Quotas = barrage.Quotas{StorageBytes: r.quota("quota-storage-bytes"), Tests: r.quota("quota-tests"),
		Namespaces: r.quota("quota-namespaces"), PendingVersions: r.quota("quota-pending-versions"), Targets: r.quota("quota-targets")}
	c.MaxBodyBytes = r.bytes("max-body-bytes")
	c.MaxFileBytes = r.bytes("max-file-bytes")
	c.MaxPluginBytes = r.bytes("max-plugin-bytes")
	c.LogLevel = r.logLevel("log-level")
	c.LogFormat = r.oneOf("log-format", "want text or json", "text", "json")
	c.PostgresPort = r.port("postgres-port")
	c.DemoAgent = r.boolean("demo-agent")
	c.DemoAgentTargets = r.policy("demo-agent-allow", netpolicy.Policy{Setting: "serve's --demo-agent-allow (BARRAGE_DEMO_AGENT_ALLOW)"})
	c.OpenTargets, c.OpenAllTargets = r.openTargets("open-targets")
	if c.DemoAgent {
		openDemoAgentTargets(c.OpenTargets, c.DemoAgentTargets)
	}
	c.VerifyTargets = r.policy("verify-allow", netpolicy.Policy{Setting: "serve's --verify-allow (BARRAGE_VERIFY_ALLOW)", Holder: "the server's"})
	c.DestinationMaxVUs = int(r.count("destination-max-vus", "want a number of VUs, or 0 for no cap"))
	c.VerifyDNS = r.optional("verify-dns", r.hostPort)
	days := r.count("audit-retention-days", "want a whole number of days, 1 or more")
	if days == 0 || days > 100*365 {
		r.bad("audit-retention-days", "want a whole number of days, 1 to 36500")
	}
	c.AuditRetention = time.Duration(days) * 24 * time.Hour
	c.PublicURL = strings.TrimRight(r.url("public-url", "want an http(s) URL", "https", "http"), "/")
	c.NotifyPolicy = r.policy("notify-allow", netpolicy.Policy{Setting: "serve's --notify-allow (BARRAGE_NOTIFY_ALLOW)", Holder: "the server's"})
	c.NotifyAttempts = int(r.count("notify-attempts", "want a whole number of attempts, 1 to 100"))
	if c.NotifyAttempts < 1 || c.NotifyAttempts > 100 {
		r.bad("notify-attempts", "want a whole number of attempts, 1 to 100")
	}
	c.NotifyBackoff = r.duration("notify-backoff", 10*time.Millisecond, time.Hour)
	c.SMTPAddr = r.optional("smtp-addr", r.hostPort)
	c.SMTPFrom, c.SMTPUsername, c.SMTPPasswordFile = *v["smtp-from"], *v["smtp-username"], *v["smtp-password-file"]
	if _, err := mail.ParseAddress(c.SMTPFrom); c.SMTPAddr != "" && err != nil {
		r.bad("smtp-from", "want the sender's email address, needed with --smtp-addr")
	}
	c.ScheduleMinInterval = r.duration("schedule-min-interval", time.Second, 24*time.Hour)
	return c, errors.Join(r.errs...)
}

// openDemoAgentTargets opens the demo agent's address:port destinations in open, for every
// user's runs on it.
func openDemoAgentTargets(open map[string]bool, demo netpolicy.Policy) {
	for _, ap := range demo.AllowPorts {
		open[netpolicy.JoinDestination(ap.Addr().String(), strconv.Itoa(int(ap.Port())))] = true
	}
}

// reader reads the settings' values by flag name, collecting an error for each that is wrong.
// A reader returns the value as far as it read it, with the error collected.
type reader struct {
	v    map[string]*string
	errs []error
}

// bad collects the reason why the setting of flag name is wrong, naming its flag and its
// environment variable.
func (r *reader) bad(name, reason string) {
	env := ""
	for _, s := range Settings {
		if s.Flag == name {
			env = s.Env
		}
	}
	r.errs = append(r.errs, fmt.Errorf("--%s (%s): %s", name, env, reason))
}

// optional reads the setting name with read when it is given: empty is none.
func (r *reader) optional(name string, read func(name string) string) string {
	if *r.v[name] == "" {
		return ""
	}
	return read(name)
}

// nonEmpty is the setting as it is, which must not be empty.
func (r *reader) nonEmpty(name string) string {
	s := *r.v[name]
	if s == "" {
		r.bad(name, "must not be empty")
	}
	return s
}

// oneOf is the setting as it is, which must be one of values; want says which.
func (r *reader) oneOf(name, want string, values ...string) string {
	s := *r.v[name]
	if !slices.Contains(values, s) {
		r.bad(name, want)
	}
	return s
}

// hostPort is an address to listen on or dial: host:port.
func (r *reader) hostPort(name string) string {
	s := *r.v[name]
	if _, _, err := net.SplitHostPort(s); err != nil {
		r.bad(name, "want host:port, "+err.Error())
	}
	return s
}

// url is a URL of one of schemes, or empty; want says what is wanted.
func (r *reader) url(name, want string, schemes ...string) string {
	s := *r.v[name]
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || !slices.Contains(schemes, u.Scheme) {
		r.bad(name, want)
	}
	return s
}

// s3URL is a bucket's URL, as ParseS3URL reads it.
func (r *reader) s3URL(name string) string {
	s := *r.v[name]
	if _, err := ParseS3URL(s); err != nil {
		r.bad(name, err.Error())
	}
	return s
}

// folder is a folder that must be named, made absolute.
func (r *reader) folder(name string) string {
	s := r.nonEmpty(name)
	if abs, err := filepath.Abs(s); s != "" && err == nil {
		return abs
	}
	return s
}

// duration is a duration from lo to hi, as quantity.ParseDuration reads it.
func (r *reader) duration(name string, lo, hi time.Duration) time.Duration {
	d, err := quantity.ParseDuration(*r.v[name])
	if err != nil {
		r.bad(name, err.Error())
	} else if d < lo || d > hi {
		r.bad(name, fmt.Sprintf("must be between %s and %s", quantity.FormatDuration(lo), quantity.FormatDuration(hi)))
	}
	return d
}

// count is a whole number, 0 or more; want says what is wanted.
func (r *reader) count(name, want string) int64 {
	n, err := strconv.ParseInt(*r.v[name], 10, 64)
	if err != nil || n < 0 {
		r.bad(name, want)
	}
	return n
}

// quota is a quota's bound: a whole number, 0 or more, where 0 bounds nothing.
func (r *reader) quota(name string) int64 {
	return r.count(name, "want a whole number, 0 or more (0 bounds nothing)")
}

// bytes is a size in bytes, from a kilobyte to a gigabyte.
func (r *reader) bytes(name string) int64 {
	n, err := strconv.ParseInt(*r.v[name], 10, 64)
	if err != nil || n < 1024 || n > 1<<30 {
		r.bad(name, "want a number of bytes between 1024 and 1073741824")
	}
	return n
}

// port is a TCP port, or 0 for any free one.
func (r *reader) port(name string) int {
	port, err := strconv.Atoi(*r.v[name])
	if err != nil || port < 0 || port > 65535 {
		r.bad(name, "want a port number, or 0")
	}
	return port
}

// boolean is true or false.
func (r *reader) boolean(name string) bool {
	b, err := strconv.ParseBool(*r.v[name])
	if err != nil {
		r.bad(name, "want true or false")
	}
	return b
}

// logLevel is slog's level: debug, info, warn or error.
func (r *reader) logLevel(name string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(*r.v[name])); err != nil {
		r.bad(name, "want debug, info, warn or error")
	}
	return l
}

// list is the setting's comma-separated items, spaces around them trimmed, empty ones left out.
func (r *reader) list(name string) []string {
	var out []string
	for _, s := range strings.Split(*r.v[name], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// prefixes are comma-separated CIDRs or addresses, as netpolicy.ParsePrefix reads them.
func (r *reader) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range r.list(name) {
		prefix, err := netpolicy.ParsePrefix(s)
		if err != nil {
			r.bad(name, err.Error())
			continue
		}
		out = append(out, prefix)
	}
	return out
}

// namespaces are comma-separated marketplace namespaces.
func (r *reader) namespaces(name string) []string {
	var out []string
	for _, n := range r.list(name) {
		if err := registry.CheckName("namespace", n); err != nil {
			r.bad(name, err.Error())
			continue
		}
		out = append(out, n)
	}
	return out
}

// openTargets are comma-separated host:port destinations, or * for all of them.
func (r *reader) openTargets(name string) (open map[string]bool, all bool) {
	open = map[string]bool{}
	for _, o := range r.list(name) {
		if o == "*" {
			all = true
			continue
		}
		d, err := netpolicy.Destination(o)
		if err != nil {
			r.bad(name, fmt.Sprintf("%q: want host:port or *", o))
			continue
		}
		open[d] = true
	}
	return open, all
}

// policy is p allowing the comma-separated internal destinations the setting names, as
// netpolicy.ParseAllow reads them.
func (r *reader) policy(name string, p netpolicy.Policy) netpolicy.Policy {
	var err error
	if p.Allow, p.AllowPorts, err = netpolicy.ParseAllow(strings.Split(*r.v[name], ",")); err != nil {
		r.bad(name, err.Error())
	}
	return p
}

// LogValue masks secrets, so that logging the config never leaks them.
func (c Config) LogValue() slog.Value {
	proxies := make([]string, len(c.TrustedProxies))
	for i, p := range c.TrustedProxies {
		proxies[i] = p.String()
	}
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("metrics_addr", c.MetricsAddr),
		slog.String("database_url", MaskURL(c.DatabaseURL)),
		slog.String("data_dir", c.DataDir),
		slog.String("jwt_key_file", c.JWTKeyFile),
		slog.String("secret_keys_file", c.SecretKeysFile),
		slog.String("jwt_issuer", c.JWTIssuer),
		slog.Duration("access_token_ttl", c.AccessTokenTTL),
		slog.Duration("refresh_token_ttl", c.RefreshTokenTTL),
		slog.String("trusted_proxies", strings.Join(proxies, ",")),
		slog.Int64("max_body_bytes", c.MaxBodyBytes),
		slog.Int64("max_file_bytes", c.MaxFileBytes),
		slog.String("blob_dir", c.BlobDir),
		slog.String("blob_s3_url", MaskURL(c.BlobS3URL)),
		slog.Int64("max_plugin_bytes", c.MaxPluginBytes),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("postgres_bin", c.PostgresBin),
		slog.Bool("demo_agent", c.DemoAgent),
	)
}

// MaskURL replaces the password of a URL, and any password=... parameter, with "xxxxx".
func MaskURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable, masked)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ParseS3URL reads http(s)://KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX][?region=R].
func ParseS3URL(raw string) (blob.S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User == nil {
		return blob.S3Config{}, errors.New("want http(s)://KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX][?region=R]")
	}
	secret, _ := u.User.Password()
	bucket, prefix, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
	if bucket == "" {
		return blob.S3Config{}, errors.New("name the bucket: http(s)://KEY:SECRET@HOST[:PORT]/BUCKET")
	}
	if prefix != "" {
		prefix += "/"
	}
	return blob.S3Config{Endpoint: u.Scheme + "://" + u.Host, Region: u.Query().Get("region"), Bucket: bucket, Prefix: prefix,
		AccessKey: u.User.Username(), SecretKey: secret}, nil
}
