package sdk_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

func TestDecodeConfigNamesTheField(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Count int    `json:"count"`
		Name  string `json:"name"`
	}
	require.NoError(t, sdk.DecodeConfig([]byte(`{"count": 3, "name": "x"}`), &cfg))
	require.Equal(t, 3, cfg.Count)

	err := sdk.DecodeConfig([]byte(`{"count": "three"}`), &cfg)
	var ce *sdk.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "count", ce.Field)
	require.Equal(t, "want int, not string", ce.Reason)

	err = sdk.DecodeConfig([]byte(`{"colour": "red"}`), &cfg)
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Reason, `unknown field "colour"`)
}

func TestConfigSchemaValidate(t *testing.T) {
	t.Parallel()
	s, err := sdk.CompileConfigSchema(`{"type": "object", "additionalProperties": false,
		"properties": {"n": {"type": "object", "properties": {"min": {"type": "integer", "minimum": 0}}}},
		"required": ["n"]}`)
	require.NoError(t, err)
	require.Empty(t, s.Validate([]byte(`{"n": {"min": 1}}`)))
	errs := s.Validate([]byte(`{"n": {"min": -1}}`))
	require.Len(t, errs, 1)
	require.Equal(t, "n.min", errs[0].Field)
	require.Contains(t, errs[0].Reason, "minimum")
	require.NotEmpty(t, s.Validate([]byte(`{}`)), "n is required")
	require.Equal(t, []*sdk.ConfigError{{Reason: "must be an object"}}, s.Validate([]byte(`[1]`)))

	_, err = sdk.CompileConfigSchema(`{"type": "nonsense"}`)
	require.Error(t, err)
	any, err := sdk.CompileConfigSchema("")
	require.NoError(t, err)
	require.Empty(t, any.Validate([]byte(`{"whatever": 1}`)))
}

func TestValidConfig(t *testing.T) {
	t.Parallel()
	valid := sdktest.ValidConfig(t, &sdk.Plugin{Name: "p", ConfigSchema: `{"type": "object", "properties": {"k": {"type": "string"}}}`})
	require.NoError(t, valid(`{"k": "v"}`))
	require.ErrorContains(t, valid(`{"k": 1}`), "config.k:")
}

func TestConfigSchemaFetchesNothingItNames(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"required": ["host-secret-was-read"]}`), 0o600))
	_, err := sdk.CompileConfigSchema(`{"$ref": "file://` + secret + `"}`)
	require.Error(t, err, "a schema may not read the host's files")
	s, err := sdk.CompileConfigSchema(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`)
	require.NoError(t, err, "the drafts are built in")
	require.Empty(t, s.Validate([]byte(`{}`)))
}
