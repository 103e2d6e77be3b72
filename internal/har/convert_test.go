package har_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/har"
	"github.com/barrage-load/barrage/internal/script"
)

func readHAR(t *testing.T, name string) *har.Log {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	l, err := har.Decode(data)
	require.NoError(t, err)
	return l
}

// convert converts l and checks the script as `barrage run` would read it, and that each
// correlation's extractor, applied to the recorded response, gives the recorded value.
func convert(t *testing.T, l *har.Log, opts har.Options) (*har.Result, *script.Script) {
	t.Helper()
	res, err := har.Convert(l, opts)
	require.NoError(t, err)
	files := map[string][]byte{}
	if opts.Data != nil {
		var b bytes.Buffer
		b.WriteString(strings.Join(opts.Data.Columns, ",") + "\n")
		for _, row := range opts.Data.Rows {
			b.WriteString(strings.Join(row, ",") + "\n")
		}
		files[opts.Data.Path] = b.Bytes()
	}
	s, err := script.LoadBundle(res.Script, files)
	require.NoError(t, err, "%s", res.Script)
	for _, c := range res.Correlations {
		requireExtracts(t, l, c)
	}
	return res, s
}

// requireExtracts applies a correlation's extractor to its source's recorded response, as the
// engine would, and requires the recorded value.
func requireExtracts(t *testing.T, l *har.Log, c har.Correlation) {
	t.Helper()
	method, path, _ := strings.Cut(c.Request, " ")
	// A request whose path was correlated is named by its template: a variable stands for a
	// segment's recorded text.
	re := regexp.MustCompile("^" + regexp.MustCompile(`\\\$\\\{[^}]*\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
	var e *har.Entry
	for i := range l.Entries {
		u, err := url.Parse(l.Entries[i].Request.URL)
		require.NoError(t, err)
		if l.Entries[i].Request.Method == method && (re.MatchString(u.EscapedPath()) || re.MatchString(u.Host+u.EscapedPath())) {
			e = &l.Entries[i]
		}
	}
	require.NotNil(t, e, "the request %s", c.Request)
	var got string
	switch c.Kind {
	case har.ExtractJSON:
		var doc any
		dec := json.NewDecoder(strings.NewReader(e.Response.Content.Text))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&doc))
		jp, err := script.ParseJSONPath(c.Expr)
		require.NoError(t, err)
		got, _ = jp.FindString(doc)
	case har.ExtractRegex:
		m := regexp.MustCompile(c.Expr).FindStringSubmatch(e.Response.Content.Text)
		require.Len(t, m, 2, c.Expr)
		got = m[1]
	case har.ExtractHeader:
		h := http.Header{}
		for _, nv := range e.Response.Headers {
			h.Add(nv.Name, nv.Value)
		}
		got = h.Get(c.Expr)
	case har.ExtractCookie:
		for _, nv := range e.Response.Headers {
			if ck, err := http.ParseSetCookie(nv.Value); strings.EqualFold(nv.Name, "Set-Cookie") && err == nil && ck.Name == c.Expr {
				got = ck.Value
			}
		}
	}
	require.Equal(t, c.Value, got, "%s %s on %s", c.Kind, c.Expr, c.Request)
}

// requestNamed finds a request of a parsed script by name.
func requestNamed(t *testing.T, s *script.Script, name string) *script.Request {
	t.Helper()
	for _, g := range s.Session.Groups {
		for _, r := range g.Requests {
			if r.Name == name {
				return r
			}
		}
	}
	require.Fail(t, "no request "+name)
	return nil
}

// scriptYAML reads the converted script as a tree, to look at it as written.
func scriptYAML(t *testing.T, src []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(src, &m))
	return m
}

func groupsOf(t *testing.T, src []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, g := range scriptYAML(t, src)["session"].(map[string]any)["groups"].([]any) {
		out = append(out, g.(map[string]any))
	}
	return out
}

// A browser's export of a visit to the demo shop: pages become groups named after their titles,
// the favicon and a blocked request are left out, the pauses between pages are think times, the
// browser's own headers are gone, and the CSRF token, the product and the cart are carried from
// the responses that gave them into the requests that sent them.
func TestConvertsABrowserExportOfTheShop(t *testing.T) {
	t.Parallel()
	l := readHAR(t, "shop-chrome.har")
	res, s := convert(t, l, har.Options{})

	require.Equal(t, 6, res.Requests)
	require.Equal(t, 4, res.Groups)
	require.Equal(t, 1, res.AssetsLeftOut)
	require.Equal(t, 1, res.Skipped)
	var names, thinks []string
	for _, g := range groupsOf(t, res.Script) {
		names = append(names, g["name"].(string))
		thinks = append(thinks, fmt.Sprint(g["think"]))
	}
	require.Equal(t, []string{"Demo shop", "POST /login", "Products", "Checkout"}, names, "titles, and the first request where the title is a URL")
	require.Equal(t, []string{"2.6s", "1.2s", "1.6s", "<nil>"}, thinks, "the pauses between pages, none after the last")

	require.Equal(t, "${target}", s.BaseURL.String())
	require.Equal(t, har.TargetEnv, s.Variables.Env[0].From)
	require.Equal(t, "http://127.0.0.1:8081", s.Variables.Env[0].Default)
	require.True(t, s.Session.Cookies)
	src := string(res.Script)
	for _, gone := range []string{"Host:", "Connection:", "Cookie:", "Accept-Encoding", "Sec-Fetch", "Sec-Ch", "sec-ch", "Upgrade-Insecure-Requests", "Cache-Control", "Content-Length", "Content-Type:", "favicon", "ads.example"} {
		require.NotContains(t, src, gone)
	}
	require.Contains(t, src, "    User-Agent: Mozilla/5.0", "a header every request sends alike is the session's")
	require.Contains(t, src, "Referer: ${target}/account", "Referer and Origin follow the target")

	corr := map[string]har.Correlation{}
	for _, c := range res.Correlations {
		corr[c.Var] = c
	}
	require.Len(t, corr, 3)
	require.Equal(t, har.Correlation{Var: "csrf", Value: "5f0c2a9e8b7d6c41", Request: "GET /", Seen: `body, <input name="csrf">`, Kind: har.ExtractRegex,
		Expr: `name="csrf" value="([^"]+)"`, Uses: []har.Use{{Request: "POST /login", Where: "form field csrf"}}}, corr["csrf"])
	require.Equal(t, "$.items[0].id", corr["product"].Expr)
	require.Equal(t, "$.id", corr["cart"].Expr, "a short id is correlated when a JSON member gave it whole")
	require.Equal(t, []har.Use{{Request: "POST /api/orders", Where: "JSON $.cart"}}, corr["cart"].Uses)
	require.Contains(t, src, "# csrf: \"5f0c2a9e8b7d6c41\" came in this response (body, <input name=\"csrf\">)\n            # and went out in POST /login (form field csrf)\n")
	require.Contains(t, src, "form:\n              csrf: ${csrf}\n")
	require.Contains(t, src, "cart: ${cart}")

	var typed []string
	for _, p := range res.Parameters {
		typed = append(typed, p.Where+"="+p.Value)
	}
	require.Equal(t, []string{"form field email=ada@example.test", "form field password=lovelace-1815", "query q=coffee", "JSON $.payment.card=4242424242424242"}, typed)
	require.Contains(t, src, "#   POST /login, form field password: \"lovelace-1815\"\n")

	login := requestNamed(t, s, "POST /login")
	require.Equal(t, script.AssertStatus, login.Assert[0].Kind)
	require.Equal(t, 0, login.Redirects, "the 303 is the answer, as recorded; the next request follows it")
}

// A data file of users replaces what the recording typed in, wherever it was sent whole: the row
// that holds most of the recorded values gives the columns.
func TestADataFileReplacesTheValuesTypedIn(t *testing.T) {
	t.Parallel()
	users, err := har.ReadDataFile("users.csv", []byte("email,password,card\ngrace@example.test,hopper-1906,4000\nada@example.test,lovelace-1815,4242424242424242\n"))
	require.NoError(t, err)
	res, s := convert(t, readHAR(t, "shop-chrome.har"), har.Options{Data: users})
	require.Equal(t, []string{"users.csv"}, s.Files())
	var cols []string
	for _, p := range res.DataBound {
		cols = append(cols, p.Column)
	}
	require.Equal(t, []string{"email", "password", "card"}, cols)
	require.Len(t, res.Parameters, 1, "the query stays as it was: %v", res.Parameters)
	src := string(res.Script)
	require.Contains(t, src, "email: ${email}")
	require.Contains(t, src, "password: ${password}")
	require.Contains(t, src, "card: ${card}")

	// A file that holds none of them is not read, and the conversion says so.
	others, err := har.ReadDataFile("users.csv", []byte("email,password\nbob@example.test,secret-1\n"))
	require.NoError(t, err)
	res, s = convert(t, readHAR(t, "shop-chrome.har"), har.Options{Data: others})
	require.Empty(t, s.Files())
	require.Contains(t, strings.Join(res.Warnings, "\n"), "no value the recording typed in is in users.csv")

	_, err = har.ReadDataFile("bad.csv", []byte("e-mail,password\nx,y\n"))
	require.ErrorContains(t, err, `column "e-mail" is not a variable name`)
}

// With --assets, the assets stay, those that follow each other in a batch, as a browser fetches
// them.
func TestAssetsAreKeptInBatchesWhenAsked(t *testing.T) {
	t.Parallel()
	l := &har.Log{Entries: []har.Entry{
		entry(0, "GET", "http://shop.test/", 200, "text/html", "<p>hi</p>"),
		entry(10*time.Millisecond, "GET", "http://shop.test/app.css", 200, "text/css", "p{}"),
		entry(11*time.Millisecond, "GET", "http://shop.test/app.js", 200, "text/javascript", ""),
		entry(12*time.Millisecond, "GET", "http://shop.test/logo", 200, "image/png", ""),
		entry(20*time.Millisecond, "GET", "http://cdn.test/font.woff2", 200, "font/woff2", ""),
	}}
	res, s := convert(t, l, har.Options{})
	require.Equal(t, 1, res.Requests)
	require.Equal(t, 4, res.AssetsLeftOut)
	require.Len(t, s.Session.Groups[0].Requests, 1)

	res, s = convert(t, l, har.Options{Assets: true})
	require.Equal(t, 5, res.Requests)
	reqs := s.Session.Groups[0].Requests
	require.Len(t, reqs, 5)
	require.Equal(t, "GET cdn.test/font.woff2", reqs[4].Name, "another origin keeps its host in the name")
	require.Contains(t, string(res.Script), "url: http://cdn.test/font.woff2", "and its absolute URL")
	require.Contains(t, string(res.Script), "- batch:")
	require.Contains(t, string(res.Script), "base_url: ${target}")
}

// Without pages, a pause of more than the idle time starts a group; its length, rounded and
// capped, is the think time of the group before.
func TestGroupsByPausesWithoutPages(t *testing.T) {
	t.Parallel()
	l := &har.Log{Entries: []har.Entry{
		entry(0, "GET", "http://shop.test/a", 200, "text/html", ""),
		entry(1500*time.Millisecond, "GET", "http://shop.test/b", 200, "text/html", ""),
		entry(4040*time.Millisecond, "GET", "http://shop.test/c", 200, "text/html", ""),
		entry(16*time.Second, "GET", "http://shop.test/d", 200, "text/html", ""),
		entry(5*time.Minute, "GET", "http://shop.test/e", 200, "text/html", ""),
	}}
	res, _ := convert(t, l, har.Options{})
	var got []string
	for _, g := range groupsOf(t, res.Script) {
		got = append(got, fmt.Sprintf("%s %v %d", g["name"], g["think"], len(g["requests"].([]any))))
	}
	require.Equal(t, []string{"GET /a 2.5s 2", "GET /c 12s 1", "GET /d 30s 1", "GET /e <nil> 1"}, got)

	res, _ = convert(t, l, har.Options{Idle: time.Hour, MaxThink: time.Minute})
	require.Len(t, groupsOf(t, res.Script), 1)
}

// The correlations a person would write: a meta tag's CSRF token into a header, a login's token
// into Authorization, a redirect to a new order followed, the order's id into a later path, a
// double-submit cookie into a form, a response header into a request header, and a number into
// a JSON body (a raw one, since a JSON body's variables are strings).
func TestCorrelatesTheValuesAPersonWould(t *testing.T) {
	t.Parallel()
	page := `<html><head><meta name="csrf-token" content="Zm9vYmFyYmF6cXV4MTIz"></head>` +
		"\n<script>\n  var apiKey = \"key-8f7e6d5c\";\n</script></html>"
	login := entry(100*time.Millisecond, "POST", "http://shop.test/api/login", 200, "application/json", `{"ok":true,"data":{"access_token":"eyJhbGciOi.eyJzdWIiOjQyfQ.c2lnbmF0dXJl","expires_in":60}}`)
	login.Request.PostData = &har.PostData{MimeType: "application/json", Text: `{"user":"ada","remember":true}`}
	login.Request.Headers = append(login.Request.Headers, har.NameValue{Name: "X-CSRF-Token", Value: "Zm9vYmFyYmF6cXV4MTIz"}, har.NameValue{Name: "X-Api-Key", Value: "key-8f7e6d5c"})
	login.Response.Headers = append(login.Response.Headers, har.NameValue{Name: "X-Request-Token", Value: "rt-0123456789"},
		har.NameValue{Name: "Set-Cookie", Value: "xsrf=dbl-submit-77; Path=/"})
	checkout := entry(200*time.Millisecond, "POST", "http://shop.test/checkout", 303, "text/html", "")
	checkout.Request.PostData = &har.PostData{MimeType: "application/x-www-form-urlencoded", Text: "xsrf=dbl-submit-77&note=%24%7Bnot_a_var%7D"}
	checkout.Request.Headers = append(checkout.Request.Headers, har.NameValue{Name: "Authorization", Value: "Bearer eyJhbGciOi.eyJzdWIiOjQyfQ.c2lnbmF0dXJl"},
		har.NameValue{Name: "X-Request-Token", Value: "rt-0123456789"})
	checkout.Response.Headers = append(checkout.Response.Headers, har.NameValue{Name: "Location", Value: "/orders/40713"})
	order := entry(210*time.Millisecond, "GET", "http://shop.test/orders/40713", 200, "text/html", `<h1>Order 40713</h1><p>total: 24.90</p>`)
	order.Request.Headers = append(order.Request.Headers, har.NameValue{Name: "Authorization", Value: "Bearer eyJhbGciOi.eyJzdWIiOjQyfQ.c2lnbmF0dXJl"})
	receipt := entry(300*time.Millisecond, "POST", "http://shop.test/orders/40713/receipt", 201, "application/json", `{"receipt":9001234}`)
	receipt.Request.PostData = &har.PostData{MimeType: "application/json", Text: `{"expires_in":60,"copies":2}`}
	mail := entry(400*time.Millisecond, "POST", "http://shop.test/receipts/mail", 202, "text/plain", "ok")
	mail.Request.PostData = &har.PostData{MimeType: "application/json", Text: `{"receipt":9001234,"to":"ada@example.test"}`}
	l := &har.Log{Entries: []har.Entry{entry(0, "GET", "http://shop.test/", 200, "text/html; charset=utf-8", page), login, checkout, order, receipt, mail}}

	res, _ := convert(t, l, har.Options{})
	got := map[string]string{}
	for _, c := range res.Correlations {
		got[c.Var] = fmt.Sprintf("%s %s of %s", c.Kind, c.Expr, c.Request)
	}
	require.Equal(t, map[string]string{
		"csrf_token":    `regex name="csrf-token" content="([^"]+)" of GET /`,
		"api_key":       `regex apiKey = "([^"]+)" of GET /`,
		"access_token":  "json $.data.access_token of POST /api/login",
		"request_token": "header X-Request-Token of POST /api/login",
		"xsrf":          "cookie xsrf of POST /api/login",
		"order_id":      "header Location of POST /checkout",
		"order_id_2":    `regex Order ([^"'<>&\s]+) of GET /orders/40713`,
		"receipt":       "json $.receipt of POST /orders/${order_id_2}/receipt", // named by its template
	}, got)
	src := string(res.Script)
	require.Contains(t, src, "Authorization: Bearer ${access_token}", "a token inside a header")
	require.Contains(t, src, "url: ${order_id}", "the redirect is followed where the target sends it")
	require.Contains(t, src, "url: /orders/${order_id_2}/receipt")
	require.Contains(t, src, "name: POST /orders/${order_id_2}/receipt", "named by its template, not the id it recorded")
	require.NotContains(t, src, "name: POST /orders/40713/receipt")
	require.Contains(t, src, `raw: '{"receipt":${receipt},"to":"ada@example.test"}'`, "a number from a variable goes in a raw body")
	require.Contains(t, src, "note: $${not_a_var}", "a recorded ${ is literal")
	require.NotContains(t, src, "expires_in: ${", "a small number recurs by chance: not a correlation")
	require.Contains(t, src, "remember: true")
	for _, short := range []string{"ok", "2"} {
		require.NotContains(t, src, "${"+short)
	}
}

// What the client had before any response gave it, short or trivial values, and a host or port
// are never correlated.
func TestDoesNotCorrelateWhatTheClientKnew(t *testing.T) {
	t.Parallel()
	first := entry(0, "GET", "http://shop.test:8443/search?q=coffee&session=client-made-91f2", 200, "application/json",
		`{"q":"coffee","session":"client-made-91f2","page":2,"next":"http://shop.test:8443/p/2","flag":"true","code":"abc"}`)
	second := entry(10*time.Millisecond, "POST", "http://shop.test:8443/track", 204, "", "")
	second.Request.PostData = &har.PostData{MimeType: "application/json", Text: `{"q":"coffee","session":"client-made-91f2","page":2,"port":"8443","flag":"true","code":"abc"}`}
	res, _ := convert(t, &har.Log{Entries: []har.Entry{first, second}}, har.Options{})
	require.Empty(t, res.Correlations)
	require.Empty(t, res.Missed)
}

// A value a response gave that no extractor can take exactly (a header holds it inside a
// sentence, and a header extractor takes the whole) is sent as recorded, and the conversion
// says so. A value inside a longer word is no value at all.
func TestAValueNoExtractorIsolatesIsReported(t *testing.T) {
	t.Parallel()
	first := entry(0, "GET", "http://shop.test/", 204, "", "")
	first.Response.Headers = append(first.Response.Headers, har.NameValue{Name: "X-Info", Value: "item 7788990 is ready"})
	second := entry(10*time.Millisecond, "GET", "http://shop.test/items/7788990", 200, "text/plain", "")
	res, _ := convert(t, &har.Log{Entries: []har.Entry{first, second}}, har.Options{})
	require.Empty(t, res.Correlations)
	require.Equal(t, []har.Missed{{Value: "7788990", Request: "GET /items/7788990", Where: "URL path", Source: "GET /",
		Why: "no extractor takes exactly this value from its response"}}, res.Missed)
	require.Contains(t, string(res.Script), "# Sent as recorded though a response gave them (check them):")

	first = entry(0, "GET", "http://shop.test/", 200, "text/plain", "id7788990x")
	res, _ = convert(t, &har.Log{Entries: []har.Entry{first, second}}, har.Options{})
	require.Empty(t, res.Missed)
	require.Empty(t, res.Correlations)
}

// A log with nothing to replay is refused, naming the entries.
func TestNothingToReplayIsInvalid(t *testing.T) {
	t.Parallel()
	_, err := har.Convert(&har.Log{Entries: []har.Entry{entry(0, "GET", "http://shop.test/a.png", 200, "image/png", "")}}, har.Options{})
	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "log.entries", inv.Fields[0].Field)
	require.Contains(t, inv.Fields[0].Reason, "1 static assets were left out")
}

// A line break in a header is text no script can carry: the HAR is refused, not the converter
// blamed.
func TestTextAScriptCannotCarryIsInvalid(t *testing.T) {
	t.Parallel()
	e := entry(0, "GET", "http://shop.test/", 200, "text/html", "hi")
	e.Request.Headers = append(e.Request.Headers, har.NameValue{Name: "X-A", Value: "a\nb"})
	_, err := har.Convert(&har.Log{Entries: []har.Entry{e}}, har.Options{})
	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "log", inv.Fields[0].Field)
	require.Contains(t, inv.Fields[0].Reason, "holds text a script cannot carry")
}

// Decode names each field at fault by its path.
func TestDecodeNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, field, reason string }{
		{`[]`, "body", "must be an object"},
		{`{"log": `, "body", "not valid JSON"},
		{`{}`, "log", "required"},
		{`{"log": {}}`, "log.entries", "required"},
		{`{"log": {"entries": [{"startedDateTime": "yesterday", "request": {"method": "GET", "url": "http://a.test/"}, "response": {"status": 200}}]}}`,
			"log.entries[0].startedDateTime", "must be a date and time"},
		{`{"log": {"entries": [{"startedDateTime": "2025-01-01T00:00:00Z", "request": {"method": "GET", "url": "/relative"}, "response": {"status": 200}}]}}`,
			"log.entries[0].request.url", "absolute URL"},
		{`{"log": {"entries": [{"startedDateTime": "2025-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a.test/"}, "response": {"status": "200"}}]}}`,
			"log.entries[0].response.status", "must be a number"},
		{`{"log": {"entries": [{"startedDateTime": "2025-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a.test/"}, "response": {"status": 200, "content": {"text": "!!", "encoding": "base64"}}}]}}`,
			"log.entries[0].response.content.text", "base64"},
		{`{"log": {"pages": [{"title": "x"}], "entries": []}}`, "log.pages[0].id", "required"},
	} {
		_, err := har.Decode([]byte(tc.doc))
		var inv *barrage.InvalidError
		require.ErrorAs(t, err, &inv, tc.doc)
		require.Equal(t, tc.field, inv.Fields[0].Field, tc.doc)
		require.Contains(t, inv.Fields[0].Reason, tc.reason, tc.doc)
	}
}

// entry is a recorded exchange at offset at from a fixed start, taking a millisecond.
func entry(at time.Duration, method, u string, status int, mime, body string) har.Entry {
	start := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC).Add(at)
	e := har.Entry{StartedDateTime: start.Format(har.TimeFormat), Time: 1,
		Request:  har.Request{Method: method, URL: u, HTTPVersion: "HTTP/1.1", Headers: []har.NameValue{{Name: "Host", Value: "shop.test"}, {Name: "User-Agent", Value: "test/1"}}},
		Response: har.Response{Status: status, Headers: []har.NameValue{{Name: "Content-Type", Value: mime}}, Content: har.Content{MimeType: mime, Text: body, Size: int64(len(body))}}}
	return e
}

// A HAR sending thousands of token-like values is converted in bounded work: past MaxCandidates
// the values go as recorded, and the conversion says so once.
func TestCorrelationWorkIsBounded(t *testing.T) {
	t.Parallel()
	var items, form []string
	for i := range har.MaxCandidates + 500 {
		id := fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		items = append(items, `{"id":"`+id+`"}`)
		form = append(form, fmt.Sprintf("v%d=%s", i, id))
	}
	list := entry(0, "GET", "http://shop.test/items", 200, "application/json", `{"items":[`+strings.Join(items, ",")+`]}`)
	send := entry(time.Second, "POST", "http://shop.test/send", 200, "text/plain", "ok")
	send.Request.PostData = &har.PostData{MimeType: "application/x-www-form-urlencoded", Text: strings.Join(form, "&")}
	res, err := har.Convert(&har.Log{Entries: []har.Entry{list, send}}, har.Options{})
	require.NoError(t, err)
	require.LessOrEqual(t, len(res.Correlations), har.MaxCandidates)
	require.Len(t, slices.DeleteFunc(slices.Clone(res.Missed), func(m har.Missed) bool { return !strings.Contains(m.Why, "past the") }), 1)
}

// A recording of a login that sent the user's secrets (a password typed in, an API key in a
// header, a token that also came in a response and went out in a raw query): the script reads
// each as ${secret.NAME}, never correlates or offers one as a parameter, and neither the script
// nor what the conversion reports holds a value, in any form.
func TestTheUsersSecretsBecomeTheirNames(t *testing.T) {
	t.Parallel()
	const password, apiKey, token = `pa"ss w/rd+1`, "key-8f7e6d5c-secret", "tok9Xq2LmB7pR4sT"
	login := entry(0, "POST", "http://shop.test/api/login", 200, "application/json", `{"token":"`+token+`","user":"ada"}`)
	login.Request.PostData = &har.PostData{MimeType: "application/x-www-form-urlencoded", Text: "user=ada&password=" + url.QueryEscape(password)}
	login.Request.Headers = append(login.Request.Headers, har.NameValue{Name: "X-Api-Key", Value: apiKey})
	feed := entry(100*time.Millisecond, "GET", "http://shop.test/feed;"+token+"?raw", 200, "application/json", `{}`)
	feed.Request.Headers = append(feed.Request.Headers, har.NameValue{Name: "Authorization", Value: "Bearer " + token},
		har.NameValue{Name: "X-Api-Key", Value: apiKey})
	l := &har.Log{Entries: []har.Entry{login, feed}}

	res, s := convert(t, l, har.Options{Secrets: map[string]string{"PASSWORD": password, "API_KEY": apiKey, "TOKEN": token, "UNUSED": "never-sent-1"}})
	require.Equal(t, []string{"API_KEY", "PASSWORD", "TOKEN"}, res.Secrets)
	require.Equal(t, []string{"API_KEY", "PASSWORD", "TOKEN"}, s.Secrets, "the script reads them by name")
	src := string(res.Script)
	require.Contains(t, src, "Bearer ${secret.TOKEN}")
	require.Contains(t, src, "${secret.API_KEY}")
	require.Contains(t, src, "password: ${secret.PASSWORD}")
	require.Empty(t, res.Correlations, "a secret is not carried from the response that gave it")
	for _, p := range res.Parameters {
		require.NotEqual(t, "form field password", p.Where, "nor offered as a value typed in")
	}
	report, err := json.Marshal(res)
	require.NoError(t, err)
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	for _, v := range []string{password, apiKey, token, url.QueryEscape(password), strconvQuote(password)} {
		require.NotContains(t, src, v)
		require.NotContains(t, string(report), v)
		require.NotContains(t, summary.String(), v)
	}
	require.Contains(t, summary.String(), "your secrets API_KEY, PASSWORD, TOKEN")

	// Without secrets the same recording correlates the token, as before.
	res, _ = convert(t, l, har.Options{})
	require.Empty(t, res.Secrets)
	require.NotEmpty(t, res.Correlations)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Values a script cannot name where they are sent (escaped in a path, inside a Basic
// credential) read *** there, with a warning; nothing of them is left in any form; and a secret
// that is also one of the script's own words (true, POST, a port) changes nothing but the
// values the recording sent.
func TestSecretsTheScriptCannotNameAreMasked(t *testing.T) {
	t.Parallel()
	const password, key = `p"a ss/w+o%rd é✓`, `k ey"/+%üz`
	login := entry(0, "POST", "http://shop.test:9081/api/login", 200, "application/json", `{"ok":true}`)
	login.Request.PostData = &har.PostData{MimeType: "application/x-www-form-urlencoded", Text: "user=ada&password=" + url.QueryEscape(password)}
	files := entry(100*time.Millisecond, "GET", "http://shop.test:9081/files/"+strings.ReplaceAll(url.QueryEscape(key), "+", "%20")+"/download?key="+url.QueryEscape(key), 200, "text/plain", "ok")
	files.Request.Headers = append(files.Request.Headers, har.NameValue{Name: "Authorization", Value: "Basic " + base64.StdEncoding.EncodeToString([]byte("ada:"+password))})
	l := &har.Log{Entries: []har.Entry{login, files}}

	res, s := convert(t, l, har.Options{Secrets: map[string]string{"PASSWORD": password, "KEY": key}})
	src := string(res.Script)
	require.Contains(t, src, "password: ${secret.PASSWORD}")
	require.Contains(t, src, "key: ${secret.KEY}", "the query, read as a form, names it")
	require.Contains(t, src, "/files/***/download", "a path sends a variable as it is: the escaped value cannot be named")
	require.Contains(t, src, "Authorization: Basic ***")
	require.Equal(t, []string{"KEY", "PASSWORD"}, s.Secrets)
	var warned []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "in a form a script cannot write") {
			warned = append(warned, w)
		}
	}
	require.Len(t, warned, 2, "%v", res.Warnings)
	report, err := json.Marshal(res)
	require.NoError(t, err)
	for _, secret := range []string{password, key} {
		for _, form := range append(script.SecretForms(secret), base64.StdEncoding.EncodeToString([]byte("ada:"+secret))) {
			require.NotContains(t, src, form)
			require.NotContains(t, string(report), form)
		}
	}

	// Secrets that are words of the script itself: only what the recording sent changes.
	for _, word := range []string{"true", "POST", "http", "9081", "name"} {
		res, _ := convert(t, l, har.Options{Secrets: map[string]string{"WORD": word}})
		require.Contains(t, string(res.Script), "cookies: true", word)
		require.Contains(t, string(res.Script), "default: 'http://shop.test:9081'", word)
	}
}
