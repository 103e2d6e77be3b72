package script_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

// sameAsDecoded checks that reading data as a JSONDoc and selecting path in it gives what
// decoding data as the engine used to (a json.Decoder with UseNumber, one value) and finding
// path in the decoded value gives: the same refusal of data that is not JSON, the same finding
// or not, the same value decoded and the same text.
func sameAsDecoded(t *testing.T, data []byte, path string) {
	t.Helper()
	p, err := script.ParseJSONPath(path)
	if err != nil {
		return
	}
	var want any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	decErr := dec.Decode(&want)
	doc, err := script.ReadJSON(data)
	if decErr != nil {
		require.Error(t, err, "decoding refuses %q (%v), ReadJSON accepts it", data, decErr)
		require.ErrorIs(t, err, script.ErrNotJSON)
		return
	}
	require.NoError(t, err, "decoding accepts %q, ReadJSON refuses it", data)
	wantV, wantFound := p.Find(want)
	got, found := p.Select(doc)
	require.Equal(t, wantFound, found, "%s in %q", path, data)
	if !found {
		return
	}
	require.Equal(t, wantV, got.Decode(), "%s in %q", path, data)
	wantText, _ := p.FindString(want)
	require.Equal(t, wantText, got.Text(), "%s in %q", path, data)
	gotText, _ := p.SelectString(doc)
	require.Equal(t, wantText, gotText, "%s in %q", path, data)
}

// tricky are documents where a scanner over bytes could part from the decoder: escapes,
// invalid UTF-8, lone surrogates, duplicate names, numbers at the edges of the grammar,
// what follows the first value, and the errors a value can end in.
var tricky = []string{
	``, ` `, "\t\n\r ", `{`, `[`, `"`, `"abc`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `[1,`, `[1,]`,
	`{"a":1,}`, `{,}`, `[,1]`, `{"a" 1}`, `{1:2}`, `{'a':1}`, `[01]`, `01`, `-01`, `-`, `-x`, `1.`,
	`1.e5`, `1e`, `1e+`, `1E-7`, `-0.0e0`, `[1.]`, `[1e]`, `[-]`, `+1`, `.5`, `0x10`, `1_000`,
	`true`, `tru`, `truex`, `[truex]`, `nul`, `null `, `[nul]`, `fals`, `[false,true,null]`,
	`123abc`, `{"a":1}xyz`, `[1]]`, `{}{}`, `"a" "b"`, "\ufeff{}", `NaN`, `Infinity`,
	`"\u00e9\u0041\t\n\/"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`, `"\u12"`,
	`"\x"`, `"\'"`, "\"a\tb\"", "\"a\x01b\"", "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "\"\xc3\"",
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":{"c":2}}`, `{"\u0061":1,"a":2}`, `{"a":2,"\u0061":1}`,
	"{\"\xff\":1,\"\xfe\":2}", `{"a\"b":1}`, `{"a\\":1}`, `{"":1}`, `{"b":[],"a":{}}`,
	`[[[[[[[[[[]]]]]]]]]]`, `[[[[[[[[[[]]]]]]]]]`, `{"a":[{"b":[{"c":"d"}]}]}`,
	" \n{ \"a\" : [ 1 , 2 , { \"b\" : null } ] } \n", `{"a":"<&>"}`, `{"x":1e400}`,
	`{"a":-0,"b":123456789012345678901234567890,"c":1.50}`, `[{"a":1},{"b":2},{"a":3}]`,
}

var trickyPaths = []string{
	"$", "$.a", "$.b", "$.c", "$.x", "$['a']", `$["a\"b"]`, `$['a\\']`, "$['']", "$[0]", "$[1]",
	"$[2]", "$[-1]", "$[-2]", "$[-4]", "$[*]", "$.*", "$.*.*", "$[*].a", "$[*].b", "$.a[0]",
	"$.a[*]", "$.a[*].b", "$.a[2].b", "$.a[-1].b", "$.a.b", "$.a.c", "$.a[0].b[0].c", "$[*][*]",
	"$.\ufffd", "$.é",
}

func TestSelectDoesAsFind(t *testing.T) {
	t.Parallel()
	for _, d := range append(tricky, order) {
		for _, p := range trickyPaths {
			sameAsDecoded(t, []byte(d), p)
		}
	}
	var long strings.Builder // longer than the offsets counting from the end keeps
	long.WriteString("[")
	for i := range 40 {
		fmt.Fprintf(&long, `%s{"i":%d}`, map[bool]string{true: ",", false: ""}[i > 0], i)
	}
	long.WriteString("]")
	for _, i := range []int{0, 39, 40, -1, -15, -16, -17, -20, -40, -41} {
		sameAsDecoded(t, []byte(long.String()), fmt.Sprintf("$[%d].i", i))
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	sameAsDecoded(t, []byte(deep), "$[0][0]")
	sameAsDecoded(t, []byte("["+deep+"]"), "$[0]") // one level deeper than the decoder allows
}

func TestSelectDoesAsFindOnRandomDocuments(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b bytes.Buffer
		g := &docGen{rng: rng}
		g.value(&b, 0)
		data := b.Bytes()
		if rng.IntN(4) == 0 {
			data = mutate(rng, data)
		}
		for range 8 {
			sameAsDecoded(t, data, g.path())
		}
	}
}

// docGen writes random JSON documents and random paths into them, from a small set of names so
// that paths find something as often as not.
type docGen struct {
	rng  *rand.Rand
	keys []string
}

var genKeys = []string{"a", "b", "id", "items", "a.b", "x y", "it's", `q"uote`, "é", "", "[0]", `back\slash`}

func (g *docGen) space(b *bytes.Buffer) {
	if g.rng.IntN(3) == 0 {
		b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[g.rng.IntN(4)])
	}
}

func (g *docGen) value(b *bytes.Buffer, depth int) {
	g.space(b)
	n := 9
	if depth > 4 {
		n = 6
	}
	switch g.rng.IntN(n) {
	case 0:
		b.WriteString([]string{"true", "false", "null"}[g.rng.IntN(3)])
	case 1, 2:
		b.WriteString([]string{"0", "-0", "7", "-12", "3.25", "1e3", "2E-2", "1.50", "-0.0e+0",
			"12345678901234567890", "1e400"}[g.rng.IntN(11)])
	case 3, 4, 5:
		g.str(b)
	case 6, 7:
		b.WriteByte('{')
		for i := range g.rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			g.space(b)
			k := genKeys[g.rng.IntN(len(genKeys))]
			g.keys = append(g.keys, k)
			g.key(b, k)
			g.space(b)
			b.WriteByte(':')
			g.value(b, depth+1)
		}
		g.space(b)
		b.WriteByte('}')
	default:
		b.WriteByte('[')
		for i := range g.rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			g.value(b, depth+1)
		}
		g.space(b)
		b.WriteByte(']')
	}
	g.space(b)
}

// key writes k as an object's name, sometimes with its characters escaped.
func (g *docGen) key(b *bytes.Buffer, k string) {
	if g.rng.IntN(4) > 0 {
		q, _ := json.Marshal(k)
		b.Write(q)
		return
	}
	b.WriteByte('"')
	for _, r := range k {
		fmt.Fprintf(b, `\u%04x`, r)
	}
	b.WriteByte('"')
}

func (g *docGen) str(b *bytes.Buffer) {
	parts := []string{"plain", "", "with space", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\ud83d\ude00`,
		`\ud83d`, `\ude00`, "é", "\xff", "\xc3", "<&>", "a long enough text to fill several words of eight"}
	b.WriteByte('"')
	for range g.rng.IntN(4) {
		b.WriteString(parts[g.rng.IntN(len(parts))])
	}
	b.WriteByte('"')
}

// path returns a path into the last document written, of the forms the subset has.
func (g *docGen) path() string {
	var p strings.Builder
	p.WriteString("$")
	for range g.rng.IntN(4) {
		switch g.rng.IntN(6) {
		case 0, 1:
			k := "a"
			if len(g.keys) > 0 {
				k = g.keys[g.rng.IntN(len(g.keys))]
			}
			if k != "" && !strings.ContainsAny(k, ".[") && g.rng.IntN(2) == 0 {
				p.WriteString("." + k)
			} else {
				p.WriteString("['" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(k) + "']")
			}
		case 2, 3:
			p.WriteString("[" + strconv.Itoa(g.rng.IntN(7)-3) + "]")
		case 4:
			p.WriteString("[*]")
		default:
			p.WriteString(".*")
		}
	}
	return p.String()
}

// mutate breaks or extends a document: cuts it, changes, drops or adds a byte, or appends what
// should not follow it.
func mutate(rng *rand.Rand, data []byte) []byte {
	data = bytes.Clone(data)
	if len(data) == 0 {
		return data
	}
	i := rng.IntN(len(data))
	switch rng.IntN(5) {
	case 0:
		return data[:i]
	case 1:
		const chars = "{}[]\",:0-.eE\\ntfu \x00\x1f\xff"
		data[i] = chars[rng.IntN(len(chars))]
		return data
	case 2:
		return append(data[:i], data[i+1:]...)
	case 3:
		return append(data[:i], append([]byte{`{}[]",:1`[rng.IntN(8)]}, data[i:]...)...)
	}
	return append(data, []string{"x", "}", "]", ",1", " {", "\x00"}[rng.IntN(6)]...)
}

// catalogue reads the document scripts/bench-compression.sh serves: 32 products, about 20 KB
// (made by the same generator with the same seed).
func catalogue(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/catalogue.json")
	require.NoError(tb, err)
	return data
}

// cataloguePaths are a shallow path, a deep one and one near the end of the catalogue.
var cataloguePaths = []struct{ name, path string }{
	{"shallow", "$[0].id"},
	{"deep", "$[16].price.amount"},
	{"end", "$[-1].images[-1]"},
}

func TestSelectDoesAsFindInTheCatalogue(t *testing.T) {
	t.Parallel()
	data := catalogue(t)
	for _, p := range cataloguePaths {
		sameAsDecoded(t, data, p.path)
	}
	for _, p := range []string{"$", "$[5]", "$[*].tags[0]", "$[31].*", "$[-32].price.compare_at", "$[32]", "$[3].colors"} {
		sameAsDecoded(t, data, p)
	}
}

// BenchmarkJSONPath compares the two ways of reading a path in a response: decoding the body
// into an any and finding the path in it (as the engine did), and reading it as a JSONDoc and
// selecting the path in its bytes. text is the text an extractor takes; found is what an
// `exists` assertion asks. The body is the bench script's 20 KB catalogue.
func BenchmarkJSONPath(b *testing.B) {
	data := catalogue(b)
	for _, p := range cataloguePaths {
		jp, err := script.ParseJSONPath(p.path)
		require.NoError(b, err)
		b.Run("decode/"+p.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var doc any
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.UseNumber()
				if err := dec.Decode(&doc); err != nil {
					b.Fatal(err)
				}
				if _, ok := jp.FindString(doc); !ok {
					b.Fatal("not found")
				}
			}
		})
		b.Run("scan/"+p.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				doc, err := script.ReadJSON(data)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := jp.SelectString(doc); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
	// The parts of a scan: checking the whole body once, and walking one path in it.
	b.Run("scan/read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := script.ReadJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	doc, err := script.ReadJSON(data)
	require.NoError(b, err)
	for _, p := range cataloguePaths {
		jp, err := script.ParseJSONPath(p.path)
		require.NoError(b, err)
		b.Run("scan/select/"+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := jp.Select(doc); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
}

// A JSON assertion judges the value its path selects in the bytes as it judged the decoded
// document, and says why it failed in the same words.
func TestJSONCheckSaysWhy(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`
version: 1
variables:
  constants: { who: Ada }
session:
  groups:
    - name: g
      requests:
        - name: r
          url: http://127.0.0.1/
          assert:
            - { json: "$.id", equals: 7 }
            - { json: "$.id", equals: 8 }
            - { json: "$.total", equals: "12.50" }
            - { json: "$.total", equals: "12.5" }
            - { json: "$.items[1].gift.to", equals: "${who}" }
            - { json: "$.note", equals: "caf\u00e9 \"1\"" }
            - { json: "$.items[0]", equals: { sku: A, qty: 1.0 } }
            - { json: "$.items[0]", equals: { sku: A } }
            - { json: "$.note", exists: false }
            - { json: "$.nothing", exists: false }
            - { json: $.nothing }
            - { json: "$.long", exists: false }
            - { json: "$['odd keys']", exists: false }
load: { vus: 1, iterations: 1 }
`), script.ParseOptions{})
	require.NoError(t, err)
	doc, err := script.ReadJSON([]byte(`{"id": 7, "total": 12.50, "note": "caf\u00e9 \"1\"",
		"items": [{"sku": "A", "qty": 1}, {"gift": {"to": "Ada"}}], "odd keys": {"<": "&"},
		"long": "` + strings.Repeat("x", 300) + `"}`))
	require.NoError(t, err)
	lookup := func(string) (string, bool) { return "Ada", true }
	want := []string{
		"",
		"json $.id was 7, wanted 8",
		"",
		`json $.total was 12.50, wanted "12.5"`,
		"",
		"",
		"",
		`json $.items[0] was {"qty":1,"sku":"A"}, wanted {"sku":"A"}`,
		`json $.note found "café \"1\"", wanted nothing`,
		"",
		"json $.nothing found nothing",
		`json $.long found "` + strings.Repeat("x", 200) + `...", wanted nothing`,
		`json $['odd keys'] found {"\u003c":"\u0026"}, wanted nothing`,
	}
	var asserts []*script.Assertion
	for _, a := range s.Session.Requests()[0].Assert {
		if a.Kind == script.AssertJSON { // not the status check implied
			asserts = append(asserts, a)
		}
	}
	require.Len(t, asserts, len(want))
	for i, a := range asserts {
		ok, why, err := a.JSONCheck(doc, lookup)
		require.NoError(t, err)
		require.Equal(t, want[i] == "", ok, "assertion %d: %s", i, why)
		require.Equal(t, want[i], why, "assertion %d", i)
	}
}
