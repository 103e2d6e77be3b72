package script

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"
)

// sourceAddrs reads source_addresses: one address or range, or a list of them.
func (d *decoder) sourceAddrs(n *yaml.Node, p pos) []netip.Addr {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			d.add(p, "must list at least one address")
			return nil
		}
	}
	var out []netip.Addr
	seen := make(map[netip.Addr]bool)
	for i, c := range items {
		cp := p
		if n.Kind == yaml.SequenceNode {
			cp = at(c, index(p.path, i))
		}
		s, ok := d.str(c, cp)
		if !ok {
			continue
		}
		addrs, err := parseAddrs(s, MaxSourceAddrs-len(out))
		if err != nil {
			d.add(cp, "%s", err)
			if errors.Is(err, errTooManyAddrs) {
				return nil
			}
			continue
		}
		for _, a := range addrs {
			if seen[a] {
				d.add(cp, "repeats address %s", a)
				return nil
			}
			seen[a] = true
		}
		out = append(out, addrs...)
	}
	return out
}

var errTooManyAddrs = fmt.Errorf("more than %d source addresses", MaxSourceAddrs)

// parseAddrs reads an address such as 127.0.0.2 or ::1, or an inclusive range of one family
// such as 127.0.0.2-127.0.0.20, into at most limit addresses.
func parseAddrs(s string, limit int) ([]netip.Addr, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	first, err := parseUnicast(strings.TrimSpace(lo))
	if err != nil {
		return nil, err
	}
	if !isRange {
		if limit < 1 {
			return nil, errTooManyAddrs
		}
		return []netip.Addr{first}, nil
	}
	last, err := parseUnicast(strings.TrimSpace(hi))
	if err != nil {
		return nil, err
	}
	if first.Is4() != last.Is4() || first.Zone() != last.Zone() {
		return nil, fmt.Errorf("range %s mixes address families or zones", s)
	}
	if last.Less(first) {
		return nil, fmt.Errorf("range %s ends before it starts", s)
	}
	var out []netip.Addr
	for a := first; a.IsValid() && !last.Less(a); a = a.Next() {
		if len(out) >= limit {
			return nil, errTooManyAddrs
		}
		out = append(out, a)
	}
	return out, nil
}

func parseUnicast(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	}
	a = a.Unmap()
	if a.IsUnspecified() || a.IsMulticast() || (a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255})) {
		return netip.Addr{}, fmt.Errorf("%s is not a unicast address", a)
	}
	return a, nil
}
