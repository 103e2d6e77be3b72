package script_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

const order = `{
  "id": 7,
  "ok": true,
  "total": 12.50,
  "note": null,
  "items": [
    {"sku": "A", "qty": 1},
    {"sku": "B", "qty": 2, "gift": {"to": "Ada"}}
  ],
  "odd keys": {"a.b": "dot", "it's": "quote", "[x]": "bracket"},
  "big": 12345678901234567890
}`

func decode(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

func TestJSONPathFinds(t *testing.T) {
	t.Parallel()
	doc := decode(t, order)
	cases := []struct {
		path, want string
		found      bool
	}{
		{"$.id", "7", true},
		{"$.ok", "true", true},
		{"$.total", "12.50", true},
		{"$.note", "null", true},
		{"$.big", "12345678901234567890", true},
		{"$.items[0].sku", "A", true},
		{"$.items[-1].sku", "B", true},
		{"$.items[2].sku", "", false},
		{"$.items[-3]", "", false},
		{"$['items'][1]['qty']", "2", true},
		{`$["odd keys"]["a.b"]`, "dot", true},
		{`$['odd keys']['it\'s']`, "quote", true},
		{`$['odd keys']['[x]']`, "bracket", true},
		{"$.items[*].gift.to", "Ada", true},
		{"$.items.*.sku", "A", true},
		{"$.*", "", true}, // the first member by name: "big"
		{"$.items[0]", `{"qty":1,"sku":"A"}`, true},
		{"$.missing", "", false},
		{"$.id.deeper", "", false},
		{"$.items.sku", "", false},
		{"$[0]", "", false},
	}
	for _, tc := range cases {
		p, err := script.ParseJSONPath(tc.path)
		require.NoError(t, err, tc.path)
		require.Equal(t, tc.path, p.String())
		got, found := p.FindString(doc)
		require.Equal(t, tc.found, found, tc.path)
		if tc.path == "$.*" {
			require.Equal(t, "12345678901234567890", got)
			continue
		}
		require.Equal(t, tc.want, got, tc.path)
	}
	whole, err := script.ParseJSONPath("$")
	require.NoError(t, err)
	v, ok := whole.Find(doc)
	require.True(t, ok)
	require.Equal(t, doc, v)
}

func TestJSONPathRefuses(t *testing.T) {
	t.Parallel()
	for path, msg := range map[string]string{
		"items[0]":       "starts with $",
		"$..id":          "recursive descent",
		"$.":             "missing member name",
		"$.a[":           "unterminated [",
		"$.a[1":          "unterminated [",
		"$.a['b":         "unterminated quoted name",
		"$.a['b'x]":      "expected ] after the quoted name",
		"$.a[?(@.b==1)]": "filters and slices are not supported",
		"$.a[0:2]":       "filters and slices are not supported",
		"$.a[*":          "expected ] after *",
		"$x":             "expected . or [",
		"$.a b":          "", // spaces belong to the member name
	} {
		_, err := script.ParseJSONPath(path)
		if msg == "" {
			require.NoError(t, err, path)
			continue
		}
		require.ErrorContains(t, err, msg, path)
	}
}

func TestJSONEqual(t *testing.T) {
	t.Parallel()
	doc := decode(t, order)
	m := doc.(map[string]any)
	require.True(t, script.JSONEqual(m["id"], 7.0))
	require.True(t, script.JSONEqual(m["id"], json.Number("7.0")))
	require.True(t, script.JSONEqual(m["total"], 12.5))
	require.True(t, script.JSONEqual(m["note"], nil))
	require.True(t, script.JSONEqual(m["ok"], true))
	require.False(t, script.JSONEqual(m["ok"], "true"))
	require.False(t, script.JSONEqual(m["id"], "7"))
	require.True(t, script.JSONEqual(m["items"], decode(t, `[{"qty": 1, "sku": "A"}, {"sku": "B", "qty": 2.0, "gift": {"to": "Ada"}}]`)))
	require.False(t, script.JSONEqual(m["items"], decode(t, `[{"qty": 1, "sku": "A"}]`)))
	require.False(t, script.JSONEqual(map[string]any{"a": 1.0}, map[string]any{"b": 1.0}))
}
