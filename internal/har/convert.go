package har

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// Defaults of Options.
const (
	// DefaultIdle is the pause that starts a new group in a log without pages: a person reading
	// a page, where a page's own requests follow each other within a second or so.
	DefaultIdle = 2 * time.Second
	// DefaultMaxThink caps a think time: a visitor who left for lunch is no pause to replay.
	DefaultMaxThink = 30 * time.Second
)

// TargetEnv is the environment variable a converted script reads its base URL from, with the
// recorded origin as its default: TARGET_URL=https://staging.example barrage run test.yaml aims
// the same script elsewhere.
const TargetEnv = "TARGET_URL"

// Options say how Convert works.
type Options struct {
	// Assets keeps static assets (images, style sheets, scripts, fonts, media), left out by
	// default: a load test of a site is usually of its pages and API, and a CDN serves the rest.
	Assets bool
	// Idle is the pause between requests that starts a new group when the log has no pages
	// (DefaultIdle when 0).
	Idle time.Duration
	// MaxThink caps a think time (DefaultMaxThink when 0).
	MaxThink time.Duration
	// Data, when set, is a CSV file of users: the values the recording typed in (a login's
	// email and password) that are a row of it become that row's ${columns}, so that each
	// iteration is another user.
	Data *DataFile
	// Secrets are the user's secrets, by name: wherever the recording sent one's value, the
	// script reads ${secret.NAME} instead, and the result shows none of them.
	Secrets map[string]string
}

// Result is a converted script and what the conversion found.
type Result struct {
	// Script is the script, YAML with comments that say what was correlated and why.
	Script []byte
	// Name is the script's name.
	Name string
	// Requests and Groups count what the script holds; AssetsLeftOut the static assets left
	// out; Skipped the entries that cannot be replayed (no response, not http, a preflight).
	Requests, Groups, AssetsLeftOut, Skipped int
	// Correlations are the values carried from one response into later requests.
	Correlations []Correlation
	// DataBound are the typed-in values that Options.Data replaced with its columns.
	DataBound []Parameter
	// Parameters are the typed-in values left as recorded, which a person may want to take
	// from a data file.
	Parameters []Parameter
	// Missed are values that came in a response and went out in a later request, which no
	// extractor isolates: the replay sends the recorded value.
	Missed []Missed
	// Warnings are what else a person should know about the script.
	Warnings []string
	// Secrets are the names of the secrets (Options.Secrets) the recording sent, which the
	// script reads as ${secret.NAME}.
	Secrets []string
}

// ExtractorKind is the kind of an extractor, as a script names it.
type ExtractorKind string

// The extractors a correlation uses.
const (
	ExtractJSON   ExtractorKind = "json"
	ExtractRegex  ExtractorKind = "regex"
	ExtractHeader ExtractorKind = "header"
	ExtractCookie ExtractorKind = "cookie"
)

// Correlation is a value that came in one response and went out in later requests: the
// script extracts it from that response into Var and sends ${Var}.
type Correlation struct {
	Var   string
	Value string
	// Request is the request whose response gave the value; Seen says where in it.
	Request string
	Seen    string
	Kind    ExtractorKind
	// Expr is the extractor's JSON path, regular expression, header or cookie name.
	Expr string
	Uses []Use
}

// Use is a place a request sent a value.
type Use struct {
	Request string
	Where   string
}

// Parameter is a value a request sent that no response gave: typed in by the person
// recording, such as a login's email. Column is the data file's column that replaced it.
type Parameter struct {
	Request string
	Where   string
	Value   string
	Column  string
}

// Missed is a value that came in a response and went out later, left as recorded.
type Missed struct {
	Value   string
	Request string
	Where   string
	Source  string
	Why     string
}

// Convert turns a HAR log into a Barrage script. The script is checked with the parser
// `barrage run` uses; a log with nothing to replay is an ErrInvalid naming log.entries.
func Convert(l *Log, opts Options) (*Result, error) {
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.MaxThink <= 0 {
		opts.MaxThink = DefaultMaxThink
	}
	c := &converter{log: l, opts: opts, res: &Result{}, decided: map[string]*binding{}, taken: map[string]bool{}}
	c.reserveNames()
	if err := c.exchanges(); err != nil {
		return nil, err
	}
	c.group()
	c.base()
	c.nameAll()
	for _, x := range c.kept {
		x.req = c.request(x)
	}
	for _, x := range c.kept {
		if c.redirect(x) {
			x.req.path, x.req.query = nil, nil
		}
	}
	c.bindSecrets()
	c.bindData()
	c.correlate()
	c.parameters()
	c.renameTemplated()
	c.hoistHeaders()
	c.jarWarnings()
	c.maskSecrets()
	src, err := c.render()
	if err != nil {
		return nil, err
	}
	if _, err := script.Parse(src, script.ParseOptions{Filename: "converted.yaml"}); err != nil {
		// What a HAR holds that no script can carry (a line break or control character in a
		// header, a name): the HAR is refused, saying where the script would break.
		return nil, barrage.Invalid("log", fmt.Sprintf("holds text a script cannot carry (a line break or control character in a header or name?): %v", err))
	}
	c.res.Script = src
	return c.res, nil
}

// converter is one conversion's state.
type converter struct {
	log  *Log
	opts Options
	res  *Result
	// all are the log's http(s) exchanges with a response, in the order they started; kept are
	// those the script replays.
	all, kept []*exchange
	groups    []*group
	// origin is the scheme and host the script's base_url stands for ("" when none).
	origin string
	// origins are every origin of the log, one a line: a value within them is a host or a
	// port, never a correlation.
	origins string
	// decided holds each value looked at for a correlation: its binding, or nil for none.
	decided map[string]*binding
	// overBound: values past MaxCandidates were met, and said so.
	overBound bool
	data      map[string]*binding
	// taken are the variable names in use.
	taken    map[string]bool
	bindings []*binding
	typed    []typedValue
	// sessionHeaders are the headers every request sends alike.
	sessionHeaders []*field
	jarCookies     []string
	// index is each exchange's place in all.
	index map[*exchange]int
	// dataUsed says whether the script reads the data file: some value was a row's.
	dataUsed bool
}

// exchange is an entry as the conversion reads it.
type exchange struct {
	entry      *Entry
	start, end time.Time
	method     string
	url        *url.URL
	origin     string
	asset      bool
	kept       bool
	page       string
	name       string
	resp       *response
	req        *request
	// reqText is what the request sent but its cookies: its URL, headers and body; reqWords its
	// words.
	reqText  string
	reqWords wordSet
	extract  []*binding
	// bound are the variables its request sends.
	bound []*binding
	group *group
}

// group is a page: the requests a person's one action caused.
type group struct {
	name     string
	title    string
	page     string
	members  []*exchange // every exchange of the page, assets left out or not
	requests []*exchange // those in the script
	think    time.Duration
}

func (c *converter) exchanges() error {
	entries := make([]*Entry, len(c.log.Entries))
	for i := range c.log.Entries {
		entries[i] = &c.log.Entries[i]
	}
	type started struct {
		e *Entry
		t time.Time
	}
	order := make([]started, 0, len(entries))
	for _, e := range entries {
		t, err := parseTime(e.StartedDateTime)
		if err != nil {
			continue // Decode refused it already; a hand-made Log may still hold one
		}
		order = append(order, started{e, t})
	}
	slices.SortStableFunc(order, func(a, b started) int { return a.t.Compare(b.t) })
	preflights, noResponse, other := 0, 0, 0
	methods := map[string]bool{}
	for _, s := range order {
		e := s.e
		u, err := url.Parse(e.Request.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			other++
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		method := strings.ToUpper(e.Request.Method)
		x := &exchange{entry: e, start: s.t, end: s.t.Add(time.Duration(e.Time * float64(time.Millisecond))), method: method, url: u,
			origin: u.Scheme + "://" + u.Host, page: e.PageRef}
		switch {
		case e.Response.Status == 0:
			noResponse++
			continue
		case method == http.MethodOptions && header(e.Request.Headers, "Access-Control-Request-Method") != "":
			preflights++ // the browser's own CORS check, which the engine needs none of: not worth a note
			continue
		}
		x.resp = newResponse(&e.Response)
		x.asset = method == http.MethodGet && isAsset(u, x.resp.mime)
		x.reqText = requestText(e)
		x.reqWords = wordSet{}
		x.reqWords.add(x.reqText)
		c.all = append(c.all, x)
		switch {
		case !supportedMethods[method]:
			methods[method] = true
		case x.asset && !c.opts.Assets:
			c.res.AssetsLeftOut++
		default:
			x.kept = true
			c.kept = append(c.kept, x)
		}
	}
	c.res.Skipped = preflights + noResponse + other + len(methods)
	if noResponse > 0 {
		c.warn("%s had no response (failed, blocked or cancelled in the browser): left out", plural(noResponse, "request"))
	}
	if other > 0 {
		c.warn("%s not http or https (data:, blob:, WebSocket, extensions): left out", plural(other, "entry"))
	}
	for _, m := range slices.Sorted(maps.Keys(methods)) {
		c.warn("method %s is not one a script can send: its requests are left out", m)
	}
	if len(c.kept) == 0 {
		why := "no http(s) request with a response to replay"
		if c.res.AssetsLeftOut > 0 {
			why += fmt.Sprintf(" (%d static assets were left out: keep them with assets)", c.res.AssetsLeftOut)
		}
		return barrage.Invalid("log.entries", why)
	}
	c.index = make(map[*exchange]int, len(c.all))
	for i, x := range c.all {
		c.index[x] = i
	}
	seen := map[string]bool{}
	for _, x := range c.all {
		if !seen[x.origin] {
			seen[x.origin] = true
			c.origins += x.origin + "\n"
		}
	}
	return nil
}

func (c *converter) warn(format string, args ...any) {
	c.res.Warnings = append(c.res.Warnings, fmt.Sprintf(format, args...))
}

var supportedMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "TRACE": true}

// requestText is what a request sent that a later one may repeat: its URL, headers (but
// Cookie: cookies are the jar's) and body, and the URL and a form decoded.
func requestText(e *Entry) string {
	var b strings.Builder
	b.WriteString(e.Request.URL)
	if u, err := url.QueryUnescape(e.Request.URL); err == nil && u != e.Request.URL {
		b.WriteString("\n" + u)
	}
	for _, h := range e.Request.Headers {
		if !strings.EqualFold(h.Name, "Cookie") {
			b.WriteString("\n" + h.Name + ": " + h.Value)
		}
	}
	if pd := e.Request.PostData; pd != nil {
		body, _ := decodeText(pd.Text, pd.Encoding)
		b.WriteString("\n")
		b.Write(body)
		if mediaType(pd.MimeType) == "application/x-www-form-urlencoded" {
			if form, err := url.QueryUnescape(string(body)); err == nil {
				b.WriteString("\n" + form)
			}
		}
		for _, p := range pd.Params {
			b.WriteString("\n" + p.Name + "=" + p.Value)
		}
	}
	return b.String()
}

// header is the first value of a header named name, in any case.
func header(hs []NameValue, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// assetExt are the extensions of static assets.
var assetExt = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".avif": true, ".svg": true, ".ico": true,
	".bmp": true, ".tif": true, ".tiff": true, ".css": true, ".js": true, ".mjs": true, ".map": true, ".woff": true,
	".woff2": true, ".ttf": true, ".otf": true, ".eot": true, ".mp4": true, ".webm": true, ".ogg": true, ".ogv": true,
	".mp3": true, ".wav": true, ".m4a": true, ".m4v": true, ".mov": true, ".flac": true, ".aac": true,
}

// assetTypes are the media types of static assets, besides image/, font/, audio/ and video/.
var assetTypes = map[string]bool{
	"text/css": true, "text/javascript": true, "application/javascript": true, "application/x-javascript": true,
	"application/ecmascript": true, "text/ecmascript": true, "application/font-woff": true, "application/x-font-woff": true,
	"application/x-font-ttf": true, "application/x-font-otf": true, "application/vnd.ms-fontobject": true,
}

// isAsset reports whether a GET of u answered with mediaType is a static asset: by its
// extension, or by its type.
func isAsset(u *url.URL, mediaType string) bool {
	if assetExt[strings.ToLower(path.Ext(u.Path))] {
		return true
	}
	for _, p := range []string{"image/", "font/", "audio/", "video/"} {
		if strings.HasPrefix(mediaType, p) {
			return true
		}
	}
	return assetTypes[mediaType]
}

// mediaType is a Content-Type's type, lower case, without parameters.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// group groups the exchanges into pages: by the log's pages when its entries name them, else by
// the pauses between them. Think times are the pauses between groups.
func (c *converter) group() {
	byPage := false
	for _, x := range c.all {
		byPage = byPage || x.page != ""
	}
	titles := map[string]string{}
	for _, p := range c.log.Pages {
		titles[p.ID] = p.Title
	}
	var cur *group
	var last time.Time
	for _, x := range c.all {
		var split bool
		switch {
		case cur == nil:
			split = true
		case byPage:
			split = x.page != "" && x.page != cur.page
		default:
			split = x.start.Sub(last) > c.opts.Idle
		}
		if split {
			cur = &group{page: x.page, title: titles[x.page]}
			c.groups = append(c.groups, cur)
		}
		cur.members = append(cur.members, x)
		if x.end.After(last) {
			last = x.end
		}
	}
	kept := c.groups[:0]
	for i, g := range c.groups {
		for _, x := range g.members {
			if x.kept {
				g.requests = append(g.requests, x)
				x.group = g
			}
		}
		if i+1 < len(c.groups) {
			end := g.members[0].end
			for _, x := range g.members {
				if x.end.After(end) {
					end = x.end
				}
			}
			g.think = thinkTime(c.groups[i+1].members[0].start.Sub(end), c.opts.MaxThink)
		}
		if len(g.requests) == 0 {
			// A page of assets alone: its pause belongs to the group before it.
			if len(kept) > 0 {
				kept[len(kept)-1].think = min(kept[len(kept)-1].think+g.think, c.opts.MaxThink)
			}
			continue
		}
		kept = append(kept, g)
	}
	c.groups = kept
	c.groups[len(c.groups)-1].think = 0 // nothing follows the last page
	c.res.Groups, c.res.Requests = len(c.groups), len(c.kept)
}

// thinkTime is a pause as a script's think time: none under half a second (the browser's own
// pace), tenths of a second below ten, whole seconds above, and at most max.
func thinkTime(gap, max time.Duration) time.Duration {
	switch {
	case gap < 500*time.Millisecond:
		return 0
	case gap < 10*time.Second:
		gap = gap.Round(100 * time.Millisecond)
	default:
		gap = gap.Round(time.Second)
	}
	return min(gap, max)
}

// base picks the origin base_url stands for: the one most requests go to (the first page's on
// a tie). Requests elsewhere keep their absolute URLs.
func (c *converter) base() {
	count := map[string]int{}
	for _, x := range c.kept {
		count[x.origin]++
	}
	best := c.kept[0].origin
	for _, x := range c.kept {
		if count[x.origin] > count[best] {
			best = x.origin
		}
	}
	c.origin = best
}

// nameAll names the requests "METHOD /path" and the groups after their page's title, else
// their first request; names are unique, as metrics labels must be.
func (c *converter) nameAll() {
	used := map[string]bool{}
	unique := func(n string) string {
		if !used[n] {
			used[n] = true
			return n
		}
		for i := 2; ; i++ {
			if m := fmt.Sprintf("%s (%d)", n, i); !used[m] {
				used[m] = true
				return m
			}
		}
	}
	for _, x := range c.kept {
		p := x.url.EscapedPath()
		if p == "" {
			p = "/"
		}
		if x.origin != c.origin {
			p = x.url.Host + p
		}
		x.name = unique(x.method + " " + shorten(p, 100))
	}
	groupNames := map[string]bool{}
	for _, g := range c.groups {
		n := g.requests[0].name
		if t := strings.TrimSpace(g.title); t != "" && !strings.Contains(t, "://") {
			n = shorten(strings.Join(strings.Fields(t), " "), 100)
		}
		base := n
		for i := 2; groupNames[n]; i++ {
			n = fmt.Sprintf("%s (%d)", base, i)
		}
		groupNames[n] = true
		g.name = n
	}
}

// renameTemplated names a request whose path a correlation made a template after the template
// ("GET /items/${item_id}"), not after the id it recorded, which the replay will not send; what
// the conversion reports, and a group named after the request, follow.
func (c *converter) renameTemplated() {
	used := map[string]bool{}
	for _, x := range c.kept {
		used[x.name] = true
	}
	renamed := map[string]string{}
	for _, x := range c.kept {
		if !x.templated() || x.req.url.whole != nil {
			continue
		}
		p := c.pathTemplate(x)
		if x.origin != c.origin {
			p = x.url.Host + p
		}
		base := x.method + " " + shorten(p, 100)
		n := base
		for i := 2; used[n] && n != x.name; i++ {
			n = fmt.Sprintf("%s (%d)", base, i)
		}
		if n == x.name {
			continue
		}
		delete(used, x.name)
		used[n] = true
		renamed[x.name], x.name = n, n
	}
	if len(renamed) == 0 {
		return
	}
	rename := func(s *string) {
		if n, ok := renamed[*s]; ok {
			*s = n
		}
	}
	for _, g := range c.groups {
		rename(&g.name)
	}
	r := c.res
	for i := range r.Correlations {
		rename(&r.Correlations[i].Request)
		for j := range r.Correlations[i].Uses {
			rename(&r.Correlations[i].Uses[j].Request)
		}
	}
	for _, ps := range [][]Parameter{r.DataBound, r.Parameters} {
		for i := range ps {
			rename(&ps[i].Request)
		}
	}
	for i := range r.Missed {
		rename(&r.Missed[i].Request)
		rename(&r.Missed[i].Source)
	}
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// response is an entry's response as the conversion reads it.
type response struct {
	status  int
	headers []NameValue
	// cookies are those it set, by Set-Cookie, in order.
	cookies []Cookie
	mime    string
	// text is the body when it is text (within maxBody), else "".
	text string
	json *jnode
	// jsonDoc is the body decoded as the engine decodes it for its JSON paths.
	jsonDoc any
	// words are the runs of letters, digits, _ and - in its body, headers, cookies and JSON
	// strings: a value that an extractor can take is made of them.
	words wordSet
}

// maxBody is how much of a body extractors see, as the engine keeps for them.
const maxBody = 1 << 20

func newResponse(r *Response) *response {
	out := &response{status: r.Status, headers: r.Headers, mime: mediaType(r.Content.MimeType)}
	if out.mime == "" {
		out.mime = mediaType(header(r.Headers, "Content-Type"))
	}
	seen := map[string]bool{}
	for _, h := range r.Headers {
		if !strings.EqualFold(h.Name, "Set-Cookie") {
			continue
		}
		if ck, err := http.ParseSetCookie(h.Value); err == nil {
			out.cookies = append(out.cookies, Cookie{Name: ck.Name, Value: ck.Value})
			seen[ck.Name+"="+ck.Value] = true
		}
	}
	for _, ck := range r.Cookies {
		if !seen[ck.Name+"="+ck.Value] {
			out.cookies = append(out.cookies, ck)
		}
	}
	if body, err := decodeText(r.Content.Text, r.Content.Encoding); err == nil && isText(body) {
		out.text = string(body[:min(len(body), maxBody)])
		// The engine decodes JSON within its body cap: a larger document is no JSON to it.
		if tree, err := parseJSON(body); err == nil && len(body) <= maxBody {
			out.json = tree
			out.jsonDoc, _ = engineJSON(body)
		}
	}
	out.words = wordSet{}
	out.words.add(out.text)
	for _, h := range out.headers {
		out.words.add(h.Value)
	}
	for _, ck := range out.cookies {
		out.words.add(ck.Value)
	}
	if out.json != nil {
		out.json.strings(out.words.add)
	}
	return out
}

// contains reports whether v came in the response: in its body, a header or a cookie, at word
// boundaries.
func (r *response) contains(v string) bool {
	if !r.words.mayHold(v) {
		return false
	}
	if strings.Contains(r.text, v) {
		return true
	}
	for _, h := range r.headers {
		if strings.Contains(h.Value, v) {
			return true
		}
	}
	return slices.ContainsFunc(r.cookies, func(ck Cookie) bool { return ck.Value == v })
}

// wordSet holds the words of a text: runs of letters, digits, _ and -. It answers at once for
// most values that a text does not hold, where a search through a large body would not.
type wordSet map[string]struct{}

func (w wordSet) add(s string) {
	for i := 0; i < len(s); {
		if !wordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && wordByte(s[j]) {
			j++
		}
		w[s[i:j]] = struct{}{}
		i = j
	}
}

// mayHold reports whether the text may hold v at word boundaries: v's longest word is one of its
// words. A value without a word is searched for.
func (w wordSet) mayHold(v string) bool {
	longest := ""
	for i := 0; i < len(v); {
		if !wordByte(v[i]) {
			i++
			continue
		}
		j := i
		for j < len(v) && wordByte(v[j]) {
			j++
		}
		if j-i > len(longest) {
			longest = v[i:j]
		}
		i = j
	}
	if longest == "" {
		return true
	}
	_, ok := w[longest]
	return ok
}

// location is the response's first Location header.
func (r *response) location() string { return header(r.headers, "Location") }
