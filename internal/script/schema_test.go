package script_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/script"
)

const examplesDir = "../../examples/scripts"

// compileSchema compiles the embedded JSON Schema.
func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(script.JSONSchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	return sch
}

// asJSON turns a YAML or JSON document into the value a JSON Schema validator reads.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		return doc
	}
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	j, err := json.Marshal(v)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	require.NoError(t, err)
	return doc
}

// examples returns the paths of the example scripts.
func examples(t testing.TB) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(examplesDir, pattern))
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	require.NotEmpty(t, paths)
	return paths
}

func TestExamplesMatchTheSchemaAndLoad(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	for _, path := range examples(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, sch.Validate(asJSON(t, data)))
			s, err := script.Load(path, script.ParseOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, s.Session.Requests())
		})
	}
}

func TestExampleFilesRequired(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"smoke.yaml", "shop.yaml", "users.csv", "open-model.yaml", "api.json"} {
		_, err := os.Stat(filepath.Join(examplesDir, name))
		require.NoError(t, err, name)
	}
	s, err := script.Load(filepath.Join(examplesDir, "shop.yaml"), script.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"email", "password", "card"}, s.Variables.Data[0].Columns)
	require.Len(t, s.Session.Groups, 4)
	require.Len(t, s.Thresholds, 5)
}

// TestSchemaAndParserAgree checks that documents the parser refuses for their shape are
// refused by the schema too, and that a minimal script passes both.
func TestSchemaAndParserAgree(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	minimal := "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1/'}]}]}\nload: {vus: 1, iterations: 1}\n"
	require.NoError(t, sch.Validate(asJSON(t, []byte(minimal))))
	_, err := script.Parse([]byte(minimal), script.ParseOptions{})
	require.NoError(t, err)

	for name, change := range map[string][2]string{
		"version 2":        {"version: 1", "version: 2"},
		"unknown key":      {"load:", "lode: {}\nload:"},
		"mixed models":     {"{vus: 1, iterations: 1}", "{vus: 1, iterations: 1, rate: 5/s, max_vus: 2}"},
		"no end":           {"{vus: 1, iterations: 1}", "{vus: 1}"},
		"bad url":          {"'http://127.0.0.1/'", "ftp://x"},
		"bad duration":     {"url: 'http://127.0.0.1/'", "url: 'http://127.0.0.1/', timeout: 10"},
		"bad threshold":    {"load:", "thresholds: ['p42 < 1s']\nload:"},
		"bad plugin":       {"load:", "plugins: [{use: x, kind: url}]\nload:"},
		"two body kinds":   {"url: 'http://127.0.0.1/'", "url: 'http://127.0.0.1/', body: {raw: a, form: {}}"},
		"unknown assert":   {"url: 'http://127.0.0.1/'", "url: 'http://127.0.0.1/', assert: [{stauts: 200}]"},
		"equals alone":     {"url: 'http://127.0.0.1/'", "url: 'http://127.0.0.1/', assert: [{status: 200, equals: 1}]"},
		"no groups":        {"[{name: g, requests: [{name: r, url: 'http://127.0.0.1/'}]}]", "[]"},
		"data order":       {"load:", "variables: {data: [{file: a.csv, order: shuffled}]}\nload:"},
		"open without max": {"{vus: 1, iterations: 1}", "{rate: 5/s, duration: 1m}"},
	} {
		doc := strings.Replace(minimal, change[0], change[1], 1)
		require.NotEqual(t, minimal, doc, name)
		require.Error(t, sch.Validate(asJSON(t, []byte(doc))), "the schema accepts %s", name)
		_, err := script.Parse([]byte(doc), script.ParseOptions{})
		require.Error(t, err, "the parser accepts %s", name)
	}
}
