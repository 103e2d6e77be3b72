package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// DecodeConfig decodes a plugin's config object into dst, a pointer to a struct, refusing
// fields dst does not have. Its errors are *ConfigError naming the field, ready to return from
// Configure.
func DecodeConfig(config []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &ConfigError{Field: te.Field, Reason: fmt.Sprintf("want %s, not %s", te.Type, te.Value)}
		}
		return &ConfigError{Reason: err.Error()}
	}
	return nil
}

// ConfigSchema is a plugin's compiled config schema (Plugin.ConfigSchema). The host checks a
// script's config with it before Configure; sdktest.ValidConfig lets an author test it.
type ConfigSchema struct {
	schema *jsonschema.Schema // nil accepts any object
}

// CompileConfigSchema compiles a JSON Schema given as text; empty text accepts any object.
func CompileConfigSchema(text string) (*ConfigSchema, error) {
	if strings.TrimSpace(text) == "" {
		return &ConfigSchema{}, nil
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("the config schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	// The schema comes from the plugin: a host must not fetch what it names, a file of the
	// host's or a URL. It must be self-contained (the JSON Schema drafts are built in).
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("config.json", doc); err != nil {
		return nil, fmt.Errorf("the config schema: %w", err)
	}
	s, err := c.Compile("config.json")
	if err != nil {
		return nil, fmt.Errorf("the config schema: %w", err)
	}
	return &ConfigSchema{schema: s}, nil
}

// Validate checks a config object, given as JSON, and returns what is wrong with it, each
// naming its field (a dotted path into the config, empty for the object itself).
func (c *ConfigSchema) Validate(config []byte) []*ConfigError {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return []*ConfigError{{Reason: "not JSON: " + err.Error()}}
	}
	if _, ok := v.(map[string]any); !ok {
		return []*ConfigError{{Reason: "must be an object"}}
	}
	if c.schema == nil {
		return nil
	}
	err = c.schema.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []*ConfigError{{Reason: err.Error()}}
	}
	var out []*ConfigError
	for _, leaf := range leaves(ve) {
		out = append(out, &ConfigError{Field: strings.Join(leaf.InstanceLocation, "."), Reason: leaf.ErrorKind.LocalizedString(english)})
	}
	return out
}

var english = message.NewPrinter(language.English)

// leaves are the innermost causes of a validation error: the ones that say what is wrong.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}
