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

// NewMasker masks values; nil when there are none. Each is masked in every form SecretForms
// gives.
func NewMasker(values []string) *Masker {
	var forms []string
	for _, v := range values {
		forms = append(forms, SecretForms(v)...)
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

// SecretForms are the forms in which a run or a recording may carry or show the value v, v
// first: as written; form-encoded (a space as + or %20); in a URL's path (with its slashes, and
// with them escaped); each of these with its escapes in lower case, as some clients write them;
// escaped in a JSON string (as a body's template writes it, and as encoding/json does); quoted as
// a message quotes what it found; and each of these quoted once more (a JSON body quoted in a
// failed check's message). None when v is empty.
func SecretForms(v string) []string {
	if v == "" {
		return nil
	}
	query := url.QueryEscape(v)
	escaped := []string{query, strings.ReplaceAll(query, "+", "%20"), url.PathEscape(v), (&url.URL{Path: v}).EscapedPath()}
	for _, e := range escaped[:len(escaped):len(escaped)] {
		escaped = append(escaped, lowerEscapes(e))
	}
	first := append([]string{v}, escaped...)
	first = append(first, JSONEscape(v), jsonInner(v), goInner(v))
	forms := slices.Clone(first)
	for _, f := range first {
		forms = append(forms, JSONEscape(f), jsonInner(f), goInner(f))
	}
	return forms
}

// lowerEscapes is s with the hex digits of its %XX escapes in lower case.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
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
