package pluginset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/registry"
)

// A Source holds plugins by name and version: the local plugin directory (Dir), or the
// marketplace plugins a script pins, fetched into a verified cache (Market).
type Source interface {
	// Locate finds name@version, ready to start: what it declares and its binary on this
	// machine. A plugin the source does not have is barrage.ErrNotFound.
	Locate(ctx context.Context, name, version string) (Located, error)
}

// Located is a plugin a Source holds.
type Located struct {
	// Manifest is what the plugin declares (Network) and its binary's digest (SHA256), which
	// the plugin host checks again when it starts it.
	Manifest Manifest
	// Path is the binary.
	Path string
	// Pin is how a script pins it (without its alias and kind): by the binary's digest for a
	// plugin of the directory, by its version's signed SHA256SUMS for a marketplace one.
	Pin barrage.PluginPin
}

// Sources is the first of several sources that has a plugin.
type Sources []Source

// Locate implements Source.
func (ss Sources) Locate(ctx context.Context, name, version string) (Located, error) {
	var err error
	for _, s := range ss {
		var loc Located
		if loc, err = s.Locate(ctx, name, version); err == nil || !errors.Is(err, barrage.ErrNotFound) {
			return loc, err
		}
	}
	if err == nil {
		err = barrage.Errorf(barrage.ErrNotFound, "plugin %s@%s: no plugin source", name, version)
	}
	return Located{}, err
}

// OwnPlugins is a source's plugins named without a namespace, alone. On an agent, a
// namespaced name is a marketplace plugin, which the script's pins give (Market): one in the
// agent's directory is never taken for it.
type OwnPlugins struct{ Source Source }

// Locate implements Source.
func (o OwnPlugins) Locate(ctx context.Context, name, version string) (Located, error) {
	if strings.Contains(name, "/") {
		return Located{}, barrage.Errorf(barrage.ErrNotFound, "plugin %s@%s is a marketplace plugin that the script does not pin", name, version)
	}
	return o.Source.Locate(ctx, name, version)
}

// Locate implements Source: the directory's manifest of name@version and its binary. A range
// of versions (^1.2) locates the newest version of the directory that it matches.
func (d Dir) Locate(_ context.Context, name, version string) (Located, error) {
	if c, err := registry.ParseConstraint(version); err == nil && !c.Exact() {
		if version, err = d.newest(name, c); err != nil {
			return Located{}, err
		}
	}
	m, err := d.manifest(name, version)
	if err != nil {
		return Located{}, err
	}
	return Located{Manifest: *m, Path: d.spec(m).Path, Pin: barrage.PluginPin{Name: m.Name, Version: m.Version, SHA256: m.SHA256}}, nil
}

// newest is the newest version of name in the directory that c matches.
func (d Dir) newest(name string, c registry.Constraint) (string, error) {
	folder, err := d.folder(name, "0.0.0")
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(filepath.Dir(folder))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var versions []string
	for _, e := range entries {
		versions = append(versions, e.Name())
	}
	v, ok := c.Newest(versions)
	if !ok {
		return "", barrage.Errorf(barrage.ErrNotFound, "no version of plugin %s in %s matches %s", name, d, c)
	}
	return v, nil
}

// matches says whether version, as a script writes it (exact, or a range), accepts exact.
func matches(version, exact string) bool {
	c, err := registry.ParseConstraint(version)
	if err != nil {
		return false
	}
	v, err := registry.ParseVersion(exact)
	return err == nil && c.Matches(v)
}
