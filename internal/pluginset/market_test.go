package pluginset_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/script"
)

// marketWorld is a marketplace version of acme/tool for this platform, and a server that
// serves its artifact by digest, counting fetches.
type marketWorld struct {
	pin     barrage.PluginPin
	binary  []byte
	sum     string
	fetches atomic.Int32
	serve   []byte // what the server sends (the binary unless changed)
	key     ed25519.PrivateKey
}

func newMarketWorld(t *testing.T) *marketWorld {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := &marketWorld{binary: []byte("#!/bin/sh\necho a plugin\n"), key: priv}
	s := sha256.Sum256(w.binary)
	w.sum = hex.EncodeToString(s[:])
	w.serve = w.binary
	doc, err := registry.FormatSums([]registry.Sum{{SHA256: w.sum, Name: registry.ArtifactFile("tool", "1.0.0", runtime.GOOS, runtime.GOARCH)}})
	require.NoError(t, err)
	d := sha256.Sum256(doc)
	w.pin = barrage.PluginPin{Alias: "t", Name: "acme/tool", Version: "1.0.0", Kind: "url", SHA256: hex.EncodeToString(d[:]),
		Source: barrage.PinMarketplace, Signer: registry.PublicKey(pub).String(), SignerID: registry.PublicKey(pub).ID(),
		Shasums: string(doc), Signature: registry.Sign(priv, doc), Network: []string{"127.0.0.1:80"}}
	return w
}

func (w *marketWorld) market(cache string) *pluginset.Market {
	return &pluginset.Market{Pins: []barrage.PluginPin{w.pin}, Cache: cache, Fetch: func(_ context.Context, sum string) (io.ReadCloser, error) {
		w.fetches.Add(1)
		return io.NopCloser(bytes.NewReader(w.serve)), nil
	}}
}

func TestAMarketplacePluginIsFetchedOnceVerifiedAndKeptReadOnly(t *testing.T) {
	t.Parallel()
	w := newMarketWorld(t)
	cache := t.TempDir()
	m := w.market(cache)
	ctx := context.Background()

	loc, err := m.Locate(ctx, "acme/tool", "1.0.0")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, w.sum), loc.Path)
	require.Equal(t, w.sum, loc.Manifest.SHA256, "the host checks the artifact's own digest at exec")
	require.Equal(t, w.pin.SHA256, loc.Pin.SHA256, "pinned by the signed SHA256SUMS")
	require.Equal(t, []string{"127.0.0.1:80"}, loc.Manifest.Network)
	fi, err := os.Stat(loc.Path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o555), fi.Mode().Perm())

	_, err = m.Locate(ctx, "acme/tool", "1.0.0")
	require.NoError(t, err)
	require.EqualValues(t, 1, w.fetches.Load(), "the cache serves the second")

	// Another plugin is not the market's: the next source is asked.
	_, err = m.Locate(ctx, "acme/other", "1.0.0")
	require.ErrorIs(t, err, barrage.ErrNotFound)
}

func TestATamperedCacheEntryIsFetchedAgain(t *testing.T) {
	t.Parallel()
	w := newMarketWorld(t)
	cache := t.TempDir()
	m := w.market(cache)
	ctx := context.Background()
	loc, err := m.Locate(ctx, "acme/tool", "1.0.0")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(loc.Path, 0o755))
	require.NoError(t, os.WriteFile(loc.Path, []byte("#!/bin/sh\necho evil\n"), 0o755))

	loc, err = m.Locate(ctx, "acme/tool", "1.0.0")
	require.NoError(t, err)
	require.EqualValues(t, 2, w.fetches.Load())
	got, err := os.ReadFile(loc.Path)
	require.NoError(t, err)
	require.Equal(t, w.binary, got)
}

func TestWhatDoesNotVerifyIsRefusedBeforeItIsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		change func(w *marketWorld)
		want   string
	}{
		"the server sends other bytes":         {func(w *marketWorld) { w.serve = []byte("#!/bin/sh\necho evil\n") }, "the server sent bytes with sha256"},
		"a SHA256SUMS the pin's digest is not": {func(w *marketWorld) { w.pin.Shasums += "\n" }, "does not have the digest the script pins"},
		"a signature by another key": {func(w *marketWorld) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			w.pin.Signature = registry.Sign(other, []byte(w.pin.Shasums))
		}, "refused"},
		"no build for this platform": {func(w *marketWorld) {
			doc, _ := registry.FormatSums([]registry.Sum{{SHA256: w.sum, Name: "tool_1.0.0_plan9_mips"}})
			w.pin.Shasums = string(doc)
			d := sha256.Sum256(doc)
			w.pin.SHA256 = hex.EncodeToString(d[:])
			w.pin.Signature = registry.Sign(w.key, doc)
		}, "has no build for " + runtime.GOOS + "/" + runtime.GOARCH},
	} {
		t.Run(name, func(t *testing.T) {
			w := newMarketWorld(t)
			tc.change(w)
			cache := t.TempDir()
			_, err := w.market(cache).Locate(ctx, "acme/tool", "1.0.0")
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			left, _ := os.ReadDir(cache)
			require.Empty(t, left, "nothing kept")
		})
	}
}

// Generation pins a range to the version the source has, in the pins and in the script: the
// script runs what was pinned, under the alias it had.
func TestGenerationPinsARangeToTheVersionItMatched(t *testing.T) {
	t.Parallel()
	w := newMarketWorld(t)
	src := []byte(`version: 1
name: ranged
plugins:
  - { use: acme/tool@^1.0, kind: url }
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "http://127.0.0.1:9/" }
load: { vus: 1, iterations: 1 }
`)
	s, err := script.Parse(src, script.ParseOptions{})
	require.NoError(t, err)
	doc, pins, err := pluginset.Generate(context.Background(), src, s, pluginset.Options{Source: w.market(t.TempDir())})
	require.NoError(t, err)
	require.Len(t, pins, 1)
	want := w.pin
	want.Alias = "tool"
	require.Equal(t, want, pins[0])
	out, err := script.Parse(doc, script.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "acme/tool@1.0.0", out.Plugins[0].Ref)
	require.Equal(t, "tool", out.Plugins[0].As)

	// A range the source cannot match is not found.
	src2 := bytes.Replace(src, []byte("^1.0"), []byte("^2"), 1)
	s, err = script.Parse(src2, script.ParseOptions{})
	require.NoError(t, err)
	_, _, err = pluginset.Generate(context.Background(), src2, s, pluginset.Options{Source: pluginset.Sources{w.market(t.TempDir()), pluginset.Dir(t.TempDir())}})
	require.ErrorIs(t, err, barrage.ErrNotFound)
	require.ErrorContains(t, err, "no version of plugin acme/tool in")
}

// BenchmarkMarketLocate measures what a marketplace plugin costs an agent before it starts: a
// fetch into the cache (bytes checked as they arrive, written, renamed), and a cached use
// (the file hashed again), for an artifact of 50 MB.
func BenchmarkMarketLocate(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(b, err)
	binary := bytes.Repeat([]byte("0123456789abcdef"), 50<<20/16)
	sum := sha256.Sum256(binary)
	doc, err := registry.FormatSums([]registry.Sum{{SHA256: hex.EncodeToString(sum[:]), Name: registry.ArtifactFile("tool", "1.0.0", runtime.GOOS, runtime.GOARCH)}})
	require.NoError(b, err)
	d := sha256.Sum256(doc)
	pin := barrage.PluginPin{Name: "acme/tool", Version: "1.0.0", SHA256: hex.EncodeToString(d[:]), Source: barrage.PinMarketplace,
		Signer: registry.PublicKey(pub).String(), Shasums: string(doc), Signature: registry.Sign(priv, doc)}
	market := func(cache string) *pluginset.Market {
		return &pluginset.Market{Pins: []barrage.PluginPin{pin}, Cache: cache, Fetch: func(context.Context, string) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(binary)), nil
		}}
	}
	ctx := context.Background()
	b.Run("fetch", func(b *testing.B) {
		b.SetBytes(int64(len(binary)))
		for b.Loop() {
			if _, err := market(b.TempDir()).Locate(ctx, "acme/tool", "1.0.0"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		m := market(b.TempDir())
		_, err := m.Locate(ctx, "acme/tool", "1.0.0")
		require.NoError(b, err)
		b.SetBytes(int64(len(binary)))
		for b.Loop() {
			if _, err := m.Locate(ctx, "acme/tool", "1.0.0"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A cache entry that is not a regular file, a link to the right bytes or a folder, is not
// trusted: it is replaced by a fetch.
func TestACacheEntryThatIsNoFileIsFetchedAgain(t *testing.T) {
	t.Parallel()
	for name, plant := range map[string]func(t *testing.T, path string, w *marketWorld){
		"a link to the right bytes": func(t *testing.T, path string, w *marketWorld) {
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			require.NoError(t, os.WriteFile(elsewhere, w.binary, 0o755))
			require.NoError(t, os.Symlink(elsewhere, path))
		},
		"a folder": func(t *testing.T, path string, _ *marketWorld) {
			require.NoError(t, os.MkdirAll(filepath.Join(path, "inside"), 0o755))
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newMarketWorld(t)
			cache := t.TempDir()
			path := filepath.Join(cache, w.sum)
			plant(t, path, w)
			loc, err := w.market(cache).Locate(context.Background(), "acme/tool", "1.0.0")
			require.NoError(t, err)
			require.Equal(t, path, loc.Path)
			require.EqualValues(t, 1, w.fetches.Load())
			fi, err := os.Lstat(path)
			require.NoError(t, err)
			require.True(t, fi.Mode().IsRegular())
		})
	}
}
