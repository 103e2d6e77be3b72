package pluginset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// Dir is the local plugin directory, where `barrage run` finds plugins until the marketplace
// hands them out: one folder per plugin and version, holding the binary and a manifest.
//
//	DIR/random-data/1.0.0/plugin.json   {"name", "version", "kinds", "binary", "sha256"}
//	DIR/random-data/1.0.0/random-data
//	DIR/acme/hmac-sign/0.3.1/...
type Dir string

// Manifest describes one plugin version in a Dir.
type Manifest struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Description string     `json:"description,omitempty"`
	Kinds       []sdk.Kind `json:"kinds"`
	Binary      string     `json:"binary"` // file name, beside the manifest
	SHA256      string     `json:"sha256"`
	// Network is what the plugin declares it needs to reach (sdk.Plugin.Network): a run may
	// grant it hosts within these, and no others.
	Network []string `json:"network,omitempty"`
}

const manifestName = "plugin.json"

// DefaultDir is $BARRAGE_PLUGIN_DIR, else $XDG_DATA_HOME/barrage/plugins, else
// ~/.local/share/barrage/plugins.
func DefaultDir(getenv func(string) string) Dir {
	if d := getenv("BARRAGE_PLUGIN_DIR"); d != "" {
		return Dir(d)
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return Dir(filepath.Join(d, "barrage", "plugins"))
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return Dir(filepath.Join(home, ".local", "share", "barrage", "plugins"))
}

// folder is where name@version lives. Both come from a script or from a plugin binary, so they
// are checked to be a plugin reference, which keeps the folder inside the directory.
func (d Dir) folder(name, version string) (string, error) {
	if _, _, ok := script.ParsePluginRef(name + "@" + version); !ok {
		return "", barrage.Invalid("plugin", fmt.Sprintf("%q@%q is not name@version with an exact semantic version", name, version))
	}
	f := filepath.Join(string(d), filepath.FromSlash(name), version)
	if rel, err := filepath.Rel(string(d), f); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", barrage.Invalid("plugin", fmt.Sprintf("%s@%s names a folder outside %s", name, version, d))
	}
	return f, nil
}

// spec is the spec of the plugin m describes, m read from d.
func (d Dir) spec(m *Manifest) pluginhost.Spec {
	folder, _ := d.folder(m.Name, m.Version) // checked by manifest
	return pluginhost.Spec{Name: m.Name, Version: m.Version, SHA256: m.SHA256, Path: filepath.Join(folder, m.Binary)}
}

func (d Dir) manifest(name, version string) (*Manifest, error) {
	folder, err := d.folder(name, version)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(folder, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		how := "add it with `barrage plugin add BINARY`"
		if strings.Contains(name, "/") {
			how = fmt.Sprintf("install it from the marketplace with `barrage plugin install %s@%s`", name, version)
		}
		return nil, barrage.Errorf(barrage.ErrNotFound, "plugin %s@%s is not in %s; %s", name, version, d, how)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(folder, manifestName), err)
	}
	if m.Name != name || m.Version != version || m.Binary == "" || strings.ContainsAny(m.Binary, `/\`) || m.Binary == ".." || len(m.SHA256) != 64 {
		return nil, fmt.Errorf("%s: the manifest does not describe %s@%s", filepath.Join(folder, manifestName), name, version)
	}
	if _, err := sdk.ParseHostPatterns(m.Network); err != nil {
		return nil, fmt.Errorf("%s: network: %w", filepath.Join(folder, manifestName), err)
	}
	return &m, nil
}

// List returns every plugin version in the directory, sorted by name then version.
func (d Dir) List() ([]Manifest, error) {
	var out []Manifest
	err := filepath.WalkDir(string(d), func(path string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == string(d) {
				return filepath.SkipAll
			}
			return err
		}
		if e.IsDir() || e.Name() != manifestName {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, m)
		return nil
	})
	slices.SortFunc(out, func(a, b Manifest) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out, err
}

// Add starts the plugin binary at path (checked against its own sha256 now), asks it what it
// is, and copies it into the directory with its manifest. An existing version is replaced only
// by the same bytes: a version's binary never changes.
func (d Dir) Add(ctx context.Context, h *pluginhost.Host, path string) (*Manifest, error) {
	return d.add(ctx, h, path, "", "")
}

// AddAs adds the plugin binary at path as Add does, under the marketplace name ref
// (namespace/name@version) it was fetched as: the plugin must say it is that version, and
// that plugin (by its bare name or its marketplace name).
func (d Dir) AddAs(ctx context.Context, h *pluginhost.Host, path, name, version string) (*Manifest, error) {
	return d.add(ctx, h, path, name, version)
}

func (d Dir) add(ctx context.Context, h *pluginhost.Host, path, name, version string) (*Manifest, error) {
	sum, err := FileSHA256(path)
	if err != nil {
		return nil, err
	}
	// The name and version are unknown until the plugin says them: start it under a
	// provisional spec whose name check is skipped by describing first.
	info, err := h.Describe(ctx, path, sum)
	if err != nil {
		return nil, err
	}
	// The name and version come from the plugin itself: untrusted, and they make a path.
	if _, _, ok := script.ParsePluginRef(info.Name + "@" + info.Version); !ok {
		return nil, barrage.Invalid("plugin", fmt.Sprintf("%s says it is %q@%q: want a name of lowercase letters, digits, '.', '_' and '-' and an exact semantic version", path, info.Name, info.Version))
	}
	if _, err := sdk.ParseHostPatterns(info.Network); err != nil {
		return nil, barrage.Invalid("network", fmt.Sprintf("%s declares what it needs to reach wrongly: network: %v", path, err))
	}
	if name == "" && strings.Contains(info.Name, "/") {
		return nil, barrage.Invalid("plugin", fmt.Sprintf("%s says it is %s: a name with a namespace is a marketplace plugin's; "+
			"publish it (barrage plugin publish) and install it, or give the plugin a name without one", path, info.Name))
	}
	if name != "" {
		if info.Version != version || !pluginhost.SameName(info.Name, name) {
			return nil, barrage.Invalid("plugin", fmt.Sprintf("%s says it is %s@%s, not %s@%s", path, info.Name, info.Version, name, version))
		}
		info.Name = name
	}
	m := &Manifest{Name: info.Name, Version: info.Version, Description: info.Description, Kinds: info.Kinds,
		Binary: filepath.Base(filepath.FromSlash(info.Name)), SHA256: sum, Network: info.Network}
	if old, err := d.manifest(m.Name, m.Version); err == nil {
		if old.SHA256 != m.SHA256 {
			return nil, barrage.Errorf(barrage.ErrConflict, "%s@%s is already in %s with other bytes (sha256 %s); a version never changes: give this build a new version", m.Name, m.Version, d, old.SHA256)
		}
		return old, nil
	}
	folder, err := d.folder(m.Name, m.Version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return nil, err
	}
	if err := copyFile(path, filepath.Join(folder, m.Binary), 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(folder, manifestName), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

// FileSHA256 is the hex SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Spool copies r into a new file in dir, at most max bytes, and returns the file and the hex
// SHA-256 of what it holds. More than max bytes is an error; on any error nothing is left.
func Spool(dir string, r io.Reader, max int64) (path, sum string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(dir, ".fetch-")
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = fmt.Errorf("over %d bytes", max)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", "", err
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}
