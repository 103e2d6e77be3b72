package pgembed

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

type tarEntry struct {
	name     string
	typeflag byte
	body     string
	linkname string
	mode     int64
}

func TestExtractJar(t *testing.T) {
	t.Parallel()
	dest := t.TempDir()
	jar := buildJar(t, []tarEntry{
		{name: "bin/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "bin/postgres", typeflag: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o4777},
		{name: "./lib/libpq.so.5.17", typeflag: tar.TypeReg, body: "elf", mode: 0o644},
		{name: "lib/libpq.so.5", typeflag: tar.TypeSymlink, linkname: "libpq.so.5.17"},
		{name: "lib/libpq.so", typeflag: tar.TypeLink, linkname: "lib/libpq.so.5.17"},
	})

	require.NoError(t, extractJar(bytes.NewReader(jar), int64(len(jar)), dest))

	fi, err := os.Stat(filepath.Join(dest, "bin", "postgres"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode(), "set-id bits and group/other write are dropped")
	target, err := os.Readlink(filepath.Join(dest, "lib", "libpq.so.5"))
	require.NoError(t, err)
	require.Equal(t, "libpq.so.5.17", target)
	body, err := os.ReadFile(filepath.Join(dest, "lib", "libpq.so"))
	require.NoError(t, err)
	require.Equal(t, "elf", string(body))
}

func TestExtractJarRefusesUnsafeEntries(t *testing.T) {
	t.Parallel()
	tests := map[string][]tarEntry{
		"parent":             {{name: "../evil", typeflag: tar.TypeReg, body: "x"}},
		"nested parent":      {{name: "bin/../../evil", typeflag: tar.TypeReg, body: "x"}},
		"parent cleaned out": {{name: "bin/../evil", typeflag: tar.TypeReg, body: "x"}},
		"absolute":           {{name: "/tmp/evil", typeflag: tar.TypeReg, body: "x"}},
		"absolute symlink":   {{name: "lib/evil", typeflag: tar.TypeSymlink, linkname: "/etc"}},
		"escaping symlink":   {{name: "lib/evil", typeflag: tar.TypeSymlink, linkname: "../../etc"}},
		"escaping hardlink":  {{name: "lib/evil", typeflag: tar.TypeLink, linkname: "../outside"}},
		"device":             {{name: "dev/evil", typeflag: tar.TypeChar}},
		// A symlink at the root would let a later entry write through it.
		"write through link": {
			{name: "lib", typeflag: tar.TypeSymlink, linkname: ".."},
			{name: "lib/evil", typeflag: tar.TypeReg, body: "x"},
		},
	}
	for name, entries := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			require.NoError(t, os.Mkdir(dest, 0o755))
			jar := buildJar(t, entries)

			err := extractJar(bytes.NewReader(jar), int64(len(jar)), dest)

			require.ErrorIs(t, err, errUnsafeEntry)
			left, err := os.ReadDir(parent)
			require.NoError(t, err)
			require.Len(t, left, 1, "nothing may be written next to dest")
		})
	}
}

func TestExtractJarWithoutTxz(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("META-INF/MANIFEST.MF")
	require.NoError(t, err)
	_, err = w.Write([]byte("Manifest-Version: 1.0\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	err = extractJar(bytes.NewReader(buf.Bytes()), int64(buf.Len()), t.TempDir())

	require.ErrorContains(t, err, "no .txz")
}

// buildJar builds a jar shaped like zonky's: a zip holding one .txz of the entries.
func buildJar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.linkname, Mode: mode, Size: int64(len(e.body))}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())

	var zipBuf bytes.Buffer
	zw := zip.NewWriter(&zipBuf)
	w, err := zw.Create("postgres-linux-x86_64.txz")
	require.NoError(t, err)
	_, err = w.Write(xzStore(tarBuf.Bytes()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return zipBuf.Bytes()
}

// xzStore encodes data as an .xz stream of uncompressed LZMA2 chunks. That is valid xz which any
// decoder reads, and spares the tests an xz encoder dependency. Format:
// https://tukaani.org/xz/xz-file-format.txt
func xzStore(data []byte) []byte {
	le := binary.LittleEndian
	var out bytes.Buffer
	flags := []byte{0x00, 0x01} // check: CRC32
	out.Write([]byte{0xFD, '7', 'z', 'X', 'Z', 0x00})
	out.Write(flags)
	out.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(flags)))

	// Block header: size/4-1, flags (one filter, no sizes), filter LZMA2 (0x21) with one
	// property byte (dictionary 1 MiB), padding to a multiple of four, CRC32.
	hdr := []byte{0x02, 0x00, 0x21, 0x01, 0x10, 0x00, 0x00, 0x00}
	out.Write(hdr)
	out.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(hdr)))
	// LZMA2 chunks of at most 64 KiB stored as is: 0x01 also resets the dictionary, 0x02 not;
	// then the size minus one, big-endian; 0x00 ends the data.
	var lz bytes.Buffer
	for off := 0; off < len(data); off += 1 << 16 {
		chunk := data[off:min(off+1<<16, len(data))]
		ctrl := byte(0x02)
		if off == 0 {
			ctrl = 0x01
		}
		lz.Write([]byte{ctrl, byte((len(chunk) - 1) >> 8), byte(len(chunk) - 1)})
		lz.Write(chunk)
	}
	lz.WriteByte(0x00)
	unpadded := len(hdr) + 4 + lz.Len() + 4
	out.Write(lz.Bytes())
	out.Write(make([]byte, (4-lz.Len()%4)%4))
	out.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(data)))

	// Index: one record (unpadded block size, uncompressed size), padded, CRC32.
	var idx bytes.Buffer
	idx.WriteByte(0x00)
	idx.Write(binary.AppendUvarint(nil, 1))
	idx.Write(binary.AppendUvarint(nil, uint64(unpadded)))
	idx.Write(binary.AppendUvarint(nil, uint64(len(data))))
	idx.Write(make([]byte, (4-idx.Len()%4)%4))
	idx.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(idx.Bytes())))
	out.Write(idx.Bytes())

	// Footer: CRC32 of (index size/4-1, flags), then those, then the magic.
	foot := append(le.AppendUint32(nil, uint32(idx.Len()/4-1)), flags...)
	out.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(foot)))
	out.Write(foot)
	out.Write([]byte{'Y', 'Z'})
	return out.Bytes()
}
