package registry_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/registry/registrytest"
)

// phdrSize is the size of an ELF64 program header.
const phdrSize = 56

// tinyELF is a static Linux executable for arch that exits 0.
func tinyELF(arch string) []byte { return registrytest.TinyELF(arch, nil) }

// segment is a program header.
type segment struct {
	typ, flags                       uint32
	off, vaddr, filesz, memsz, align uint64
}

func putSegment(b []byte, i int, s segment) {
	p := b[64+phdrSize*i:]
	le := binary.LittleEndian
	le.PutUint32(p, s.typ)
	le.PutUint32(p[4:], s.flags)
	le.PutUint64(p[8:], s.off)
	le.PutUint64(p[16:], s.vaddr)
	le.PutUint64(p[24:], s.vaddr)
	le.PutUint64(p[32:], s.filesz)
	le.PutUint64(p[40:], s.memsz)
	le.PutUint64(p[48:], max(s.align, 0x1000))
}

// withInterp is the tiny ELF of arch made dynamically linked: a second program header,
// PT_INTERP, whose bytes are path, put after the code (in the loadable segment, as linkers
// do); the code moves along by a program header.
func withInterp(arch string, typ uint16, path string) []byte {
	code := registrytest.ExitCode[arch]
	b := tinyELF(arch)[:64+phdrSize]
	b = append(b, make([]byte, phdrSize)...)
	codeAt := len(b)
	b = append(b, code...)
	interpAt := len(b)
	b = append(b, path...)
	le := binary.LittleEndian
	le.PutUint16(b[16:], typ)
	le.PutUint64(b[24:], registrytest.ELFBase+uint64(codeAt))
	le.PutUint16(b[56:], 2)
	putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: uint64(len(b)), memsz: uint64(len(b))})
	putSegment(b, 1, segment{typ: 3, flags: 4, off: uint64(interpAt), vaddr: registrytest.ELFBase + uint64(interpAt), filesz: uint64(len(path)), memsz: uint64(len(path))})
	return b
}

func sniff(b []byte, arch string) error {
	return registry.SniffELF(b[:min(len(b), registry.ELFHead)], int64(len(b)), arch)
}

// The tiny ELF runs: it is what the other tests take apart.
func TestATinyELFRuns(t *testing.T) {
	require.NoError(t, sniff(tinyELF("amd64"), "amd64"))
	require.NoError(t, sniff(tinyELF("arm64"), "arm64"))
	if runtime.GOOS != "linux" {
		t.Skip("runs Linux executables")
	}
	exe := filepath.Join(t.TempDir(), "tiny")
	require.NoError(t, os.WriteFile(exe, tinyELF(runtime.GOARCH), 0o755))
	out, err := exec.Command(exe).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// An ELF that no kernel can start, or whose start runs no code of its own, is refused, each
// with what is wrong and where.
func TestAnELFThatCannotRunIsRefused(t *testing.T) {
	le := binary.LittleEndian
	edit := func(arch string, change func(b []byte) []byte) []byte { return change(tinyELF(arch)) }
	for name, c := range map[string]struct {
		elf  []byte
		arch string
		size int64 // declared; the file's own when 0
		want string
	}{
		// The bare header and its program header, as a hand-made fixture has them: 120 bytes
		// that map nothing and run nothing.
		"a bare header and program header": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1})
			return b[:120]
		}), want: "entry point 0x400078 is in no executable loadable segment"},
		// The same 120 bytes made to map themselves: the entry point is the program header.
		"a bare header that runs its own program header": {elf: edit("amd64", func(b []byte) []byte {
			b = b[:120]
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: 120, memsz: 120})
			le.PutUint64(b[24:], registrytest.ELFBase+64)
			return b
		}), want: "entry point 0x400040 is at file offset 64, within its own headers (which end at 120)"},
		"program headers of 64 bytes": {elf: edit("amd64", func(b []byte) []byte {
			b = append(append(b[:120:120], make([]byte, 8)...), registrytest.ExitCode["amd64"]...)
			le.PutUint16(b[54:], 64)
			le.PutUint64(b[24:], registrytest.ELFBase+128)
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: uint64(len(b)), memsz: uint64(len(b))})
			return b
		}), want: "program headers are 64 bytes each (e_phentsize); a 64-bit ELF's are 56"},
		"a segment past the end of the file": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: 1 << 20, memsz: 1 << 20})
			return b
		}), want: "loadable segment 0 (PT_LOAD) holds bytes 0 to 1048576 of the file, past its end at byte 129"},
		"a segment past a declared size": {elf: tinyELF("amd64"), size: 100,
			want: "holds bytes 0 to 129 of the file, past its end at byte 100: a truncated file, or a size declared short"},
		"a segment with more in the file than in memory": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: uint64(len(b)), memsz: 64})
			return b
		}), want: "has 129 bytes in the file and only 64 in memory"},
		"a segment the kernel cannot map": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase + 8, filesz: uint64(len(b)), memsz: uint64(len(b))})
			return b
		}), want: "is at file offset 0x0 and address 0x400008, which differ within a 4096-byte page"},
		"an entry point outside every segment": {elf: edit("amd64", func(b []byte) []byte {
			le.PutUint64(b[24:], 0x500000)
			return b
		}), want: "entry point 0x500000 is in no executable loadable segment"},
		"an entry point in a segment that is not executable": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1, flags: 4, vaddr: registrytest.ELFBase, filesz: uint64(len(b)), memsz: uint64(len(b))})
			return b
		}), want: "entry point 0x400078 is in no executable loadable segment"},
		"an entry point in memory the file does not fill": {elf: edit("amd64", func(b []byte) []byte {
			putSegment(b, 0, segment{typ: 1, flags: 5, vaddr: registrytest.ELFBase, filesz: uint64(len(b)), memsz: 1 << 20})
			le.PutUint64(b[24:], registrytest.ELFBase+0x1000)
			return b
		}), want: "entry point 0x401000 is in no executable loadable segment's bytes from the file"},
		"an interpreter that is garbage": {elf: withInterp("amd64", 3, "\x01\x02garbage\x00"), arch: "amd64",
			want: `interpreter (PT_INTERP, segment 1) is "\x01\x02garbage\x00"; for amd64 it names one of [/lib64/ld-linux-x86-64.so.2`},
		"an interpreter without its NUL": {elf: withInterp("amd64", 3, "/lib64/ld-linux-x86-64.so.2"),
			want: `is "/lib64/ld-linux-x86-64.so.2"; for amd64 it names one of`},
		"an interpreter of another platform": {elf: withInterp("amd64", 2, "/lib/ld-linux-aarch64.so.1\x00"),
			want: `is "/lib/ld-linux-aarch64.so.1\x00"; for amd64`},
		"an interpreter of the author's": {elf: withInterp("amd64", 3, "/tmp/ld.so\x00"), want: `is "/tmp/ld.so\x00"`},
		"an interpreter past the end of the file": {elf: func() []byte {
			b := withInterp("amd64", 3, "/lib64/ld-linux-x86-64.so.2\x00")
			putSegment(b, 1, segment{typ: 3, off: 5000, filesz: 28, memsz: 28})
			return b
		}(), want: "interpreter (PT_INTERP, segment 1) is at bytes 5000 to 5028 of the file, past its end at byte 213"},
		"two interpreters": {elf: func() []byte {
			b := withInterp("amd64", 3, "/lib64/ld-linux-x86-64.so.2\x00")
			putSegment(b, 0, segment{typ: 3, off: 185, vaddr: registrytest.ELFBase + 185, filesz: 28, memsz: 28})
			return b
		}(), want: "two interpreters (PT_INTERP, segments 0 and 1)"},
	} {
		t.Run(name, func(t *testing.T) {
			arch := c.arch
			if arch == "" {
				arch = "amd64"
			}
			size := c.size
			if size == 0 {
				size = int64(len(c.elf))
			}
			err := registry.SniffELF(c.elf[:min(len(c.elf), registry.ELFHead)], size, arch)
			require.ErrorIs(t, err, registry.ErrBadArtifact)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// What the sniff always refused, it still refuses.
func TestAnELFOfAnotherKindIsRefused(t *testing.T) {
	le := binary.LittleEndian
	edit := func(change func(b []byte)) []byte { b := tinyELF("amd64"); change(b); return b }
	for name, c := range map[string]struct {
		elf  []byte
		want string
	}{
		"arm64 as amd64":      {tinyELF("arm64"), "an ELF for machine 183, not amd64"},
		"32-bit":              {edit(func(b []byte) { b[4] = 1 }), "not a 64-bit little-endian ELF"},
		"big-endian":          {edit(func(b []byte) { b[5] = 2 }), "not a 64-bit little-endian ELF"},
		"FreeBSD":             {edit(func(b []byte) { b[7] = 9 }), "OS ABI 9, not Linux"},
		"an object file":      {edit(func(b []byte) { le.PutUint16(b[16:], 1) }), "neither an executable nor position-independent"},
		"no program header":   {edit(func(b []byte) { le.PutUint16(b[56:], 0) }), "without program headers"},
		"no loadable":         {edit(func(b []byte) { le.PutUint32(b[64:], 4) }), "no loadable segment (PT_LOAD)"},
		"no entry point":      {edit(func(b []byte) { le.PutUint64(b[24:], 0) }), "no entry point"},
		"a shared library":    {edit(func(b []byte) { le.PutUint16(b[16:], 3) }), "a position-independent ELF with no interpreter"},
		"far program headers": {edit(func(b []byte) { le.PutUint64(b[32:], 1<<20) }), "program headers (at offset 1048576, 1 of them) are not within its first 4096 bytes"},
		"a shell script":      {[]byte("#!/bin/sh\necho hello, this is not an executable at all, and is longer than 64 b"), "not an ELF executable"},
		"short":               {[]byte("\x7fELF"), "not an ELF executable"},
	} {
		err := sniff(c.elf, "amd64")
		require.ErrorIs(t, err, registry.ErrBadArtifact, name)
		require.ErrorContains(t, err, c.want, name)
	}
}

// A dynamically linked ELF passes with the loader of its platform, executable or
// position-independent.
func TestAnELFWithAKnownInterpreterIsAnArtifact(t *testing.T) {
	for arch, loaders := range registry.ELFInterpreters {
		for _, loader := range loaders {
			require.NoError(t, sniff(withInterp(arch, 3, loader+"\x00"), arch), loader)
			require.NoError(t, sniff(withInterp(arch, 2, loader+"\x00"), arch), loader)
		}
	}
}

// Real executables pass: Go's, static for each platform and dynamically linked when a C
// compiler is here, and this machine's /bin/true, a C program linked by gcc.
func TestRealExecutablesAreArtifacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.24\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(
		"package main\n\nimport (\n\t\"fmt\"\n\t\"os/user\"\n)\n\nfunc main() { fmt.Println(user.Current()) }\n"), 0o644))
	build := func(name string, env ...string) string {
		t.Helper()
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		return out
	}
	files := map[string]string{
		build("static-amd64", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"): "amd64",
		build("static-arm64", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64"): "arm64",
	}
	if runtime.GOOS == "linux" {
		if _, err := exec.LookPath("gcc"); err == nil {
			files[build("dynamic", "CGO_ENABLED=1")] = runtime.GOARCH
			files[build("pie", "CGO_ENABLED=1", "GOFLAGS=-buildmode=pie")] = runtime.GOARCH
		}
		if _, err := os.Stat("/bin/true"); err == nil {
			files["/bin/true"] = runtime.GOARCH
		}
	}
	for path, arch := range files {
		f, err := os.Open(path)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		head := make([]byte, registry.ELFHead)
		n, _ := io.ReadFull(f, head)
		require.NoError(t, f.Close())
		require.NoError(t, registry.SniffELF(head[:n], st.Size(), arch), path)
		require.True(t, bytes.HasPrefix(head, []byte("\x7fELF")))
	}
}
