// Package netpolicy decides where an agent's load may go. An agent runs strangers' scripts; left
// alone, a script could aim the load at the agent's own network: the server's database on
// loopback, a private service, a cloud's metadata address. A Policy refuses those destinations
// unless its operator allows them, and it is checked on the address actually dialled (after name
// resolution, for every connection, redirects included), so a name that resolves to a refused
// address, or changes what it resolves to between lookups, gets nowhere.
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrRefused is wrapped by the error of every dial a Policy refuses.
var ErrRefused = errors.New("the agent's policy refuses this destination")

// Policy says which destination addresses the load may reach. The nil Policy allows all (a local
// `barrage run` aims where its user says); the zero Policy refuses every internal address.
type Policy struct {
	// Internal allows every internal address (loopback, private, link-local...): for an
	// operator whose agent is meant to test their own network.
	Internal bool
	// Allow lists addresses allowed however internal they are.
	Allow []netip.Prefix
	// AllowPorts lists single services allowed however internal their address is: that
	// address and port, and no other port of it.
	AllowPorts []netip.AddrPort
	// Setting names, for a refusal's message, the setting with which the policy's operator
	// allows more ("--allow-target" when empty); Holder whose policy it is ("the agent's" when
	// empty).
	Setting, Holder string
	// Destinations, when not nil, are the only hosts and ports the load may reach, by the
	// name it dials ("shop.example.com:443", "127.0.0.1:8080"; see Destination): those a
	// shared agent's run may load because its owner proved control of them. A destination
	// pinned to an address is dialled at that address alone, whatever its name resolves to
	// (the address that proved control); one with the zero Addr at whatever it resolves to.
	// Each address dialled must also pass the rules above.
	Destinations map[string]netip.Addr
}

// internal are the ranges refused unless allowed: loopback, RFC 1918 and unique-local private
// networks, link-local (with cloud metadata at 169.254.169.254), carrier-grade NAT, the
// "this network" and unspecified addresses, multicast, and IPv6's ways of writing an IPv4
// address (IPv4-compatible, NAT64).
var internal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),          // the unspecified and loopback addresses, and IPv4-compatible ones (::127.0.0.1)
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64's well-known prefix: an IPv4 address behind it
	netip.MustParsePrefix("64:ff9b:1::/48"), // NAT64's local-use prefix
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// refused is a refusal (errors.Is ErrRefused) worded for the policy's holder.
func (p *Policy) refused(format string, args ...any) error {
	holder := "the agent's"
	if p != nil && p.Holder != "" {
		holder = p.Holder
	}
	return &refusal{msg: holder + " policy refuses this destination: " + fmt.Sprintf(format, args...)}
}

type refusal struct{ msg string }

func (e *refusal) Error() string        { return e.msg }
func (e *refusal) Is(target error) bool { return target == ErrRefused }

// Check returns nil when the load may reach addr, else an error wrapping ErrRefused that names
// the address and the rule.
func (p *Policy) Check(addr netip.Addr) error {
	if p == nil || !addr.IsValid() {
		return nil
	}
	// A zone (fe80::1%eth0) names an interface, not another address: a prefix contains no
	// address with one, so it goes before the address is judged.
	addr = addr.Unmap().WithZone("")
	for _, a := range p.Allow {
		if a.Contains(addr) {
			return nil
		}
	}
	if p.Internal {
		return nil
	}
	for _, r := range internal {
		if r.Contains(addr) {
			setting := p.Setting
			if setting == "" {
				setting = "--allow-target"
			}
			return p.refused("%s is internal (%s); its operator can allow it with %s", addr, r, setting)
		}
	}
	return nil
}

// Control is a net.Dialer Control function that refuses the dial before any packet is sent
// when the address it connects to is refused.
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return p.refused("cannot read the address %q", address)
	}
	return p.CheckAddrPort(ap)
}

// CheckAddrPort is Check for a connection to ap, which AllowPorts may allow.
func (p *Policy) CheckAddrPort(ap netip.AddrPort) error {
	if p != nil {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		for _, a := range p.AllowPorts {
			if a == ap {
				return nil
			}
		}
	}
	return p.Check(ap.Addr())
}

// CheckDestination returns where the load may dial hostport, a host (a name or an address) and
// a port: hostport itself, or the address it is pinned to with its port. Without Destinations,
// hostport; else an error wrapping ErrRefused for a destination not among them.
func (p *Policy) CheckDestination(hostport string) (string, error) {
	if p == nil || p.Destinations == nil {
		return hostport, nil
	}
	d, err := Destination(hostport)
	if err != nil {
		return "", p.refused("%v", err)
	}
	pinned, ok := p.Destinations[d]
	switch {
	case !ok:
		return "", p.refused("%s is not a target the run's owner proved control of (register and verify it: barrage targets add)", d)
	case pinned.IsValid():
		_, port, _ := net.SplitHostPort(d)
		return net.JoinHostPort(pinned.String(), port), nil
	}
	return hostport, nil
}

// FormatDestination writes a destination and the address it is pinned to, if any, as one
// string: "shop.example.com:443@203.0.113.7", or "shop.example.com:443" alone.
func FormatDestination(dest string, pinned netip.Addr) string {
	if !pinned.IsValid() {
		return dest
	}
	return dest + "@" + pinned.String()
}

// ParseDestinations reads what FormatDestination wrote into a Policy's Destinations.
func ParseDestinations(list []string) (map[string]netip.Addr, error) {
	out := make(map[string]netip.Addr, len(list))
	for _, s := range list {
		dest, at, pinned := strings.Cut(s, "@")
		d, err := Destination(dest)
		if err != nil {
			return nil, err
		}
		var a netip.Addr
		if pinned {
			if a, err = netip.ParseAddr(at); err != nil {
				return nil, fmt.Errorf("destination %q: %w", s, err)
			}
		}
		out[d] = a
	}
	return out, nil
}

// Destination is hostport as Destinations keys it: the host in lower case without a trailing
// dot, an address in its canonical form, and the port.
func Destination(hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", fmt.Errorf("cannot read the destination %q: %w", hostport, err)
	}
	return JoinDestination(host, port), nil
}

// JoinDestination is Destination of a host and a port given apart.
func JoinDestination(host, port string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		host = a.Unmap().WithZone("").String()
	}
	return net.JoinHostPort(host, port)
}

// Dialer dials through a Policy: the destination by name first, then each address dialled.
type Dialer struct {
	net.Dialer
	policy *Policy
}

// Dialer returns a Dialer that applies p to d (and no policy when p is nil).
func (p *Policy) Dialer(d net.Dialer) *Dialer {
	if p != nil {
		d.Control = p.Control
	}
	return &Dialer{Dialer: d, policy: p}
}

// DialContext connects to address on the named network, or refuses before any packet is sent.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	at, err := d.policy.CheckDestination(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	return d.Dialer.DialContext(ctx, network, at)
}

// Dial is DialContext without a context.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// ParseAllow reads what --allow-target takes: CIDRs (10.0.0.0/8), addresses (10.0.0.5), and
// addresses with a port (10.0.0.5:443, [::1]:8081) that allow that one service.
func ParseAllow(list []string) ([]netip.Prefix, []netip.AddrPort, error) {
	var (
		prefixes []netip.Prefix
		ports    []netip.AddrPort
	)
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := ParsePrefix(s); err == nil {
			prefixes = append(prefixes, p)
			continue
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8), an address, nor an address and port (127.0.0.1:8081)", s)
		}
		ports = append(ports, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	return prefixes, ports, nil
}

// ParsePrefix reads a CIDR (10.0.0.0/8, masked) or a single address (a prefix of its length).
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR or address", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
