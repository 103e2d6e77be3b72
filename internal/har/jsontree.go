package har

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// jnode is a JSON value with its members in the order they came, which encoding/json's maps
// lose: a script's JSON body is written in the order the request sent it, and an extractor
// takes the first of equal values, as a person reading the response would.
type jnode struct {
	kind jkind
	keys []string // an object's member names, in order
	kids []*jnode // an object's member values, or an array's elements
	text string   // a string's value, a number's text, true or false
	// f is the field a request body's string or number is.
	f *field
}

type jkind int

const (
	jObject jkind = iota + 1
	jArray
	jString
	jNumber
	jBool
	jNull
)

// parseJSON reads one JSON document, members in order.
func parseJSON(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return n, nil
}

// maxDepth bounds the nesting parseJSON follows, so that a hostile document cannot exhaust the
// stack.
const maxDepth = 200

func readJSON(dec *json.Decoder, depth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &jnode{kind: jObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys, n.kids = append(n.keys, k), append(n.kids, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &jnode{kind: jArray}
			for dec.More() {
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.kids = append(n.kids, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &jnode{kind: jString, text: t}, nil
	case json.Number:
		return &jnode{kind: jNumber, text: t.String()}, nil
	case bool:
		return &jnode{kind: jBool, text: strconv.FormatBool(t)}, nil
	case nil:
		return &jnode{kind: jNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// engineJSON decodes a body as the engine does for its JSON paths.
func engineJSON(body []byte) (any, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&doc)
	return doc, err
}

// hasDuplicateKeys reports whether an object repeats a member name, which a script's JSON
// body, a YAML mapping, cannot say.
func (n *jnode) hasDuplicateKeys() bool {
	if n.kind == jObject {
		seen := make(map[string]bool, len(n.keys))
		for _, k := range n.keys {
			if seen[k] {
				return true
			}
			seen[k] = true
		}
	}
	for _, k := range n.kids {
		if k.hasDuplicateKeys() {
			return true
		}
	}
	return false
}

// fields makes the request fields of a body's strings and numbers, each named by its path.
func (n *jnode) fields(path string) {
	switch n.kind {
	case jObject:
		for i, k := range n.keys {
			n.kids[i].fields(jsonPathStep(path, k))
			if f := n.kids[i].f; f != nil {
				f.key = k
			}
		}
	case jArray:
		for i, k := range n.kids {
			k.fields(path + "[" + strconv.Itoa(i) + "]")
		}
	case jString:
		n.f = &field{kind: inJSONString, where: "JSON " + path, text: n.text}
	case jNumber:
		n.f = &field{kind: inJSONNumber, where: "JSON " + path, text: n.text}
	}
}

// strings calls f with each string in n, member names and values.
func (n *jnode) strings(f func(string)) {
	switch n.kind {
	case jString:
		f(n.text)
	case jObject:
		for _, k := range n.keys {
			f(k)
		}
	}
	for _, k := range n.kids {
		k.strings(f)
	}
}

// leaves calls f for each string and number that has a field, in document order.
func (n *jnode) leaves(f func(*jnode)) {
	if n.f != nil {
		f(n)
	}
	for _, k := range n.kids {
		k.leaves(f)
	}
}

// find calls f with the path of each string or number whose text is v, in document order,
// until f returns true.
func (n *jnode) find(v, path string, f func(path string) bool) bool {
	switch n.kind {
	case jString, jNumber:
		return n.text == v && f(path)
	case jObject:
		for i, k := range n.keys {
			if n.kids[i].find(v, jsonPathStep(path, k), f) {
				return true
			}
		}
	case jArray:
		for i, k := range n.kids {
			if k.find(v, path+"["+strconv.Itoa(i)+"]", f) {
				return true
			}
		}
	}
	return false
}

var plainMember = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jsonPathStep appends member k to a JSON path, in brackets when it is not a plain name.
func jsonPathStep(path, k string) string {
	if plainMember.MatchString(k) {
		return path + "." + k
	}
	return path + "['" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(k) + "']"
}

// rawJSON writes n as compact JSON, each field as render gives it; a bound number becomes
// ${var} outside quotes, which only a raw body can say.
func (n *jnode) rawJSON(b *strings.Builder, render func(*field) string) {
	switch n.kind {
	case jObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.WriteString(escapeTemplate(string(kb)))
			b.WriteByte(':')
			n.kids[i].rawJSON(b, render)
		}
		b.WriteByte('}')
	case jArray:
		b.WriteByte('[')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			k.rawJSON(b, render)
		}
		b.WriteByte(']')
	case jString:
		// The template goes into a JSON string as it is: a bound value is inserted unescaped by
		// a raw body, which is right for the tokens and ids correlations carry.
		s, _ := json.Marshal(n.text)
		if n.f != nil && (n.f.whole != nil || len(n.f.subs) > 0) {
			b.WriteString(`"` + render(n.f) + `"`)
			return
		}
		b.WriteString(escapeTemplate(string(s)))
	case jNumber:
		if n.f != nil {
			b.WriteString(render(n.f))
			return
		}
		b.WriteString(n.text)
	case jBool:
		b.WriteString(n.text)
	case jNull:
		b.WriteString("null")
	}
}

// boundNumber reports whether a number in n is bound to a variable.
func (n *jnode) boundNumber() bool {
	found := false
	n.leaves(func(l *jnode) { found = found || (l.kind == jNumber && l.f.whole != nil) })
	return found
}
