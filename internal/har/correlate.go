package har

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// binding is a variable the script sets: from a response by an extractor (a correlation), or
// from a data file's column.
type binding struct {
	name  string
	value string
	// data bindings are a data file's column; secret ones a secret's (${secret.NAME}); the
	// others come from src's response.
	data   bool
	secret bool
	src    *exchange
	ext    extractor
	uses   []Use
}

func (b *binding) use(x *exchange, f *field) {
	u := Use{Request: x.name, Where: f.where}
	if !slices.Contains(b.uses, u) {
		b.uses = append(b.uses, u)
	}
	if !slices.Contains(x.bound, b) {
		x.bound = append(x.bound, b)
	}
}

// typedValue is a value a request sent that no earlier response held: the person recording
// typed or picked it.
type typedValue struct {
	x *exchange
	f *field
}

// reserveNames takes the names the data file's columns and the base URL's variable use.
func (c *converter) reserveNames() {
	if d := c.opts.Data; d != nil {
		for _, col := range d.Columns {
			c.taken[col] = true
		}
	}
}

// targetVar is the variable base_url is read from: target, unless a data column has the name.
func (c *converter) targetVar() string {
	for _, n := range []string{"target", "target_url", "base_target"} {
		if c.opts.Data == nil || !slices.Contains(c.opts.Data.Columns, n) {
			return n
		}
	}
	return "barrage_target"
}

// bindData finds the values typed in, and when a data file is given, the row that holds the
// most of them: its values become ${columns} wherever a request sent them whole.
func (c *converter) bindData() {
	for _, x := range c.kept {
		for _, f := range x.req.fields() {
			if f.kind != inForm && f.kind != inQuery && f.kind != inJSONString || strings.TrimSpace(f.text) == "" {
				continue
			}
			if !slices.ContainsFunc(c.all[:c.index[x]], func(y *exchange) bool { return y.resp.contains(f.text) }) {
				c.typed = append(c.typed, typedValue{x, f})
			}
		}
	}
	d := c.opts.Data
	if d == nil {
		return
	}
	typed := map[string]bool{}
	for _, t := range c.typed {
		typed[t.f.text] = true
	}
	best, most := -1, 0
	for i, row := range d.Rows {
		n := 0
		for _, v := range uniq(row) {
			if typed[v] {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if best < 0 {
		c.warn("no value the recording typed in is in %s: the script does not read it", d.Path)
		return
	}
	c.data = map[string]*binding{}
	for i, v := range d.Rows[best] {
		if v != "" && typed[v] && c.data[v] == nil {
			c.data[v] = &binding{name: d.Columns[i], value: v, data: true}
		}
	}
}

func uniq(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// correlate finds, for each value a request sent, the earlier response that gave it, and binds
// it to a variable that response's extractor sets.
func (c *converter) correlate() {
	for _, x := range c.kept {
		for _, f := range x.req.fields() {
			if f.fixed || f.whole != nil { // a secret's, bound already
				continue
			}
			if b := c.decide(x, f, f.text, true); b != nil && c.fits(f, b.value) {
				f.whole = b
				b.use(x, f)
				continue
			}
			if f.kind == inJSONNumber {
				continue
			}
			for _, t := range tokens(f.text) {
				if slices.ContainsFunc(f.subs, func(b *binding) bool { return strings.Contains(b.value, t) }) {
					continue // a part of a token already carried: the JWT's signature inside the JWT
				}
				if b := c.decide(x, f, t, false); b != nil && !b.data && !b.secret && c.fits(f, t) && !slices.Contains(f.subs, b) {
					f.subs = append(f.subs, b)
					b.use(x, f)
				}
			}
		}
	}
	for _, b := range c.bindings {
		c.res.Correlations = append(c.res.Correlations, Correlation{Var: b.name, Value: b.value, Request: b.src.name,
			Seen: b.ext.seen, Kind: b.ext.kind, Expr: b.ext.expr, Uses: b.uses})
	}
}

// fits reports whether a variable holding v may stand in field f: in a URL's path it is
// inserted as it is, so it must need no escaping there.
func (c *converter) fits(f *field, v string) bool {
	return f.kind != inPath || url.PathEscape(v) == v
}

// redirect binds x's whole URL to the Location of the redirect just before it, when that names
// something generated (an order's page, not /account): the replay follows where the target
// sends it, as the browser did.
func (c *converter) redirect(x *exchange) bool {
	i := c.index[x]
	if i == 0 {
		return false
	}
	prev := c.all[i-1]
	loc := prev.resp.location()
	if !prev.kept || prev.resp.status/100 != 3 || loc == "" || !generated(loc) {
		return false
	}
	lu, err := url.Parse(loc)
	if err != nil {
		return false
	}
	if !lu.IsAbs() && (!strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || prev.origin != c.origin) {
		return false // the engine resolves a relative Location against base_url, not the request
	}
	to := prev.url.ResolveReference(lu)
	to.Fragment, to.RawFragment = "", ""
	if to.String() != x.url.String() {
		return false
	}
	b := &binding{name: c.unique(redirectName(lu.Path)), value: loc, src: prev,
		ext: extractor{kind: ExtractHeader, expr: "Location", seen: "header Location"}}
	prev.extract = append(prev.extract, b)
	c.bindings = append(c.bindings, b)
	x.req.url.whole = b
	b.use(x, x.req.url)
	return true
}

// redirectName names a redirect's Location: /orders/4711 is an order_id, anything else a
// next_url.
func redirectName(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if n := len(segs); n >= 2 && strings.ContainsAny(segs[n-1], "0123456789") && identifier(segs[n-2]) != "" {
		return identifier(idKey(segs[n-2]))
	}
	return "next_url"
}

// decide says which variable, if any, a value a request sent should be: a data column's, the
// one an earlier correlation made, or a new one from the earliest response that gave it.
// Values the client had before any response gave them, trivial values, and hosts are never
// correlated.
// MaxCandidates bounds the values a conversion looks at for correlations.
const MaxCandidates = 1000

func (c *converter) decide(x *exchange, f *field, v string, whole bool) *binding {
	if whole {
		if b := c.data[v]; b != nil {
			return b
		}
	}
	if b, ok := c.decided[v]; ok {
		return b
	}
	short := whole && shortID(v) && f.kind != inRaw
	if !generated(v) && !short {
		return nil
	}
	if len(c.decided) >= MaxCandidates {
		// Each candidate is sought in every earlier response: a HAR sending thousands of
		// token-like values would cost the converter (and a server importing it) minutes. Past
		// the bound, values go as recorded, and the conversion says so once.
		if !c.overBound {
			c.overBound = true
			c.res.Missed = append(c.res.Missed, Missed{Value: v, Request: x.name, Where: f.where,
				Why: fmt.Sprintf("past the %d values a conversion looks at for correlations: this one and the later ones go as recorded", MaxCandidates)})
		}
		return nil
	}
	if strings.Contains(c.origins, v) || c.sentBefore(x, v) {
		c.decided[v] = nil
		return nil
	}
	b := c.source(x, f, v, short)
	c.decided[v] = b
	return b
}

// sentBefore reports whether a request before x sent v of its own: the client knew it, whatever
// came later. A value inside one a correlation carried (the id in a redirect's Location) was not
// the client's.
func (c *converter) sentBefore(x *exchange, v string) bool {
	return slices.ContainsFunc(c.all[:c.index[x]], func(y *exchange) bool {
		return y.reqWords.mayHold(v) && strings.Contains(y.reqText, v) && !slices.ContainsFunc(y.bound, func(b *binding) bool { return strings.Contains(b.value, v) })
	})
}

// source finds the earliest response before x that gave v and an extractor that takes exactly v
// from it, and makes the binding. A value whose response is left out (an asset) or that no
// extractor isolates is noted as missed.
func (c *converter) source(x *exchange, f *field, v string, short bool) *binding {
	var leftOut, noExtractor *exchange
	for _, y := range c.all[:c.index[x]] {
		if !y.resp.contains(v) {
			continue
		}
		if !y.kept {
			leftOut = cmp.Or(leftOut, y)
			continue
		}
		ext, ok := y.resp.extractor(v, short)
		if !ok {
			noExtractor = cmp.Or(noExtractor, y)
			continue
		}
		b := &binding{name: c.varName(f, ext, v), value: v, src: y, ext: ext}
		y.extract = append(y.extract, b)
		c.bindings = append(c.bindings, b)
		return b
	}
	if short {
		return nil
	}
	m := Missed{Value: v, Request: x.name, Where: f.where}
	switch {
	case noExtractor != nil:
		m.Source, m.Why = noExtractor.name, "no extractor takes exactly this value from its response"
	case leftOut != nil:
		m.Source, m.Why = leftOut.method+" "+leftOut.url.String(), "its response is a static asset, left out: --assets keeps it"
	default:
		return nil
	}
	c.res.Missed = append(c.res.Missed, m)
	return nil
}

// generated reports whether v looks made by the server for this visit, a token or an id, rather
// than a word or a small number that recurs by chance: no spaces, at least 4 characters, and a
// digit or at least 16 characters.
func generated(v string) bool {
	if len(v) < 4 || len(v) > 4096 || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return false
	}
	return strings.ContainsAny(v, "0123456789") || len(v) >= 16
}

// shortID reports whether v may be a short id, such as c-7: three characters with a digit and
// a letter. Such a value is correlated only when a field sends it whole and a JSON member,
// header or cookie gave it whole.
func shortID(v string) bool {
	return len(v) == 3 && strings.ContainsAny(v, "0123456789") && strings.ContainsFunc(v, unicode.IsLetter) &&
		!strings.ContainsFunc(v, unicode.IsSpace)
}

var (
	underscores = regexp.MustCompile(`_+`)
	fineToken   = regexp.MustCompile(`[A-Za-z0-9_-]+`)
	coarseToken = regexp.MustCompile(`[A-Za-z0-9_\-.~+/=]+`)
)

// tokens are the words of s where a value may hide: runs of URL-safe characters (a JWT, a
// path), and runs of letters, digits, _ and - inside them (an id in a path).
func tokens(s string) []string {
	var out []string
	seen := map[string]bool{s: true}
	for _, re := range []*regexp.Regexp{coarseToken, fineToken} {
		for _, t := range re.FindAllString(s, 64) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// varName names a correlation's variable: after the request field that sends it whole (csrf,
// cart), else after what the response calls it (access_token), a name of three letters or more
// first; unique.
func (c *converter) varName(f *field, ext extractor, v string) string {
	keys := []string{ext.key, f.key}
	if f.text == v {
		keys = []string{f.key, ext.key}
	}
	for _, k := range keys {
		if n := identifier(k); len(n) >= 3 && n != "value" {
			return c.unique(n) // a name that says something: not q, t or id
		}
	}
	for _, k := range keys {
		if n := identifier(k); n != "" {
			return c.unique(n)
		}
	}
	return c.unique("value")
}

// unique returns n, or n_2, n_3... when it is taken, and takes it.
func (c *converter) unique(n string) string {
	if n == "" {
		n = "value"
	}
	name := n
	for i := 2; c.taken[name] || name == c.targetVar(); i++ {
		name = fmt.Sprintf("%s_%d", n, i)
	}
	c.taken[name] = true
	return name
}

// identifier makes a variable name of k: snake case, letters, digits and _, not starting with
// a digit; X-CSRF-Token is csrf_token.
func identifier(k string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range k {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	n := strings.Trim(underscores.ReplaceAllString(b.String(), "_"), "_")
	n = strings.TrimPrefix(n, "x_")
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "v_" + n
	}
	if len(n) > 40 {
		n = strings.TrimRight(n[:40], "_")
	}
	return n
}

// parameters lists the typed-in values: those the data file replaced, and those left as
// recorded, once each.
func (c *converter) parameters() {
	seen := map[string]bool{}
	for _, t := range c.typed {
		if seen[t.f.text] {
			continue
		}
		seen[t.f.text] = true
		p := Parameter{Request: t.x.name, Where: t.f.where, Value: t.f.text}
		switch b := t.f.whole; {
		case b != nil && b.secret:
			// the user's secret: the script reads it by name
		case b != nil && b.data:
			p.Column = b.name
			c.res.DataBound = append(c.res.DataBound, p)
		case b == nil:
			c.res.Parameters = append(c.res.Parameters, p)
		}
	}
	if c.opts.Data != nil && len(c.res.DataBound) > 0 {
		c.dataUsed = true
	}
}

// hoistHeaders moves the headers every request sends alike to session.headers.
func (c *converter) hoistHeaders() {
	if len(c.kept) < 2 {
		return
	}
	for _, h := range slices.Clone(c.kept[0].req.headers) { // the loop deletes from them
		v := c.template(h, nil)
		everywhere := true
		for _, x := range c.kept[1:] {
			i := slices.IndexFunc(x.req.headers, func(o *field) bool { return strings.EqualFold(o.key, h.key) })
			everywhere = everywhere && i >= 0 && c.template(x.req.headers[i], nil) == v
		}
		if !everywhere || strings.Contains(v, "${") && !h.fixed {
			continue
		}
		c.sessionHeaders = append(c.sessionHeaders, h)
		for _, x := range c.kept {
			x.req.headers = slices.DeleteFunc(x.req.headers, func(o *field) bool { return strings.EqualFold(o.key, h.key) })
		}
	}
}

// jarWarnings notes the cookies the jar will carry, and those the recording sent that no
// earlier response set: JavaScript set them, or the browser had them before, and the jar will
// not have them.
func (c *converter) jarWarnings() {
	set := map[string]bool{}
	var missing []string
	for _, x := range c.all {
		if x.kept {
			for _, name := range requestCookies(x.entry) {
				if !set[name] && !slices.Contains(missing, name) {
					missing = append(missing, name)
				}
			}
		}
		for _, ck := range x.resp.cookies {
			if !set[ck.Name] {
				set[ck.Name] = true
				c.jarCookies = append(c.jarCookies, ck.Name)
			}
		}
	}
	if len(missing) > 0 {
		c.warn("cookies sent that no earlier response set (JavaScript set them, or the browser had them before the recording), which the cookie jar will not have: %s; add a Cookie header if the site needs them",
			strings.Join(missing, ", "))
	}
}

// requestCookies are the names of the cookies a request sent.
func requestCookies(e *Entry) []string {
	var names []string
	for _, h := range e.Request.Headers {
		if !strings.EqualFold(h.Name, "Cookie") {
			continue
		}
		if cks, err := http.ParseCookie(h.Value); err == nil {
			for _, ck := range cks {
				names = append(names, ck.Name)
			}
		}
	}
	if len(names) == 0 {
		for _, ck := range e.Request.Cookies {
			names = append(names, ck.Name)
		}
	}
	return names
}
