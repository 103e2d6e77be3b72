package registry

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Version is a SemVer 2.0.0 version: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], without a leading
// v, exactly as semver.org's grammar has it.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // dot-separated identifiers after -
	Build               string   // after +, ignored by precedence
}

// ParseVersion reads s strictly: three numbers without leading zeros, identifiers of
// [0-9A-Za-z-], numeric prerelease identifiers without leading zeros.
func ParseVersion(s string) (Version, error) {
	bad := func(why string) (Version, error) {
		return Version{}, fmt.Errorf("version %q is not SemVer 2.0 (MAJOR.MINOR.PATCH[-PRE][+BUILD]): %s", s, why)
	}
	rest, build, hasBuild := strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return bad("want three numbers")
	}
	var parts [3]uint64
	for i, n := range nums {
		if !numeric(n) {
			return bad(fmt.Sprintf("%q is not a number without leading zeros", n))
		}
		u, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return bad(fmt.Sprintf("%q is too large", n))
		}
		parts[i] = u
	}
	v := Version{Major: parts[0], Minor: parts[1], Patch: parts[2]}
	if hasPre {
		v.Pre = strings.Split(pre, ".")
		for _, id := range v.Pre {
			if !identifier(id) {
				return bad(fmt.Sprintf("prerelease identifier %q", id))
			}
			if allDigits(id) && !numeric(id) {
				return bad(fmt.Sprintf("numeric prerelease identifier %q has a leading zero", id))
			}
		}
	}
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if !identifier(id) {
				return bad(fmt.Sprintf("build identifier %q", id))
			}
		}
		v.Build = build
	}
	return v, nil
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare orders versions by SemVer's precedence: numbers, then a prerelease before its
// release, prerelease identifiers one by one (numbers below words). Build metadata does not
// count: 1.0.0+a and 1.0.0+b compare equal.
func (v Version) Compare(o Version) int {
	if c := cmp.Or(cmp.Compare(v.Major, o.Major), cmp.Compare(v.Minor, o.Minor), cmp.Compare(v.Patch, o.Patch)); c != 0 {
		return c
	}
	switch {
	case len(v.Pre) == 0 && len(o.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(o.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(o.Pre); i++ {
		a, b := v.Pre[i], o.Pre[i]
		an, bn := allDigits(a), allDigits(b)
		var c int
		switch {
		case an && bn:
			x, _ := strconv.ParseUint(a, 10, 64)
			y, _ := strconv.ParseUint(b, 10, 64)
			c = cmp.Compare(x, y)
		case an:
			c = -1
		case bn:
			c = 1
		default:
			c = strings.Compare(a, b)
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(v.Pre), len(o.Pre))
}

func numeric(s string) bool { return allDigits(s) && (s == "0" || s[0] != '0') }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '-' {
			return false
		}
	}
	return true
}
