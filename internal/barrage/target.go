package barrage

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/netpolicy"
)

// Target is a host and port a user registered to load from shared agents, which load only what
// their runs' owners proved they control: by serving the target's token at VerifyPath. The token
// is the target's alone: another account registering the same host gets another one.
type Target struct {
	ID        uuid.UUID
	OwnerID   uuid.UUID // who registered it: it counts against their quota
	ProjectID uuid.UUID // whose members it is proved for
	Scheme    string    // http or https: how the proof is fetched
	Host      string    // a name in lower case, or an address
	Port      int
	Token     string
	// VerifiedAt is when the latest check proved control; nil when it never did or the
	// latest check failed (CheckError says why).
	VerifiedAt *time.Time
	CheckedAt  *time.Time
	CheckError string
	// Address is the address that served the proof at the latest check, which shared agents
	// load alone for the host: the name's owner may point it elsewhere since.
	Address   netip.Addr
	CreatedAt time.Time
	// Open says the server's operator opened the destination to every user: runs need no proof
	// for it (not stored: the server's settings say).
	Open bool
}

// MaxTargets is how many targets one account may register.
const MaxTargets = 50

// Verified reports whether the latest check proved control.
func (t Target) Verified() bool { return t.VerifiedAt != nil }

// Destination is the target as a shared agent's policy names it (netpolicy.Destination).
func (t Target) Destination() string {
	return netpolicy.JoinDestination(t.Host, strconv.Itoa(t.Port))
}

// Pinned is the destination pinned to the address that proved control, as a run carries it
// (netpolicy.FormatDestination).
func (t Target) Pinned() string { return netpolicy.FormatDestination(t.Destination(), t.Address) }

// Origin is the target's URL: scheme, host, and the port unless it is the scheme's own.
func (t Target) Origin() string {
	u := url.URL{Scheme: t.Scheme, Host: net.JoinHostPort(t.Host, strconv.Itoa(t.Port))}
	if DefaultPort(t.Scheme) == t.Port {
		u.Host = t.Host
		if strings.Contains(t.Host, ":") {
			u.Host = "[" + t.Host + "]"
		}
	}
	return u.String()
}

// VerifyPath is where the target serves its token to prove control, as the file's whole body.
func (t Target) VerifyPath() string { return "/barrage-verify-" + t.Token + ".txt" }

// VerifyURL is the address the check fetches.
func (t Target) VerifyURL() string { return t.Origin() + t.VerifyPath() }

// ParseTarget reads a target's URL (http(s)://host[:port], nothing after the port but a "/")
// into a Target's scheme, host and port.
func ParseTarget(raw string) (Target, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return Target{}, Invalid("url", "must be an http(s) URL with a host, such as https://shop.example.com or http://127.0.0.1:8080")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Target{}, Invalid("url", "names a host and a port alone: leave out credentials, the path, the query and the fragment")
	}
	port := DefaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, Invalid("url", fmt.Sprintf("port %q is not between 1 and 65535", p))
		}
		port = n
	}
	host, _, _ := net.SplitHostPort(netpolicy.JoinDestination(u.Hostname(), "0"))
	if utf8.RuneCountInString(host) > 253 {
		return Target{}, Invalid("url", "the host is longer than 253 characters")
	}
	return Target{Scheme: u.Scheme, Host: host, Port: port}, nil
}

// DefaultPort is the port of an http(s) URL that names none.
func DefaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}
