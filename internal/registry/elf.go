package registry

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// ELF's e_machine for each architecture.
var elfMachines = map[string]uint16{"amd64": 62, "arm64": 183}

// ELFInterpreters are the dynamic loaders a dynamically linked plugin may name in its
// PT_INTERP, by architecture: glibc's and musl's, at the paths their distributions install them
// and their toolchains write. An agent has one of them or none; a path outside this list is a
// loader of the author's choosing, or garbage the kernel fails to start.
var ELFInterpreters = map[string][]string{
	"amd64": {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-musl-x86_64.so.1"},
	"arm64": {"/lib/ld-linux-aarch64.so.1", "/lib/ld-musl-aarch64.so.1"},
}

// ELFHead is how much of a file SniffELF reads: its program headers, and the interpreter path
// one of them points to, lie within. Every linker puts them there (gcc's interpreter at 0x318,
// Go's at the end of the first page).
const ELFHead = 4096

// ELF's types, program header types and flags that SniffELF reads.
const (
	elfExec     = 2 // ET_EXEC
	elfDyn      = 3 // ET_DYN: a position-independent executable, or a shared library
	ptLoad      = 1
	ptInterp    = 3
	pfX         = 1  // PF_X: the segment is executable
	elf64Phdr   = 56 // the size of an ELF64 program header
	elfHeaderSz = 64 // the size of an ELF64 header
	// elfPage is the smallest page either platform maps (arm64 may use 16 or 64 KiB pages,
	// multiples of it): a loadable segment's file offset and address agree modulo a page.
	elfPage = 4096
)

// elfSegment is what SniffELF reads of a program header.
type elfSegment struct {
	typ, flags                uint32
	off, vaddr, filesz, memsz uint64
	index                     int
}

// SniffELF checks that head, the first ELFHead bytes of a file of size bytes (or all of a
// shorter one), begins a 64-bit, little-endian Linux executable for arch that the kernel can
// start: program headers of the size ELF64 gives them; loadable segments that lie within the
// file and that the kernel can map; an entry point in the file's bytes of an executable segment,
// past the headers; and at most one interpreter, a loader of ELFInterpreters. A
// position-independent file needs an interpreter (without one it is a shared library, no
// plugin a host can start).
//
// size is the file's size. The server passes the size the author declared, before the bytes
// arrive, and stores the file only when it is that many bytes (blob.Store.Put checks), so a
// segment within size is within the file that is kept.
func SniffELF(head []byte, size int64, arch string) error {
	le := binary.LittleEndian
	if len(head) < elfHeaderSz || !bytes.Equal(head[:4], []byte("\x7fELF")) {
		return badArtifact("not an ELF executable")
	}
	if head[4] != 2 || head[5] != 1 {
		return badArtifact("not a 64-bit little-endian ELF")
	}
	if osabi := head[7]; osabi != 0 && osabi != 3 {
		return badArtifact("ELF for OS ABI %d, not Linux", osabi)
	}
	typ := le.Uint16(head[16:])
	if typ != elfExec && typ != elfDyn {
		return badArtifact("an ELF that is neither an executable nor position-independent")
	}
	want, ok := elfMachines[arch]
	if m := le.Uint16(head[18:]); !ok || m != want {
		return badArtifact("an ELF for machine %d, not %s", m, arch)
	}
	entry, phoff := le.Uint64(head[24:]), le.Uint64(head[32:])
	phentsize, phnum := uint64(le.Uint16(head[54:])), uint64(le.Uint16(head[56:]))
	if phentsize != elf64Phdr {
		return badArtifact("an ELF whose program headers are %d bytes each (e_phentsize); a 64-bit ELF's are %d", phentsize, elf64Phdr)
	}
	if phnum == 0 {
		return badArtifact("an ELF without program headers: nothing a kernel can run")
	}
	if phoff > uint64(len(head)) || phnum*phentsize > uint64(len(head))-phoff {
		return badArtifact("an ELF whose program headers (at offset %d, %d of them) are not within its first %d bytes", phoff, phnum, ELFHead)
	}
	headers := max(elfHeaderSz, phoff+phnum*phentsize) // where the ELF's own headers end
	var loads []elfSegment
	var interp *elfSegment
	for i := range int(phnum) {
		p := head[phoff+uint64(i)*phentsize:]
		s := elfSegment{typ: le.Uint32(p), flags: le.Uint32(p[4:]), off: le.Uint64(p[8:]), vaddr: le.Uint64(p[16:]),
			filesz: le.Uint64(p[32:]), memsz: le.Uint64(p[40:]), index: i}
		switch s.typ {
		case ptLoad:
			if err := s.checkLoad(size); err != nil {
				return err
			}
			loads = append(loads, s)
		case ptInterp:
			if interp != nil {
				return badArtifact("an ELF with two interpreters (PT_INTERP, segments %d and %d): the kernel starts the first, a reader may look at the other", interp.index, i)
			}
			if err := s.checkInterp(head, size, arch); err != nil {
				return err
			}
			interp = &s
		}
	}
	switch {
	case len(loads) == 0:
		return badArtifact("an ELF with no loadable segment (PT_LOAD): nothing a kernel can run")
	case entry == 0:
		return badArtifact("an ELF with no entry point: a shared library, not an executable")
	case typ == elfDyn && interp == nil:
		return badArtifact("a position-independent ELF with no interpreter: a shared library, not an executable (build an executable; a static one is not position-independent)")
	}
	i := slices.IndexFunc(loads, func(s elfSegment) bool {
		return s.flags&pfX != 0 && entry >= s.vaddr && entry-s.vaddr < s.filesz
	})
	if i < 0 {
		return badArtifact("an ELF whose entry point %#x is in no executable loadable segment's bytes from the file (PT_LOAD with PF_X): no code runs there", entry)
	}
	if at := loads[i].off + (entry - loads[i].vaddr); at < headers {
		return badArtifact("an ELF whose entry point %#x is at file offset %d, within its own headers (which end at %d): no code is there", entry, at, headers)
	}
	return nil
}

// checkLoad checks that the kernel can map the loadable segment s of a file of size bytes.
func (s elfSegment) checkLoad(size int64) error {
	switch {
	case s.filesz > uint64(size) || s.off > uint64(size)-s.filesz:
		return badArtifact("an ELF whose loadable segment %d (PT_LOAD) holds bytes %d to %d of the file, past its end at byte %d: a truncated file, or a size declared short", s.index, s.off, s.off+s.filesz, size)
	case s.filesz > s.memsz:
		return badArtifact("an ELF whose loadable segment %d (PT_LOAD) has %d bytes in the file and only %d in memory: the kernel refuses it", s.index, s.filesz, s.memsz)
	case s.off%elfPage != s.vaddr%elfPage:
		return badArtifact("an ELF whose loadable segment %d (PT_LOAD) is at file offset %#x and address %#x, which differ within a %d-byte page: the kernel cannot map it", s.index, s.off, s.vaddr, elfPage)
	}
	return nil
}

// checkInterp checks that the interpreter segment s names, NUL-terminated, a loader of arch
// (ELFInterpreters); its bytes are within head, of a file of size bytes.
func (s elfSegment) checkInterp(head []byte, size int64, arch string) error {
	if s.filesz > uint64(len(head)) || s.off > uint64(len(head))-s.filesz {
		if s.filesz > uint64(size) || s.off > uint64(size)-s.filesz {
			return badArtifact("an ELF whose interpreter (PT_INTERP, segment %d) is at bytes %d to %d of the file, past its end at byte %d", s.index, s.off, s.off+s.filesz, size)
		}
		return badArtifact("an ELF whose interpreter (PT_INTERP, segment %d) is at bytes %d to %d, not within its first %d", s.index, s.off, s.off+s.filesz, ELFHead)
	}
	path := head[s.off : s.off+s.filesz]
	loaders := ELFInterpreters[arch]
	if len(path) == 0 || path[len(path)-1] != 0 || !slices.Contains(loaders, string(path[:len(path)-1])) {
		const most = 64 // of a path to quote
		return badArtifact("an ELF whose interpreter (PT_INTERP, segment %d) is %q; for %s it names one of %v, ending in one NUL byte", s.index, path[:min(len(path), most)], arch, loaders)
	}
	return nil
}
