package summary_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/summary"
)

// fill sets every field that v reaches to a value that is not its zero: a slice or a map gets
// one element, a pointer a value, so that a field added to the document is covered at once.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 8 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if depth > 8 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.25)
	}
}

// The summary the server stores is the summary the API serves: every field of it survives a
// trip through api.RunSummary, the type clients read it as.
func TestTheAPIsRunSummaryCarriesTheWholeDocument(t *testing.T) {
	var doc summary.Document
	fill(reflect.ValueOf(&doc).Elem(), 0)
	stored, err := json.Marshal(doc)
	require.NoError(t, err)

	var served api.RunSummary
	require.NoError(t, json.Unmarshal(stored, &served))
	again, err := json.Marshal(served)
	require.NoError(t, err)
	require.JSONEq(t, string(stored), string(again))
}
