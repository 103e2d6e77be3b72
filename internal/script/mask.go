package script

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Masked is what a secret's value reads as wherever it could be shown.
const Masked = "***"

// Masker replaces the values of secrets, as written and as a URL or JSON would carry them, with
// Masked. A nil Masker masks nothing.
type Masker struct{ r *strings.Replacer }

// NewMasker masks values; nil when there are none. Each is masked as written and in every form
// in which a run or a recording may carry or show it: form-encoded, in a URL's path (with its
// slashes, and with them escaped), escaped in a JSON string (as a body's template writes it, and
// as encoding/json does), quoted as a message quotes what it found; and each of these quoted once
// more (a JSON body quoted in a failed check's message).
func NewMasker(values []string) *Masker {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		first := []string{v, url.QueryEscape(v), url.PathEscape(v), (&url.URL{Path: v}).EscapedPath(), JSONEscape(v), jsonInner(v), goInner(v)}
		forms = append(forms, first...)
		for _, f := range first {
			forms = append(forms, JSONEscape(f), jsonInner(f), goInner(f))
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// The longest first: a value that holds another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Masked)
	}
	return &Masker{strings.NewReplacer(pairs...)}
}

// jsonInner is s as encoding/json writes it inside a string (which escapes <, > and &).
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// goInner is s as strconv.Quote writes it, without the quotes: what %q in a message shows.
func goInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// String is s with every secret masked.
func (m *Masker) String(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

// Bytes is b with every secret masked (b itself when m masks nothing).
func (m *Masker) Bytes(b []byte) []byte {
	if m == nil || b == nil {
		return b
	}
	return []byte(m.r.Replace(string(b)))
}
