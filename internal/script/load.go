package script

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing/fstest"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/barrage"
)

// maxRowErrors bounds how many ragged rows of one data file are reported.
const maxRowErrors = 10

// Load reads the script at path and the data files it names, relative to the script's folder.
// A refused script's error is an ErrorList that also holds the data files' errors, each with
// its file and line; an unreadable script file is reported as such.
func Load(path string, opts ParseOptions) (*Script, error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if opts.Filename == "" {
		opts.Filename = path
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	// The files it names are read inside its folder: a symbolic link out of it is refused as
	// ../ is.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	defer root.Close()
	return LoadData(root.FS(), name, data, opts)
}

// LoadFS is Load reading from fsys, where name is the script's slash-separated path; the
// server uses it with the files of an upload.
func LoadFS(fsys fs.FS, name string, opts ParseOptions) (*Script, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	return LoadData(fsys, name, data, opts)
}

// LoadData is LoadFS with the script's text given: a script rewritten by source plugins, whose
// data files are still read from fsys beside name.
func LoadData(fsys fs.FS, name string, data []byte, opts ParseOptions) (*Script, error) {
	if opts.Filename == "" {
		opts.Filename = name
	}
	d := &decoder{errs: errs{file: opts.Filename}, checkOnly: opts.CheckDataOnly}
	s := d.parse(data)
	var dataErrs ErrorList
	if s != nil {
		dir := path.Dir(name)
		for _, df := range s.Variables.Data {
			dataErrs = append(dataErrs, d.readData(fsys, path.Join(dir, df.File), df)...)
		}
		d.readFiles(fsys, dir, s)
		d.checkVars(s)
	}
	if list := d.refused(dataErrs); list != nil {
		return nil, list
	}
	return s, nil
}

// LoadBundle is LoadData for a script stored with its data files, by name: the form in which
// the server keeps a script and agents receive it.
func LoadBundle(source []byte, files map[string][]byte) (*Script, error) {
	return LoadData(BundleFS(files), BundleName, source, ParseOptions{Filename: BundleName})
}

// CheckBundle is LoadBundle as the server checks a script stored with its data files (a
// test's revision, a script): the files' rows are checked, not kept, since the server runs
// nothing.
func CheckBundle(source []byte, files []barrage.ScriptFile) (*Script, error) {
	byName := make(map[string][]byte, len(files))
	for _, f := range files {
		byName[f.Name] = f.Content
	}
	return LoadData(BundleFS(byName), BundleName, source, ParseOptions{Filename: BundleName, CheckDataOnly: true})
}

// FilesOf names the files source reads, as Files does; none when it does not parse (loading it
// then says why).
func FilesOf(source []byte) []string {
	parsed, err := Parse(source, ParseOptions{})
	if err != nil {
		return nil
	}
	return parsed.Files()
}

// BundleName is the name a bundled script is read under, beside its files.
const BundleName = "script"

// BundleFS is the files of a bundle, by name, as a file system for LoadData.
func BundleFS(files map[string][]byte) fs.FS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return fsys
}

// readData reads a CSV data file into df and returns its errors, with the file's own lines. A
// file that cannot be opened is reported against the script.
func (d *decoder) readData(fsys fs.FS, name string, df *DataFile) ErrorList {
	var list ErrorList
	fail := func(line int, format string, args ...any) {
		list = append(list, &Error{File: df.File, Line: line, Path: df.p.path, Message: fmt.Sprintf(format, args...)})
	}
	f, err := fsys.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		d.add(pos{path: field(df.p.path, "file"), line: df.p.line, col: df.p.col}, "cannot read %s: %v", df.File, err)
		return nil
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.Comma = df.Separator
	r.ReuseRecord = d.checkOnly // a row kept must not be overwritten by the next
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		fail(0, "the file is empty: its first line must name the columns")
		return list
	}
	if err != nil {
		fail(csvLine(err), "%s", csvMessage(err))
		return list
	}
	columns := make([]string, len(header))
	ok := true
	for i, h := range header {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		switch {
		case !identRe.MatchString(h):
			fail(1, "column %d is named %s, not a valid variable name: use letters, digits and _, not starting with a digit", i+1, quote(h))
			ok = false
		case contains(columns[:i], h):
			fail(1, "column %s is named twice", h)
			ok = false
		}
		columns[i] = h
	}
	var rows [][]string
	bad, n := 0, 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				if bad++; bad <= maxRowErrors {
					fail(pe.StartLine, "the row has %d fields but the header names %d columns", len(rec), len(header))
				}
				ok = false
				continue
			}
			fail(csvLine(err), "%s", csvMessage(err))
			return list
		}
		if n++; !d.checkOnly {
			rows = append(rows, rec)
		}
	}
	if bad > maxRowErrors {
		fail(0, "%d more rows have the wrong number of fields", bad-maxRowErrors)
	}
	if ok && n == 0 {
		fail(1, "the file has a header row but no data rows")
		ok = false
	}
	if ok {
		df.Columns, df.Rows = columns, rows
	}
	return list
}

func csvLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("at position %d: %v", pe.Column, pe.Err)
	}
	return err.Error()
}

// ToJSON returns a script's text, YAML or JSON, as a JSON document: the form source plugins
// receive. It does not check the script.
func ToJSON(data []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return json.Marshal(doc)
}
