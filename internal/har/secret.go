package har

import (
	"maps"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/script"
)

// bindSecrets makes each value of Options.Secrets a ${secret.NAME} wherever a request sent it,
// whole or inside a field (the token of an Authorization header), before anything is
// correlated: a secret is never taken from a response, never offered as a parameter, and the
// script the recording becomes holds its name, not its value.
func (c *converter) bindSecrets() {
	names := slices.Sorted(maps.Keys(c.opts.Secrets))
	// The longest first: a secret that holds another is bound whole.
	slices.SortStableFunc(names, func(a, b string) int { return len(c.opts.Secrets[b]) - len(c.opts.Secrets[a]) })
	bindings := map[string]*binding{}
	for _, x := range c.kept {
		for _, f := range x.req.fields() {
			if f.fixed {
				continue
			}
			for _, name := range names {
				v := c.opts.Secrets[name]
				if v == "" || !strings.Contains(f.text, v) || !c.fits(f, v) {
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

// maskSecrets leaves no secret's value in the conversion's result: what is left of one in the
// script (a query the script writes as recorded, a comment quoting a value) becomes its
// ${secret.NAME}, and every form of one in what the result shows people (values correlated,
// typed in or missed, warnings) reads as script.Masked.
func (c *converter) maskSecrets(src []byte) []byte {
	if len(c.opts.Secrets) == 0 {
		return src
	}
	values := slices.Collect(maps.Values(c.opts.Secrets))
	m := script.NewMasker(values)
	text := string(src)
	for name, v := range c.opts.Secrets {
		if v != "" && strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, "${"+script.SecretVar(name)+"}")
			if !slices.Contains(c.res.Secrets, name) {
				c.res.Secrets = append(c.res.Secrets, name)
				slices.Sort(c.res.Secrets)
			}
		}
	}
	r := c.res
	for i := range r.Correlations {
		r.Correlations[i].Value, r.Correlations[i].Expr = m.String(r.Correlations[i].Value), m.String(r.Correlations[i].Expr)
	}
	for _, ps := range [][]Parameter{r.Parameters, r.DataBound} {
		for i := range ps {
			ps[i].Value = m.String(ps[i].Value)
		}
	}
	for i := range r.Missed {
		r.Missed[i].Value, r.Missed[i].Source = m.String(r.Missed[i].Value), m.String(r.Missed[i].Source)
	}
	for i := range r.Warnings {
		r.Warnings[i] = m.String(r.Warnings[i])
	}
	return m.Bytes([]byte(text))
}
