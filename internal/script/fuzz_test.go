package script_test

import (
	"errors"
	"os"
	"testing"

	"github.com/barrage-load/barrage/internal/script"
)

// FuzzParse checks that no document makes Parse panic, that a refused one is always explained
// by an ErrorList, and that an accepted one holds what the engine relies on. The seeds are the
// examples; inputs the fuzzer found are kept in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, path := range examples(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"version": 1, "session": {"groups": [{"name": "g", "requests": [{"name": "r", "url": "http://h/${a"}]}]}, "load": {"vus": 1, "iterations": 1}}`))
	f.Add([]byte("version: 1\nx: &a [*a]\n"))
	f.Add([]byte("version: 1\nload: {stages: [{ramp_to: 1/s, duration: 1s}], max_vus: 1, source_addresses: '::1-::ffff'}\n"))
	f.Add([]byte("thresholds: ['p99.9 <= 1s over 1m', {check: 'rps>1', abort: true}]\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := script.Parse(data, script.ParseOptions{Filename: "fuzz.yaml"})
		if err != nil {
			var list script.ErrorList
			if !errors.As(err, &list) || len(list) == 0 || s != nil {
				t.Fatalf("refused without an ErrorList: %v", err)
			}
			for _, e := range list {
				if e.Message == "" {
					t.Fatalf("an error without a message: %#v", e)
				}
			}
			return
		}
		if s.Version != script.Version || len(s.Session.Groups) == 0 || s.Load.Model == 0 {
			t.Fatalf("accepted an incomplete script: %+v", s)
		}
		x := func(string) (string, bool) { return "x", true }
		for _, r := range s.Session.Requests() {
			if r.Name == "" || r.URL == nil || len(r.Assert) == 0 {
				t.Fatalf("accepted an incomplete request: %+v", r)
			}
			if _, err := r.AppendURL(x, nil); err != nil {
				t.Fatal(err)
			}
			for _, h := range r.Headers {
				if _, err := h.Value.Render(x, nil); err != nil {
					t.Fatal(err)
				}
			}
			if r.Body != nil {
				if _, err := r.Body.Content.Render(x, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// FuzzJSONPath checks that no path makes ParseJSONPath or Find panic.
func FuzzJSONPath(f *testing.F) {
	for _, p := range []string{"$", "$.a.b[0].c", "$['a']", `$["a\"b"][*]`, "$.items[-1].*", "$..x"} {
		f.Add(p)
	}
	doc := map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1.0}}}, "items": []any{"x", nil}}
	f.Fuzz(func(t *testing.T, path string) {
		p, err := script.ParseJSONPath(path)
		if err != nil {
			return
		}
		p.FindString(doc)
	})
}

// FuzzSelect checks that selecting a path in a document read with ReadJSON gives what decoding
// the document and finding the path in it gives (see sameAsDecoded), whatever the bytes:
// refused alike when they are not JSON, the same value and text when they are. Inputs the
// fuzzer found are kept in testdata/fuzz/FuzzSelect.
func FuzzSelect(f *testing.F) {
	for _, d := range tricky {
		f.Add([]byte(d), "$.a")
	}
	f.Add([]byte(order), "$.items[-1].gift.to")
	f.Add([]byte(order), "$['odd keys'].*")
	f.Add([]byte(`[{"a":1},{"b":{"a":"\u00e9"}}]`), "$[*].b.a")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		sameAsDecoded(t, data, path)
	})
}
