package har

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/barrage-load/barrage/internal/script"
)

// extractor is how a script takes a value from a response, checked to take exactly the value
// the recording saw.
type extractor struct {
	kind ExtractorKind
	expr string
	// seen says where the value is, for people: "JSON $.id", "header Location".
	seen string
	// key is what the response calls the value (a hidden input's name, a JSON member), which
	// may name the variable.
	key string
}

// unextractable are response headers whose values are the protocol's, never an application's
// value to carry: a later request repeating one is a coincidence.
var unextractable = map[string]bool{
	"Date": true, "Server": true, "Content-Type": true, "Content-Length": true, "Content-Encoding": true,
	"Transfer-Encoding": true, "Connection": true, "Keep-Alive": true, "Vary": true, "Cache-Control": true,
	"Expires": true, "Pragma": true, "Age": true, "Via": true, "Etag": true, "Last-Modified": true,
	"Accept-Ranges": true, "Set-Cookie": true, "Strict-Transport-Security": true, "X-Content-Type-Options": true,
	"X-Frame-Options": true, "X-Xss-Protection": true, "Referrer-Policy": true, "Content-Security-Policy": true,
	"Content-Security-Policy-Report-Only": true, "Permissions-Policy": true, "Alt-Svc": true, "Report-To": true,
	"Nel": true, "Server-Timing": true, "Timing-Allow-Origin": true, "Link": true, "P3p": true, "Retry-After": true,
	"Content-Disposition": true, "Content-Language": true, "Access-Control-Max-Age": true,
}

func extractableHeader(name string) bool {
	c := http.CanonicalHeaderKey(name)
	return !unextractable[c] && !strings.HasPrefix(c, "Access-Control-") && !strings.HasPrefix(c, "Cross-Origin-") &&
		!strings.HasPrefix(c, ":") && headerNameRe.MatchString(c)
}

// extractor finds the extractor a person would write to take v from the response, and checks
// that, applied to the recorded response as the engine applies it, it yields exactly v: a JSON
// path into a JSON body, a header or cookie that holds it whole, else a regular expression
// around it in the body. A short id is taken whole or not at all.
func (r *response) extractor(v string, short bool) (extractor, bool) {
	if r.json != nil {
		var out extractor
		found := r.json.find(v, "$", func(p string) bool {
			jp, err := script.ParseJSONPath(p)
			if err != nil {
				return false
			}
			if got, ok := jp.FindString(r.jsonDoc); ok && got == v {
				out = extractor{kind: ExtractJSON, expr: p, seen: "JSON " + p, key: lastMember(p)}
				return true
			}
			return false
		})
		if found {
			return out, true
		}
	}
	for _, h := range r.headers {
		if h.Value != v || !extractableHeader(h.Name) {
			continue
		}
		name := http.CanonicalHeaderKey(h.Name)
		if header(r.headers, name) == v { // the engine reads a header's first value
			return extractor{kind: ExtractHeader, expr: name, seen: "header " + name, key: name}, true
		}
	}
	last := map[string]string{} // the engine reads the last cookie of a name
	for _, ck := range r.cookies {
		last[ck.Name] = ck.Value
	}
	for _, ck := range r.cookies {
		if ck.Value == v && last[ck.Name] == v && headerNameRe.MatchString(ck.Name) {
			return extractor{kind: ExtractCookie, expr: ck.Name, seen: "cookie " + ck.Name, key: ck.Name}, true
		}
	}
	if short || r.text == "" {
		return extractor{}, false
	}
	return regexExtractor(r.text, v)
}

// lastMember is the last member name of a JSON path: $.items[0].id is id.
func lastMember(p string) string {
	p = trailingIndex.ReplaceAllString(p, "")
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return strings.Trim(p[i+1:], `'"]`)
	}
	return ""
}

var (
	trailingIndex = regexp.MustCompile(`\[\d+\]$`)
	identRe       = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// maxOccurrences bounds the places in a body a regular expression is tried around.
const maxOccurrences = 8

// regexExtractor writes a regular expression around an occurrence of v in body, the shortest
// that a person would write (the attribute that names a hidden input or a meta tag and the
// one that holds it, or the words before it on its line) whose first match's group is v.
func regexExtractor(body, v string) (extractor, bool) {
	from := 0
	for tries := 0; tries < maxOccurrences; tries++ {
		k := strings.Index(body[from:], v)
		if k < 0 {
			break
		}
		k += from
		from = k + 1
		for _, cand := range contexts(body, k, k+len(v), v) {
			re, err := regexp.Compile(cand.expr)
			if err != nil {
				continue
			}
			if m := re.FindStringSubmatch(body); len(m) > 1 && m[1] == v {
				return cand, true
			}
		}
	}
	return extractor{}, false
}

// attrRe is an attribute of an HTML tag: its name, and its value with the quotes.
var attrRe = regexp.MustCompile(`([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>` + "`" + `]+)`)

// naming are the attributes that say what a tag's value is.
var naming = map[string]bool{"name": true, "id": true, "property": true, "itemprop": true, "http-equiv": true}

// contexts are the regular expressions to try around body[k:end], which holds v, shortest first.
func contexts(body string, k, end int, v string) []extractor {
	capture, closing, ok := captureFor(body, k, end, v)
	if !ok {
		return nil
	}
	var out []extractor
	if lt := strings.LastIndexByte(body[:k], '<'); lt >= 0 && lt > strings.LastIndexByte(body[:k], '>') && k-lt < 4096 {
		if gt := strings.IndexByte(body[end:], '>'); gt >= 0 && gt < 4096 {
			out = append(out, tagContexts(body, lt, end+gt, k, end, capture, closing)...)
		}
	}
	lineStart := strings.LastIndexByte(body[:k], '\n') + 1
	for p := k - 1; p >= max(lineStart, k-60); p-- {
		if p != lineStart && !strings.ContainsRune(" \t{,;([>", rune(body[p-1])) {
			continue
		}
		left := body[p:k]
		if letters(left) < 2 {
			continue
		}
		out = append(out, extractor{kind: ExtractRegex, expr: literal(left) + capture + closing,
			seen: "body, after " + shorten(strings.TrimSpace(left), 40), key: lastWord(left)})
	}
	return out
}

// tagContexts are the expressions around a value inside the tag body[lt:gt]: from the
// attribute that names it to the value, then the whole tag up to the value.
func tagContexts(body string, lt, gt, k, end int, capture, closing string) []extractor {
	tag := body[lt:gt]
	attrs := attrRe.FindAllStringSubmatchIndex(tag, -1)
	vi := -1
	for i, a := range attrs {
		if lt+a[4] <= k && end <= lt+a[5] {
			vi = i
		}
	}
	if vi < 0 {
		return nil
	}
	tagName := strings.ToLower(strings.TrimLeft(strings.Fields(tag)[0], "<"))
	var out []extractor
	named := func(i int) (string, string, bool) {
		name := strings.ToLower(tag[attrs[i][2]:attrs[i][3]])
		value := strings.Trim(tag[attrs[i][4]:attrs[i][5]], `"'`)
		return name, value, naming[name] && value != ""
	}
	for i := vi - 1; i >= 0; i-- {
		if name, value, ok := named(i); ok {
			out = append(out, extractor{kind: ExtractRegex, expr: literal(body[lt+attrs[i][0]:k]) + capture + closing,
				seen: fmt.Sprintf("body, <%s %s=%q>", tagName, name, value), key: value})
			break
		}
	}
	for i := vi + 1; i < len(attrs); i++ {
		if name, value, ok := named(i); ok {
			out = append(out, extractor{kind: ExtractRegex, expr: literal(body[lt+attrs[vi][0]:k]) + capture + literal(body[end:lt+attrs[i][1]]),
				seen: fmt.Sprintf("body, <%s %s=%q>", tagName, name, value), key: value})
			break
		}
	}
	return append(out, extractor{kind: ExtractRegex, expr: literal(body[lt:k]) + capture + closing,
		seen: fmt.Sprintf("body, a <%s> tag", tagName), key: tag[attrs[vi][2]:attrs[vi][3]]})
}

// captureFor is the group that takes v where it ends in body: up to the quote that closes it,
// or to the character after it. False when v is only part of a word there.
func captureFor(body string, k, end int, v string) (capture, closing string, ok bool) {
	if k > 0 && wordByte(body[k-1]) {
		return "", "", false
	}
	if end >= len(body) {
		if strings.ContainsAny(v, " \t\r\n") {
			return "", "", false
		}
		return `(\S+)`, "", true
	}
	d := body[end]
	switch {
	case d == '"' || d == '\'':
		if strings.IndexByte(v, d) >= 0 {
			return "", "", false
		}
		return "([^" + string(d) + "]+)", string(d), true
	case wordByte(d) || d >= 0x80:
		return "", "", false
	case !strings.ContainsAny(v, "\"'<>& \t\r\n"+string(d)):
		stops := `"'<>&\s`
		if !strings.ContainsRune("\"'<>& \t\r\n", rune(d)) {
			stops += classEscape(d)
		}
		return "([^" + stops + "]+)", "", true
	case strings.IndexByte(v, d) < 0:
		return "([^" + classEscape(d) + "]+)", "", true
	}
	return "", "", false
}

// wordByte reports whether b continues a token: a letter, a digit, _ or -.
func wordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

func classEscape(d byte) string {
	if strings.IndexByte(`\]^-[`, d) >= 0 {
		return `\` + string(d)
	}
	if d == '\n' {
		return `\n`
	}
	if d == '\t' {
		return `\t`
	}
	if d == '\r' {
		return `\r`
	}
	return string(d)
}

// literal is s as a regular expression that matches it, its line breaks and runs of blanks as
// \s+ so that a page laid out again still matches.
func literal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
			j++
		}
		switch {
		case j == i+1 && s[i] == ' ':
			b.WriteByte(' ')
			i = j
		case j > i:
			b.WriteString(`\s+`)
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
			i++
		}
	}
	return b.String()
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			n++
		}
	}
	return n
}

// lastWord is the last run of letters, digits and _ in s: csrfToken in `var csrfToken = "`.
func lastWord(s string) string {
	words := identRe.FindAllString(s, -1)
	if len(words) == 0 {
		return ""
	}
	return words[len(words)-1]
}
