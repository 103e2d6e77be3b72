package sdk

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// MaxHostPatterns bounds the host:port patterns a plugin may declare, and a run may grant one
// plugin.
const MaxHostPatterns = 32

// HostPattern is a destination a plugin may reach over TCP: a host and a port, as a plugin
// declares what it needs (Plugin.Network) and a run grants it. The host is one of
//
//   - a DNS name: db.example, localhost (matched whatever its case);
//   - a wildcard: *.example.com, any name below example.com (a.example.com, a.b.example.com),
//     not example.com itself;
//   - an IPv4 address, 10.0.0.5, or an IPv6 address in brackets, [2001:db8::5];
//   - * alone, any host: a plugin may declare it (a database plugin whose host the script
//     names), a run may not grant it.
//
// The port is a number from 1 to 65535, always written. Parse one with ParseHostPattern.
type HostPattern struct {
	name     string     // a DNS name, lowercase; the base of a wildcard
	wildcard bool       // *.name
	any      bool       // *
	addr     netip.Addr // an address, when set
	port     uint16
}

// ParseHostPattern reads a host:port pattern strictly: an error says what is wrong with it.
func ParseHostPattern(s string) (HostPattern, error) {
	var p HostPattern
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return p, fmt.Errorf("%q: want host:port, as db.example:5432, *.example.com:443 or 10.0.0.5:5432", s)
	}
	if p.port, err = parsePort(port); err != nil {
		return p, fmt.Errorf("%q: %w", s, err)
	}
	bracketed := strings.HasPrefix(s, "[")
	switch {
	case host == "*":
		p.any = true
	case bracketed:
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return p, fmt.Errorf("%q: want an IPv6 address without a zone between the brackets", s)
		}
		p.addr = a
	case strings.Contains(host, ":"):
		return p, fmt.Errorf("%q: write an IPv6 address in brackets, as [2001:db8::5]:443", s)
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			p.addr = a
			break
		}
		name, wildcard := strings.CutPrefix(strings.ToLower(host), "*.")
		if err := checkDNSName(name); err != nil {
			return p, fmt.Errorf("%q: %w", s, err)
		}
		if wildcard && !strings.Contains(name, ".") {
			return p, fmt.Errorf("%q: a wildcard covers the names below a domain of two labels at least, as *.example.com", s)
		}
		p.name, p.wildcard = name, wildcard
	}
	return p, nil
}

// parsePort reads a port: digits only, no leading zero, 1 to 65535.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// checkDNSName checks a host name, lowercase: labels of letters, digits and '-' (not at
// either end), 63 bytes at most, 253 in all, not all digits at the end (an address is not a
// name), and no final dot.
func checkDNSName(name string) error {
	switch {
	case name == "":
		return errors.New("no host")
	case len(name) > 253:
		return errors.New("the host name is longer than 253 bytes")
	case strings.HasSuffix(name, "."):
		return errors.New("leave out the final dot of the host name")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host name label %q: want 1 to 63 letters, digits or '-', not at either end", l)
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("host name label %q: %q is not a letter, digit or '-' (a wildcard is *. before a name)", l, c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("the host is neither an address nor a name (its last label is a number)")
	}
	return nil
}

// ParseHostPatterns reads a list of patterns, as Plugin.Network or a run's grants: an error
// names the entry by its index.
func ParseHostPatterns(list []string) ([]HostPattern, error) {
	if len(list) > MaxHostPatterns {
		return nil, fmt.Errorf("%d hosts: at most %d", len(list), MaxHostPatterns)
	}
	out := make([]HostPattern, 0, len(list))
	for i, s := range list {
		p, err := ParseHostPattern(s)
		if err != nil {
			return nil, fmt.Errorf("[%d] %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// String is the pattern as it is written, in canonical form (lowercase, IPv6 in brackets).
func (p HostPattern) String() string {
	port := strconv.Itoa(int(p.port))
	switch {
	case p.any:
		return "*:" + port
	case p.addr.IsValid():
		return net.JoinHostPort(p.addr.String(), port)
	case p.wildcard:
		return "*." + p.name + ":" + port
	}
	return p.name + ":" + port
}

// Any says whether the pattern is *:port, every host: a plugin may declare it, a run grants
// named hosts only.
func (p HostPattern) Any() bool { return p.any }

// Match says whether the pattern lets a plugin reach host (a name, or an address without
// brackets) at port. A name matches names only and an address addresses only: a grant of
// 127.0.0.1 does not let a plugin ask for localhost.
func (p HostPattern) Match(host string, port int) bool {
	if port != int(p.port) {
		return false
	}
	if p.any {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.addr.IsValid() && a.Zone() == "" && a.Unmap() == p.addr.Unmap()
	}
	if p.addr.IsValid() {
		return false
	}
	host = strings.ToLower(host)
	if p.wildcard {
		return strings.HasSuffix(host, "."+p.name)
	}
	return host == p.name
}

// Covers says whether every destination q matches also matches p: whether a grant q stays
// within a declared need p.
func (p HostPattern) Covers(q HostPattern) bool {
	switch {
	case p.port != q.port:
		return false
	case p.any:
		return true
	case q.any:
		return false
	case p.addr.IsValid() || q.addr.IsValid():
		return p.addr.IsValid() && q.addr.IsValid() && p.addr.Unmap() == q.addr.Unmap()
	case p.wildcard:
		return q.name == p.name && q.wildcard || strings.HasSuffix(q.name, "."+p.name)
	}
	return !q.wildcard && q.name == p.name
}
