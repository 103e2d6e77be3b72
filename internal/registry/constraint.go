package registry

import (
	"fmt"
	"strings"
)

// Constraint is the versions a script accepts of a plugin: an exact version (1.2.3), or a
// range as Cargo and npm write them: ^1.2 (1.2.0 and later, before 2.0.0; ^0.2 stops before
// 0.3.0, ^0.0.3 is 0.0.3 alone) or ~1.2 (1.2.0 and later, before 1.3.0). A range never matches
// a prerelease: those are chosen by their exact version. Generation pins a range to the
// newest version it matches.
type Constraint struct {
	op    byte // 0: exact, '^' or '~'
	v     Version
	parts int // how many numbers the range gave: 1, 2 or 3
}

// ParseConstraint reads an exact version or a ^ or ~ range.
func ParseConstraint(s string) (Constraint, error) {
	if s == "" || (s[0] != '^' && s[0] != '~') {
		v, err := ParseVersion(s)
		return Constraint{v: v, parts: 3}, err
	}
	op, rest := s[0], s[1:]
	nums := strings.Split(rest, ".")
	if len(nums) > 3 || rest == "" {
		return Constraint{}, fmt.Errorf("version range %q: want %c and one to three numbers, as in %c1.2", s, op, op)
	}
	full := rest + strings.Repeat(".0", 3-len(nums))
	v, err := ParseVersion(full)
	if err != nil || len(v.Pre) > 0 || v.Build != "" {
		return Constraint{}, fmt.Errorf("version range %q: want %c and one to three numbers, as in %c1.2", s, op, op)
	}
	return Constraint{op: op, v: v, parts: len(nums)}, nil
}

// Exact says whether c is one version.
func (c Constraint) Exact() bool { return c.op == 0 }

// Matches says whether v is a version c accepts.
func (c Constraint) Matches(v Version) bool {
	if c.op == 0 {
		return c.v.Compare(v) == 0
	}
	if len(v.Pre) > 0 || v.Compare(c.v) < 0 {
		return false
	}
	return v.Compare(c.upper()) < 0
}

// upper is the first version past a range.
func (c Constraint) upper() Version {
	v := c.v
	switch {
	case c.op == '~' && c.parts == 1, c.op == '^' && v.Major > 0, c.op == '^' && c.parts == 1:
		return Version{Major: v.Major + 1}
	case c.op == '~', v.Minor > 0, c.parts == 2:
		return Version{Major: v.Major, Minor: v.Minor + 1}
	}
	return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}
}

func (c Constraint) String() string {
	if c.op == 0 {
		return c.v.String()
	}
	nums := []uint64{c.v.Major, c.v.Minor, c.v.Patch}[:c.parts]
	s := make([]string, len(nums))
	for i, n := range nums {
		s[i] = fmt.Sprint(n)
	}
	return string(c.op) + strings.Join(s, ".")
}

// Newest is the newest of versions that c matches, and whether there is one. Versions that
// do not parse are skipped.
func (c Constraint) Newest(versions []string) (string, bool) {
	var best Version
	found := ""
	for _, s := range versions {
		v, err := ParseVersion(s)
		if err != nil || !c.Matches(v) {
			continue
		}
		if found == "" || v.Compare(best) > 0 {
			best, found = v, s
		}
	}
	return found, found != ""
}

// Pick is the version of versions a range is pinned to: the newest published version it
// matches, else the newest deprecated one (still usable, and warned about). Each version is
// read with its state ("published", "deprecated", or another, skipped).
func Pick[V any](c Constraint, versions []V, read func(V) (version, state string)) (string, bool) {
	var published, deprecated []string
	for _, v := range versions {
		switch version, state := read(v); state {
		case "published":
			published = append(published, version)
		case "deprecated":
			deprecated = append(deprecated, version)
		}
	}
	if v, ok := c.Newest(published); ok {
		return v, true
	}
	return c.Newest(deprecated)
}
