package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/quantity"
)

// decoder walks a document's node tree, building the model and collecting every error with
// the path and line it belongs to.
type decoder struct {
	errs
	badBase   bool // base_url was given but refused, so relative URLs are not reported again
	checkOnly bool // data files' rows are checked, not kept (ParseOptions.CheckDataOnly)
}

// MaxValues bounds the values a document may hold, counted before it is parsed: the tree a
// parser builds costs about 200 bytes a value, so a megabyte of "1," would cost a hundred; a
// script of that many values is no hand's work (a large body belongs in a file: body: {file: ...}).
const MaxValues = 100_000

// CountValues counts, at most, the values data holds: each holds a line, or follows a comma or
// opens a collection. It reads data once and builds nothing: a server counts a script's values
// before anything decodes it.
func CountValues(data []byte) int {
	n := 1
	for _, c := range data {
		switch c {
		case '\n', ',', '[', '{':
			n++
		}
	}
	return n
}

// document parses data, YAML or JSON, into its root node; nil when it cannot be read at all.
func (d *decoder) document(data []byte) *yaml.Node {
	if len(data) > MaxSize {
		d.add(pos{}, "the script is %d bytes, more than the %d allowed", len(data), MaxSize)
		return nil
	}
	if n := CountValues(data); n > MaxValues {
		d.add(pos{}, "the script holds up to %d values (lines, list items, members), more than the %d allowed: put large bodies and lists in files", n, MaxValues)
		return nil
	}
	if looksJSON(data) && json.Valid(data) {
		doc, err := jsonNode(data)
		if err != nil {
			d.add(pos{}, "invalid JSON: %v", err)
			return nil
		}
		if !d.plain(doc.Content[0], 0) {
			return nil
		}
		return doc.Content[0]
	}
	doc, err := decodeYAML(data)
	if err != nil {
		d.yamlError(err)
		return nil
	}
	if doc == nil || len(doc.Content) == 0 {
		d.add(pos{}, "the script is empty")
		return nil
	}
	if !d.plain(doc.Content[0], 0) {
		return nil
	}
	return doc.Content[0]
}

// decodeYAML parses the single document in data; a nil node means an empty input.
func decodeYAML(data []byte) (doc *yaml.Node, err error) {
	defer func() {
		// The parser has panicked on hostile input before; refuse the input rather than fall.
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("yaml: cannot parse the document: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("yaml: line %d: a script is one document; remove the second one", extra.Line)
	}
	return &n, nil
}

var yamlLineRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlError reports a YAML syntax error, with its line when the parser gives one.
func (d *decoder) yamlError(err error) {
	msg := err.Error()
	p := pos{}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		p.line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	d.add(p, "invalid YAML: %s", msg)
}

// maxDepth bounds how deeply a document nests, so that walking it cannot exhaust the stack.
const maxDepth = 200

// plain reports whether n's tree uses no anchors, aliases or merge keys and nests less than
// maxDepth deep, reporting each one it finds. Aliases are refused because expanding them can
// blow a small document up into a huge one, and the format has session.headers and group
// headers for what they would share.
func (d *decoder) plain(n *yaml.Node, depth int) bool {
	if depth > maxDepth {
		d.add(pos{line: n.Line, col: n.Column}, "the document nests more than %d levels deep", maxDepth)
		return false
	}
	ok := true
	switch {
	case n.Kind == yaml.AliasNode:
		d.add(pos{line: n.Line, col: n.Column}, "YAML aliases (*%s) are not supported: write the value out", n.Value)
		return false
	case n.Anchor != "":
		d.add(pos{line: n.Line, col: n.Column}, "YAML anchors (&%s) are not supported", n.Anchor)
		ok = false
	}
	for _, c := range n.Content {
		ok = d.plain(c, depth+1) && ok
	}
	return ok
}

// field returns the path of key inside parent.
func field(parent, key string) string {
	if !identRe.MatchString(key) && !headerNameRe.MatchString(key) {
		key = "[" + strconv.Quote(key) + "]"
		return parent + key
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// index returns the path of element i of the list at parent.
func index(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// at returns the position of node n at path.
func at(n *yaml.Node, path string) pos { return pos{path: path, line: n.Line, col: n.Column} }

// kindName names what n is, for messages such as "must be a list, not a mapping".
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "empty"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a string"
	}
	return "something else"
}

// obj is a mapping with known keys.
type obj struct {
	d    *decoder
	p    pos
	vals map[string]*yaml.Node
}

// object reads n as a mapping whose keys are among known, reporting unknown and repeated keys.
// It returns nil, having reported it, when n is not a mapping.
func (d *decoder) object(n *yaml.Node, p pos, known ...string) *obj {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping, not %s", kindName(n))
		return nil
	}
	o := &obj{d: d, p: p, vals: make(map[string]*yaml.Node, len(n.Content)/2)}
	for _, kv := range d.pairs(n, p) {
		if !contains(known, kv.key) {
			msg := "unknown key"
			if s := suggest(kv.key, known); s != "" {
				msg += "; did you mean " + strconv.Quote(s) + "?"
			}
			d.add(kv.keyPos, "%s", msg)
			continue
		}
		o.vals[kv.key] = kv.val
	}
	return o
}

// get returns the value of key and its position, or nil.
func (o *obj) get(key string) (*yaml.Node, pos) {
	n := o.vals[key]
	if n == nil {
		return nil, pos{}
	}
	return n, at(n, field(o.p.path, key))
}

// need returns the value of key like get, reporting it as missing when it is absent.
func (o *obj) need(key string) (*yaml.Node, pos) {
	n, p := o.get(key)
	if n == nil {
		o.d.add(pos{path: field(o.p.path, key), line: o.p.line, col: o.p.col}, "required")
	}
	return n, p
}

// has reports whether the mapping has key.
func (o *obj) has(key string) bool { return o.vals[key] != nil }

// pair is one entry of a mapping.
type pair struct {
	key    string
	keyPos pos
	val    *yaml.Node
	valPos pos
}

// pairs returns the entries of the mapping n, reporting non-string and repeated keys.
func (d *decoder) pairs(n *yaml.Node, p pos) []pair {
	out := make([]pair, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			d.add(at(k, p.path), "keys must be strings, not %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.add(at(k, p.path), "YAML merge keys (<<) are not supported")
			continue
		}
		path := field(p.path, k.Value)
		if seen[k.Value] {
			d.add(at(k, path), "repeated key")
			continue
		}
		seen[k.Value] = true
		out = append(out, pair{key: k.Value, keyPos: at(k, path), val: v, valPos: at(v, path)})
	}
	return out
}

// seq returns the elements of the sequence n, or nil, having reported it, when n is not one.
func (d *decoder) seq(n *yaml.Node, p pos) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.add(p, "must be a list, not %s", kindName(n))
		return nil
	}
	return n.Content
}

// nonEmpty is seq that also reports an empty list, saying why with msg.
func (d *decoder) nonEmpty(n *yaml.Node, p pos, msg string) []*yaml.Node {
	list := d.seq(n, p)
	if n.Kind == yaml.SequenceNode && len(list) == 0 {
		d.add(p, "%s", msg)
	}
	return list
}

// mapping reports whether n is a mapping, reporting it when it is not.
func (d *decoder) mapping(n *yaml.Node, p pos) bool {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping, not %s", kindName(n))
		return false
	}
	return true
}

// choice reads a string that names one of choices and returns what it names; any other string
// is reported with want, such as "must be run, vu or iteration".
func choice[T any](d *decoder, n *yaml.Node, p pos, choices map[string]T, want string) (T, bool) {
	s, ok := d.str(n, p)
	v, known := choices[s]
	if ok && !known {
		d.add(p, "%s", want)
	}
	return v, ok && known
}

// str reads a string; numbers and booleans are refused so that names stay names, but other
// scalars YAML types on its own, such as dates, are strings.
func (d *decoder) str(n *yaml.Node, p pos) (string, bool) {
	if !isString(n) {
		d.add(p, "must be a string, not %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// isString reports whether n is a scalar other than a number, a boolean or null.
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.Tag {
	case "!!int", "!!float", "!!bool", "!!null":
		return false
	}
	return true
}

// text reads any scalar but null as its text: header values, query values and constants may
// be written as numbers or booleans.
func (d *decoder) text(n *yaml.Node, p pos) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.add(p, "must be a string, number or boolean, not %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// maxNameBytes bounds a name: a request's, a group's, a check's.
const maxNameBytes = 200

// name reads a string that must not be empty, too long or hold control characters.
func (d *decoder) name(n *yaml.Node, p pos) (string, bool) {
	s, ok := d.str(n, p)
	switch {
	case !ok:
		return "", false
	case strings.TrimSpace(s) == "":
		d.add(p, "must not be empty")
		return "", false
	case len(s) > maxNameBytes:
		d.add(p, "must be at most %d bytes long", maxNameBytes)
		return "", false
	case strings.IndexFunc(s, notPrintable) >= 0:
		d.add(p, "must not contain control characters (nor bidirectional ones, which reorder what a line shows)")
		return "", false
	}
	return s, true
}

// ident reads a variable, column or plugin name.
func (d *decoder) ident(n *yaml.Node, p pos) (string, bool) {
	s, ok := d.str(n, p)
	if ok && !identRe.MatchString(s) {
		d.add(p, "%s is not a valid name: use letters, digits and _, not starting with a digit", quote(s))
		return "", false
	}
	return s, ok
}

// integer reads a whole number between lo and hi.
func (d *decoder) integer(n *yaml.Node, p pos, lo, hi int) (int, bool) {
	v, ok := wholeNumber(n)
	if !ok {
		d.add(p, "must be a whole number, not %s", kindName(n))
		return 0, false
	}
	if v < int64(lo) || v > int64(hi) {
		d.add(p, "must be between %d and %d", lo, hi)
		return 0, false
	}
	return int(v), true
}

// wholeNumber reads an integer, or a float with no fractional part as JSON writers emit.
func wholeNumber(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.Tag {
	case "!!int":
		var v int64
		return v, n.Decode(&v) == nil
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	}
	return 0, false
}

// boolean reads true or false.
func (d *decoder) boolean(n *yaml.Node, p pos) (bool, bool) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.add(p, "must be true or false, not %s", kindName(n))
		return false, false
	}
	return v, true
}

// duration reads a duration such as "500ms" or "1m30s"; the number 0 is also accepted.
func (d *decoder) duration(n *yaml.Node, p pos) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Value == "0" {
		return 0, true
	}
	if !isString(n) {
		d.add(p, "must be a duration such as 500ms, 2s or 1m30s, not %s", kindName(n))
		return 0, false
	}
	v, err := quantity.ParseDuration(n.Value)
	if err != nil {
		d.add(p, "%s", err)
		return 0, false
	}
	return v, true
}

// durationIn reads a duration between lo and hi.
func (d *decoder) durationIn(n *yaml.Node, p pos, lo, hi time.Duration) (time.Duration, bool) {
	v, ok := d.duration(n, p)
	if ok && (v < lo || v > hi) {
		d.add(p, "must be between %s and %s", quantity.FormatDuration(lo), quantity.FormatDuration(hi))
		return 0, false
	}
	return v, ok
}

// template reads a scalar as a template whose variables are inserted as they are.
func (d *decoder) template(n *yaml.Node, p pos) *Template {
	s, ok := d.text(n, p)
	if !ok {
		return nil
	}
	t, err := newTemplate(s, p)
	if err != nil {
		d.add(p, "%s", err)
		return nil
	}
	return t
}

// value converts n into the value encoding/json would decode from its JSON form, numbers
// as json.Number.
func (d *decoder) value(n *yaml.Node, p pos) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		for _, kv := range d.pairs(n, p) {
			v, vok := d.value(kv.val, kv.valPos)
			ok = ok && vok
			m[kv.key] = v
		}
		return m, ok
	case yaml.SequenceNode:
		a := make([]any, len(n.Content))
		ok := true
		for i, c := range n.Content {
			var vok bool
			a[i], vok = d.value(c, at(c, index(p.path, i)))
			ok = ok && vok
		}
		return a, ok
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if n.Decode(&b) != nil {
				break
			}
			return b, true
		case "!!int", "!!float":
			num, ok := jsonNumber(n)
			if !ok {
				d.add(p, "%s is not a number JSON can hold", quote(n.Value))
				return nil, false
			}
			return json.Number(num), true
		}
		return n.Value, true
	}
	d.add(p, "unsupported value")
	return nil, false
}

var jsonNumberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// jsonNumber returns a YAML number as JSON number text: as written when JSON reads it alike,
// else reformatted (0x1f, 1_000, .5); infinities and NaN have no JSON form.
func jsonNumber(n *yaml.Node) (string, bool) {
	if jsonNumberRe.MatchString(n.Value) {
		return n.Value, true
	}
	if n.Tag == "!!int" {
		var i int64
		if n.Decode(&i) == nil {
			return strconv.FormatInt(i, 10), true
		}
		var u uint64
		if n.Decode(&u) == nil {
			return strconv.FormatUint(u, 10), true
		}
		return "", false
	}
	var f float64
	if n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// exactlyOne reports which of keys o has when it has exactly one, reporting the error
// otherwise; what names the thing for the message.
func (o *obj) exactlyOne(what string, keys ...string) string {
	var found []string
	for _, k := range keys {
		if o.has(k) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0]
	case 0:
		o.d.add(o.p, "%s needs one of %s", what, strings.Join(keys, ", "))
	default:
		o.d.add(o.p, "%s takes only one of %s, not %s", what, strings.Join(keys, ", "), strings.Join(found, " and "))
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the known key closest to a mistyped one, or "" when none is close.
func suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, for short keys.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
