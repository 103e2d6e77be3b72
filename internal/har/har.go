// Package har reads and writes HTTP Archives (HAR 1.2, what browsers export from their network
// panel and what `barrage record` writes) and turns one into a Barrage script: requests grouped
// into pages, static assets left out, think times from the pauses between pages, and the values
// that one response gave and a later request sent back (CSRF tokens, session and order ids)
// correlated into extractors and ${variables}. `barrage import har`, `barrage record` and the
// server's POST /v1/tests/import all convert with Convert, so the same visit makes the same
// script whichever way it came.
package har

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Document is a HAR file: {"log": {...}}.
type Document struct {
	Log *Log `json:"log"`
}

// Log is a HAR log: the pages of a visit and its exchanges, in the order they started.
type Log struct {
	Version string  `json:"version"`
	Creator Creator `json:"creator"`
	Pages   []Page  `json:"pages,omitempty"`
	Entries []Entry `json:"entries"`
}

// Creator names the program that wrote the log.
type Creator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Page is a page the browser loaded; entries name it by its ID in their pageref.
type Page struct {
	StartedDateTime string      `json:"startedDateTime"`
	ID              string      `json:"id"`
	Title           string      `json:"title"`
	PageTimings     PageTimings `json:"pageTimings"`
}

// PageTimings are a page's load events, in milliseconds from its start; unknown ones are absent.
type PageTimings struct {
	OnContentLoad *float64 `json:"onContentLoad,omitempty"`
	OnLoad        *float64 `json:"onLoad,omitempty"`
}

// Entry is one exchange: a request and its response.
type Entry struct {
	PageRef         string `json:"pageref,omitempty"`
	StartedDateTime string `json:"startedDateTime"`
	// Time is the whole exchange, in milliseconds.
	Time     float64  `json:"time"`
	Request  Request  `json:"request"`
	Response Response `json:"response"`
	Cache    struct{} `json:"cache"`
	Timings  Timings  `json:"timings"`
}

// Request is an entry's request.
type Request struct {
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []Cookie    `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	QueryString []NameValue `json:"queryString"`
	PostData    *PostData   `json:"postData,omitempty"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
}

// Response is an entry's response. Status 0 means none came (the request failed or was
// blocked).
type Response struct {
	Status      int         `json:"status"`
	StatusText  string      `json:"statusText"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []Cookie    `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	Content     Content     `json:"content"`
	RedirectURL string      `json:"redirectURL"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
}

// NameValue is a header or a query parameter.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Cookie is a cookie a request sent or a response set.
type Cookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Expires  string `json:"expires,omitempty"`
	HTTPOnly bool   `json:"httpOnly,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
}

// PostData is a request's body. Text is the body as sent; Params are a form's fields, which some
// browsers give instead of (or beside) the text.
type PostData struct {
	MimeType string  `json:"mimeType"`
	Params   []Param `json:"params,omitempty"`
	Text     string  `json:"text"`
	// Encoding is "base64" for a body that is not text, as Content's is. HAR 1.2 has no such
	// field for requests; the underscore marks it as this writer's own, as the format allows.
	Encoding string `json:"_encoding,omitempty"`
}

// Param is a field of a posted form.
type Param struct {
	Name        string `json:"name"`
	Value       string `json:"value,omitempty"`
	FileName    string `json:"fileName,omitempty"`
	ContentType string `json:"contentType,omitempty"`
}

// Content is a response's body, decoded from its Content-Encoding as the browser read it.
type Content struct {
	Size        int64  `json:"size"`
	Compression int64  `json:"compression,omitempty"`
	MimeType    string `json:"mimeType"`
	Text        string `json:"text,omitempty"`
	// Encoding is "base64" when Text holds the body in base64 (a body that is not text).
	Encoding string `json:"encoding,omitempty"`
}

// Timings are an exchange's phases in milliseconds; -1 for a phase that did not happen.
type Timings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	SSL     float64 `json:"ssl"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// TimeFormat is how HAR writes its dates: RFC 3339 with milliseconds or finer.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Decode reads a HAR document and checks what Convert relies on. A refused one is a
// *barrage.InvalidError naming every field at fault by its path, as log.entries[3].request.url.
func Decode(data []byte) (*Log, error) {
	var top struct {
		Log *struct {
			Version string            `json:"version"`
			Creator Creator           `json:"creator"`
			Pages   []json.RawMessage `json:"pages"`
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	if err := decodeStrict(data, &top, ""); err != nil {
		return nil, err
	}
	if top.Log == nil {
		return nil, barrage.Invalid("log", `required: a HAR document is {"log": {"entries": [...]}}`)
	}
	if top.Log.Entries == nil {
		return nil, barrage.Invalid("log.entries", "required: the exchanges of the visit")
	}
	l := &Log{Version: top.Log.Version, Creator: top.Log.Creator}
	var errs []barrage.FieldError
	for i, raw := range top.Log.Pages {
		var p Page
		path := fmt.Sprintf("log.pages[%d]", i)
		if err := decodeStrict(raw, &p, path); err != nil {
			errs = append(errs, fieldErrors(err)...)
			continue
		}
		errs = append(errs, p.check(path)...)
		l.Pages = append(l.Pages, p)
	}
	for i, raw := range top.Log.Entries {
		var e Entry
		path := fmt.Sprintf("log.entries[%d]", i)
		if err := decodeStrict(raw, &e, path); err != nil {
			errs = append(errs, fieldErrors(err)...)
			continue
		}
		errs = append(errs, e.check(path)...)
		l.Entries = append(l.Entries, e)
	}
	if len(errs) > 0 {
		if len(errs) > maxErrors {
			errs = append(errs[:maxErrors], barrage.FieldError{Field: "log", Reason: fmt.Sprintf("and %d more errors", len(errs)-maxErrors)})
		}
		return nil, &barrage.InvalidError{Fields: errs}
	}
	return l, nil
}

// maxErrors bounds the errors one refused document reports: a log of thousands of broken
// entries says what is wrong with the first ones.
const maxErrors = 20

// decodeStrict decodes one JSON value into v, naming a value of the wrong type by its path
// below prefix.
func decodeStrict(data []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(v)
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		field := ute.Field
		if prefix != "" {
			field = strings.TrimSuffix(prefix+"."+field, ".")
		}
		field = or(field, "body")
		return barrage.Invalid(field, "must be "+article(jsonKind(ute.Type.Kind().String()))+", not "+ute.Value)
	case errors.As(err, &se):
		return barrage.Invalid(or(prefix, "body"), fmt.Sprintf("is not valid JSON (at byte %d: %s)", se.Offset, se.Error()))
	case err != nil:
		return barrage.Invalid(or(prefix, "body"), "is not valid JSON: "+err.Error())
	}
	if prefix == "" {
		if _, err := dec.Token(); err == nil {
			return barrage.Invalid("body", "holds more than one JSON document")
		}
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jsonKind names a Go kind as JSON calls it.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "int", "int64", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "slice":
		return "array"
	}
	return "object"
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

func fieldErrors(err error) []barrage.FieldError {
	var inv *barrage.InvalidError
	if errors.As(err, &inv) {
		return inv.Fields
	}
	return []barrage.FieldError{{Field: "log", Reason: err.Error()}}
}

func (p *Page) check(path string) []barrage.FieldError {
	var errs []barrage.FieldError
	if p.ID == "" {
		errs = append(errs, barrage.FieldError{Field: path + ".id", Reason: "required: entries name their page by it"})
	}
	if _, err := parseTime(p.StartedDateTime); p.StartedDateTime != "" && err != nil {
		errs = append(errs, barrage.FieldError{Field: path + ".startedDateTime", Reason: err.Error()})
	}
	return errs
}

func (e *Entry) check(path string) []barrage.FieldError {
	var errs []barrage.FieldError
	add := func(field, reason string) {
		errs = append(errs, barrage.FieldError{Field: path + "." + field, Reason: reason})
	}
	if _, err := parseTime(e.StartedDateTime); err != nil {
		add("startedDateTime", err.Error())
	}
	if e.Time < 0 {
		add("time", "must not be negative")
	}
	if e.Request.Method == "" || strings.ContainsAny(e.Request.Method, " \t\r\n/") {
		add("request.method", "must be an HTTP method such as GET or POST")
	}
	u, err := url.Parse(e.Request.URL)
	if err != nil || !u.IsAbs() {
		add("request.url", "must be an absolute URL such as https://shop.example/cart")
	}
	if st := e.Response.Status; st != 0 && (st < 100 || st > 599) {
		add("response.status", "must be an HTTP status from 100 to 599, or 0 for no response")
	}
	if pd := e.Request.PostData; pd != nil && pd.Encoding != "" {
		if _, err := decodeText(pd.Text, pd.Encoding); err != nil {
			add("request.postData.text", err.Error())
		}
	}
	if c := e.Response.Content; c.Encoding != "" {
		if _, err := decodeText(c.Text, c.Encoding); err != nil {
			add("response.content.text", err.Error())
		}
	}
	return errs
}

// parseTime reads a HAR date: RFC 3339, with or without fractions of a second.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, errors.New("must be a date and time such as 2024-05-01T10:00:00.000Z")
	}
	return t, nil
}

// decodeText is a body's bytes from its text and encoding ("" or "base64").
func decodeText(text, encoding string) ([]byte, error) {
	switch encoding {
	case "":
		return []byte(text), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, errors.New("is not valid base64, as its encoding says")
		}
		return b, nil
	}
	return nil, fmt.Errorf("has an encoding %q: only base64 is known", encoding)
}

// BodyText is a body as HAR keeps it: text as it is, anything else in base64 with its encoding.
func BodyText(b []byte) (text, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// Encode writes l as a HAR document, indented for people.
func Encode(l *Log) ([]byte, error) {
	b, err := json.MarshalIndent(Document{Log: l}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode HAR: %w", err)
	}
	return append(b, '\n'), nil
}
