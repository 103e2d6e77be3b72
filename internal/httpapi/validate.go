package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

func init() {
	// The spec's ids are UUIDs of any version (the server makes version 7); kin-openapi checks
	// no uuid format unless told.
	openapi3.DefineStringFormatValidator("uuid", openapi3.NewCallbackValidator(func(s string) error {
		if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
			return errors.New("must be a UUID, as 0193a5e4-7b3c-7d1e-9f00-2a4b6c8d0e1f")
		}
		return nil
	}))
	// kin-openapi checks the byte format (base64) with a regular expression whose backtracking
	// cost an agent's report, whose snapshot is several KB of it, a third of the server's time
	// for the report (bench-ingest's profile): the same rule, read at byte speed.
	openapi3.DefineStringFormatValidator("byte", openapi3.NewCallbackValidator(checkBase64))
}

// checkBase64 accepts what openapi3.FormatOfStringByte does: base64 of either alphabet, padding
// only at the end.
func checkBase64(s string) error {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_') {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return errors.New("must be base64")
		}
	}
	return nil
}

// loadSpec parses and validates the embedded OpenAPI document.
//
// The document is loaded once in a process and only read after: every server of the process
// (tests make many) shares it.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is invalid: %w", err)
	}
	return doc, nil
})

// validator checks each request against its operation in the spec before a handler sees it:
// parameters, content type, and the body's schema (unknown fields included, as request schemas
// forbid additional properties).
type validator struct {
	log     *slog.Logger
	doc     *openapi3.T
	opts    *openapi3filter.Options
	reasons reasons
}

func newValidator(log *slog.Logger, doc *openapi3.T) *validator {
	return &validator{log: log, doc: doc, reasons: patternReasons(doc), opts: &openapi3filter.Options{
		MultiError:         true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // authorize has run already
	}}
}

// reasons are the plain reasons for the spec's shared patterns (its x-patterns), by pattern:
// "must not hold control characters" says more than the regular expression.
type reasons map[string]string

func patternReasons(doc *openapi3.T) reasons {
	out := reasons{}
	patterns, _ := doc.Extensions["x-patterns"].(map[string]any)
	for _, p := range patterns {
		p, _ := p.(map[string]any)
		pattern, _ := p["pattern"].(string)
		reason, _ := p["reason"].(string)
		if pattern != "" && reason != "" {
			out[pattern] = reason
		}
	}
	return out
}

// xProblem reads the field (below the schema's own path) and the reason a schema's x-problem
// gives for a rule over several fields (said with not, anyOf or oneOf), which the validator
// reports without a reason of any use.
func xProblem(s *openapi3.Schema) (field, reason string) {
	if s == nil {
		return "", ""
	}
	x, _ := s.Extensions["x-problem"].(map[string]any)
	field, _ = x["field"].(string)
	reason, _ = x["reason"].(string)
	return field, reason
}

func (v *validator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx := chi.RouteContext(r.Context())
		pattern := rctx.RoutePattern()
		item := v.doc.Paths.Value(pattern)
		var op *openapi3.Operation
		if item != nil {
			op = item.GetOperation(r.Method)
		}
		if op == nil {
			// The router and the spec disagree; a test keeps them equal.
			writeError(v.log, w, r, fmt.Errorf("route %s %s is not in the spec", r.Method, pattern))
			return
		}
		params, p := pathParams(r, rctx)
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		// Credentials were checked by authorize already. kin-openapi reads the whole body into
		// memory to check an operation's security requirements, whatever it is told of the body:
		// that read took a plugin upload whole (two of 120 MB raised serve's memory by 450 MiB)
		// before any of its checks. The operation is checked without them.
		unsecured := *op
		unsecured.Security = &openapi3.SecurityRequirements{}
		in := &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      &routers.Route{Spec: v.doc, Path: pattern, PathItem: item, Method: r.Method, Operation: &unsecured},
			Options:    v.opts,
		}
		if streamed(op) {
			// A multipart upload is streamed to storage: the handler checks its parts as they
			// come, the manifest against its schema. Only its content type is checked here, and
			// nothing of the body is read.
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
				writeProblem(w, r, problem{Type: typeMalformed, Status: http.StatusUnsupportedMediaType,
					Detail: "Send the body as multipart/form-data."})
				return
			}
			opts := *v.opts
			opts.ExcludeRequestBody = true
			in.Options = &opts
			if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
				writeProblem(w, r, v.reasons.validationProblem(err))
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		switch {
		case bodyIs(op, "TestDraft"):
			// A session to check, which the parser alone judges whatever it holds (not JSON, more
			// values than a script may hold): the answer says what it found.
			if p := v.unreadBody(r, in, op.RequestBody.Value); p != nil {
				writeProblem(w, r, *p)
				return
			}
		case bodyIs(op, "TestSource"):
			// A script, which its parser checks, naming each error with its line: not decoded
			// here first, and refused unread when it holds more than a script may (what decoding
			// costs is what it holds: a megabyte of "1," is a hundred).
			if p := v.unreadBody(r, in, op.RequestBody.Value); p != nil {
				writeProblem(w, r, *p)
				return
			}
			if n := script.CountValues(rawBody(r.Context())); n > script.MaxValues {
				reason := fmt.Sprintf("holds up to %d values (lines, list items, members), more than the %d a script may", n, script.MaxValues)
				writeProblem(w, r, problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusUnprocessableEntity,
					Detail: "body: " + reason, Errors: []barrage.FieldError{{Field: "body", Reason: reason}}})
				return
			}
			fallthrough
		default:
			if p := strictJSON(r, op); p != nil {
				writeProblem(w, r, *p)
				return
			}
		}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			writeProblem(w, r, v.reasons.validationProblem(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathParams are the route's path parameters as the handlers bind them: chi matches on the
// escaped path when there is one (a version's "+" sent as %2B), and the generated code
// unescapes each value then, so the spec's patterns are checked against the unescaped values.
func pathParams(r *http.Request, rctx *chi.Context) (map[string]string, *problem) {
	params := make(map[string]string, len(rctx.URLParams.Keys))
	for i, k := range rctx.URLParams.Keys {
		v := rctx.URLParams.Values[i]
		if r.URL.RawPath != "" {
			u, err := url.PathUnescape(v)
			if err != nil {
				reason := "is not a valid percent-encoded path segment"
				return nil, &problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusBadRequest,
					Detail: k + ": " + reason, Errors: []barrage.FieldError{{Field: k, Reason: reason}}}
			}
			v = u
		}
		params[k] = v
	}
	return params, nil
}

// bodyIs reports whether op's body, in one of its media types, is the spec's schema of that
// name: a script (TestSource) or a session to check (TestDraft), in JSON or YAML.
func bodyIs(op *openapi3.Operation, schema string) bool {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return false
	}
	for _, mt := range op.RequestBody.Value.Content {
		if mt.Schema != nil && mt.Schema.Ref == "#/components/schemas/"+schema {
			return true
		}
	}
	return false
}

// unreadBody checks of a body that the validator is not to read (a script, which its parser
// reads, naming each error with its line) what the validator would check before reading it:
// that it is there when the operation needs one (400), in a media type the operation takes
// (415). It tells the validator to leave the body alone.
func (v *validator) unreadBody(r *http.Request, in *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody) *problem {
	opts := *in.Options
	opts.ExcludeRequestBody = true
	in.Options = &opts
	var err error
	switch ct := r.Header.Get("Content-Type"); {
	case len(rawBody(r.Context())) == 0 && rb.Required:
		err = &openapi3filter.RequestError{Input: in, RequestBody: rb, Err: openapi3filter.ErrInvalidRequired}
	case rb.Content.Get(ct) == nil:
		err = &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: fmt.Sprintf("header Content-Type has unexpected value: %q", ct)}
	default:
		return nil
	}
	p := v.reasons.validationProblem(err)
	return &p
}

// streamed reports whether op takes a multipart body, which is streamed, not validated whole.
func streamed(op *openapi3.Operation) bool {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return false
	}
	_, ok := op.RequestBody.Value.Content["multipart/form-data"]
	return ok
}

// strictJSON refuses a JSON request body that the validator and the handlers would take
// loosely: a second document or anything but white space after the first (they decode the
// first and would take the request for it: {"vus":1}{"vus":1000} was a run of 1 VU), text
// that is not UTF-8 (decoding replaces it silently), and null where the contract has no null
// (the validator takes it as absent, and the default for it). It reads the body (within the
// size limit) and leaves it to be read again, with the error it met, if any.
func strictJSON(r *http.Request, op *openapi3.Operation) *problem {
	if r.Body == nil || r.Body == http.NoBody || !strings.Contains(r.Header.Get("Content-Type"), "json") {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		return nil // the validator meets the error, and says it
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	dec := json.NewDecoder(bytes.NewReader(b))
	var doc json.RawMessage
	if dec.Decode(&doc) != nil {
		return nil // not JSON at all: the validator says so
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &problem{Type: typeMalformed, Status: http.StatusBadRequest,
			Detail: "The request body holds more than one JSON document: send one."}
	}
	if !utf8.Valid(b) {
		return &problem{Type: typeMalformed, Status: http.StatusBadRequest,
			Detail: "The request body is not valid UTF-8: JSON text is UTF-8."}
	}
	// The document is walked for nulls only when it may hold one: most bodies (an agent's
	// report each second among them) are not decoded a third time for nothing.
	if op.RequestBody == nil || op.RequestBody.Value == nil || !bytes.Contains(doc, []byte("null")) {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	var tree any
	if json.Unmarshal(doc, &tree) != nil {
		return nil // decoded once already: cannot fail
	}
	if errs := nulls(tree, mt.Schema.Value, ""); len(errs) > 0 {
		return &problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusUnprocessableEntity,
			Detail: fmt.Sprintf("%d problems with the request", len(errs)), Errors: errs}
	}
	return nil
}

// nulls lists the nulls in v, at path, where its schema s has none.
func nulls(v any, s *openapi3.Schema, path string) []barrage.FieldError {
	if s == nil {
		return nil
	}
	var out []barrage.FieldError
	switch v := v.(type) {
	case nil:
		if !admitsNull(s) {
			out = append(out, barrage.FieldError{Field: cmp.Or(path, "body"), Reason: "must not be null"})
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub := propertySchema(s, k)
			out = append(out, nulls(v[k], sub, joinPath(path, k))...)
		}
	case []any:
		if s.Items != nil {
			for i, e := range v {
				out = append(out, nulls(e, s.Items.Value, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

// admitsNull reports whether s admits null, itself or through the schemas it is made of.
func admitsNull(s *openapi3.Schema) bool {
	if s.Nullable {
		return true
	}
	for _, set := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range set {
			if r.Value != nil && r.Value.Nullable {
				return true
			}
		}
	}
	return false
}

// propertySchema is the schema of s's property k (through allOf), or of its additional
// properties; nil when s says nothing of it (the validator refuses unknown properties).
func propertySchema(s *openapi3.Schema, k string) *openapi3.Schema {
	if p := s.Properties[k]; p != nil {
		return p.Value
	}
	for _, r := range s.AllOf {
		if r.Value != nil {
			if p := propertySchema(r.Value, k); p != nil {
				return p
			}
		}
	}
	if ap := s.AdditionalProperties.Schema; ap != nil {
		return ap.Value
	}
	return nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// errReader is a reader that fails with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// validationProblem turns the validator's errors into one problem naming every field refused.
// A body that is not JSON is 400; a missing or unsupported content type is 415; a body that is
// JSON but breaks the schema is 422; a bad parameter is 400.
func (rs reasons) validationProblem(err error) problem {
	p := problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusUnprocessableEntity}
	var errs []error
	var me openapi3.MultiError
	if errors.As(err, &me) {
		errs = me
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var re *openapi3filter.RequestError
		if !errors.As(e, &re) {
			p.Errors = append(p.Errors, barrage.FieldError{Field: "", Reason: e.Error()})
			continue
		}
		switch {
		case re.Parameter != nil:
			p.Status = http.StatusBadRequest
			p.Errors = append(p.Errors, barrage.FieldError{Field: re.Parameter.Name, Reason: rs.reasonOf(re)})
		case re.RequestBody != nil:
			var pe *openapi3filter.ParseError
			switch {
			case errors.As(re.Err, &pe):
				return problem{Type: typeMalformed, Title: "Malformed request body", Status: http.StatusBadRequest,
					Detail: "The request body is not valid JSON."}
			case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
				return problem{Type: typeMalformed, Title: "Missing request body", Status: http.StatusBadRequest,
					Detail: "This operation needs a request body: " + mediaTypes(re) + "."}
			case re.Err == nil && strings.HasPrefix(re.Reason, "header Content-Type"):
				return problem{Type: typeMalformed, Status: http.StatusUnsupportedMediaType,
					Detail: "Send the body as " + mediaTypes(re) + "."}
			}
			p.Errors = append(p.Errors, rs.bodyErrors(re)...)
		default:
			p.Errors = append(p.Errors, barrage.FieldError{Reason: rs.reasonOf(re)})
		}
	}
	if len(p.Errors) == 1 {
		p.Detail = fmt.Sprintf("%s: %s", fieldOrBody(p.Errors[0].Field), p.Errors[0].Reason)
	} else {
		p.Detail = fmt.Sprintf("%d problems with the request", len(p.Errors))
	}
	return p
}

func fieldOrBody(f string) string {
	if f == "" {
		return "body"
	}
	return f
}

// mediaTypes names the content types the operation's body may come as.
func mediaTypes(re *openapi3filter.RequestError) string {
	return strings.Join(slices.Sorted(maps.Keys(re.RequestBody.Content)), " or ")
}

// bodyErrors lists the schema errors of a request body, each with its JSON path.
func (rs reasons) bodyErrors(re *openapi3filter.RequestError) []barrage.FieldError {
	if re.Err == nil {
		return []barrage.FieldError{{Reason: re.Reason}}
	}
	return rs.schemaErrors(re.Err, "")
}

// schemaErrors lists the schema errors in err, each named by its JSON path below root.
func (rs reasons) schemaErrors(err error, root string) []barrage.FieldError {
	var me openapi3.MultiError
	var se *openapi3.SchemaError
	switch {
	case errors.As(err, &me):
		var out []barrage.FieldError
		for _, e := range me {
			out = append(out, rs.schemaErrors(e, root)...)
		}
		return out
	case errors.As(err, &se):
		field := jsonPath(se)
		reason := rs.schemaReason(se)
		if se.SchemaField == "not" || se.SchemaField == "anyOf" || se.SchemaField == "oneOf" {
			if f, r := xProblem(se.Schema); r != "" {
				reason = r
				if f != "" {
					field = joinPath(field, f)
				}
			}
		}
		if root != "" {
			field = strings.TrimSuffix(root+"."+field, ".")
		}
		return []barrage.FieldError{{Field: field, Reason: reason}}
	}
	return []barrage.FieldError{{Field: root, Reason: err.Error()}}
}

// jsonPath renders a schema error's location as a.b[0].c; an unknown property is named itself.
func jsonPath(se *openapi3.SchemaError) string {
	var b strings.Builder
	for _, part := range se.JSONPointer() {
		if isIndex(part) {
			b.WriteString("[" + part + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	if name, ok := unknownProperty(se); ok {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
	}
	return b.String()
}

// unknownProperty reports the name of a property that additionalProperties: false refused.
// The validator puts the parent's path in the pointer and the name only in the reason.
func unknownProperty(se *openapi3.SchemaError) (string, bool) {
	if se.SchemaField != "properties" {
		return "", false
	}
	rest, ok := strings.CutPrefix(se.Reason, "property \"")
	if !ok || !strings.HasSuffix(rest, "\" is unsupported") {
		return "", false
	}
	return strings.TrimSuffix(rest, "\" is unsupported"), true
}

func (rs reasons) schemaReason(se *openapi3.SchemaError) string {
	if _, ok := unknownProperty(se); ok {
		return "unknown field"
	}
	switch se.SchemaField {
	case "required":
		return "required"
	case "pattern":
		if se.Schema != nil && rs[se.Schema.Pattern] != "" {
			return rs[se.Schema.Pattern]
		}
	}
	return plainNumbers(se.Reason)
}

// sciNumber is a number in the exponent form kin-openapi writes limits in (1e+06).
var sciNumber = regexp.MustCompile(`\b\d+(\.\d+)?e[+-]?\d+\b`)

// plainNumbers writes the whole numbers of reason without exponents: "at most 1000000", not
// "at most 1e+06".
func plainNumbers(reason string) string {
	return sciNumber.ReplaceAllStringFunc(reason, func(s string) string {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return s
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	})
}

// isIndex reports whether a path part is an array index: digits only.
func isIndex(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func (rs reasons) reasonOf(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return rs.schemaReason(se)
	}
	if re.Err != nil {
		return re.Err.Error()
	}
	return re.Reason
}
