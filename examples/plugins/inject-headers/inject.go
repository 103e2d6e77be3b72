package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/sdk"
)

// configSchema describes the config. The host checks a script's config against it before
// Modify, and the marketplace shows it.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "inject-headers config",
  "description": "Headers to add to every request of the script.",
  "type": "object",
  "properties": {
    "headers": {
      "type": "object",
      "minProperties": 1,
      "propertyNames": { "pattern": "^[!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+$" },
      "additionalProperties": { "type": "string", "pattern": "^[^\\r\\n]*$" },
      "description": "Header name to value."
    },
    "override": {
      "type": "boolean",
      "default": false,
      "description": "Replace a header the script already sets for a request; by default the script's own value stays."
    }
  },
  "required": ["headers"],
  "additionalProperties": false
}`

// newPlugin returns the plugin, for main to serve and for tests to start in-process.
func newPlugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         "inject-headers",
		Version:      "1.0.0",
		Description:  "Adds headers to every request of a script.",
		ConfigSchema: configSchema,
		Source:       modifier{},
	}
}

// config is the plugin's config; see configSchema.
type config struct {
	Headers  map[string]string `json:"headers"`
	Override bool              `json:"override"`
}

// modifier adds the configured headers to every request. It keeps no state: each Modify
// brings its own config.
type modifier struct{}

// headerName is a header name as RFC 9110 allows it (a token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Modify reads the script as generic JSON rather than as Barrage's script types, so that it
// keeps every key it does not know, and the host validates the result like any script.
func (modifier) Modify(_ context.Context, script, rawConfig []byte) ([]byte, error) {
	cfg, names, err := parseConfig(rawConfig)
	if err != nil {
		return nil, err
	}
	doc, err := decodeScript(script)
	if err != nil {
		return nil, err
	}
	session, ok := doc["session"].(map[string]any)
	if !ok {
		return nil, errors.New("script: session is missing or not an object")
	}
	sessionHeaders, err := headersOf(session, "session")
	if err != nil {
		return nil, err
	}
	groups, ok := session["groups"].([]any)
	if !ok {
		return nil, errors.New("script: session.groups is missing or not a list")
	}
	for gi, g := range groups {
		path := fmt.Sprintf("session.groups[%d]", gi)
		group, ok := g.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("script: %s is not an object", path)
		}
		groupHeaders, err := headersOf(group, path)
		if err != nil {
			return nil, err
		}
		requests, ok := group["requests"].([]any)
		if !ok {
			return nil, fmt.Errorf("script: %s.requests is missing or not a list", path)
		}
		for ri, r := range requests {
			reqPath := fmt.Sprintf("%s.requests[%d]", path, ri)
			req, ok := r.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("script: %s is not an object", reqPath)
			}
			if err := inject(cfg, names, req, reqPath, groupHeaders, sessionHeaders); err != nil {
				return nil, err
			}
		}
	}
	return encode(doc)
}

// inject adds the configured headers to one request.
//
// A header counts as already set when the request, its group or the session sets it, under any
// case: a header given nearer the request replaces one further away (docs/scripts.md), so
// adding it to the request would quietly override the group's or the session's value. With
// override the request gets the configured value, and its own header of the same name in
// another case goes, so that only one is sent.
func inject(cfg config, names []string, req map[string]any, path string, inherited ...map[string]any) error {
	own, err := headersOf(req, path)
	if err != nil {
		return err
	}
	if own == nil {
		own = map[string]any{}
	}
	for _, name := range names {
		if !cfg.Override && (hasHeader(own, name) || slices.ContainsFunc(inherited, func(h map[string]any) bool { return hasHeader(h, name) })) {
			continue
		}
		for k := range own {
			if strings.EqualFold(k, name) {
				delete(own, k)
			}
		}
		own[name] = cfg.Headers[name]
	}
	if len(own) > 0 {
		req["headers"] = own
	}
	return nil
}

// headersOf returns the headers object of a session, group or request; nil when it has none.
func headersOf(obj map[string]any, path string) (map[string]any, error) {
	h, ok := obj["headers"]
	if !ok || h == nil {
		return nil, nil
	}
	m, ok := h.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("script: %s.headers is not an object", path)
	}
	return m, nil
}

// hasHeader says whether headers has name, compared without regard to case as HTTP does.
func hasHeader(headers map[string]any, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// parseConfig checks the config and returns it with the header names sorted, so that the
// result and the errors do not depend on map order.
func parseConfig(raw []byte) (config, []string, error) {
	var cfg config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return cfg, nil, &sdk.ConfigError{Field: te.Field, Reason: fmt.Sprintf("want %s, not %s", te.Type, te.Value)}
		}
		return cfg, nil, &sdk.ConfigError{Reason: err.Error()}
	}
	if len(cfg.Headers) == 0 {
		return cfg, nil, &sdk.ConfigError{Field: "headers", Reason: `required: at least one header, such as {"X-Env": "staging"}`}
	}
	names := slices.Sorted(maps.Keys(cfg.Headers))
	for i, name := range names {
		field := "headers." + name
		switch {
		case !headerName.MatchString(name):
			return cfg, nil, &sdk.ConfigError{Field: field, Reason: "not a header name"}
		case strings.ContainsAny(cfg.Headers[name], "\r\n"):
			return cfg, nil, &sdk.ConfigError{Field: field, Reason: "a header value cannot hold a line break"}
		case slices.ContainsFunc(names[:i], func(n string) bool { return strings.EqualFold(n, name) }):
			return cfg, nil, &sdk.ConfigError{Field: field, Reason: "given twice, in different cases"}
		}
	}
	return cfg, names, nil
}

// decodeScript reads the script's JSON. Numbers are kept as written, so that a large id in a
// body does not come back rounded through a float.
func decodeScript(script []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(script))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if doc == nil {
		return nil, errors.New("script: not an object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("script: data after the JSON object")
	}
	return doc, nil
}

// encode writes the script back. HTML is not escaped, so that "<" in a body or an assertion
// reads as written.
func encode(doc map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
