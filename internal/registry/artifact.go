package registry

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// Platforms are the os/arch pairs a plugin version may have artifacts for: those whose agents
// can confine a plugin (the kernel sandbox is Linux's).
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// Platform is an os/arch pair, as Go names them.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// CheckPlatform says whether os/arch is a platform plugins are published for.
func CheckPlatform(os, arch string) error {
	if !slices.Contains(Platforms, Platform{os, arch}) {
		return fmt.Errorf("platform %s/%s: plugins are published for %v", os, arch, Platforms)
	}
	return nil
}

// Artifact formats.
const (
	FormatELF    = "elf"    // an executable of its platform
	FormatZipapp = "zipapp" // a Python zipapp: a #! line, then a zip holding __main__.py
)

// ArtifactFile is the name an artifact has in its version's SHA256SUMS, as Terraform's
// providers name theirs: random-data_1.2.0_linux_amd64.
func ArtifactFile(name, version, os, arch string) string {
	return name + "_" + version + "_" + os + "_" + arch
}

// ELF's e_machine for each architecture.
var elfMachines = map[string]uint16{"amd64": 62, "arm64": 183}

// ErrBadArtifact: an artifact is not a file of the format and platform declared.
var ErrBadArtifact = errors.New("not an artifact of the declared format and platform")

// ELFHead is how much of a file SniffELF reads: its header and its program headers lie within.
const ELFHead = 4096

// SniffELF checks that head, the first ELFHead bytes of a file (or all of a shorter one), begin
// a 64-bit, little-endian Linux executable for arch: with program headers, a loadable segment and
// an entry point, and, when position-independent, an interpreter (a shared library has none, and
// is no plugin a host can start).
func SniffELF(head []byte, arch string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrBadArtifact, why) }
	if len(head) < 64 || !bytes.Equal(head[:4], []byte("\x7fELF")) {
		return bad("not an ELF executable")
	}
	if head[4] != 2 || head[5] != 1 {
		return bad("not a 64-bit little-endian ELF")
	}
	if osabi := head[7]; osabi != 0 && osabi != 3 {
		return bad(fmt.Sprintf("ELF for OS ABI %d, not Linux", osabi))
	}
	typ := binary.LittleEndian.Uint16(head[16:])
	if typ != elfExec && typ != elfDyn {
		return bad("an ELF that is neither an executable nor position-independent")
	}
	want, ok := elfMachines[arch]
	if m := binary.LittleEndian.Uint16(head[18:]); !ok || m != want {
		return bad(fmt.Sprintf("an ELF for machine %d, not %s", m, arch))
	}
	phoff, phentsize, phnum := binary.LittleEndian.Uint64(head[32:]), uint64(binary.LittleEndian.Uint16(head[54:])), uint64(binary.LittleEndian.Uint16(head[56:]))
	if phnum == 0 {
		return bad("an ELF without program headers: nothing a kernel can run")
	}
	if phentsize < 56 || phoff > uint64(len(head)) || phnum*phentsize > uint64(len(head))-phoff {
		return bad(fmt.Sprintf("an ELF whose program headers are not within its first %d bytes", ELFHead))
	}
	var load, interp bool
	for i := range phnum {
		switch binary.LittleEndian.Uint32(head[phoff+i*phentsize:]) {
		case ptLoad:
			load = true
		case ptInterp:
			interp = true
		}
	}
	switch {
	case !load:
		return bad("an ELF with no loadable segment: nothing a kernel can run")
	case binary.LittleEndian.Uint64(head[24:]) == 0:
		return bad("an ELF with no entry point: a shared library, not an executable")
	case typ == elfDyn && !interp:
		return bad("a position-independent ELF with no interpreter: a shared library, not an executable (build an executable; a static one is not position-independent)")
	}
	return nil
}

// ELF's types and program header types that SniffELF reads.
const (
	elfExec  = 2 // ET_EXEC
	elfDyn   = 3 // ET_DYN: a position-independent executable, or a shared library
	ptLoad   = 1
	ptInterp = 3
)

// maxShebang is the longest #! line Linux reads whole (BINPRM_BUF_SIZE, its line break
// included).
const maxShebang = 256

// SniffZipapp checks that head, the first bytes of a file (maxShebang at least, or all of a
// shorter one), begin a zipapp: a #! line Linux can read.
func SniffZipapp(head []byte) error {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return fmt.Errorf("%w: a zipapp begins with a #! line", ErrBadArtifact)
	}
	if i := bytes.IndexByte(head, '\n'); i < 0 || i >= maxShebang {
		return fmt.Errorf("%w: a zipapp's #! line ends within %d bytes", ErrBadArtifact, maxShebang)
	}
	return nil
}

// CheckZipapp reads the whole zipapp r of size bytes: a zip after its #! line, holding
// __main__.py, with no entry twice, no setuid, setgid or device entry and no link.
func CheckZipapp(r io.ReaderAt, size int64) error {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("%w: a zipapp holds a zip after its #! line: %v", ErrBadArtifact, err)
	}
	main := 0
	seen := make(map[string]bool, len(z.File))
	for _, f := range z.File {
		if seen[f.Name] {
			// Python reads the last of two entries of a name; a reviewer may read the first.
			return fmt.Errorf("%w: %s is in the zipapp twice", ErrBadArtifact, f.Name)
		}
		seen[f.Name] = true
		mode := f.Mode()
		switch {
		case !fs.ValidPath(strings.TrimSuffix(f.Name, "/")):
			return fmt.Errorf("%w: entry %q is not a plain relative path", ErrBadArtifact, f.Name)
		case mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
			return fmt.Errorf("%w: %s is setuid or setgid", ErrBadArtifact, f.Name)
		case mode&(fs.ModeSymlink|fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
			return fmt.Errorf("%w: %s is not a plain file or folder", ErrBadArtifact, f.Name)
		}
		if f.Name == "__main__.py" {
			main++
		}
	}
	if main == 0 {
		return fmt.Errorf("%w: a zipapp holds __main__.py", ErrBadArtifact)
	}
	return nil
}

// Sniff reads the head of r (without taking it) and checks it against format and arch.
func Sniff(r *bufio.Reader, format, arch string) error {
	n := maxShebang
	if format == FormatELF {
		n = ELFHead
	}
	head, err := r.Peek(n)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return err
	}
	switch format {
	case FormatELF:
		return SniffELF(head, arch)
	case FormatZipapp:
		return SniffZipapp(head)
	}
	return fmt.Errorf("%w: format %q is neither %s nor %s", ErrBadArtifact, format, FormatELF, FormatZipapp)
}
