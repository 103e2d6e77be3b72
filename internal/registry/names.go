// Package registry holds the rules of the plugin marketplace that need no server: how plugins
// and their versions are named, and how a version's files are summed and signed (a SHA256SUMS
// signed with the namespace's Ed25519 key, as the Terraform registry does with GPG).
package registry

import (
	"fmt"
	"slices"
	"strings"
)

// Ref names a plugin version: namespace/name@version.
type Ref struct {
	Namespace, Name string
	Version         Version
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name + "@" + r.Version.String() }

// ParseRef reads namespace/name@version, each part checked.
func ParseRef(s string) (Ref, error) {
	plugin, v, ok := strings.Cut(s, "@")
	if !ok {
		return Ref{}, fmt.Errorf("%q: want namespace/name@version, as acme/random-data@1.2.0", s)
	}
	ns, name, ok := strings.Cut(plugin, "/")
	if !ok {
		return Ref{}, fmt.Errorf("%q: want namespace/name@version, as acme/random-data@1.2.0", s)
	}
	if err := CheckName("namespace", ns); err != nil {
		return Ref{}, err
	}
	if err := CheckName("name", name); err != nil {
		return Ref{}, err
	}
	ver, err := ParseVersion(v)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Namespace: ns, Name: name, Version: ver}, nil
}

// MaxNameLen bounds a namespace's and a plugin's name.
const MaxNameLen = 64

// ReservedNamespaces are the names no user may claim on a fresh install: the product's own
// words, the API's path words, and names people would take for the service's (an operator adds
// more with --reserved-namespaces). An admin may reserve one, and then owns it.
var ReservedNamespaces = []string{
	"admin", "administrator", "api", "auth", "barrage", "docs", "help", "internal", "login",
	"marketplace", "me", "namespaces", "null", "official", "plugins", "root", "security", "signup",
	"staff", "support", "system", "tokens", "undefined", "users", "v1", "v2", "verified", "www",
}

// ReservedWords are the product's words and the words of authority: a namespace any of whose
// hyphen-separated words is one of them (barrage-official, official-plugins, acme-verified) is
// one people would take for the service's, or for one it vouches for.
var ReservedWords = []string{"admin", "barrage", "official", "security", "staff", "support", "verified"}

// Reserved says whether the namespace name is one no user may claim: one of
// ReservedNamespaces, or of extra (the operator's list, matched exactly), or a name with a word
// of ReservedWords among its hyphen-separated words.
func Reserved(name string, extra []string) bool {
	if slices.Contains(ReservedNamespaces, name) || slices.Contains(extra, name) {
		return true
	}
	return slices.ContainsFunc(strings.Split(name, "-"), func(w string) bool { return slices.Contains(ReservedWords, w) })
}

// CheckName checks a namespace or a plugin name (what says which): lower-case letters, digits
// and single hyphens inside, starting with a letter, at most MaxNameLen long. Names are what
// users type and read in scripts, URLs and folders: nothing there needs escaping, and two names
// that look alike are the same name.
func CheckName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: empty", what)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s %q: longer than %d characters", what, s, MaxNameLen)
	case s[0] < 'a' || s[0] > 'z':
		return fmt.Errorf("%s %q: must start with a lower-case letter", what, s)
	case s[len(s)-1] == '-':
		return fmt.Errorf("%s %q: must not end with a hyphen", what, s)
	case strings.Contains(s, "--"):
		return fmt.Errorf("%s %q: must not hold two hyphens in a row", what, s)
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("%s %q: only lower-case letters, digits and hyphens", what, s)
		}
	}
	return nil
}
