package pgembed

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/xi2/xz"
)

// maxExtractBytes bounds what an archive may write, against decompression bombs; the real one
// unpacks to about 60 MB.
const maxExtractBytes = 1 << 30

// errUnsafeEntry marks an archive entry that would land outside the target folder or is not a
// plain file, folder or link.
var errUnsafeEntry = errors.New("unsafe archive entry")

// extractJar unpacks the zonky jar: a zip holding one postgres-<platform>.txz.
func extractJar(r io.ReaderAt, size int64, dest string) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return err
	}
	var txz *zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".txz") {
			if txz != nil {
				return fmt.Errorf("more than one .txz in the jar: %s, %s", txz.Name, f.Name)
			}
			txz = f
		}
	}
	if txz == nil {
		return errors.New("no .txz in the jar")
	}
	rc, err := txz.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	xr, err := xz.NewReader(bufio.NewReaderSize(rc, 1<<16), 0)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	return extractTar(tar.NewReader(xr), root)
}

// extractTar writes the archive under root. Names are checked before anything is written, and
// os.Root refuses any path that would leave root even through a symlink created earlier.
func extractTar(tr *tar.Reader, root *os.Root) error {
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += hdr.Size; total > maxExtractBytes {
				return fmt.Errorf("archive unpacks to more than %d bytes", maxExtractBytes)
			}
			if err := writeEntry(root, name, fs.FileMode(hdr.Mode), tr, hdr.Size); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := checkSymlink(name, hdr.Linkname); err != nil {
				return err
			}
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := entryName(hdr.Linkname)
			if err != nil {
				return err
			}
			if err := root.Link(target, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s has type %q", errUnsafeEntry, hdr.Name, hdr.Typeflag)
		}
	}
	// Folders made by MkdirAll were subject to the umask (0077 for some root shells), which would
	// lock out the account postgres runs as.
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return root.Chmod(p, 0o755)
	})
}

func writeEntry(root *os.Root, name string, mode fs.FileMode, r io.Reader, size int64) error {
	// Nobody needs to write the binaries; set-id bits and group/other write never survive.
	perm := mode.Perm()&0o755 | 0o400
	// O_EXCL: an entry must not overwrite an earlier one, least of all a symlink.
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil { // the umask applied at creation
		f.Close()
		return err
	}
	return f.Close()
}

// entryName returns the cleaned, relative name of an archive entry, refusing absolute names and
// any ".." element, even one that cleaning would cancel out.
func entryName(raw string) (string, error) {
	if raw == "" || strings.ContainsRune(raw, 0) {
		return "", fmt.Errorf("%w: %q", errUnsafeEntry, raw)
	}
	for _, el := range strings.Split(raw, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q leaves the target folder", errUnsafeEntry, raw)
		}
	}
	name := path.Clean(raw)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%w: %q is not a relative path", errUnsafeEntry, raw)
	}
	return name, nil
}

// checkSymlink accepts only relative targets without "..", so a link points at or below its own
// folder. That is stricter than necessary (the zonky archives only link libfoo.so to
// libfoo.so.N in one folder) but leaves nothing to reason about: a ".." through another link
// could climb out even when the lexical path stays inside.
func checkSymlink(name, target string) error {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%w: symlink %s -> %q", errUnsafeEntry, name, target)
	}
	for _, el := range strings.Split(target, "/") {
		if el == ".." {
			return fmt.Errorf("%w: symlink %s -> %q leaves its folder", errUnsafeEntry, name, target)
		}
	}
	return nil
}
