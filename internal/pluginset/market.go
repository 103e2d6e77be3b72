package pluginset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/registry"
)

// Market is the marketplace plugins a script pins, as an agent runs them: each is fetched by
// the digest its version's signed SHA256SUMS gives for this machine's platform, and kept in a
// cache folder by that digest, read-only. Before a plugin is located, the pin's SHA256SUMS is
// checked against the pin's digest and its signature against the pin's signer, and the cached
// file against its line; a cached file that does not match is removed and fetched again.
type Market struct {
	// Pins are the marketplace pins of the script (others are ignored).
	Pins []barrage.PluginPin
	// Cache is the folder artifacts are kept in, by sha256.
	Cache string
	// Fetch opens the artifact with sha256 from the server.
	Fetch func(ctx context.Context, sha256 string) (io.ReadCloser, error)
	// MaxBytes bounds an artifact's size (default 128 MiB).
	MaxBytes int64
	Log      *slog.Logger
}

// cacheLocks serialises the fetches of one artifact within the process: jobs and a shard may
// need the same plugin at once.
var cacheLocks sync.Map // sha256 -> *sync.Mutex

// Locate implements Source.
func (m *Market) Locate(ctx context.Context, name, version string) (Located, error) {
	var pin *barrage.PluginPin
	for i, p := range m.Pins {
		if p.Marketplace() && p.Name == name && matches(version, p.Version) {
			pin = &m.Pins[i]
			break
		}
	}
	if pin == nil {
		return Located{}, barrage.Errorf(barrage.ErrNotFound, "%s@%s is not a marketplace plugin of the script", name, version)
	}
	want, err := VerifyPin(*pin, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return Located{}, err
	}
	path, err := m.cached(ctx, want)
	if err != nil {
		return Located{}, fmt.Errorf("plugin %s: %w", pin.Ref(), err)
	}
	return Located{
		Manifest: Manifest{Name: name, Version: pin.Version, Binary: filepath.Base(path), SHA256: want, Network: pin.Network},
		Path:     path,
		Pin: barrage.PluginPin{Name: pin.Name, Version: pin.Version, SHA256: pin.SHA256, Source: pin.Source, Signer: pin.Signer,
			SignerID: pin.SignerID, Shasums: pin.Shasums, Signature: pin.Signature, Network: pin.Network},
	}, nil
}

// VerifyPin checks a marketplace pin as an agent must before it fetches anything: its
// SHA256SUMS has the pin's digest and the signature of its signer, and names an artifact for
// os/arch. It returns that artifact's sha256.
func VerifyPin(pin barrage.PluginPin, os, arch string) (string, error) {
	sum := sha256.Sum256([]byte(pin.Shasums))
	if hex.EncodeToString(sum[:]) != pin.SHA256 {
		return "", fmt.Errorf("plugin %s: its SHA256SUMS does not have the digest the script pins: refused", pin.Ref())
	}
	key, err := registry.ParsePublicKey(pin.Signer)
	if err != nil {
		return "", fmt.Errorf("plugin %s: its signer: %w", pin.Ref(), err)
	}
	if _, err := registry.Verify([]registry.PublicKey{key}, []byte(pin.Shasums), pin.Signature); err != nil {
		return "", fmt.Errorf("plugin %s: %w: refused", pin.Ref(), err)
	}
	sums, err := registry.ParseSums([]byte(pin.Shasums))
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", pin.Ref(), err)
	}
	_, short, _ := strings.Cut(pin.Name, "/")
	file := registry.ArtifactFile(short, pin.Version, os, arch)
	for _, s := range sums {
		if s.Name == file {
			return s.SHA256, nil
		}
	}
	return "", barrage.Invalid("plugins."+pin.Alias, fmt.Sprintf("%s has no build for %s/%s, the platform of this agent", pin.Ref(), os, arch))
}

// cached returns the path of the artifact with sha256 want in the cache, fetching it when the
// cache lacks it or holds other bytes under its name.
func (m *Market) cached(ctx context.Context, want string) (string, error) {
	mu, _ := cacheLocks.LoadOrStore(want, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	path := filepath.Join(m.Cache, want)
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", err
	default:
		// Only a regular file is kept: a link or a folder under the digest's name is not the
		// verified bytes, whatever it leads to.
		got := fi.Mode().Type().String()
		if fi.Mode().IsRegular() {
			if got, err = FileSHA256(path); err != nil {
				return "", err
			}
			if got == want {
				return path, nil
			}
		}
		if m.Log != nil {
			m.Log.Warn("a cached plugin does not match its digest; fetching it again", slog.String("sha256", want), slog.String("found", got))
		}
		if err := os.RemoveAll(path); err != nil {
			return "", fmt.Errorf("remove the cached artifact %s that does not match: %w", want, err)
		}
	}
	rc, err := m.Fetch(ctx, want)
	if err != nil {
		return "", fmt.Errorf("fetch artifact %s: %w", want, err)
	}
	defer rc.Close()
	max := m.MaxBytes
	if max <= 0 {
		max = 128 << 20
	}
	tmp, got, err := Spool(m.Cache, rc, max)
	if err != nil {
		return "", fmt.Errorf("artifact %s: %w: refused", want, err)
	}
	if got != want {
		err = fmt.Errorf("the server sent bytes with sha256 %s for artifact %s: refused", got, want)
	} else if err = os.Chmod(tmp, 0o555); err == nil { // read-only: nothing of the agent's writes over what a pin verified
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return path, nil
}
