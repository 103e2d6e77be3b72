package pluginset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// A plugin reaches the network only where its manifest declares a need (Manifest.Network) and
// the run grants it: the script, with network on the plugin's entry, or whoever runs it, with
// Options.Grants. The host enforces the grants (pluginhost.Spec.Network); this file checks
// that they stay within the need, and that no source plugin adds one.

// grantsOf is every grant the run gives sp: the script's, then those given beside it.
func grantsOf(sp *script.Plugin, opts Options) []script.Grant {
	return append(slices.Clone(sp.Network), opts.Grants[sp.As]...)
}

// hosts are the patterns of grants.
func hosts(grants []script.Grant) []sdk.HostPattern {
	out := make([]sdk.HostPattern, len(grants))
	for i, g := range grants {
		out[i] = g.Host
	}
	return out
}

// grantError is a script error at the grant's place: its line in the script, or what it was
// given as.
func grantError(file string, g script.Grant, format string, args ...any) *script.Error {
	e := &script.Error{Line: g.Line, Column: g.Column, Path: g.Path, Message: fmt.Sprintf(format, args...)}
	if g.Line > 0 {
		e.File = file
	}
	return e
}

// checkGrants checks, from the manifests alone and before any plugin starts, that the run grants
// each plugin of s only hosts within what it declares it needs. file names the script.
func checkGrants(ctx context.Context, s *script.Script, opts Options, file string) error {
	var list script.ErrorList
	for _, as := range slices.Sorted(maps.Keys(opts.Grants)) {
		if extra := opts.Grants[as]; len(extra) > 0 && !slices.ContainsFunc(s.Plugins, func(sp *script.Plugin) bool { return sp.As == as }) {
			list = append(list, grantError(file, extra[0], "no plugin of the script is named %s", as))
		}
	}
	for _, sp := range s.Plugins {
		grants := grantsOf(sp, opts)
		if len(grants) == 0 {
			continue
		}
		loc, err := opts.Source.Locate(ctx, sp.Name, sp.Version)
		if err != nil {
			return err
		}
		m := loc.Manifest
		need, err := sdk.ParseHostPatterns(m.Network)
		if err != nil {
			return err
		}
		if len(grants) > sdk.MaxHostPatterns {
			list = append(list, grantError(file, grants[0], "%d hosts granted to %s: at most %d", len(grants), sp.Ref, sdk.MaxHostPatterns))
			continue
		}
		for _, g := range grants {
			if slices.ContainsFunc(need, func(n sdk.HostPattern) bool { return n.Covers(g.Host) }) {
				continue
			}
			if len(need) == 0 {
				list = append(list, grantError(file, g, "grants %s to %s, which declares no need of the network", g.Host, sp.Ref))
			} else {
				list = append(list, grantError(file, g, "grants %s to %s, which declares it needs only %s", g.Host, sp.Ref, strings.Join(m.Network, ", ")))
			}
		}
	}
	if len(list) > 0 {
		return list
	}
	return nil
}

// checkSourcesGrantNothing refuses a script that source plugins rewrote (after) with a grant
// that the script they rewrote (before) does not give: a source plugin is a stranger's code
// too, and may not open the network to another. A plugin the run grants hosts may not be
// swapped for another either. file names the rewritten script.
func checkSourcesGrantNothing(before, after *script.Script, opts Options, file string) error {
	var list script.ErrorList
	for _, a := range after.Plugins {
		if len(grantsOf(a, opts)) == 0 {
			continue
		}
		i := slices.IndexFunc(before.Plugins, func(b *script.Plugin) bool { return b.As == a.As })
		if i < 0 || before.Plugins[i].Ref != a.Ref {
			list = append(list, &script.Error{File: file, Path: "plugins." + a.As,
				Message: fmt.Sprintf("source plugins made this %s, which the run grants hosts to, where the script has another plugin: grants are for the plugins the script names", a.Ref)})
			continue
		}
		for _, g := range a.Network {
			if !slices.ContainsFunc(before.Plugins[i].Network, func(b script.Grant) bool { return b.Host == g.Host }) {
				list = append(list, grantError(file, g, "source plugins granted %s to %s, which the script does not: a source plugin grants no network", g.Host, a.Ref))
			}
		}
	}
	if len(list) > 0 {
		return list
	}
	return nil
}
