package har

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// fieldKind is where in a request a field is.
type fieldKind int

const (
	inURL fieldKind = iota + 1 // the whole URL, for a redirect's Location
	inPath
	inQuery
	inForm
	inJSONString
	inJSONNumber
	inHeader
	inRaw
)

// field is a value a request sends, where a correlation or a data file's column may replace it,
// whole or a token in it.
type field struct {
	kind fieldKind
	// key names it for a variable: a form field's or query parameter's name, a JSON member's,
	// a header's, the path segment before an id.
	key string
	// where says where it is, for people: "form field csrf", "JSON $.cart", "header X-Token".
	where string
	text  string
	// whole replaces the whole value; subs replace tokens inside it.
	whole *binding
	subs  []*binding
	// fixed fields are never correlated: Referer and Origin, whose origin is base_url's.
	fixed bool
	// rendered is a fixed field's template.
	rendered string
}

// request is a kept exchange's request, as fields.
type request struct {
	url      *field   // the whole URL: bound when it is an earlier response's Location
	path     []*field // the path's segments, unescaped
	segs     []string // the same, as recorded (escaped)
	query    []*field // nil: rawQuery stays in the URL
	rawQuery string
	headers  []*field
	body     body
}

// bodyKind is how a body is written in the script.
type bodyKind int

const (
	noBody bodyKind = iota
	formBody
	jsonBody
	rawBody
	binaryBody
)

type body struct {
	kind bodyKind
	// contentType is written when it is not the kind's own default.
	contentType string
	form        []*field
	json        *jnode
	raw         *field
	size        int
}

// fields lists the request's fields in the order the conversion looks at them.
func (r *request) fields() []*field {
	out := append([]*field{}, r.path...)
	out = append(out, r.query...)
	out = append(out, r.headers...)
	switch r.body.kind {
	case formBody:
		out = append(out, r.body.form...)
	case jsonBody:
		r.body.json.leaves(func(n *jnode) { out = append(out, n.f) })
	case rawBody:
		out = append(out, r.body.raw)
	}
	return out
}

// request reads x's request into fields.
func (c *converter) request(x *exchange) *request {
	e := x.entry
	r := &request{url: &field{kind: inURL, key: "location", where: "URL", text: x.url.String()}}
	escaped := x.url.EscapedPath()
	if escaped == "" {
		escaped = "/"
	}
	r.segs = strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	prev := ""
	for _, s := range r.segs {
		v, err := url.PathUnescape(s)
		if err != nil {
			v = s
		}
		r.path = append(r.path, &field{kind: inPath, key: idKey(prev), where: "URL path", text: v})
		prev = v
	}
	r.rawQuery = x.url.RawQuery
	if q, ok := orderedForm(x.url.RawQuery); ok && x.url.RawQuery != "" {
		for _, p := range q {
			r.query = append(r.query, &field{kind: inQuery, key: p.Name, where: "query " + p.Name, text: p.Value})
		}
		r.rawQuery = ""
	}
	seen := map[string]*field{}
	for _, h := range e.Request.Headers {
		name := strings.TrimSpace(h.Name)
		if name == strings.ToLower(name) {
			name = http.CanonicalHeaderKey(name) // HTTP/2 writes names in lower case
		}
		canon := http.CanonicalHeaderKey(name)
		if dropHeader(canon) || !headerNameRe.MatchString(name) {
			continue
		}
		if f := seen[canon]; f != nil {
			f.text += ", " + h.Value // one field per name, as HTTP reads repeated ones
			continue
		}
		f := &field{kind: inHeader, key: name, where: "header " + name, text: h.Value}
		if canon == "Referer" || canon == "Origin" {
			f.fixed = true
			f.rendered = escapeTemplate(h.Value)
			if c.origin != "" && (h.Value == c.origin || strings.HasPrefix(h.Value, c.origin+"/")) {
				f.rendered = "${" + c.targetVar() + "}" + escapeTemplate(strings.TrimPrefix(h.Value, c.origin))
			}
		}
		seen[canon] = f
		r.headers = append(r.headers, f)
	}
	r.body = c.body(x)
	return r
}

// idKey names the id that follows a path segment: /orders/4711 is an order_id.
func idKey(prev string) string {
	if prev == "" {
		return "id"
	}
	if len(prev) > 3 && strings.HasSuffix(prev, "s") && !strings.HasSuffix(prev, "ss") {
		prev = strings.TrimSuffix(prev, "s")
	}
	return prev + "_id"
}

var headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// dropped are request headers a script leaves out: the connection's own, the ones the engine
// sets (Host, Content-Length, Accept-Encoding, Content-Type from the body), the cookie jar's,
// the browser cache's validators (a replay wants whole answers), and the browser's own hints.
var dropped = map[string]bool{
	"Host": true, "Content-Length": true, "Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Cookie": true, "Accept-Encoding": true, "Content-Type": true, "If-None-Match": true, "If-Modified-Since": true,
	"If-Match": true, "If-Unmodified-Since": true, "If-Range": true, "Cache-Control": true, "Pragma": true,
	"Upgrade-Insecure-Requests": true, "Priority": true, "Purpose": true, "Sec-Purpose": true, "Dnt": true,
	"X-Client-Data": true, "Sec-Gpc": true,
}

func dropHeader(canonical string) bool {
	if dropped[canonical] || strings.HasPrefix(canonical, ":") {
		return true
	}
	lower := strings.ToLower(canonical)
	return strings.HasPrefix(lower, "sec-fetch-") || strings.HasPrefix(lower, "sec-ch-")
}

// orderedForm reads a form-encoded text in order; false when it is not one (a part without =,
// or an escape that does not decode), which then stays as it was.
func orderedForm(s string) ([]NameValue, bool) {
	if s == "" {
		return nil, true
	}
	var out []NameValue
	for _, part := range strings.Split(s, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return nil, false
		}
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		out = append(out, NameValue{Name: name, Value: value})
	}
	return out, true
}

// body reads a request's body: a form, JSON, other text, or bytes that are none of these.
func (c *converter) body(x *exchange) body {
	pd := x.entry.Request.PostData
	if pd == nil {
		return body{}
	}
	ct := pd.MimeType
	if ct == "" {
		ct = header(x.entry.Request.Headers, "Content-Type")
	}
	mt := mediaType(ct)
	raw, err := decodeText(pd.Text, pd.Encoding)
	if err != nil {
		raw = nil
	}
	if len(raw) == 0 && len(pd.Params) > 0 && mt == "application/x-www-form-urlencoded" {
		var b strings.Builder
		for i, p := range pd.Params {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(p.Name) + "=" + url.QueryEscape(p.Value))
		}
		raw = []byte(b.String())
	}
	if len(raw) == 0 {
		return body{}
	}
	b := body{size: len(raw)}
	switch {
	case mt == "application/x-www-form-urlencoded":
		if params, ok := orderedForm(string(raw)); ok {
			b.kind = formBody
			if ct != "application/x-www-form-urlencoded" {
				b.contentType = ct
			}
			for _, p := range params {
				b.form = append(b.form, &field{kind: inForm, key: p.Name, where: "form field " + p.Name, text: p.Value})
			}
			return b
		}
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if tree, err := parseJSON(raw); err == nil && !tree.hasDuplicateKeys() {
			b.kind = jsonBody
			if ct != "application/json" {
				b.contentType = ct
			}
			b.json = tree
			tree.fields("$")
			return b
		}
	}
	if !isText(raw) {
		b.kind = binaryBody
		c.warn("%s sent %d bytes of binary body, which the script leaves out: give it a body from a file (docs/scripts.md, Bodies)", x.name, len(raw))
		return b
	}
	b.kind = rawBody
	b.contentType = ct
	b.raw = &field{kind: inRaw, key: "", where: "body", text: string(raw)}
	return b
}

// isText reports whether a body is text a script can hold: UTF-8, without NUL bytes.
func isText(b []byte) bool {
	return utf8.Valid(b) && !strings.ContainsRune(string(b), 0)
}

// escapeTemplate writes literal text for a template: ${ becomes $${.
func escapeTemplate(s string) string { return strings.ReplaceAll(s, "${", "$${") }
