package registry_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
)

const shebang = "#!/usr/bin/env python3\n"

// entry is a file of a zipapp made by goZipapp.
type entry struct {
	name    string
	body    string
	nonUTF8 bool // written without the UTF-8 flag, whatever its name
	// raw, when set, writes the entry as is: this method and these flags, and a compressed
	// size of len(body)-hidden, so that the last hidden bytes of body are in no entry.
	raw    bool
	method uint16
	flags  uint16
	hidden int
}

// goZipapp is prefix, then a zip of entries, written by archive/zip with its offsets counted
// from the start of the file (Python counts them from the zip's start: both read the same).
func goZipapp(t *testing.T, prefix string, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(prefix)
	z := zip.NewWriter(&b)
	z.SetOffset(int64(len(prefix)))
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, NonUTF8: e.nonUTF8}
		var err error
		var w io.Writer
		if e.raw {
			stored := uint64(len(e.body) - e.hidden)
			h.Method, h.Flags = e.method, e.flags
			h.CRC32 = crc32.ChecksumIEEE([]byte(e.body[:stored]))
			h.CompressedSize64, h.UncompressedSize64 = stored, stored
			w, err = z.CreateRaw(h)
		} else {
			w, err = z.CreateHeader(h)
		}
		require.NoError(t, err)
		_, err = w.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	return b.Bytes()
}

// localHeader is the offset of the local header of the entry named name in a zip written by
// goZipapp: local headers come before the central directory, so the name's first bytes in the
// file are its local header's.
func localHeader(t *testing.T, b []byte, name string) int {
	t.Helper()
	i := bytes.Index(b, []byte(name))
	require.Positive(t, i)
	require.Equal(t, "PK\x03\x04", string(b[i-30:i-26]))
	return i - 30
}

var mainPy = entry{name: "__main__.py", body: "import helper\nhelper.run()\n"}

// Zipapps as Python and Go write them pass: with the #! line, a package, a name past ASCII
// (which Python's zipfile flags UTF-8), entries stored and deflated.
func TestRealZipappsAreArtifacts(t *testing.T) {
	for name, b := range map[string][]byte{
		"Go, offsets from the file's start": goZipapp(t, shebang, mainPy, entry{name: "helper.py", body: "def run(): pass\n"},
			entry{name: "pkg/"}, entry{name: "pkg/modülé.py", body: "x = 1\n"},
			entry{name: "data.txt", body: "stored", raw: true, method: zip.Store}),
		"Go, offsets from the zip's start": append([]byte(shebang), goZipapp(t, "", mainPy)...),
	} {
		require.NoError(t, registry.SniffZipapp(b), name)
		require.NoError(t, registry.CheckZipapp(bytes.NewReader(b), int64(len(b))), name)
	}

	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 makes the real zipapp")
	}
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "__main__.py"), []byte("import modülé\nprint(modülé.x)\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "modülé.py"), []byte("x = 'hello'\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(src, "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "pkg", "__init__.py"), nil, 0o644))
	pyz := filepath.Join(t.TempDir(), "app.pyz")
	out, err := exec.Command(python, "-m", "zipapp", src, "-o", pyz, "-p", "/usr/bin/env python3", "-c").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(python, pyz).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "hello\n", string(out))
	b, err := os.ReadFile(pyz)
	require.NoError(t, err)
	require.NoError(t, registry.SniffZipapp(b))
	require.NoError(t, registry.CheckZipapp(bytes.NewReader(b), int64(len(b))))
}

// A zipapp whose entries Python reads otherwise than a reviewer does, or where bytes hide
// outside its entries, or that Python cannot run, is refused, saying what and where.
func TestAZipappThatRunsOtherwiseThanItReadsIsRefused(t *testing.T) {
	le := binary.LittleEndian
	helper := entry{name: "helper.py", body: "def run(): pass\n"}
	for name, c := range map[string]struct {
		zip  []byte
		want string
	}{
		"two entries of one name": {goZipapp(t, shebang, mainPy, entry{name: "__main__.py", body: "import os\n"}),
			"__main__.py is in the zipapp twice"},
		// é's UTF-8 bytes, C3 A9, read as code page 437 without the flag, are ├⌐.
		"two names that Python decodes alike": {goZipapp(t, shebang, mainPy, entry{name: "├⌐.py", body: "reviewed"}, entry{name: "é.py", body: "run", nonUTF8: true}),
			`entries 1 ("├⌐.py") and 2 ("é.py") are both "├⌐.py" to Python`},
		"one name with and without the UTF-8 flag": {goZipapp(t, shebang, mainPy, entry{name: "é.py", body: "reviewed"}, entry{name: "é.py", body: "run", nonUTF8: true}),
			`entries 1 and 2 are both "é.py", one with the UTF-8 flag (0x800) and one without: Python reads them as "é.py" and "├⌐.py"`},
		"a file and a folder of one name": {goZipapp(t, shebang, mainPy, helper, entry{name: "helper.py/"}),
			"helper.py is in the zipapp both as a file and as a folder (entries 1 and 2)"},
		"a name that is not UTF-8": {goZipapp(t, shebang, mainPy, entry{name: "\xff\xfe.py", nonUTF8: true}),
			`entry 1 "\xff\xfe.py": its name is not UTF-8`},
		"a name with a control character": {goZipapp(t, shebang, mainPy, entry{name: "help\x1b[2Jer.py"}),
			`its name holds U+001B at byte 4, a control or invisible character`},
		"a name that reads backwards": {goZipapp(t, shebang, mainPy, entry{name: "\u202eyp.nur"}),
			`its name holds U+202E at byte 0`},
		"an absolute path": {goZipapp(t, shebang, mainPy, entry{name: "/etc/cron.d/x"}), `"/etc/cron.d/x" is an absolute path`},
		"a .. segment":     {goZipapp(t, shebang, mainPy, entry{name: "pkg/../../x.py"}), `"pkg/../../x.py" has a .. segment`},
		"an empty segment": {goZipapp(t, shebang, mainPy, entry{name: "pkg//x.py"}), `"pkg//x.py" is not a plain relative path`},
		"no __main__.py":   {goZipapp(t, shebang, helper), "a zipapp holds __main__.py"},
		"a file that is another's folder": {goZipapp(t, shebang, mainPy, entry{name: "pkg", body: "x"}, entry{name: "pkg/mod.py", body: "y"}),
			"pkg is in the zipapp as a file (entry 1) and as the folder of pkg/mod.py (entry 2)"},
		"__main__.py as a folder too": {goZipapp(t, shebang, mainPy, entry{name: "__main__.py/x", body: "y"}),
			"__main__.py is in the zipapp as a file (entry 0) and as the folder of __main__.py/x (entry 1)"},
		"names that differ in case": {goZipapp(t, shebang, mainPy, entry{name: "__MAIN__.py", body: "y"}),
			`entries 0 ("__main__.py") and 1 ("__MAIN__.py") differ only in case`},
		"names composed otherwise": {goZipapp(t, shebang, mainPy, entry{name: "caf\u00e9.py", body: "a"}, entry{name: "cafe\u0301.py", body: "b"}),
			"differ only in case or in how their letters are composed"},
		"a backslash":        {goZipapp(t, shebang, mainPy, entry{name: `a\..\..\x.py`, body: "x"}), "holds a backslash"},
		"a bzip2 entry":      {goZipapp(t, shebang, mainPy, entry{name: "x.py", body: "x", raw: true, method: 12}), "is compressed with method 12"},
		"an encrypted entry": {goZipapp(t, shebang, mainPy, entry{name: "x.py", body: "x", raw: true, flags: 1}), `entry 1 ("x.py") is encrypted`},
		"a setuid entry": {func() []byte {
			var b bytes.Buffer
			b.WriteString(shebang)
			z := zip.NewWriter(&b)
			z.SetOffset(int64(b.Len()))
			for _, h := range []*zip.FileHeader{{Name: "__main__.py"}, {Name: "evil"}} {
				if h.Name == "evil" {
					h.SetMode(0o755 | os.ModeSetuid)
				}
				_, err := z.CreateHeader(h)
				require.NoError(t, err)
			}
			require.NoError(t, z.Close())
			return b.Bytes()
		}(), "entry evil is setuid or setgid"},
		"a local header that names another entry": {func() []byte {
			b := goZipapp(t, shebang, mainPy, entry{name: "evilmain.py", body: "import os\n"})
			i := localHeader(t, b, "evilmain.py")
			copy(b[i+30:], "__main__.py")
			return b
		}(), `entry "evilmain.py": its local header names it "__main__.py"`},
		"a local header without the UTF-8 flag": {func() []byte {
			b := goZipapp(t, shebang, mainPy, entry{name: "modülé.py", body: "x = 1\n"})
			i := localHeader(t, b, "modülé.py")
			le.PutUint16(b[i+6:], le.Uint16(b[i+6:])&^0x800)
			return b
		}(), `entry "modülé.py": its local header's UTF-8 flag (0x800) is not the central directory's`},
		"a second line before the zip": {goZipapp(t, shebang+"exec /tmp/payload\n", mainPy),
			"18 bytes after the #! line (which ends at offset 23), before the zip's first entry at offset 41"},
		"two #! lines": {goZipapp(t, "#!/bin/sh\n"+shebang, mainPy), "23 bytes after the #! line (which ends at offset 10)"},
		"no #! line":   {goZipapp(t, "", mainPy), "the 0 bytes before the zip's first entry are not a #! line"},
		"a payload before the #! line": {goZipapp(t, "\x7fELF"+shebang, mainPy),
			"the 27 bytes before the zip's first entry are not a #! line"},
		"a #! line that is not printable": {goZipapp(t, "#!/usr/bin/env\tpython3\n", mainPy),
			"byte 14 of the zipapp's #! line is 0x09"},
		"a #! line without its line break": {goZipapp(t, "#!/usr/bin/env python3", mainPy),
			"do not end with a line break"},
		"a long prefix": {goZipapp(t, "#!/"+strings.Repeat("x", 300)+"\n", mainPy),
			"the zip's first entry (\"__main__.py\") begins at offset 304"},
		"bytes between entries": {goZipapp(t, shebang, entry{name: "data.txt", body: "data" + "hidden payload", raw: true, method: zip.Store, hidden: len("hidden payload")}, mainPy),
			`zip offsets 65 to 79, between entries "data.txt" and "__main__.py", are in no entry`},
		"a zip comment": {func() []byte {
			var b bytes.Buffer
			b.WriteString(shebang)
			z := zip.NewWriter(&b)
			z.SetOffset(int64(b.Len()))
			_, err := z.Create("__main__.py")
			require.NoError(t, err)
			require.NoError(t, z.SetComment("PK\x05\x06 another end"))
			require.NoError(t, z.Close())
			return b.Bytes()
		}(), "ends with the zip's end record (PK\\x05\\x06) and no zip comment"},
		"bytes after the zip": {append(goZipapp(t, shebang, mainPy), "more"...), "and no zip comment; its last 22 bytes are not that"},
		"not a zip":           {[]byte(shebang + "not a zip at all, but long enough"), "its last 22 bytes are not that"},
	} {
		t.Run(name, func(t *testing.T) {
			err := registry.CheckZipapp(bytes.NewReader(c.zip), int64(len(c.zip)))
			require.ErrorIs(t, err, registry.ErrBadArtifact)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Python's zipfile reads the two names of the test above as one: the collision is real.
func TestPythonReadsTwoNamesAsOne(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3")
	}
	b := goZipapp(t, shebang, mainPy, entry{name: "├⌐.py", body: "reviewed"}, entry{name: "é.py", body: "run", nonUTF8: true})
	pyz := filepath.Join(t.TempDir(), "app.pyz")
	require.NoError(t, os.WriteFile(pyz, b, 0o644))
	out, err := exec.Command(python, "-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).namelist()[1:])", pyz).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "['├⌐.py', '├⌐.py']\n", string(out))
}

// The head of a zipapp is a #! line of printable ASCII within what Linux reads.
func TestAZipappBeginsWithItsInterpreterLine(t *testing.T) {
	require.NoError(t, registry.SniffZipapp([]byte(shebang+"PK\x03\x04")))
	for head, want := range map[string]string{
		"PK\x03\x04":                        "a zipapp begins with a #! line",
		"#!/" + strings.Repeat("x", 300):    "a zipapp's #! line ends within 256 bytes",
		"#!/usr/bin/python3\x1b[2J\nPK":     "byte 18 of the zipapp's #! line is 0x1b",
		"#!/usr/bin/pyth\xc3\xb6n3\nPK\x03": "byte 15 of the zipapp's #! line is 0xc3",
	} {
		err := registry.SniffZipapp([]byte(head))
		require.ErrorIs(t, err, registry.ErrBadArtifact, "%q", head)
		require.ErrorContains(t, err, want, "%q", head)
	}
}
