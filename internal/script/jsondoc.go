package script

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// JSONDoc is a response body read as JSON for JSONPath without being decoded: ReadJSON checks
// it once, as encoding/json would, and each path then walks its bytes, skipping what it does
// not need and decoding only the value it selects. A request whose checks read the body as
// JSON pays for one check of the whole body and, per check, a walk to what it reads; nothing
// of the size of the body is allocated.
type JSONDoc struct {
	data []byte // the document's first value, without the whitespace around it
}

// ErrNotJSON is the error ReadJSON wraps when the body is not a JSON document.
var ErrNotJSON = errors.New("not JSON")

// maxJSONDepth is how deeply arrays and objects may nest, as in encoding/json.
const maxJSONDepth = 10000

// ReadJSON checks that body starts with a JSON value, as a json.Decoder decoding one value
// would: leading whitespace is skipped and what follows the first value is not read. Its
// error, which wraps ErrNotJSON, says where the document went wrong.
func ReadJSON(body []byte) (JSONDoc, error) {
	start := skipSpace(body, 0)
	if start == len(body) {
		return JSONDoc{}, fmt.Errorf("%w: the body is empty", ErrNotJSON)
	}
	end, err := validValue(body, start)
	if err != nil {
		return JSONDoc{}, err
	}
	return JSONDoc{data: body[start:end]}, nil
}

// notJSON is ReadJSON's error for a body that goes wrong at data[i].
func notJSON(data []byte, i int) error {
	if i >= len(data) {
		return fmt.Errorf("%w: the document ends at offset %d, before its value is complete", ErrNotJSON, i)
	}
	return fmt.Errorf("%w: unexpected %q at offset %d", ErrNotJSON, data[i], i)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

// validValue checks the JSON value that starts at data[i] and returns where it ends, accepting
// exactly what encoding/json's scanner accepts: strings may hold any byte but control
// characters (invalid UTF-8 is decoded as U+FFFD, not refused), and a number or literal at the
// top ends at the first byte that cannot continue it. It walks the document without recursion;
// the kind of each open container is a bit of stack.
func validValue(data []byte, i int) (int, error) {
	var objects [maxJSONDepth/64 + 1]uint64 // bit d: the container at depth d+1 is an object
	depth := 0
	fail := func(i int) (int, error) { return 0, notJSON(data, i) }
	var bad bool
value:
	if i >= len(data) {
		return fail(i)
	}
	switch c := data[i]; c {
	case '{', '[':
		if depth == maxJSONDepth {
			return fail(i)
		}
		if c == '{' {
			objects[depth/64] |= 1 << (depth % 64)
		} else {
			objects[depth/64] &^= 1 << (depth % 64)
		}
		depth++
		i = skipSpace(data, i+1)
		if i >= len(data) {
			return fail(i)
		}
		if c == '[' {
			if data[i] == ']' {
				i++
				depth--
				goto end
			}
			goto value
		}
		if data[i] == '}' {
			i++
			depth--
			goto end
		}
		goto member
	case '"':
		if i, bad = validString(data, i); bad {
			return fail(i)
		}
	case 't':
		if !bytes.HasPrefix(data[i:], litTrue) {
			return fail(litEnd(data, i, litTrue))
		}
		i += len(litTrue)
	case 'f':
		if !bytes.HasPrefix(data[i:], litFalse) {
			return fail(litEnd(data, i, litFalse))
		}
		i += len(litFalse)
	case 'n':
		if !bytes.HasPrefix(data[i:], litNull) {
			return fail(litEnd(data, i, litNull))
		}
		i += len(litNull)
	default:
		if i, bad = validNumber(data, i); bad {
			return fail(i)
		}
	}
end:
	if depth == 0 {
		return i, nil
	}
	i = skipSpace(data, i)
	if i >= len(data) {
		return fail(i)
	}
	if objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0 {
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
			if i >= len(data) {
				return fail(i)
			}
			goto member
		case '}':
			i++
			depth--
			goto end
		}
		return fail(i)
	}
	switch data[i] {
	case ',':
		i = skipSpace(data, i+1)
		goto value
	case ']':
		i++
		depth--
		goto end
	}
	return fail(i)
member: // at the key of an object's member
	if data[i] != '"' {
		return fail(i)
	}
	if i, bad = validString(data, i); bad {
		return fail(i)
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return fail(i)
	}
	i = skipSpace(data, i+1)
	goto value
}

var (
	litTrue  = []byte("true")
	litFalse = []byte("false")
	litNull  = []byte("null")
)

// litEnd is where a literal that should be lit, starting at data[i], goes wrong.
func litEnd(data []byte, i int, lit []byte) int {
	n := 0
	for n < len(lit) && i+n < len(data) && data[i+n] == lit[n] {
		n++
	}
	return i + n
}

// validNumber checks the number that starts at data[i] and returns where it ends, or where it
// goes wrong and true. A number ends at the first byte that cannot continue it.
func validNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return i, true
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return i, true
		}
		i = digits(data, i)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return i, true
		}
		i = digits(data, i)
	}
	return i, false
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// SWAR: eight bytes of a string at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stringStops marks, in the high bit of each of its bytes, the bytes of w a string's scanner
// must stop at: a quote, a backslash, or with control, a control character. Borrows only
// carry upwards, so the lowest byte marked is the first such byte of w; marks above it may be
// wrong.
func stringStops(w uint64, control bool) uint64 {
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	stops := (quote - ones) &^ quote
	stops |= (slash - ones) &^ slash
	if control {
		stops |= (w - ones*0x20) &^ w
	}
	return stops & highs
}

// nextStop returns the offset of the first byte from data[i] on that stringStops marks, or
// len(data).
func nextStop(data []byte, i int, control bool) int {
	for ; i+8 <= len(data); i += 8 {
		if m := stringStops(binary.LittleEndian.Uint64(data[i:]), control); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(data); i++ {
		if c := data[i]; c == '"' || c == '\\' || control && c < 0x20 {
			return i
		}
	}
	return i
}

// validString checks the string whose opening quote is data[i] and returns the offset after
// its closing quote, or where it goes wrong and true.
func validString(data []byte, i int) (int, bool) {
	i++
	for {
		i = nextStop(data, i, true)
		if i >= len(data) {
			return i, true
		}
		if data[i] == '"' {
			return i + 1, false
		}
		if data[i] == '\\' {
			i++
			if i >= len(data) {
				return i, true
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for range 4 {
					i++
					if i >= len(data) || !isHex(data[i]) {
						return i, true
					}
				}
				i++
			default:
				return i, true
			}
			continue
		}
		return i, true // a control character
	}
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// The walk of a path over a checked document: these functions trust that data is valid JSON.

// skipValue returns where the value at data[i] ends.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(data) && !isValueEnd(data[i]) {
		i++
	}
	return i
}

// isValueEnd reports whether c ends a number or literal inside a checked document.
func isValueEnd(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// skipString returns the offset after the closing quote of the string that opens at data[i].
func skipString(data []byte, i int) int {
	i++
	for {
		i = nextStop(data, i, false)
		if data[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the character it escapes
	}
}

// members calls f with the key (quotes included) and the offset of the value of each member of
// the object at data[i], in order, until f returns false, and returns where the object ends or 0
// when f stopped.
func members(data []byte, i int, f func(key []byte, at int) bool) int {
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		return i + 1
	}
	for {
		k := skipString(data, i)
		key := data[i:k]
		at := skipSpace(data, skipSpace(data, k)+1) // past the colon
		if !f(key, at) {
			return 0
		}
		i = skipSpace(data, skipValue(data, at))
		if data[i] == '}' {
			return i + 1
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

// elements calls f with the offset of each element of the array at data[i], in order, until f
// returns false.
func elements(data []byte, i int, f func(at int) bool) {
	i = skipSpace(data, i+1)
	if data[i] == ']' {
		return
	}
	for {
		if !f(i) {
			return
		}
		i = skipSpace(data, skipValue(data, i))
		if data[i] == ']' {
			return
		}
		i = skipSpace(data, i+1)
	}
}

// keyIs reports whether key, a member's name as written (quotes included), decodes to name.
func keyIs(key []byte, name string) bool {
	inner := key[1 : len(key)-1]
	if plainText(inner) {
		return string(inner) == name
	}
	return unquote(key) == name
}

// plainText reports whether the inside of a string decodes to itself: no escapes, valid UTF-8.
func plainText(inner []byte) bool {
	for _, c := range inner {
		if c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			return bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner)
		}
	}
	return true
}

// unquote decodes a string as encoding/json does, invalid UTF-8 and lone surrogates becoming
// U+FFFD.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if plainText(inner) {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		panic("script: unquote of a checked string: " + err.Error())
	}
	return s
}

// Select returns the value the path selects in doc, as Find would in the decoded document.
func (p *JSONPath) Select(doc JSONDoc) (JSONValue, bool) {
	if len(doc.data) == 0 {
		return JSONValue{}, false
	}
	start, end, ok := selectAt(doc.data, 0, p.steps)
	if !ok {
		return JSONValue{}, false
	}
	return JSONValue{raw: doc.data[start:end]}, true
}

// SelectString is FindString over doc.
func (p *JSONPath) SelectString(doc JSONDoc) (string, bool) {
	v, ok := p.Select(doc)
	if !ok {
		return "", false
	}
	return v.Text(), true
}

// selectAt walks steps from the value at data[i] and returns where the value selected starts and
// ends.
func selectAt(data []byte, i int, steps []jsonStep) (int, int, bool) {
	if len(steps) == 0 {
		return i, skipValue(data, i), true
	}
	st, rest := steps[0], steps[1:]
	switch st.kind {
	case stepKey:
		if data[i] != '{' {
			return 0, 0, false
		}
		found := -1
		members(data, i, func(key []byte, at int) bool {
			if keyIs(key, st.key) {
				found = at // the last of equal names wins, as in a decoded object
			}
			return true
		})
		if found < 0 {
			return 0, 0, false
		}
		return selectAt(data, found, rest)
	case stepIndex:
		if data[i] != '[' {
			return 0, 0, false
		}
		at := element(data, i, st.index)
		if at < 0 {
			return 0, 0, false
		}
		return selectAt(data, at, rest)
	}
	switch data[i] {
	case '[':
		var start, end int
		var ok bool
		elements(data, i, func(at int) bool {
			start, end, ok = selectAt(data, at, rest)
			return !ok
		})
		return start, end, ok
	case '{':
		// Members in the order of their names, as Find takes them, each name once with its
		// last value.
		type member struct {
			name string
			at   int
		}
		var ms []member
		members(data, i, func(key []byte, at int) bool {
			ms = append(ms, member{unquote(key), at})
			return true
		})
		slices.SortStableFunc(ms, func(a, b member) int { return cmp.Compare(a.name, b.name) })
		for j, m := range ms {
			if j+1 < len(ms) && ms[j+1].name == m.name {
				continue // a later member of the same name wins
			}
			if start, end, ok := selectAt(data, m.at, rest); ok {
				return start, end, true
			}
		}
	}
	return 0, 0, false
}

// element returns the offset of the element of the array at data[i] that index counts to, from
// 0 or, when negative, from the end; or -1. Counting from the end keeps the last few offsets
// walked past, so the array is walked once.
func element(data []byte, i, index int) int {
	found, n := -1, 0
	if index >= 0 {
		elements(data, i, func(at int) bool {
			if n == index {
				found = at
				return false
			}
			n++
			return true
		})
		return found
	}
	var last [16]int // the offsets of the last elements, by their number modulo 16
	elements(data, i, func(at int) bool {
		last[n%len(last)] = at
		n++
		return true
	})
	index += n
	switch {
	case index < 0:
		return -1
	case index >= n-len(last):
		return last[index%len(last)]
	}
	return element(data, i, index)
}

// JSONValue is a value a path selected in a JSONDoc, as written in the document.
type JSONValue struct {
	raw []byte
}

// Decode returns the value as encoding/json decodes it into an any with UseNumber:
// map[string]any, []any, string, json.Number, bool or nil.
func (v JSONValue) Decode() any {
	switch v.raw[0] {
	case '"':
		return unquote(v.raw)
	case 't':
		return true
	case 'f':
		return false
	case 'n':
		return nil
	case '{', '[':
		var x any
		dec := json.NewDecoder(bytes.NewReader(v.raw))
		dec.UseNumber()
		if err := dec.Decode(&x); err != nil {
			panic("script: decode of a checked value: " + err.Error())
		}
		return x
	}
	return json.Number(v.raw)
}

// Text returns the value as FindString does: a string as it is, anything else as JSON.
func (v JSONValue) Text() string {
	switch v.raw[0] {
	case '"':
		return unquote(v.raw)
	case '{', '[':
		return jsonText(v.Decode())
	}
	return string(v.raw) // a number as written, true, false, null
}

// textIs reports whether v's Text is want, without building it when v is a scalar.
func (v JSONValue) textIs(want []byte) bool {
	switch v.raw[0] {
	case '"':
		inner := v.raw[1 : len(v.raw)-1]
		if plainText(inner) {
			return bytes.Equal(inner, want)
		}
		return unquote(v.raw) == string(want)
	case '{', '[':
		return v.Text() == string(want)
	}
	return bytes.Equal(v.raw, want)
}
