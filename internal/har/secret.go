package har

import (
	"cmp"
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/script"
)

// bindSecrets makes each value of Options.Secrets a ${secret.NAME} wherever a request sent it as
// it is, whole or as a token of a text field (the token of an Authorization header), before
// anything is correlated: a secret is never taken from a response, never offered as a parameter,
// and the script holds its name, not its value. What it cannot bind (a value a path would have
// to escape, an encoded form, a Basic credential) maskSecrets masks.
func (c *converter) bindSecrets() {
	names := c.secretNames()
	bindings := map[string]*binding{}
	for _, x := range c.kept {
		for _, f := range x.req.fields() {
			if f.fixed || f.kind == inJSONNumber {
				continue
			}
			for _, name := range names {
				v := c.opts.Secrets[name]
				if !holdsToken(f.text, v) || !c.fits(f, v) {
					continue
				}
				b := bindings[name]
				if b == nil {
					b = &binding{name: script.SecretVar(name), value: v, secret: true}
					bindings[name] = b
					c.res.Secrets = append(c.res.Secrets, name)
				}
				if f.text == v {
					f.whole = b
				} else if !slices.Contains(f.subs, b) {
					f.subs = append(f.subs, b)
				}
				b.use(x, f)
			}
		}
	}
	slices.Sort(c.res.Secrets)
}

// secretNames are the names of Options.Secrets, those of the longest values first: a secret
// that holds another is bound whole.
func (c *converter) secretNames() []string {
	names := slices.Sorted(maps.Keys(c.opts.Secrets))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(len(c.opts.Secrets[b]), len(c.opts.Secrets[a])) })
	return names
}

// holdsToken reports whether text holds v where it stands alone (standsAlone): a secret 1234 is
// not the start of 12345.
func holdsToken(text, v string) bool {
	for from := 0; v != "" && from < len(text); {
		k := strings.Index(text[from:], v)
		if k < 0 {
			return false
		}
		if i := from + k; standsAlone(text, i, i+len(v)) {
			return true
		}
		from += k + 1
	}
	return false
}

// standsAlone reports whether text[i:j] is not part of a longer word: no word byte joins it on
// either side.
func standsAlone(text string, i, j int) bool {
	return !(i > 0 && wordByte(text[i-1]) && wordByte(text[i])) && !(j < len(text) && wordByte(text[j]) && wordByte(text[j-1]))
}

// maskSecrets leaves no secret's value, in any form, where bindSecrets could not bind it: what
// a request sends that way reads script.Masked (and a warning says where, since the replay then
// sends that), and so does every value the result shows people (correlated, typed in, missed,
// warnings, the names of requests). It runs before the script is written, on the model: the
// script's own words (cookies: true, a port) are never touched, whatever a secret's value.
func (c *converter) maskSecrets() {
	if len(c.opts.Secrets) == 0 {
		return
	}
	names := c.secretNames()
	m := script.NewMasker(slices.Collect(maps.Values(c.opts.Secrets)))
	forms := make(map[string][]string, len(names)) // each secret's, worked out once
	for _, name := range names {
		forms[name] = script.SecretForms(c.opts.Secrets[name])
	}
	masked := map[string][]string{} // secret -> where it was masked
	renamed := map[string]string{}  // a request's name -> the name it has now
	mask := func(text, where string) string {
		for _, name := range names {
			for _, form := range forms[name] {
				if holdsToken(text, form) {
					masked[name] = append(masked[name], where)
					return m.String(text)
				}
			}
		}
		return text
	}
	for _, x := range c.kept {
		r := x.req
		for i, f := range r.path {
			if f.whole == nil && len(f.subs) == 0 {
				if seg := mask(r.segs[i], x.name+" (URL path)"); seg != r.segs[i] {
					r.segs[i], f.text = seg, m.String(f.text)
				} else if t := mask(f.text, x.name+" (URL path)"); t != f.text {
					r.segs[i], f.text = script.Masked, t
				}
			}
		}
		r.rawQuery = mask(r.rawQuery, x.name+" (URL query)")
		for _, f := range r.fields() {
			if f.kind == inPath {
				continue
			}
			if f.kind == inHeader && strings.HasPrefix(f.text, "Basic ") {
				if cred, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f.text, "Basic ")); err == nil && mask(string(cred), x.name+" ("+f.where+", Basic credentials)") != string(cred) {
					f.fixed, f.rendered = true, "Basic "+script.Masked
					continue
				}
			}
			// What is left of a secret in a field, in a form a template cannot write it in.
			if f.whole == nil {
				f.text = maskUnbound(f.text, f.subs, func(t string) string { return mask(t, x.name+" ("+f.where+")") })
			}
		}
		// A request is named by its URL: a secret the URL held must not name it.
		if u := x.url.String(); slices.ContainsFunc(names, func(n string) bool {
			return slices.ContainsFunc(forms[n], func(f string) bool { return holdsToken(u, f) })
		}) {
			renamed[x.name] = m.String(x.name)
			x.name = renamed[x.name]
		}
	}
	request := func(name string) string { return cmp.Or(renamed[name], name) }
	for _, name := range names {
		if where := slices.Compact(masked[name]); len(where) > 0 {
			c.warn("your secret %s is sent in %s in a form a script cannot write ${secret.%s} in (escaped, or inside other text): the script sends %s there; edit those places",
				name, strings.Join(shortList(where, 3), ", "), name, script.Masked)
		}
	}
	r := c.res
	for i := range r.Correlations {
		r.Correlations[i].Value, r.Correlations[i].Expr = m.String(r.Correlations[i].Value), m.String(r.Correlations[i].Expr)
		for j := range r.Correlations[i].Uses {
			r.Correlations[i].Uses[j].Request = request(r.Correlations[i].Uses[j].Request)
		}
		r.Correlations[i].Request = request(r.Correlations[i].Request)
	}
	for _, ps := range [][]Parameter{r.Parameters, r.DataBound} {
		for i := range ps {
			ps[i].Value, ps[i].Request = m.String(ps[i].Value), request(ps[i].Request)
		}
	}
	for i := range r.Missed {
		r.Missed[i].Value, r.Missed[i].Source, r.Missed[i].Request = m.String(r.Missed[i].Value), m.String(r.Missed[i].Source), request(r.Missed[i].Request)
	}
	for i := range r.Warnings {
		r.Warnings[i] = m.String(r.Warnings[i])
	}
}

// maskUnbound is text with mask applied to what lies outside the values of subs (which the
// script writes as their variables): a secret bound there stays for its template to replace.
func maskUnbound(text string, subs []*binding, mask func(string) string) string {
	if len(subs) == 0 {
		return mask(text)
	}
	var b strings.Builder
	for rest := text; rest != ""; {
		i, n := len(rest), 0
		for _, s := range subs {
			if k := strings.Index(rest, s.value); k >= 0 && (k < i || k == i && len(s.value) > n) {
				i, n = k, len(s.value)
			}
		}
		b.WriteString(mask(rest[:i]))
		if n == 0 {
			break
		}
		b.WriteString(rest[i : i+n])
		rest = rest[i+n:]
	}
	return b.String()
}
