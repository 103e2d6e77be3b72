package script

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// session reads the session section; names collects the request names.
func (d *decoder) session(n *yaml.Node, p pos, s *Script, groups, names map[string]bool) Session {
	ses := Session{Cookies: true}
	o := d.object(n, p, "cookies", "headers", "groups")
	if o == nil {
		return ses
	}
	if n, p := o.get("cookies"); n != nil {
		ses.Cookies, _ = d.boolean(n, p)
	}
	var headers []Header
	if n, p := o.get("headers"); n != nil {
		headers = d.headers(n, p)
	}
	n, gp := o.need("groups")
	if n == nil {
		return ses
	}
	list := d.nonEmpty(n, gp, "must hold at least one group")
	for i, c := range list {
		if g := d.group(c, at(c, index(gp.path, i)), s, headers, groups, names); g != nil {
			ses.Groups = append(ses.Groups, g)
		}
	}
	return ses
}

// group reads one measurement group.
func (d *decoder) group(n *yaml.Node, p pos, s *Script, inherited []Header, groups, names map[string]bool) *Group {
	o := d.object(n, p, "name", "headers", "requests", "think")
	if o == nil {
		return nil
	}
	g := &Group{}
	if n, p := o.need("name"); n != nil {
		g.Name = d.uniqueName(n, p, groups, "another group is already named %s")
	}
	if n, p := o.get("headers"); n != nil {
		inherited = mergeHeaders(d.headers(n, p), inherited)
	}
	if n, p := o.get("think"); n != nil {
		g.Think = d.think(n, p)
	}
	n, rp := o.need("requests")
	if n == nil {
		return g
	}
	list := d.nonEmpty(n, rp, "must hold at least one request")
	batches := 0
	for i, c := range list {
		cp := at(c, index(rp.path, i))
		if c.Kind == yaml.MappingNode && len(c.Content) == 2 && c.Content[0].Value == "batch" {
			batches++
			bn, bp := c.Content[1], at(c.Content[1], field(cp.path, "batch"))
			items := d.seq(bn, bp)
			if bn.Kind == yaml.SequenceNode && (len(items) < 2 || len(items) > maxBatch) {
				d.add(bp, "must hold from 2 to %d requests", maxBatch)
			}
			for j, bc := range items {
				r := d.request(bc, at(bc, index(bp.path, j)), s, inherited, names)
				if r == nil {
					continue
				}
				if r.Think != nil || r.WebSocket != nil {
					d.add(at(bc, index(bp.path, j)), "a request of a batch has no think time and is no websocket: the batch's requests go at once")
				}
				r.Group, r.Batch = g.Name, batches
				g.Requests = append(g.Requests, r)
			}
			continue
		}
		if r := d.request(c, cp, s, inherited, names); r != nil {
			r.Group = g.Name
			g.Requests = append(g.Requests, r)
		}
	}
	return g
}

// uniqueName reads a name, "" when it is refused, and adds it to seen; a name already in seen is
// reported with taken, a message that says the name where it has %s.
func (d *decoder) uniqueName(n *yaml.Node, p pos, seen map[string]bool, taken string) string {
	name, ok := d.name(n, p)
	if !ok {
		return ""
	}
	if seen[name] {
		d.add(p, taken, quote(name))
	}
	seen[name] = true
	return name
}

// maxBatch bounds the requests of a batch.
const maxBatch = 50

// mergeHeaders returns own followed by the inherited headers own does not name.
func mergeHeaders(own, inherited []Header) []Header {
	out := append([]Header(nil), own...)
	for _, h := range inherited {
		overridden := false
		for _, o := range own {
			overridden = overridden || strings.EqualFold(o.Name, h.Name)
		}
		if !overridden {
			out = append(out, h)
		}
	}
	return out
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// request reads one request.
func (d *decoder) request(n *yaml.Node, p pos, s *Script, inherited []Header, names map[string]bool) *Request {
	o := d.object(n, p, "name", "method", "url", "headers", "query", "body", "timeout", "redirects", "http2", "extract", "assert", "think", "plugins", "websocket")
	if o == nil {
		return nil
	}
	r := &Request{Method: "GET", Timeout: defaultTimeout}
	if n, p := o.need("name"); n != nil {
		r.Name = d.uniqueName(n, p, names, "another request is already named %s; names are metric labels and must be unique")
	}
	if n, p := o.get("method"); n != nil {
		if m, ok := d.str(n, p); ok {
			r.Method = strings.ToUpper(m)
			if !contains(methods, r.Method) {
				d.add(p, "must be one of %s", strings.Join(methods, ", "))
			}
		}
	}
	if n, p := o.need("url"); n != nil {
		if o.has("websocket") {
			n = wsAsHTTP(n)
		}
		r.URL = d.requestURL(n, p, s.BaseURL)
	}
	var own []Header
	if n, p := o.get("headers"); n != nil {
		own = d.headers(n, p)
	}
	r.Headers = mergeHeaders(own, inherited)
	if n, p := o.get("query"); n != nil {
		r.Query = d.params(n, p)
		r.query = compileQuery(r.Query)
	}
	if n, p := o.get("body"); n != nil {
		r.Body = d.body(n, p)
	}
	if n, p := o.get("timeout"); n != nil {
		r.Timeout, _ = d.durationIn(n, p, time.Millisecond, maxTimeout)
	}
	if n, p := o.get("redirects"); n != nil {
		r.Redirects, _ = d.integer(n, p, 0, maxRedirects)
	}
	if n, p := o.get("http2"); n != nil {
		r.HTTP2, _ = d.boolean(n, p)
	}
	if n, p := o.get("extract"); n != nil {
		for i, c := range d.seq(n, p) {
			if e := d.extractor(c, at(c, index(p.path, i))); e != nil {
				r.Extract = append(r.Extract, e)
			}
		}
	}
	hasStatus := false
	if n, p := o.get("assert"); n != nil {
		named := map[string]bool{}
		for i, c := range d.seq(n, p) {
			if a := d.assertion(c, at(c, index(p.path, i))); a != nil && d.checkNamed(named, a, at(c, index(p.path, i))) {
				r.Assert = append(r.Assert, a)
				hasStatus = hasStatus || a.Kind == AssertStatus
			}
		}
	}
	if !hasStatus {
		implied := &Assertion{Kind: AssertStatus, Status: []StatusRange{{200, 399}}, Implied: true}
		r.Assert = append([]*Assertion{implied}, r.Assert...)
	}
	if n, p := o.get("think"); n != nil {
		r.Think = d.think(n, p)
	}
	if n, p := o.get("websocket"); n != nil {
		r.WebSocket = d.websocket(n, p, o, r, names)
	}
	if n, p := o.get("plugins"); n != nil {
		for i, c := range d.seq(n, p) {
			cp := at(c, index(p.path, i))
			as, ok := d.str(c, cp)
			if !ok {
				continue
			}
			pl := findPlugin(s.Plugins, as)
			switch {
			case pl != nil && slices.Contains(r.Plugins, pl):
				d.add(cp, "repeats plugin %s", quote(as))
			case pl == nil:
				d.add(cp, "no plugin is named %s (the as of an entry of plugins)", quote(as))
			case pl.Kind != URLPlugin:
				d.add(cp, "plugin %s is %s plugin; only url plugins are attached to requests", quote(as), pl.Kind.article())
			default:
				r.Plugins = append(r.Plugins, pl)
			}
		}
	}
	return r
}

var headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// headers reads a mapping of header names to values.
func (d *decoder) headers(n *yaml.Node, p pos) []Header {
	if !d.mapping(n, p) {
		return nil
	}
	var out []Header
	for _, kv := range d.pairs(n, p) {
		if !headerNameRe.MatchString(kv.key) {
			d.add(kv.keyPos, "%s is not a valid header name", quote(kv.key))
			continue
		}
		for _, h := range out {
			if strings.EqualFold(h.Name, kv.key) {
				d.add(kv.keyPos, "repeats header %s", h.Name)
			}
		}
		t := d.template(kv.val, kv.valPos)
		if t == nil {
			continue
		}
		if strings.ContainsAny(t.src, "\r\n\x00") {
			d.add(kv.valPos, "must not contain line breaks or NUL")
			continue
		}
		out = append(out, Header{Name: kv.key, Value: t})
	}
	return out
}

// params reads a mapping of names to a value or a list of values, as query: and form: are.
func (d *decoder) params(n *yaml.Node, p pos) []Param {
	if !d.mapping(n, p) {
		return nil
	}
	var out []Param
	for _, kv := range d.pairs(n, p) {
		vals := []*yaml.Node{kv.val}
		if kv.val.Kind == yaml.SequenceNode {
			vals = kv.val.Content
		}
		for i, v := range vals {
			vp := kv.valPos
			if kv.val.Kind == yaml.SequenceNode {
				vp = at(v, index(vp.path, i))
			}
			if t := d.template(v, vp); t != nil {
				out = append(out, Param{Name: kv.key, Value: t})
			}
		}
	}
	return out
}

// compileQuery compiles parameters into one form-encoded template: a=1&b=${x}.
func compileQuery(params []Param) *Template {
	var b builder
	for i, q := range params {
		if i > 0 {
			b.text("&")
		}
		b.text(url.QueryEscape(q.Name) + "=")
		b.add(q.Value.parts, escQuery)
	}
	return b.template(pos{})
}

// think reads a think time: a duration, or one of fixed, uniform and gaussian.
func (d *decoder) think(n *yaml.Node, p pos) *Think {
	if n.Kind == yaml.ScalarNode {
		v, ok := d.durationIn(n, p, 0, maxThink)
		if !ok {
			return nil
		}
		return &Think{Kind: ThinkFixed, Fixed: v}
	}
	o := d.object(n, p, "fixed", "uniform", "gaussian")
	if o == nil {
		return nil
	}
	kind := o.exactlyOne("a think time", "fixed", "uniform", "gaussian")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	switch kind {
	case "fixed":
		v, ok := d.durationIn(n, vp, 0, maxThink)
		if !ok {
			return nil
		}
		return &Think{Kind: ThinkFixed, Fixed: v}
	case "uniform":
		list := d.seq(n, vp)
		if list == nil {
			return nil
		}
		if len(list) != 2 {
			d.add(vp, "must be [shortest, longest], as in [1s, 3s]")
			return nil
		}
		lo, ok1 := d.durationIn(list[0], at(list[0], index(vp.path, 0)), 0, maxThink)
		hi, ok2 := d.durationIn(list[1], at(list[1], index(vp.path, 1)), 0, maxThink)
		if !ok1 || !ok2 {
			return nil
		}
		if lo > hi {
			d.add(vp, "the shortest pause comes first")
			return nil
		}
		return &Think{Kind: ThinkUniform, Min: lo, Max: hi}
	default:
		g := d.object(n, vp, "mean", "stddev")
		if g == nil {
			return nil
		}
		mn, mp := g.need("mean")
		sn, sp := g.need("stddev")
		if mn == nil || sn == nil {
			return nil
		}
		mean, ok1 := d.durationIn(mn, mp, 0, maxThink)
		sd, ok2 := d.durationIn(sn, sp, 0, maxThink)
		if !ok1 || !ok2 {
			return nil
		}
		return &Think{Kind: ThinkGaussian, Mean: mean, StdDev: sd}
	}
}
