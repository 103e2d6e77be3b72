package har

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/quantity"
)

// render writes the script as YAML, with comments that say what was found.
func (c *converter) render() ([]byte, error) {
	c.res.Name = "recording of " + strings.TrimPrefix(strings.TrimPrefix(c.origin, "https://"), "http://")
	root := mapping()
	root.HeadComment = c.headComment()
	add(root, "version", intNode(1))
	add(root, "name", str(c.res.Name))
	add(root, "base_url", str("${"+c.targetVar()+"}"))
	vars := mapping()
	env := mapping(str(c.targetVar()), flow(mapping(str("from"), str(TargetEnv), str("default"), str(c.origin))))
	env.Content[0].HeadComment = TargetEnv + "=https://staging.example barrage run ... aims the script elsewhere"
	add(vars, "env", env)
	if c.dataUsed {
		add(vars, "data", seq(mapping(str("file"), str(c.opts.Data.Path))))
		vars.Content[len(vars.Content)-2].LineComment = "a row per iteration: its columns are variables"
	}
	add(root, "variables", vars)

	session := mapping()
	add(session, "cookies", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	if len(c.jarCookies) > 0 {
		session.Content[0].LineComment = "the jar sends back the cookies the site sets (" + strings.Join(shortList(c.jarCookies, 5), ", ") + ")"
	}
	if len(c.sessionHeaders) > 0 {
		hs := mapping()
		for _, h := range c.sessionHeaders {
			add(hs, h.key, str(c.template(h, nil)))
		}
		add(session, "headers", hs)
	}
	groups := seq()
	for _, g := range c.groups {
		gn := mapping()
		add(gn, "name", str(g.name))
		if g.think > 0 {
			add(gn, "think", str(quantity.FormatDuration(g.think)))
		}
		add(gn, "requests", c.requests(g))
		groups.Content = append(groups.Content, gn)
	}
	add(session, "groups", groups)
	add(root, "session", session)

	load := mapping(str("vus"), intNode(1), str("duration"), str("30s"))
	load.HeadComment = "One virtual user for 30 s: raise vus (or barrage run --vus N --duration D) to put load on it."
	add(root, "load", load)
	add(root, "thresholds", seq(str("error_rate < 1%")))

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, fmt.Errorf("write the script: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write the script: %w", err)
	}
	return b.Bytes(), nil
}

// requests writes a group's requests; with assets kept, the assets that follow each other go
// in a batch, as a browser fetches them at once.
func (c *converter) requests(g *group) *yaml.Node {
	out := seq()
	var batch []*exchange
	flush := func() {
		for len(batch) > 0 {
			n := min(len(batch), 50)
			if n == 1 {
				out.Content = append(out.Content, c.requestNode(batch[0]))
			} else {
				items := seq()
				for _, x := range batch[:n] {
					items.Content = append(items.Content, c.requestNode(x))
				}
				out.Content = append(out.Content, mapping(str("batch"), items))
			}
			batch = batch[n:]
		}
	}
	for _, x := range g.requests {
		if x.asset && len(x.extract) == 0 && !c.usesVariables(x) {
			batch = append(batch, x)
			continue
		}
		flush()
		out.Content = append(out.Content, c.requestNode(x))
	}
	flush()
	return out
}

// usesVariables reports whether x sends a correlated value (a request of a batch may not use
// what a sibling extracts).
func (c *converter) usesVariables(x *exchange) bool {
	return x.req.url.whole != nil || slices.ContainsFunc(x.req.fields(), func(f *field) bool { return f.whole != nil || len(f.subs) > 0 })
}

func (c *converter) requestNode(x *exchange) *yaml.Node {
	r := x.req
	n := mapping()
	add(n, "name", str(x.name))
	if x.method != "GET" {
		add(n, "method", str(x.method))
	}
	add(n, "url", str(c.url(x)))
	if len(r.headers) > 0 {
		hs := mapping()
		for _, h := range r.headers {
			add(hs, h.key, str(c.template(h, nil)))
		}
		add(n, "headers", hs)
	}
	if len(r.query) > 0 {
		add(n, "query", c.params(r.query))
	}
	switch r.body.kind {
	case formBody:
		b := mapping(str("form"), c.params(r.body.form))
		if r.body.contentType != "" {
			add(b, "content_type", str(r.body.contentType))
		}
		add(n, "body", b)
	case jsonBody:
		var b *yaml.Node
		if r.body.json.boundNumber() {
			// A variable inside a json body is always part of a string: a number from one goes
			// in a raw body.
			var s strings.Builder
			r.body.json.rawJSON(&s, func(f *field) string { return c.template(f, jsonInner) })
			b = mapping(str("raw"), str(s.String()), str("content_type"), str(cmp.Or(r.body.contentType, "application/json")))
		} else {
			b = mapping(str("json"), c.jsonNode(r.body.json))
			if r.body.contentType != "" {
				add(b, "content_type", str(r.body.contentType))
			}
		}
		add(n, "body", b)
	case rawBody:
		b := mapping(str("raw"), str(c.template(r.body.raw, nil)))
		if r.body.contentType != "" {
			add(b, "content_type", str(r.body.contentType))
		}
		add(n, "body", b)
	case binaryBody:
		n.Content[1].LineComment = fmt.Sprintf("the recording sent %d bytes of binary body, left out", r.body.size)
	}
	if len(x.extract) > 0 {
		ex := seq()
		for _, b := range x.extract {
			e := flow(mapping(str("var"), str(b.name), str(string(b.ext.kind)), exprNode(b.ext)))
			e.HeadComment = extractComment(b)
			ex.Content = append(ex.Content, e)
		}
		add(n, "extract", ex)
	}
	status := flow(mapping(str("status"), intNode(x.resp.status)))
	if x.resp.status == 304 {
		// The cache's validators are left out, so the replay gets the whole answer.
		status = flow(mapping(str("status"), flow(seq(intNode(200), intNode(304)))))
	}
	add(n, "assert", flow(seq(status)))
	return n
}

// exprNode writes an extractor's expression; a regular expression in single quotes, which keep
// its backslashes as they are.
func exprNode(e extractor) *yaml.Node {
	n := str(e.expr)
	if e.kind == ExtractRegex && !strings.ContainsAny(e.expr, "\n\r\t") {
		n.Style = yaml.SingleQuotedStyle
	}
	return n
}

// extractComment says where a correlated value came and went.
func extractComment(b *binding) string {
	uses := make([]string, 0, len(b.uses))
	for _, u := range b.uses {
		uses = append(uses, u.Request+" ("+u.Where+")")
	}
	return fmt.Sprintf("%s: %s came in this response (%s)\nand went out in %s", b.name, quoteValue(b.value), b.ext.seen,
		strings.Join(shortList(uses, 3), ", "))
}

// quoteValue shows a recorded value, cut when long.
func quoteValue(v string) string {
	return strconv.Quote(shorten(v, 24))
}

// shortList is the first n of s, and how many more.
func shortList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// url is a request's URL in the script: a path after base_url for the base origin's requests,
// else absolute; its query goes in query: when it has one that reads as a form.
func (c *converter) url(x *exchange) string {
	r := x.req
	if r.url.whole != nil {
		return "${" + r.url.whole.name + "}"
	}
	var b strings.Builder
	if x.origin != c.origin {
		b.WriteString(escapeTemplate(x.origin))
	}
	b.WriteString(c.pathTemplate(x))
	if r.rawQuery != "" {
		b.WriteString("?" + escapeTemplate(urlText(r.rawQuery)))
	}
	return b.String()
}

// pathTemplate is a request's path in the script: each segment as recorded, or the template a
// correlation made of it.
func (c *converter) pathTemplate(x *exchange) string {
	var b strings.Builder
	r := x.req
	for i, seg := range r.segs {
		b.WriteByte('/')
		f := r.path[i]
		if f.whole == nil && len(f.subs) == 0 {
			b.WriteString(escapeTemplate(urlText(seg)))
			continue
		}
		b.WriteString(c.template(f, url.PathEscape))
	}
	return b.String()
}

// templated reports whether a correlation made a template of some segment of x's path.
func (x *exchange) templated() bool {
	if x.req == nil {
		return false
	}
	for _, f := range x.req.path {
		if f.whole != nil || len(f.subs) > 0 {
			return true
		}
	}
	return false
}

// urlText percent-encodes the spaces and control characters a recorded URL may hold (browsers
// send them encoded; a hand-made HAR may not), which a script's URL must not.
func urlText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// params writes query parameters or form fields: a name sent more than once as a list.
func (c *converter) params(fs []*field) *yaml.Node {
	n := mapping()
	at := map[string]int{}
	for _, f := range fs {
		v := str(c.template(f, nil))
		if i, ok := at[f.key]; ok {
			prev := n.Content[i+1]
			if prev.Kind != yaml.SequenceNode {
				n.Content[i+1] = flow(seq(prev))
			}
			n.Content[i+1].Content = append(n.Content[i+1].Content, v)
			continue
		}
		at[f.key] = len(n.Content)
		add(n, f.key, v)
	}
	return n
}

// jsonNode writes a JSON body as YAML, its strings as templates.
func (c *converter) jsonNode(j *jnode) *yaml.Node {
	switch j.kind {
	case jObject:
		n := mapping()
		for i, k := range j.keys {
			add(n, k, c.jsonNode(j.kids[i]))
		}
		if len(j.keys) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case jArray:
		n := seq()
		for _, k := range j.kids {
			n.Content = append(n.Content, c.jsonNode(k))
		}
		if len(j.kids) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case jString:
		return str(c.template(j.f, nil))
	case jNumber:
		tag := "!!int"
		if strings.ContainsAny(j.text, ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: j.text}
	case jBool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: j.text}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// jsonInner is s as the inside of a JSON string.
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// template is a field as a script's template: ${var} for what is bound, the rest literal (lit
// escapes it for where it goes, nil for as it is), with ${ written $${.
func (c *converter) template(f *field, lit func(string) string) string {
	if lit == nil {
		lit = func(s string) string { return s }
	}
	switch {
	case f.fixed:
		return f.rendered
	case f.whole != nil:
		return "${" + f.whole.name + "}"
	case len(f.subs) == 0:
		return escapeTemplate(lit(f.text))
	}
	type span struct {
		i, j int
		b    *binding
	}
	var spans []span
	covered := make([]bool, len(f.text))
	subs := slices.Clone(f.subs)
	slices.SortStableFunc(subs, func(a, b *binding) int { return len(b.value) - len(a.value) })
	for _, b := range subs {
		for from := 0; from < len(f.text); {
			k := strings.Index(f.text[from:], b.value)
			if k < 0 {
				break
			}
			i, j := from+k, from+k+len(b.value)
			from = i + 1
			if !standsAlone(f.text, i, j) || slices.Contains(covered[i:j], true) {
				continue
			}
			for p := i; p < j; p++ {
				covered[p] = true
			}
			spans = append(spans, span{i, j, b})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.i - b.i })
	var out strings.Builder
	at := 0
	for _, s := range spans {
		out.WriteString(escapeTemplate(lit(f.text[at:s.i])))
		out.WriteString("${" + s.b.name + "}")
		at = s.j
	}
	out.WriteString(escapeTemplate(lit(f.text[at:])))
	return out.String()
}

// headComment is the comment that opens the script: what it holds, what was correlated, and
// what a person may want to change.
func (c *converter) headComment() string {
	var lines []string
	by := "a HAR"
	if cr := c.log.Creator; cr.Name != "" {
		by = "a HAR written by " + strings.TrimSpace(cr.Name+" "+cr.Version)
	}
	summary := fmt.Sprintf("Converted by barrage from %s: %s in %s", by, plural(c.res.Requests, "request"), plural(c.res.Groups, "group"))
	if c.res.AssetsLeftOut > 0 {
		summary += fmt.Sprintf("; %s left out (--assets keeps them)", plural(c.res.AssetsLeftOut, "static asset"))
	}
	lines = append(lines, summary+".")
	var vars []string
	for _, b := range c.bindings {
		vars = append(vars, b.name)
	}
	if len(vars) > 0 {
		lines = append(lines, fmt.Sprintf("Correlated %s (extracted from a response, sent in later requests): %s.", plural(len(vars), "value"), strings.Join(vars, ", ")),
			"Each extractor's comment says where its value came and went.")
	}
	if len(c.res.DataBound) > 0 {
		var cols []string
		for _, p := range c.res.DataBound {
			cols = append(cols, p.Column)
		}
		lines = append(lines, fmt.Sprintf("Typed-in values taken from %s, a row per iteration: %s.", c.opts.Data.Path, strings.Join(cols, ", ")))
	}
	if len(c.res.Parameters) > 0 {
		lines = append(lines, "Values typed in that you may want to take from a data file (variables.data; --users FILE.csv does it):")
		for _, p := range c.res.Parameters[:min(len(c.res.Parameters), 20)] {
			lines = append(lines, fmt.Sprintf("  %s, %s: %s", p.Request, p.Where, quoteValue(p.Value)))
		}
		if n := len(c.res.Parameters) - 20; n > 0 {
			lines = append(lines, fmt.Sprintf("  and %d more", n))
		}
	}
	if len(c.res.Missed) > 0 {
		lines = append(lines, "Sent as recorded though a response gave them (check them):")
		for _, m := range c.res.Missed[:min(len(c.res.Missed), 20)] {
			lines = append(lines, fmt.Sprintf("  %s in %s, %s: from %s; %s", quoteValue(m.Value), m.Request, m.Where, m.Source, m.Why))
		}
	}
	for _, w := range c.res.Warnings {
		lines = append(lines, "Note: "+w+".")
	}
	return strings.Join(lines, "\n")
}

func plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// YAML node builders.

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func intNode(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(n)}
}

func mapping(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

func seq(items ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Content: items} }

func flow(n *yaml.Node) *yaml.Node {
	n.Style = yaml.FlowStyle
	return n
}

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}
