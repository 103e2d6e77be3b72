package script_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

// dataScript uses users.csv's columns email and password, and a constant.
const dataScript = `version: 1
base_url: http://127.0.0.1:8080
variables:
  constants: { site: shop }
  data:
    - file: users.csv
      order: sequential
session:
  groups:
    - name: g
      requests:
        - name: login
          method: POST
          url: /login/${site}
          body: { form: { email: "${email}", password: "${password}" } }
load: { vus: 2, iterations: 10 }
`

func loadFS(t *testing.T, files map[string]string, opts ...script.ParseOptions) (*script.Script, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	var o script.ParseOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return script.LoadFS(fsys, "test.yaml", o)
}

func TestLoadReadsDataFiles(t *testing.T) {
	t.Parallel()
	s, err := loadFS(t, map[string]string{
		"test.yaml": dataScript,
		"users.csv": "\ufeffemail, password\nada@x.test,\"se,cret\"\n\"grace@x.test\",\"multi\nline\"\n",
	})
	require.NoError(t, err)
	df := s.Variables.Data[0]
	require.Equal(t, []string{"email", "password"}, df.Columns)
	require.Equal(t, [][]string{{"ada@x.test", "se,cret"}, {"grace@x.test", "multi\nline"}}, df.Rows)
	require.Equal(t, script.Sequential, df.Order)

	// Checked only, as the server does: the same columns, no rows kept.
	s, err = loadFS(t, map[string]string{"test.yaml": dataScript, "users.csv": "email,password\na,b\nc,d\n"}, script.ParseOptions{CheckDataOnly: true})
	require.NoError(t, err)
	require.Equal(t, []string{"email", "password"}, s.Variables.Data[0].Columns)
	require.Nil(t, s.Variables.Data[0].Rows)
}

func TestLoadFromDiskResolvesTheScriptsFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tests", "data"), 0o755))
	doc := []byte(strings.Replace(dataScript, "file: users.csv", "file: data/users.csv", 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "shop.yaml"), doc, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "data", "users.csv"), []byte("email;password\na;b\n"), 0o644))

	_, err := script.Load(filepath.Join(dir, "tests", "shop.yaml"), script.ParseOptions{})
	require.Error(t, err, "the separator is ;")
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.Equal(t, "data/users.csv", list[0].File)
	require.Equal(t, 1, list[0].Line)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "data", "users.csv"), []byte("email,password\na,b\n"), 0o644))
	s, err := script.Load(filepath.Join(dir, "tests", "shop.yaml"), script.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b"}}, s.Variables.Data[0].Rows)

	_, err = script.Load(filepath.Join(dir, "missing.yaml"), script.ParseOptions{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotErrorAs(t, err, &list, "an unreadable script is no invalid one")
}

func TestLoadDataFileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		script string
		csv    *string // nil leaves users.csv out
		want   string  // the whole error text
	}{
		{"missing file", dataScript, nil,
			"test.yaml:6: variables.data[0].file: cannot read users.csv: file does not exist"},
		{"empty file", dataScript, ptr(""),
			"users.csv: variables.data[0]: the file is empty: its first line must name the columns"},
		{"header only", dataScript, ptr("email,password\n"),
			"users.csv:1: variables.data[0]: the file has a header row but no data rows"},
		{"ragged rows", dataScript, ptr("email,password\na,b\nc\nd,e\nf,g,h\n"),
			"users.csv:3: variables.data[0]: the row has 1 fields but the header names 2 columns\n" +
				"users.csv:5: variables.data[0]: the row has 3 fields but the header names 2 columns"},
		{"bad quote", dataScript, ptr("email,password\na,\"b\n"),
			"users.csv:2: variables.data[0]: at position 6: extraneous or missing \" in quoted-field"},
		{"column name", dataScript, ptr("e-mail,password\na,b\n"),
			`users.csv:1: variables.data[0]: column 1 is named "e-mail", not a valid variable name: use letters, digits and _, not starting with a digit`},
		{"column twice", dataScript, ptr("email,email\na,b\n"),
			"users.csv:1: variables.data[0]: column email is named twice"},
		{"column missing for a template", dataScript, ptr("email,pass\na,b\n"),
			"test.yaml:15: session.groups[0].requests[0].body.form: ${password} is not defined: no constant, environment variable, data column or extractor has that name"},
		{"column clashes with a constant", dataScript, ptr("email,password,site\na,b,c\n"),
			"test.yaml:6: variables.data[0]: column site of users.csv is already a constant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"test.yaml": tc.script}
			if tc.csv != nil {
				files["users.csv"] = *tc.csv
			}
			for _, opts := range []script.ParseOptions{{}, {CheckDataOnly: true}} {
				s, err := loadFS(t, files, opts)
				require.Nil(t, s)
				require.Error(t, err)
				require.Equal(t, tc.want, err.Error(), "checked only: %v", opts.CheckDataOnly)
			}
		})
	}
}

func TestLoadReportsScriptAndDataErrorsTogether(t *testing.T) {
	t.Parallel()
	_, err := loadFS(t, map[string]string{
		"test.yaml": strings.Replace(dataScript, "vus: 2", "vus: -2", 1),
		"users.csv": "email\n",
	})
	require.EqualError(t, err, "test.yaml:16: load.vus: must be between 1 and 1000000\n"+
		"users.csv:1: variables.data[0]: the file has a header row but no data rows")
}

func ptr(s string) *string { return &s }

// A file a script names is read inside its folder: a symbolic link out of it is refused as ../
// is, and a file whose name a multipart header cannot carry needs a filename.
func TestScriptFilesStayInTheirFolder(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600))
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")))
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
session: { groups: [ { name: g, requests: [ { name: r, method: POST, url: "http://127.0.0.1:9/", body: { file: link.txt } },
  { name: q, method: POST, url: "http://127.0.0.1:9/", body: { multipart: { f: { file: 'a"b.txt' } } } } ] } ] }
load: { vus: 1, iterations: 1 }
`), 0o644))
	_, err := script.Load(path, script.ParseOptions{})
	require.ErrorContains(t, err, "cannot read link.txt")
	require.ErrorContains(t, err, "give the part a filename")
}
