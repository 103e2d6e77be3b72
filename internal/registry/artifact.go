package registry

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
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

// ErrBadArtifact: an artifact is not a file of the format and platform declared.
var ErrBadArtifact = errors.New("not an artifact of the declared format and platform")

// badArtifact is ErrBadArtifact, saying what is wrong.
func badArtifact(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadArtifact, fmt.Sprintf(format, args...))
}

// Sniff reads the head of r (without taking it) and checks it against format and arch; size
// is the artifact's declared size, which the caller holds its bytes to. What needs the whole
// file of a zipapp, CheckZipapp checks once it is spooled.
func Sniff(r *bufio.Reader, format, arch string, size int64) error {
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
		return SniffELF(head, size, arch)
	case FormatZipapp:
		return SniffZipapp(head)
	}
	return fmt.Errorf("%w: format %q is neither %s nor %s", ErrBadArtifact, format, FormatELF, FormatZipapp)
}
