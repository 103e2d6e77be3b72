// Package registrytest makes artifacts the marketplace's publish check takes, for tests.
package registrytest

import "encoding/binary"

// ELFBase is where TinyELF's one segment is loaded.
const ELFBase = 0x400000

// ExitCode is machine code that exits 0, for each architecture.
var ExitCode = map[string][]byte{
	"amd64": {0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05},                            // mov eax, 60; xor edi, edi; syscall
	"arm64": {0x00, 0x00, 0x80, 0xd2, 0xa8, 0x0b, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4}, // mov x0, #0; mov x8, #93; svc #0
}

// TinyELF is a static Linux executable for arch (amd64 or arm64) that exits 0, then body: its
// header, one loadable, executable segment that maps the header and the code right after the
// program header, and body past the segment, where a real executable keeps its section headers.
func TinyELF(arch string, body []byte) []byte {
	code := ExitCode[arch]
	const phdrSize = 56
	b := make([]byte, 64+phdrSize, 64+phdrSize+len(code)+len(body))
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2) // ET_EXEC
	le.PutUint16(b[18:], map[string]uint16{"amd64": 62, "arm64": 183}[arch])
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], ELFBase+64+phdrSize) // entry: the code
	le.PutUint64(b[32:], 64)                  // program headers, right after
	le.PutUint16(b[52:], 64)                  // e_ehsize
	le.PutUint16(b[54:], phdrSize)
	le.PutUint16(b[56:], 1)
	b = append(b, code...)
	p := b[64:]
	le.PutUint32(p, 1)     // PT_LOAD
	le.PutUint32(p[4:], 5) // readable, executable
	le.PutUint64(p[16:], ELFBase)
	le.PutUint64(p[24:], ELFBase)
	le.PutUint64(p[32:], uint64(len(b)))
	le.PutUint64(p[40:], uint64(len(b)))
	le.PutUint64(p[48:], 0x1000)
	return append(b, body...)
}
