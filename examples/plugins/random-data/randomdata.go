package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/barrage-load/barrage/sdk"
)

// configSchema describes the config: an object whose keys are the variables to make up and
// whose values say how. The top level cannot forbid other keys, for they are the variables;
// each variable forbids the fields its syntax does not take. The host checks a script's config
// against it before Configure, and the marketplace shows it.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "random-data config",
  "description": "The variables to make up, by name, each with its syntax.",
  "type": "object",
  "minProperties": 1,
  "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" },
  "additionalProperties": { "$ref": "#/$defs/variable" },
  "$defs": {
    "variable": {
      "type": "object",
      "required": ["syntax"],
      "properties": {
        "syntax": { "enum": ["email", "uuid", "number", "pattern"] }
      },
      "allOf": [
        {
          "if": { "required": ["syntax"], "properties": { "syntax": { "const": "email" } } },
          "then": {
            "properties": {
              "syntax": true,
              "domain": { "type": "string", "pattern": "^[^@\\s]+$", "default": "example.test" }
            },
            "additionalProperties": false
          }
        },
        {
          "if": { "required": ["syntax"], "properties": { "syntax": { "const": "uuid" } } },
          "then": { "properties": { "syntax": true }, "additionalProperties": false }
        },
        {
          "if": { "required": ["syntax"], "properties": { "syntax": { "const": "number" } } },
          "then": {
            "required": ["min", "max"],
            "properties": {
              "syntax": true,
              "min": { "type": "integer" },
              "max": { "type": "integer" }
            },
            "additionalProperties": false
          }
        },
        {
          "if": { "required": ["syntax"], "properties": { "syntax": { "const": "pattern" } } },
          "then": {
            "required": ["pattern"],
            "properties": {
              "syntax": true,
              "pattern": {
                "type": "string",
                "pattern": "[#?*]",
                "description": "# is a digit, ? a lowercase letter, * a letter or digit; other characters stand for themselves."
              }
            },
            "additionalProperties": false
          }
        }
      ]
    }
  }
}`

// newPlugin returns the plugin, for main to serve and for tests to start in-process.
func newPlugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         "random-data",
		Version:      "1.0.0",
		Description:  "Makes up email addresses, UUIDs, numbers and patterned strings.",
		ConfigSchema: configSchema,
		// Made-up data is most often wanted fresh for each iteration; a script that wants one
		// set per virtual user says scope: vu.
		Scope:   sdk.ScopeIteration,
		Element: &element{},
	}
}

// element makes up the configured variables. It never runs out.
//
// Values come from math/rand/v2's top-level functions: they are safe for concurrent use and
// seeded afresh in each process, so no lock is needed around them, and test data needs no
// cryptographic strength.
type element struct {
	mu   sync.RWMutex
	vars []variable // sorted by name; nil until configured
}

// variable is one configured variable and the function that makes up its values.
type variable struct {
	name  string
	value func() string
}

// varName is what a script accepts after the plugin's alias: ${rnd.name}.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (e *element) Configure(_ context.Context, config []byte) ([]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(config, &raw); err != nil {
		return nil, &sdk.ConfigError{Reason: "want an object of variables: " + err.Error()}
	}
	if len(raw) == 0 {
		return nil, &sdk.ConfigError{Reason: `no variables: give at least one, such as {"id": {"syntax": "uuid"}}`}
	}
	names := slices.Sorted(maps.Keys(raw))
	vars := make([]variable, 0, len(names))
	for _, name := range names {
		if !varName.MatchString(name) {
			return nil, &sdk.ConfigError{Field: name, Reason: "not a variable name: use letters, digits and _, not starting with a digit"}
		}
		value, err := parseVariable(name, raw[name])
		if err != nil {
			return nil, err
		}
		vars = append(vars, variable{name: name, value: value})
	}
	e.mu.Lock()
	e.vars = vars
	e.mu.Unlock()
	return names, nil
}

func (e *element) Next(_ context.Context, n int) ([]sdk.Vars, error) {
	e.mu.RLock()
	vars := e.vars
	e.mu.RUnlock()
	if vars == nil {
		return nil, errors.New("random-data: Next before Configure")
	}
	sets := make([]sdk.Vars, n)
	for i := range sets {
		set := make(sdk.Vars, len(vars))
		for _, v := range vars {
			set[v.name] = v.value()
		}
		sets[i] = set
	}
	return sets, nil
}

// fieldsOf lists the fields each syntax takes besides syntax itself. A field of another syntax
// is refused rather than ignored: it is most likely a mistake about the syntax.
var fieldsOf = map[string][]string{
	"email":   {"domain"},
	"uuid":    nil,
	"number":  {"min", "max"},
	"pattern": {"pattern"},
}

// spec is one variable's config. Pointers tell a field left out from a zero value.
type spec struct {
	Syntax  *string `json:"syntax"`
	Domain  *string `json:"domain"`
	Min     *int64  `json:"min"`
	Max     *int64  `json:"max"`
	Pattern *string `json:"pattern"`
}

// parseVariable checks one variable's config and returns the function that makes up its
// values. The host has checked the config against the schema already; checking again here
// keeps the plugin safe when called otherwise, and names the field at fault.
func parseVariable(name string, raw json.RawMessage) (func() string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, &sdk.ConfigError{Field: name, Reason: `want an object such as {"syntax": "uuid"}`}
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &sdk.ConfigError{Field: name + "." + te.Field, Reason: fmt.Sprintf("want %s, not %s", te.Type, te.Value)}
		}
		return nil, &sdk.ConfigError{Field: name, Reason: err.Error()}
	}
	if s.Syntax == nil {
		return nil, &sdk.ConfigError{Field: name + ".syntax", Reason: "required: email, uuid, number or pattern"}
	}
	syntax := *s.Syntax
	allowed, ok := fieldsOf[syntax]
	if !ok {
		return nil, &sdk.ConfigError{Field: name + ".syntax", Reason: fmt.Sprintf("unknown syntax %q: want email, uuid, number or pattern", syntax)}
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if f != "syntax" && !slices.Contains(allowed, f) {
			return nil, &sdk.ConfigError{Field: name + "." + f, Reason: "not a field of syntax " + syntax}
		}
	}

	switch syntax {
	case "email":
		domain := "example.test"
		if s.Domain != nil {
			domain = *s.Domain
		}
		if domain == "" || strings.ContainsAny(domain, "@ \t\r\n") {
			return nil, &sdk.ConfigError{Field: name + ".domain", Reason: fmt.Sprintf("%q is not a domain", domain)}
		}
		return func() string { return randomEmail(domain) }, nil
	case "uuid":
		return randomUUID, nil
	case "number":
		switch {
		case s.Min == nil:
			return nil, &sdk.ConfigError{Field: name + ".min", Reason: "required for syntax number"}
		case s.Max == nil:
			return nil, &sdk.ConfigError{Field: name + ".max", Reason: "required for syntax number"}
		case *s.Min > *s.Max:
			return nil, &sdk.ConfigError{Field: name + ".min", Reason: fmt.Sprintf("%d is greater than max %d", *s.Min, *s.Max)}
		}
		lo, hi := *s.Min, *s.Max
		return func() string { return randomNumber(lo, hi) }, nil
	default: // pattern
		if s.Pattern == nil {
			return nil, &sdk.ConfigError{Field: name + ".pattern", Reason: "required for syntax pattern"}
		}
		p := *s.Pattern
		if !strings.ContainsAny(p, "#?*") {
			return nil, &sdk.ConfigError{Field: name + ".pattern", Reason: "has no #, ? or *: every value would be the same"}
		}
		return func() string { return randomPattern(p) }, nil
	}
}

const (
	digits   = "0123456789"
	lower    = "abcdefghijklmnopqrstuvwxyz"
	alphanum = digits + lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// pick returns a random byte of set.
func pick(set string) byte {
	return set[rand.IntN(len(set))]
}

// randomEmail returns an address with a local part of ten lowercase letters and digits: 36^10
// of them, so that addresses do not repeat within a run, as sign-up forms require.
func randomEmail(domain string) string {
	var local [10]byte
	for i := range local {
		local[i] = pick(digits + lower)
	}
	return string(local[:]) + "@" + domain
}

// randomUUID returns a version 4 UUID (RFC 9562): random bits, but for the version and variant
// bits, which are set so that servers that parse the UUID accept it.
func randomUUID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10: RFC 9562
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// randomNumber returns an integer from lo to hi inclusive. The span is counted unsigned, so
// that even the whole of int64 does not overflow it.
func randomNumber(lo, hi int64) string {
	span := uint64(hi) - uint64(lo)
	var off uint64
	if span == math.MaxUint64 {
		off = rand.Uint64()
	} else {
		off = rand.Uint64N(span + 1)
	}
	return strconv.FormatInt(lo+int64(off), 10) // wraps back into [lo, hi]
}

// randomPattern fills in a pattern: # is a digit, ? a lowercase letter, * a letter or digit.
// Other bytes are copied, so the pattern may hold any UTF-8 text.
func randomPattern(p string) string {
	out := make([]byte, len(p))
	for i := range len(p) {
		switch p[i] {
		case '#':
			out[i] = pick(digits)
		case '?':
			out[i] = pick(lower)
		case '*':
			out[i] = pick(alphanum)
		default:
			out[i] = p[i]
		}
	}
	return string(out)
}
