package script

import (
	"bytes"
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

// JSONHolds reports whether doc, a decoded JSON body, passes an AssertJSON assertion: the path
// finds nothing when Absent; finds a value equal to Equals when HasEquals; finds a value whose
// text (see JSONPath.FindString) is EqualsText rendered when EqualsText is set; and otherwise
// finds anything. Its error is that of rendering EqualsText.
func (a *Assertion) JSONHolds(doc any, lookup Lookup) (bool, error) {
	v, found := a.JSONPath.Find(doc)
	switch {
	case a.Absent:
		return !found, nil
	case !found:
		return false, nil
	case a.HasEquals:
		return JSONEqual(v, a.Equals), nil
	case a.EqualsText != nil:
		want, err := a.EqualsText.Render(lookup, nil)
		if err != nil {
			return false, err
		}
		return jsonText(v) == string(want), nil
	}
	return true, nil
}
