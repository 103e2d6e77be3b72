package script

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Error is one thing wrong with a script: where it is and why it was refused.
type Error struct {
	File    string // the script's or data file's name, when known
	Line    int    // 1-based; 0 when unknown
	Column  int    // 1-based; 0 when unknown
	Path    string // the field, as in session.groups[1].requests[0].url; empty for the whole document
	Message string
}

// Error formats e as "file:line: path: message", leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap makes errors.Is(err, barrage.ErrInvalid) hold.
func (e *Error) Unwrap() error { return barrage.ErrInvalid }

// ErrorList is every Error found in a script, in the order of the lines they point at. Parse
// and Load return one, never an empty one, when the script is refused.
type ErrorList []*Error

// Error lists the errors one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the list as a barrage.InvalidError whose fields are the paths with their
// lines, so that the HTTP edge answers with one entry per error and errors.Is(err,
// barrage.ErrInvalid) holds. The reason names the line too, for whoever reads it alone.
func (l ErrorList) Unwrap() error {
	fields := make([]barrage.FieldError, len(l))
	for i, e := range l {
		reason := e.Message
		if e.Line > 0 {
			reason += " (line " + strconv.Itoa(e.Line) + ")"
		}
		fields[i] = barrage.FieldError{Field: e.Path, Reason: reason, Line: e.Line}
	}
	return &barrage.InvalidError{Fields: fields}
}

// sort orders the list by line; errors without a line go last.
func (l ErrorList) sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
}

// MaxErrors bounds the errors a refused script lists: a hostile document of a hundred thousand
// mistakes costs the server no more to refuse than one of a few, and its answer stays small. The
// list ends with how many more were found.
const MaxErrors = 100

// errs collects errors while a script is read.
type errs struct {
	file string
	list ErrorList
	// more counts the errors found past MaxErrors, not listed.
	more int
	// notes are what the script should change and need not yet: old spellings.
	notes ErrorList
}

// refused is the list of errors to refuse the script with, sorted by line, with a last one
// saying how many more there were; nil when there are none.
func (e *errs) refused(extra ErrorList) ErrorList {
	e.list.sort()
	list := append(e.list, extra...)
	if len(list) == 0 {
		return nil
	}
	if more := e.more + max(len(list)-MaxErrors, 0); more > 0 {
		list = append(list[:min(len(list), MaxErrors)], &Error{File: e.file,
			Message: fmt.Sprintf("and %d more errors, not listed: fix these first", more)})
	}
	return list
}

// note records at p something the script should change, which does not refuse it.
func (e *errs) note(p pos, format string, args ...any) {
	e.notes = append(e.notes, &Error{File: e.file, Line: p.line, Column: p.col, Path: p.path, Message: fmt.Sprintf(format, args...)})
}

// add records an error at p; past MaxErrors it only counts it.
func (e *errs) add(p pos, format string, args ...any) {
	if len(e.list) >= MaxErrors {
		e.more++
		return
	}
	e.list = append(e.list, &Error{File: e.file, Line: p.line, Column: p.col, Path: p.path, Message: fmt.Sprintf(format, args...)})
}

// pos is where a value sits: its path in the document and its line and column.
type pos struct {
	path      string
	line, col int
}
