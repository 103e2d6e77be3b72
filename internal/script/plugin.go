package script

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/sdk"
)

var (
	// pluginUseRe is what a script's use says: a plugin's name, then an exact version or a
	// range that registry.ParseConstraint checks.
	pluginUseRe = regexp.MustCompile(`^((?:[a-z0-9][a-z0-9._-]*/)?([a-z0-9][a-z0-9._-]*))@([\^~]?[0-9][0-9A-Za-z.+-]*)$`)
	pluginRefRe = regexp.MustCompile(`^((?:[a-z0-9][a-z0-9._-]*/)?([a-z0-9][a-z0-9._-]*))@((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)$`)
)

// ParsePluginRef splits a plugin reference, name@version, as scripts write it: a name of
// lowercase letters, digits, '.', '_' and '-' with an optional owner/, and an exact semantic
// version. ok is false for anything else, such as a name or version that would climb out of a
// folder.
func ParsePluginRef(ref string) (name, version string, ok bool) {
	m := pluginRefRe.FindStringSubmatch(ref)
	if m == nil {
		return "", "", false
	}
	return m[1], m[3], true
}

// scopes are the scopes of an element plugin, by the names a script gives them.
var scopes = map[string]Scope{"run": ScopeRun, "vu": ScopeVU, "iteration": ScopeIteration}

// plugins reads the plugins section.
func (d *decoder) plugins(n *yaml.Node, p pos) []*Plugin {
	var out []*Plugin
	seen := make(map[string]bool)
	for i, c := range d.seq(n, p) {
		ep := at(c, index(p.path, i))
		o := d.object(c, ep, "use", "as", "kind", "scope", "config", "network")
		if o == nil {
			continue
		}
		pl := &Plugin{}
		ok := true
		if n, p := o.need("use"); n != nil {
			ref, rok := d.str(n, p)
			m := pluginUseRe.FindStringSubmatch(ref)
			if m != nil {
				if _, err := registry.ParseConstraint(m[3]); err != nil {
					m = nil
				}
			}
			if rok && m == nil {
				d.add(p, "must be name@version with an exact version (random-data@1.2.0) or a range of versions (acme/random-data@^1.2)")
			}
			if m != nil {
				if ns, name, market := strings.Cut(m[1], "/"); market {
					// A marketplace plugin: its names follow the marketplace's rules.
					err := registry.CheckName("namespace", ns)
					if err == nil {
						err = registry.CheckName("name", name)
					}
					if err != nil {
						d.add(p, "%s: a namespaced name is a marketplace plugin's", err)
						m = nil
					}
				}
			}
			if m != nil {
				pl.Ref, pl.Name, pl.Version = ref, m[1], m[3]
				if identRe.MatchString(m[2]) {
					pl.As = m[2]
				}
			}
			ok = ok && m != nil
		} else {
			ok = false
		}
		if n, p := o.get("as"); n != nil {
			as, aok := d.ident(n, p)
			pl.As = as
			ok = ok && aok
		} else if pl.Ref != "" && pl.As == "" {
			d.add(pos{path: field(ep.path, "as"), line: ep.line, col: ep.col}, "required: the plugin's name is not a valid local name")
			ok = false
		}
		if pl.As == SecretAlias {
			d.add(ep, "a plugin may not be named %s: ${%s.NAME} reads your secret NAME; give it another name with as", SecretAlias, SecretAlias)
			ok = false
		} else if pl.As != "" {
			if seen[pl.As] {
				d.add(ep, "another plugin is already named %s; give this one another name with as", quote(pl.As))
				ok = false
			}
			seen[pl.As] = true
		}
		if n, p := o.need("kind"); n != nil {
			s, _ := d.str(n, p)
			switch pl.Kind = KindOf(s); {
			case pl.Kind == 0:
				if isString(n) {
					d.add(p, "must be session-element (produces variables), url (rewrites the requests it is attached to) or source-modifier (rewrites this script before the run)")
				}
				ok = false
			case s != pl.Kind.String():
				d.note(p, "%s is the old spelling of %s, the SDK's and the marketplace's: write %s", s, pl.Kind, pl.Kind)
			}
		} else {
			ok = false
		}
		if n, p := o.get("scope"); n != nil {
			var sok bool
			pl.Scope, sok = choice(d, n, p, scopes, "must be run, vu or iteration")
			ok = ok && sok
		}
		if n, p := o.get("config"); n != nil {
			if d.mapping(n, p) {
				v, vok := d.value(n, p)
				pl.Config, _ = v.(map[string]any)
				ok = ok && vok
			} else {
				ok = false
			}
		}
		if n, p := o.get("network"); n != nil {
			var gok bool
			pl.Network, gok = d.grants(n, p)
			ok = ok && gok
		}
		if ok {
			out = append(out, pl)
		}
	}
	return out
}

// grants reads a plugin's network: the hosts the script lets it reach, as host:port.
func (d *decoder) grants(n *yaml.Node, p pos) ([]Grant, bool) {
	items := d.seq(n, p)
	if n.Kind != yaml.SequenceNode {
		return nil, false
	}
	if len(items) > sdk.MaxHostPatterns {
		d.add(p, "grants %d hosts; at most %d", len(items), sdk.MaxHostPatterns)
		return nil, false
	}
	var out []Grant
	ok := true
	seen := make(map[string]bool)
	for i, c := range items {
		gp := at(c, index(p.path, i))
		s, sok := d.str(c, gp)
		if !sok {
			ok = false
			continue
		}
		h, err := sdk.ParseHostPattern(s)
		switch {
		case err != nil:
			d.add(gp, "%v", err)
		case h.Any():
			d.add(gp, "%q grants every host: name the hosts the plugin may reach", s)
		case seen[h.String()]:
			d.add(gp, "repeats %s", h)
		default:
			seen[h.String()] = true
			out = append(out, Grant{Host: h, Path: gp.path, Line: gp.line, Column: gp.col})
			continue
		}
		ok = false
	}
	return out, ok
}

func findPlugin(plugins []*Plugin, as string) *Plugin {
	for _, p := range plugins {
		if p.As == as {
			return p
		}
	}
	return nil
}
