package main

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// readmeConfig is the config of the README's example, as the host hands it over.
const readmeConfig = `{
  "email": { "syntax": "email", "domain": "shop.test" },
  "id": { "syntax": "uuid" },
  "qty": { "syntax": "number", "min": 1, "max": 5 },
  "order": { "syntax": "pattern", "pattern": "ORD-####-??" }
}`

// configure starts the plugin in-process and configures it.
func configure(t *testing.T, config string) sdk.SessionElement {
	t.Helper()
	e := sdktest.Start(t, newPlugin()).Element()
	_, err := e.Configure(context.Background(), []byte(config))
	require.NoError(t, err)
	return e
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	info, err := sdktest.Start(t, newPlugin()).Describe(context.Background())
	require.NoError(t, err)
	require.Equal(t, "random-data", info.Name)
	require.Equal(t, "1.0.0", info.Version)
	require.Equal(t, sdk.ScopeIteration, info.Scope)
	require.Equal(t, []sdk.Kind{sdk.KindSessionElement}, info.Kinds)
	require.JSONEq(t, configSchema, info.ConfigSchema)
}

func TestConfigureReturnsTheVariablesSorted(t *testing.T) {
	t.Parallel()
	e := sdktest.Start(t, newPlugin()).Element()
	vars, err := e.Configure(context.Background(), []byte(readmeConfig))
	require.NoError(t, err)
	require.Equal(t, []string{"email", "id", "order", "qty"}, vars)
}

func TestEachSyntaxMakesValuesOfItsShape(t *testing.T) {
	t.Parallel()
	e := configure(t, `{
		"email": { "syntax": "email" },
		"shop_email": { "syntax": "email", "domain": "shop.test" },
		"id": { "syntax": "uuid" },
		"qty": { "syntax": "number", "min": -3, "max": 3 },
		"seven": { "syntax": "number", "min": 7, "max": 7 },
		"any": { "syntax": "number", "min": -9223372036854775808, "max": 9223372036854775807 },
		"order": { "syntax": "pattern", "pattern": "ORD-####-??/*é" }
	}`)
	shapes := map[string]*regexp.Regexp{
		"email":      regexp.MustCompile(`^[a-z0-9]{10}@example\.test$`),
		"shop_email": regexp.MustCompile(`^[a-z0-9]{10}@shop\.test$`),
		"id":         regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
		"qty":        regexp.MustCompile(`^-?[0-3]$`),
		"seven":      regexp.MustCompile(`^7$`),
		"any":        regexp.MustCompile(`^-?[0-9]+$`),
		"order":      regexp.MustCompile(`^ORD-[0-9]{4}-[a-z]{2}/[A-Za-z0-9]é$`),
	}

	sets, err := e.Next(context.Background(), 500)
	require.NoError(t, err)
	require.Len(t, sets, 500)
	seen := map[string]map[string]bool{}
	for _, set := range sets {
		require.Len(t, set, len(shapes))
		for name, shape := range shapes {
			require.Regexp(t, shape, set[name], name)
			if seen[name] == nil {
				seen[name] = map[string]bool{}
			}
			seen[name][set[name]] = true
		}
		qty, err := strconv.Atoi(set["qty"])
		require.NoError(t, err)
		require.True(t, qty >= -3 && qty <= 3, "qty %d out of range", qty)
		_, err = strconv.ParseInt(set["any"], 10, 64)
		require.NoError(t, err)

		// An independent parser agrees that the UUID is a version 4, RFC 9562 one.
		id, err := uuid.Parse(set["id"])
		require.NoError(t, err)
		require.Equal(t, uuid.Version(4), id.Version())
		require.Equal(t, uuid.RFC4122, id.Variant())
	}

	// Values differ from set to set: UUIDs and emails never repeat in 500 draws, and a range
	// of seven numbers shows every one of them.
	require.Len(t, seen["id"], 500)
	require.Len(t, seen["email"], 500)
	require.Len(t, seen["qty"], 7)
	require.Len(t, seen["seven"], 1)
	require.Greater(t, len(seen["order"]), 400)
}

func TestNextIsNeverExhausted(t *testing.T) {
	t.Parallel()
	e := configure(t, `{"id": {"syntax": "uuid"}}`)
	seen := map[string]bool{}
	for range 20 {
		sets, err := e.Next(context.Background(), 50)
		require.NoError(t, err)
		require.Len(t, sets, 50)
		for _, s := range sets {
			seen[s["id"]] = true
		}
	}
	require.Len(t, seen, 1000)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, field, reason string
	}{
		{"unknown syntax", `{"email": {"syntax": "phone"}}`, "email.syntax", `unknown syntax "phone"`},
		{"missing syntax", `{"email": {"domain": "x.test"}}`, "email.syntax", "required"},
		{"syntax not a string", `{"email": {"syntax": 3}}`, "email.syntax", "want string"},
		{"min above max", `{"n": {"syntax": "number", "min": 5, "max": 4}}`, "n.min", "greater than max"},
		{"missing max", `{"n": {"syntax": "number", "min": 5}}`, "n.max", "required"},
		{"fraction", `{"n": {"syntax": "number", "min": 0.5, "max": 4}}`, "n.min", "want int64"},
		{"missing pattern", `{"code": {"syntax": "pattern"}}`, "code.pattern", "required"},
		{"pattern without placeholder", `{"code": {"syntax": "pattern", "pattern": "ABC"}}`, "code.pattern", "every value would be the same"},
		{"field of another syntax", `{"id": {"syntax": "uuid", "domain": "x.test"}}`, "id.domain", "not a field of syntax uuid"},
		{"bad domain", `{"email": {"syntax": "email", "domain": "a@b"}}`, "email.domain", "not a domain"},
		{"bad variable name", `{"2fa": {"syntax": "uuid"}}`, "2fa", "not a variable name"},
		{"variable not an object", `{"id": "uuid"}`, "id", "want an object"},
		{"no variables", `{}`, "", "no variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := sdktest.Start(t, newPlugin()).Element().Configure(context.Background(), []byte(tt.config))
			sdktest.RequireConfigError(t, err, tt.field, tt.reason)
		})
	}
}

func TestNumberCoversTheWholeRangeWithoutOverflow(t *testing.T) {
	t.Parallel()
	lo, hi := int64(math.MaxInt64-2), int64(math.MaxInt64)
	seen := map[int64]bool{}
	for range 300 {
		n, err := strconv.ParseInt(randomNumber(lo, hi), 10, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, lo)
		seen[n] = true
	}
	require.Len(t, seen, 3)
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	valid := sdktest.ValidConfig(t, &sdk.Plugin{Name: "random-data", ConfigSchema: configSchema})
	require.NoError(t, valid(readmeConfig))
	for _, bad := range []string{
		`{}`,
		`{"email": {"syntax": "phone"}}`,
		`{"code": {"syntax": "pattern"}}`,
		`{"n": {"syntax": "number", "min": 1}}`,
		`{"n": {"syntax": "number", "min": 1.5, "max": 2}}`,
		`{"id": {"syntax": "uuid", "domain": "x.test"}}`,
		`{"2fa": {"syntax": "uuid"}}`,
	} {
		require.Error(t, valid(bad), bad)
	}
}
