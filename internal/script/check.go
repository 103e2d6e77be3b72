package script

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// extractor reads one entry of extract.
func (d *decoder) extractor(n *yaml.Node, p pos) *Extractor {
	o := d.object(n, p, "var", "json", "regex", "header", "cookie", "default")
	if o == nil {
		return nil
	}
	e := &Extractor{p: p}
	ok := true
	if n, p := o.need("var"); n != nil {
		e.Var, ok = d.ident(n, p)
		e.p = p
	} else {
		ok = false
	}
	if n, p := o.get("default"); n != nil {
		var dok bool
		e.Default, dok = d.text(n, p)
		e.HasDefault = true
		ok = ok && dok
	}
	kind := o.exactlyOne("an extractor", "json", "regex", "header", "cookie")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	s, sok := d.str(n, vp)
	if !sok {
		return nil
	}
	switch kind {
	case "json":
		e.Kind = ExtractJSON
		jp, err := ParseJSONPath(s)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		e.JSONPath = jp
	case "regex":
		e.Kind = ExtractRegex
		re, err := regexp.Compile(s)
		if err != nil {
			d.add(vp, "%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return nil
		}
		e.Regex = re
	case "header", "cookie":
		e.Kind = ExtractHeader
		if kind == "cookie" {
			e.Kind = ExtractCookie
		}
		if !headerNameRe.MatchString(s) {
			d.add(vp, "%s is not a valid %s name", quote(s), kind)
			return nil
		}
		e.Name = s
	}
	if !ok {
		return nil
	}
	return e
}

// assertion reads one entry of assert.
func (d *decoder) assertion(n *yaml.Node, p pos) *Assertion {
	o := d.object(n, p, "name", "status", "body_contains", "body_matches", "json", "equals", "exists", "max_duration")
	if o == nil {
		return nil
	}
	var name string
	if nn, np := o.get("name"); nn != nil {
		var ok bool
		if name, ok = d.name(nn, np); !ok {
			return nil
		}
	}
	kind := o.exactlyOne("an assertion", "status", "body_contains", "body_matches", "json", "max_duration")
	if kind != "json" {
		for _, k := range []string{"equals", "exists"} {
			if n, kp := o.get(k); n != nil {
				d.add(kp, "goes only with json")
			}
		}
	}
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	a := &Assertion{}
	switch kind {
	case "status":
		a.Kind = AssertStatus
		a.Status = d.status(n, vp)
		if a.Status == nil {
			return nil
		}
	case "body_contains":
		a.Kind = AssertBodyContains
		if a.Text = d.template(n, vp); a.Text == nil {
			return nil
		}
	case "body_matches":
		a.Kind = AssertBodyMatches
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		re, err := regexp.Compile(s)
		if err != nil {
			d.add(vp, "%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return nil
		}
		a.Regex = re
	case "json":
		a.Kind = AssertJSON
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		jp, err := ParseJSONPath(s)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		a.JSONPath = jp
		en, ep := o.get("equals")
		xn, xp := o.get("exists")
		if en != nil && xn != nil {
			d.add(xp, "goes without equals: a value that equals something exists")
			return nil
		}
		switch {
		case en != nil && isString(en):
			if a.EqualsText = d.template(en, ep); a.EqualsText == nil {
				return nil
			}
		case en != nil:
			v, ok := d.value(en, ep)
			if !ok {
				return nil
			}
			a.Equals, a.HasEquals = v, true
		case xn != nil:
			exists, ok := d.boolean(xn, xp)
			if !ok {
				return nil
			}
			a.Absent = !exists
		}
	case "max_duration":
		a.Kind = AssertMaxDuration
		v, ok := d.durationIn(n, vp, time.Millisecond, maxTimeout)
		if !ok {
			return nil
		}
		a.MaxDuration = v
	}
	a.Name = cmp.Or(name, checkText(a.describe(n)))
	return a
}

// checkText is an assertion's text as a name: its control characters escaped, as Go quotes them,
// and cut to 200 bytes, as a name may be.
func checkText(s string) string {
	if strings.IndexFunc(s, notPrintable) >= 0 {
		var b strings.Builder
		for _, r := range s {
			if notPrintable(r) {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if len(s) > maxNameBytes {
		cut := maxNameBytes - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// notPrintable is a rune a name may not hold: a control character, or one that reorders the
// text around it (bidirectional controls, which can make a line read other than it is).
func notPrintable(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

// checkNamed reports whether a's name is new among named (the names of its request's checks so
// far), reporting at p when it is not: each check is tallied apart, under a name of its own.
func (d *decoder) checkNamed(named map[string]bool, a *Assertion, p pos) bool {
	if named[a.Name] {
		d.add(p, "checks what another assertion of this request checks, as %q: each is tallied under its name, so give one a name:", a.Name)
		return false
	}
	named[a.Name] = true
	return true
}

// describe is the assertion as a tally of checks names it when the script gives no name: its
// key and value as written, `status 200, 3xx`, `json $.qty equals 3`, `max_duration 500ms`.
// n is the value of its key.
func (a *Assertion) describe(n *yaml.Node) string {
	switch a.Kind {
	case AssertStatus:
		if n.Kind == yaml.SequenceNode {
			vals := make([]string, len(n.Content))
			for i, c := range n.Content {
				vals[i] = c.Value
			}
			return "status " + strings.Join(vals, ", ")
		}
		return "status " + n.Value
	case AssertBodyContains:
		return "body_contains " + a.Text.String()
	case AssertBodyMatches:
		return "body_matches " + a.Regex.String()
	case AssertJSON:
		path := "json " + a.JSONPath.String()
		switch {
		case a.Absent:
			return path + " exists false"
		case a.EqualsText != nil:
			return path + " equals " + strconv.Quote(a.EqualsText.String())
		case a.HasEquals:
			return path + " equals " + jsonText(a.Equals)
		}
		return path + " exists"
	case AssertMaxDuration:
		return "max_duration " + a.MaxDuration.String()
	}
	return a.Kind.String()
}

var statusClassRe = regexp.MustCompile(`^[1-5][xX][xX]$`)

// status reads 200, "2xx", or a list of those.
func (d *decoder) status(n *yaml.Node, p pos) []StatusRange {
	one := func(n *yaml.Node, p pos) (StatusRange, bool) {
		if isString(n) && statusClassRe.MatchString(n.Value) {
			c := int(n.Value[0]-'0') * 100
			return StatusRange{c, c + 99}, true
		}
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
			v, ok := d.integer(n, p, 100, 599)
			return StatusRange{v, v}, ok
		}
		d.add(p, "must be a status code such as 200 or a class such as 2xx")
		return StatusRange{}, false
	}
	if n.Kind != yaml.SequenceNode {
		r, ok := one(n, p)
		if !ok {
			return nil
		}
		return []StatusRange{r}
	}
	if len(n.Content) == 0 {
		d.add(p, "must list at least one status")
		return nil
	}
	out := make([]StatusRange, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		r, rok := one(c, at(c, index(p.path, i)))
		out = append(out, r)
		ok = ok && rok
	}
	if !ok {
		return nil
	}
	return out
}
