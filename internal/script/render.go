package script

import (
	"bytes"
	"fmt"
	"strconv"
)

// AppendURL appends the request's URL, with its Query parameters form-encoded after a ? (or
// an & when the URL already has a query), to buf.
func (r *Request) AppendURL(lookup Lookup, buf []byte) ([]byte, error) {
	start := len(buf)
	buf, err := r.URL.Render(lookup, buf)
	if err != nil || len(r.Query) == 0 {
		return buf, err
	}
	q := r.query
	if q == nil { // a Request built by hand rather than parsed
		q = compileQuery(r.Query)
	}
	if bytes.IndexByte(buf[start:], '?') >= 0 {
		buf = append(buf, '&')
	} else {
		buf = append(buf, '?')
	}
	return q.Render(lookup, buf)
}

// StatusOK reports whether code passes an AssertStatus assertion.
func (a *Assertion) StatusOK(code int) bool {
	for _, r := range a.Status {
		if code >= r.Min && code <= r.Max {
			return true
		}
	}
	return false
}

// JSONHolds reports whether doc, a body read with ReadJSON, passes an AssertJSON assertion: the
// path finds nothing when Absent; finds a value equal to Equals when HasEquals; finds a value
// whose text (see JSONPath.FindString) is EqualsText rendered when EqualsText is set; and
// otherwise finds anything. Its error is that of rendering EqualsText.
func (a *Assertion) JSONHolds(doc JSONDoc, lookup Lookup) (bool, error) {
	ok, _, err := a.JSONCheck(doc, lookup)
	return ok, err
}

// maxFound is how much of a value found a failed check quotes.
const maxFound = 200

// JSONCheck is JSONHolds, and when the assertion fails, why, naming what the path found and
// what was wanted: `json $.qty was 2, wanted 3`. Only the value the path selects is decoded,
// and only when it is compared with Equals or quoted in a failure.
func (a *Assertion) JSONCheck(doc JSONDoc, lookup Lookup) (bool, string, error) {
	v, found := a.JSONPath.Select(doc)
	quote := func(v any) string {
		t := jsonText(v)
		if len(t) > maxFound {
			t = t[:maxFound] + "..."
		}
		if _, ok := v.(string); ok {
			return strconv.Quote(t)
		}
		return t
	}
	switch {
	case a.Absent:
		if found {
			return false, fmt.Sprintf("json %s found %s, wanted nothing", a.JSONPath, quote(v.Decode())), nil
		}
		return true, "", nil
	case !found:
		return false, fmt.Sprintf("json %s found nothing", a.JSONPath), nil
	case a.HasEquals:
		got := v.Decode()
		if JSONEqual(got, a.Equals) {
			return true, "", nil
		}
		return false, fmt.Sprintf("json %s was %s, wanted %s", a.JSONPath, quote(got), quote(a.Equals)), nil
	case a.EqualsText != nil:
		want, err := a.EqualsText.Render(lookup, nil)
		if err != nil {
			return false, "", err
		}
		if v.textIs(want) {
			return true, "", nil
		}
		return false, fmt.Sprintf("json %s was %s, wanted %q", a.JSONPath, quote(v.Decode()), want), nil
	}
	return true, "", nil
}
