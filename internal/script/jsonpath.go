package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// JSONPath is a path into a JSON document, in a small subset of JSONPath (RFC 9535):
//
//	$              the whole document
//	.name          an object member; name is any text up to the next . or [
//	['name']       an object member, quoted with ' or ", \ escaping the quote and itself
//	[2]  [-1]      an array element, counted from 0, or from the end when negative
//	[*]  .*        any element or member: the first one, in order (object members by name),
//	               for which the rest of the path finds something
//
// Recursive descent (..), filters and slices are not supported. Documents are values as
// encoding/json decodes them into an any: map[string]any, []any, string, float64 or
// json.Number, bool and nil.
type JSONPath struct {
	src   string
	steps []jsonStep
}

type jsonStep struct {
	kind  stepKind
	key   string
	index int
}

type stepKind uint8

const (
	stepKey stepKind = iota
	stepIndex
	stepAny
)

// ParseJSONPath parses s.
func ParseJSONPath(s string) (*JSONPath, error) {
	if !strings.HasPrefix(s, "$") {
		return nil, errors.New("a JSON path starts with $, as in $.items[0].id")
	}
	p := &JSONPath{src: s}
	for i := 1; i < len(s); {
		switch s[i] {
		case '.':
			i++
			if i < len(s) && s[i] == '.' {
				return nil, errors.New("recursive descent (..) is not supported")
			}
			if i < len(s) && s[i] == '*' {
				p.steps = append(p.steps, jsonStep{kind: stepAny})
				i++
				continue
			}
			end := i
			for end < len(s) && s[end] != '.' && s[end] != '[' {
				end++
			}
			if end == i {
				return nil, fmt.Errorf("missing member name after . at offset %d", i-1)
			}
			p.steps = append(p.steps, jsonStep{kind: stepKey, key: s[i:end]})
			i = end
		case '[':
			st, n, err := parseBracket(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%w at offset %d", err, i)
			}
			p.steps = append(p.steps, st)
			i += n
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d: expected . or [", s[i], i)
		}
	}
	return p, nil
}

// parseBracket parses one [...] step at the start of s and returns it and its length.
func parseBracket(s string) (jsonStep, int, error) {
	if len(s) < 2 {
		return jsonStep{}, 0, errors.New("unterminated [")
	}
	switch q := s[1]; {
	case q == '\'' || q == '"':
		var key strings.Builder
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					key.WriteByte(s[i])
				}
			case q:
				if i+1 >= len(s) || s[i+1] != ']' {
					return jsonStep{}, 0, errors.New("expected ] after the quoted name")
				}
				return jsonStep{kind: stepKey, key: key.String()}, i + 2, nil
			default:
				key.WriteByte(s[i])
			}
		}
		return jsonStep{}, 0, errors.New("unterminated quoted name")
	case q == '*':
		if len(s) < 3 || s[2] != ']' {
			return jsonStep{}, 0, errors.New("expected ] after *")
		}
		return jsonStep{kind: stepAny}, 3, nil
	default:
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return jsonStep{}, 0, errors.New("unterminated [")
		}
		n, err := strconv.Atoi(s[1:end])
		if err != nil {
			return jsonStep{}, 0, fmt.Errorf("%q is not an index, a quoted name or *: filters and slices are not supported", s[:end+1])
		}
		return jsonStep{kind: stepIndex, index: n}, end + 1, nil
	}
}

// String returns the path as written.
func (p *JSONPath) String() string { return p.src }

// Find returns the value the path selects in doc, and whether it found one.
func (p *JSONPath) Find(doc any) (any, bool) { return find(doc, p.steps) }

func find(v any, steps []jsonStep) (any, bool) {
	if len(steps) == 0 {
		return v, true
	}
	st, rest := steps[0], steps[1:]
	switch st.kind {
	case stepKey:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		child, ok := m[st.key]
		if !ok {
			return nil, false
		}
		return find(child, rest)
	case stepIndex:
		a, ok := v.([]any)
		if !ok {
			return nil, false
		}
		i := st.index
		if i < 0 {
			i += len(a)
		}
		if i < 0 || i >= len(a) {
			return nil, false
		}
		return find(a[i], rest)
	default:
		switch c := v.(type) {
		case []any:
			for _, child := range c {
				if r, ok := find(child, rest); ok {
					return r, true
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if r, ok := find(c[k], rest); ok {
					return r, true
				}
			}
		}
		return nil, false
	}
}

// FindString returns the selected value as text: a string as it is, anything else (numbers,
// true, false, null, objects, arrays) as JSON.
func (p *JSONPath) FindString(doc any) (string, bool) {
	v, ok := p.Find(doc)
	if !ok {
		return "", false
	}
	return jsonText(v), true
}

func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// JSONEqual reports whether two decoded JSON values are equal: numbers by value, whether
// float64, json.Number or Go integers, objects and arrays member by member.
func JSONEqual(a, b any) bool {
	if fa, ok := jsonFloat(a); ok {
		fb, ok := jsonFloat(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !JSONEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !JSONEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func jsonFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
