package registry

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxShebang is the longest #! line Linux reads whole (BINPRM_BUF_SIZE, its line break
// included).
const maxShebang = 256

// SniffZipapp checks that head, the first bytes of a file (maxShebang at least, or all of a
// shorter one), begin a zipapp: a #! line of printable ASCII that Linux reads whole. The agent
// runs the file itself, so the line is not optional, as it is for `python3 app.pyz`.
func SniffZipapp(head []byte) error {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return fmt.Errorf("%w: a zipapp begins with a #! line", ErrBadArtifact)
	}
	i := bytes.IndexByte(head, '\n')
	if i < 0 || i >= maxShebang {
		return fmt.Errorf("%w: a zipapp's #! line ends within %d bytes", ErrBadArtifact, maxShebang)
	}
	return checkShebang(head[:i])
}

// checkShebang checks a #! line, its line break left out: printable ASCII, nothing a terminal
// or a reviewer's eye would read otherwise.
func checkShebang(line []byte) error {
	for i, c := range line {
		if c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte %d of the zipapp's #! line is %#02x; the line is printable ASCII", ErrBadArtifact, i, c)
		}
	}
	return nil
}

// The records and flags of the zip format (PKWARE's APPNOTE) that CheckZipapp reads.
const (
	zipLocalSig      = 0x04034b50 // PK\x03\x04: an entry's local header
	zipCentralSig    = 0x02014b50 // PK\x01\x02: an entry's central directory header
	zipEndSig        = 0x06054b50 // PK\x05\x06: the end of the central directory
	zip64LocatorSig  = 0x07064b50 // PK\x06\x07: where a Zip64 end record is
	zipDescriptorSig = 0x08074b50 // PK\x07\x08: a data descriptor, optional before its fields
	zipLocalLen      = 30
	zipCentralLen    = 46
	zipEndLen        = 22
	zip64LocatorLen  = 20
	zipEncrypted     = 0x1   // flag: the entry is encrypted
	zipDescriptor    = 0x8   // flag: the entry's sizes follow its data
	zipUTF8          = 0x800 // flag: the entry's name is UTF-8
)

// zipEntry is what CheckZipapp reads of an entry in the central directory.
type zipEntry struct {
	index  int
	name   string // its bytes, as the central directory holds them
	python string // its name as Python reads it (pythonName)
	flags  uint16
	csize  uint64 // compressed size
	offset uint64 // of its local header, from the zip's start
}

// CheckZipapp reads the whole zipapp r of size bytes, as Python's zipimport reads it to run
// it, and refuses what would run otherwise than a reviewer reads it, or not at all:
//   - before the zip, anything but one #! line of printable ASCII (SniffZipapp): bytes there
//     could hide a second payload;
//   - a zip comment, or a Zip64 record: they let readers find different central directories;
//   - a central directory with bytes its entries do not account for, or bytes between the
//     entries, or entries that overlap: what one reader lists, another may not;
//   - a name that is not UTF-8, or that holds a control or invisible character;
//   - two entries of one name, as Python reads names (code page 437 without the UTF-8 flag
//     0x800, UTF-8 with it) or as a reviewer's UTF-8 tools do: Python runs the last, a
//     reviewer may read the first;
//   - an absolute path, a .. segment, an empty or . segment;
//   - a local header whose name or UTF-8 flag is not the central directory's;
//   - an encrypted entry, or one neither stored nor deflated: zipimport cannot read it;
//   - a setuid, setgid, device or link entry; and a zip without __main__.py.
func CheckZipapp(r io.ReaderAt, size int64) error {
	le := binary.LittleEndian
	if size < zipEndLen {
		return badArtifact("a zipapp holds a zip after its #! line; %d bytes are too few for one", size)
	}
	tail := make([]byte, min(size, zip64LocatorLen+zipEndLen))
	if err := readAt(r, tail, size-int64(len(tail))); err != nil {
		return fmt.Errorf("read the zipapp's end: %w", err)
	}
	end := tail[len(tail)-zipEndLen:]
	records, cdSize, cdOffset := le.Uint16(end[10:]), uint64(le.Uint32(end[12:])), uint64(le.Uint32(end[16:]))
	switch {
	case le.Uint32(end) != zipEndSig || le.Uint16(end[20:]) != 0:
		return badArtifact("a zipapp holds a zip after its #! line, and ends with the zip's end record (PK\\x05\\x06) and no zip comment; its last %d bytes are not that", zipEndLen)
	case le.Uint16(end[4:]) != 0 || le.Uint16(end[6:]) != 0 || le.Uint16(end[8:]) != records:
		return badArtifact("a zip split across disks")
	case records == 0xffff || cdSize == 0xffffffff || cdOffset == 0xffffffff,
		len(tail) > zipEndLen && le.Uint32(tail) == zip64LocatorSig:
		return badArtifact("a Zip64 zip: a zipapp needs no Zip64, and Python's zipfile and other readers take different records for the central directory when it has one")
	case cdSize > uint64(size-zipEndLen) || cdOffset > uint64(size-zipEndLen)-cdSize:
		return badArtifact("the zip's end record puts its central directory (%d bytes at zip offset %d) before the start of the file", cdSize, cdOffset)
	}
	// Where the zip starts, as Python reckons it: its offsets count from there.
	cdStart := uint64(size-zipEndLen) - cdSize
	base := int64(cdStart - cdOffset)

	entries, err := readZipCentral(r, int64(cdStart), cdSize, int(records))
	if err != nil {
		return err
	}
	byPython := make(map[string]zipEntry, len(entries))
	byName := make(map[string]zipEntry, len(entries))
	main := false
	for _, e := range entries {
		path := strings.TrimSuffix(e.python, "/")
		if d, ok := byPython[path]; ok {
			switch {
			case d.name == e.name:
				return badArtifact("%s is in the zipapp twice: Python runs the last, a reviewer may read the first", e.python)
			case d.python != e.python:
				return badArtifact("%s is in the zipapp both as a file and as a folder (entries %d and %d)", path, d.index, e.index)
			}
			return badArtifact("entries %d (%q) and %d (%q) are both %q to Python, which reads a name without the UTF-8 flag (0x800) as code page 437: Python runs the last, a reviewer may read the first",
				d.index, d.name, e.index, e.name, e.python)
		}
		if d, ok := byName[strings.TrimSuffix(e.name, "/")]; ok {
			return badArtifact("entries %d and %d are both %q, one with the UTF-8 flag (0x800) and one without: Python reads them as %q and %q, a reviewer's tools as one name",
				d.index, e.index, e.name, d.python, e.python)
		}
		byPython[path], byName[strings.TrimSuffix(e.name, "/")] = e, e
		main = main || e.python == "__main__.py"
	}
	if !main {
		return badArtifact("a zipapp holds __main__.py, what Python runs")
	}
	// Names a reviewer would take for one another, or whose folder is a file.
	folded := make(map[string]zipEntry, len(entries))
	for _, e := range entries {
		path := strings.TrimSuffix(e.python, "/")
		for dir := path; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if d, ok := byPython[dir]; ok && !strings.HasSuffix(d.python, "/") {
				return badArtifact("%s is in the zipapp as a file (entry %d) and as the folder of %s (entry %d)", dir, d.index, path, e.index)
			}
		}
		key := strings.ToLower(norm.NFC.String(path))
		if d, ok := folded[key]; ok {
			return badArtifact("entries %d (%q) and %d (%q) differ only in case or in how their letters are composed: a reviewer reads them as one name, and a case-insensitive file system keeps one file",
				d.index, d.python, e.index, e.python)
		}
		folded[key] = e
	}

	// Each entry's local header, and the bytes the entries take: one after another, from the
	// end of the #! line to the central directory.
	type span struct {
		e          zipEntry
		start, end uint64
	}
	spans := make([]span, 0, len(entries))
	for _, e := range entries {
		end, err := checkZipLocal(r, base, cdOffset, e)
		if err != nil {
			return err
		}
		spans = append(spans, span{e, e.offset, end})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	first := base + int64(spans[0].start)
	if first > maxShebang {
		return badArtifact("the zip's first entry (%q) begins at offset %d: before it a zipapp holds its #! line alone, of at most %d bytes", spans[0].e.python, first, maxShebang)
	}
	line := make([]byte, first)
	if err := readAt(r, line, 0); err != nil {
		return fmt.Errorf("read the zipapp's #! line: %w", err)
	}
	switch i := bytes.IndexByte(line, '\n'); {
	case !bytes.HasPrefix(line, []byte("#!")):
		return badArtifact("the %d bytes before the zip's first entry are not a #! line: a zipapp begins with one", first)
	case i < 0:
		return badArtifact("the %d bytes before the zip's first entry do not end with a line break: a zipapp holds its #! line alone there", first)
	case i != len(line)-1:
		return badArtifact("%d bytes after the #! line (which ends at offset %d), before the zip's first entry at offset %d: a zipapp holds its #! line alone there", len(line)-1-i, i+1, first)
	}
	if err := checkShebang(line[:len(line)-1]); err != nil {
		return err
	}
	for i := 1; i < len(spans); i++ {
		prev, next := spans[i-1], spans[i]
		switch {
		case next.start < prev.end:
			return badArtifact("entries %q and %q overlap, at zip offsets %d to %d", prev.e.python, next.e.python, next.start, prev.end)
		case next.start > prev.end:
			return badArtifact("zip offsets %d to %d, between entries %q and %q, are in no entry: a zipapp's entries follow one another", prev.end, next.start, prev.e.python, next.e.python)
		}
	}
	if last := spans[len(spans)-1]; last.end != cdOffset {
		return badArtifact("zip offsets %d to %d, between the last entry (%q) and the central directory, are in no entry", last.end, cdOffset, last.e.python)
	}
	return nil
}

// readZipCentral reads the records entries of the central directory of cdSize bytes at
// cdStart in r, and checks each one's name and mode. The directory holds them and nothing
// else.
func readZipCentral(r io.ReaderAt, cdStart int64, cdSize uint64, records int) ([]zipEntry, error) {
	le := binary.LittleEndian
	br := bufio.NewReader(io.NewSectionReader(r, cdStart, int64(cdSize)))
	// The section ends where the directory does, within the file: a short read is a
	// directory shorter than its entries, any other failure the file's.
	read := func(b []byte, what string, i int) error {
		_, err := io.ReadFull(br, b)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return badArtifact("the zip's central directory (%d bytes) ends within entry %d's %s, of %d entries its end record says it holds", cdSize, i, what, records)
		}
		return err
	}
	entries := make([]zipEntry, 0, min(records, 1024))
	var h [zipCentralLen]byte
	var taken uint64
	for i := range records {
		if err := read(h[:], "header", i); err != nil {
			return nil, err
		}
		if le.Uint32(h[:]) != zipCentralSig {
			return nil, badArtifact("entry %d of the zip's central directory, at its byte %d, does not begin with PK\\x01\\x02", i, taken)
		}
		nameLen, extraLen, commentLen := int(le.Uint16(h[28:])), int(le.Uint16(h[30:])), int(le.Uint16(h[32:]))
		name := make([]byte, nameLen)
		if err := read(name, "name", i); err != nil {
			return nil, err
		}
		if err := read(make([]byte, extraLen+commentLen), "extra field and comment", i); err != nil {
			return nil, err
		}
		taken += uint64(zipCentralLen + nameLen + extraLen + commentLen)
		e := zipEntry{index: i, name: string(name), flags: le.Uint16(h[8:]), csize: uint64(le.Uint32(h[20:])), offset: uint64(le.Uint32(h[42:]))}
		method := le.Uint16(h[10:])
		switch {
		case e.csize == 0xffffffff || le.Uint32(h[24:]) == 0xffffffff || e.offset == 0xffffffff:
			return nil, badArtifact("entry %d (%q) is Zip64: a zipapp needs no Zip64", i, name)
		case e.flags&zipEncrypted != 0:
			return nil, badArtifact("entry %d (%q) is encrypted: Python's zipimport cannot read it", i, name)
		case method != zip.Store && method != zip.Deflate:
			return nil, badArtifact("entry %d (%q) is compressed with method %d: Python's zipimport reads stored (0) and deflated (8) entries", i, name, method)
		}
		var err error
		if e.python, err = checkZipName(e.name, e.flags); err != nil {
			return nil, badArtifact("entry %d %v", i, err)
		}
		fh := zip.FileHeader{Name: e.name, CreatorVersion: le.Uint16(h[4:]), ExternalAttrs: le.Uint32(h[38:])}
		switch mode := fh.Mode(); {
		case mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
			return nil, badArtifact("entry %s is setuid or setgid", e.python)
		case mode&(fs.ModeSymlink|fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
			return nil, badArtifact("entry %s is not a plain file or folder", e.python)
		}
		entries = append(entries, e)
	}
	if taken != cdSize {
		return nil, badArtifact("the zip's central directory is %d bytes, and its %d entries take %d: the rest could hold entries some readers list and others do not", cdSize, records, taken)
	}
	return entries, nil
}

// checkZipName checks an entry's name, its bytes as the zip holds them, and returns it as
// Python reads it: a plain relative path of printable UTF-8.
func checkZipName(name string, flags uint16) (string, error) {
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%q: its name is not UTF-8", name)
	}
	for i, c := range name {
		if !unicode.IsGraphic(c) {
			return "", fmt.Errorf("%q: its name holds %U at byte %d, a control or invisible character", name, c, i)
		}
	}
	python := pythonName(name, flags)
	path := strings.TrimSuffix(python, "/")
	switch {
	case strings.HasPrefix(python, "/"):
		return "", fmt.Errorf("%q is an absolute path: a zipapp's entries are relative to it", python)
	case slices.Contains(strings.Split(path, "/"), ".."):
		return "", fmt.Errorf("%q has a .. segment: a zipapp's entries stay within it", python)
	case path == "." || !fs.ValidPath(path):
		return "", fmt.Errorf("%q is not a plain relative path: it has an empty or . segment", python)
	case strings.ContainsRune(python, '\\'):
		return "", fmt.Errorf("%q holds a backslash, which tools on Windows take for a folder's", python)
	}
	return python, nil
}

// cp437 is code page 437 from 0x80 on, as Python decodes it (below 0x80 it is ASCII).
var cp437 = []rune("ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0")

// pythonName is the name Python's zipfile and zipimport read in an entry's name bytes: UTF-8
// when the entry's flags say so (0x800), code page 437 otherwise.
func pythonName(name string, flags uint16) string {
	if flags&zipUTF8 != 0 {
		return name
	}
	var b strings.Builder
	for i := range len(name) {
		if c := name[i]; c < 0x80 {
			b.WriteByte(c)
		} else {
			b.WriteRune(cp437[c-0x80])
		}
	}
	return b.String()
}

// checkZipLocal checks the local header of entry e, in the zip at base in r whose central
// directory is at zip offset cdOffset: it names the entry as the central directory does. It
// returns the zip offset where the entry's bytes end (its data, and their descriptor if any).
func checkZipLocal(r io.ReaderAt, base int64, cdOffset uint64, e zipEntry) (uint64, error) {
	le := binary.LittleEndian
	// Each read is checked to lie before the central directory first: a read that fails then
	// is the file's failure, not the zip's.
	before := func(from, n uint64, what string) error {
		if from > cdOffset || cdOffset-from < n {
			return badArtifact("entry %q: its %s (zip offsets %d to %d) runs into the central directory at %d", e.python, what, from, from+n, cdOffset)
		}
		return nil
	}
	var h [zipLocalLen]byte
	if err := before(e.offset, zipLocalLen, "local header"); err != nil {
		return 0, err
	}
	if err := readAt(r, h[:], base+int64(e.offset)); err != nil {
		return 0, fmt.Errorf("read entry %q's local header: %w", e.python, err)
	}
	if le.Uint32(h[:]) != zipLocalSig {
		return 0, badArtifact("entry %q: no local header (PK\\x03\\x04) at zip offset %d, where the central directory says it is", e.python, e.offset)
	}
	flags, nameLen, extraLen := le.Uint16(h[6:]), uint64(le.Uint16(h[26:])), uint64(le.Uint16(h[28:]))
	if err := before(e.offset+zipLocalLen, nameLen, "local header's name"); err != nil {
		return 0, err
	}
	name := make([]byte, nameLen)
	if err := readAt(r, name, base+int64(e.offset)+zipLocalLen); err != nil {
		return 0, fmt.Errorf("read entry %q's local header: %w", e.python, err)
	}
	switch {
	case string(name) != e.name:
		return 0, badArtifact("entry %q: its local header names it %q: readers that walk the local headers see another name than Python does", e.name, name)
	case flags&zipUTF8 != e.flags&zipUTF8:
		return 0, badArtifact("entry %q: its local header's UTF-8 flag (0x800) is not the central directory's, so its name reads two ways", e.name)
	}
	data := e.offset + zipLocalLen + nameLen + extraLen
	if err := before(data, e.csize, "data"); err != nil {
		return 0, err
	}
	end := data + e.csize
	if flags&zipDescriptor != 0 {
		// CRC-32, compressed and uncompressed sizes, after a signature or not.
		if err := before(end, 12, "data descriptor"); err != nil {
			return 0, err
		}
		var sig [4]byte
		if err := readAt(r, sig[:], base+int64(end)); err != nil {
			return 0, fmt.Errorf("read entry %q's data descriptor: %w", e.python, err)
		}
		end += 12
		if le.Uint32(sig[:]) == zipDescriptorSig {
			end += 4
		}
		if end > cdOffset {
			return 0, badArtifact("entry %q: its data descriptor runs to zip offset %d, into the central directory at %d", e.python, end, cdOffset)
		}
	}
	return end, nil
}

// readAt fills b from r at off, which the caller knows to be within r.
func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil // io.EOF may come with the last bytes
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}
