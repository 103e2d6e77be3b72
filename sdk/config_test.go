package sdk_test

import (
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
