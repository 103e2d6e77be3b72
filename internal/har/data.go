package har

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// DataFile is a CSV file of users, as a script's data variable reads it: a header naming the
// columns, then a row per user.
type DataFile struct {
	// Path is the file as the script names it, relative to the script's folder.
	Path    string
	Columns []string
	Rows    [][]string
}

var columnRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReadDataFile reads a CSV data file that the script will name path. Its columns must be
// variable names, as the script's loader requires.
func ReadDataFile(path string, content []byte) (*DataFile, error) {
	r := csv.NewReader(bytes.NewReader(content))
	records, err := r.ReadAll()
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("%s:%d: %w", path, pe.Line, pe.Err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	case len(records) < 2:
		return nil, fmt.Errorf("%s: a header line naming the columns, then a row per user", path)
	}
	d := &DataFile{Path: path, Rows: records[1:]}
	for _, col := range records[0] {
		col = strings.TrimSpace(col)
		if !columnRe.MatchString(col) {
			return nil, fmt.Errorf("%s:1: column %q is not a variable name (letters, digits and _, not starting with a digit)", path, col)
		}
		d.Columns = append(d.Columns, col)
	}
	return d, nil
}
