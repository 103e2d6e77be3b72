package script

import (
	"errors"
	"net/url"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// hasHTTPScheme reports whether s starts with http:// or https://, in any case.
func hasHTTPScheme(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// checkURLText reports spaces and control characters in the literal text of a URL template.
func (d *decoder) checkURLText(t *Template, p pos) bool {
	for _, x := range t.parts {
		if x.name == "" && strings.IndexFunc(x.lit, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0 {
			d.add(p, "must not contain spaces or control characters; encode them, a space as %%20")
			return false
		}
	}
	return true
}

// checkAbsolute checks that t, a template starting with http:// or https://, makes a URL with
// a host, rendering each variable as x.
func (d *decoder) checkAbsolute(t *Template, p pos) bool {
	sample, _ := t.Render(func(string) (string, bool) { return "x", true }, nil)
	u, err := url.Parse(string(sample))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		d.add(p, "is not a valid URL: %v", err)
		return false
	}
	if u.Host == "" {
		d.add(p, "has no host")
		return false
	}
	return true
}

// urlTemplate reads a URL as a template and checks its text; t is nil when it is refused
// (the error is recorded).
func (d *decoder) urlTemplate(n *yaml.Node, p pos) (string, *Template) {
	s, ok := d.str(n, p)
	if !ok {
		return "", nil
	}
	t, err := newTemplate(s, p)
	if err != nil {
		d.add(p, "%s", err)
		return "", nil
	}
	if !d.checkURLText(t, p) {
		return "", nil
	}
	return s, t
}

// baseURL reads base_url: an absolute http(s) URL, which may use constants and environment
// variables.
func (d *decoder) baseURL(n *yaml.Node, p pos) *Template {
	s, t := d.urlTemplate(n, p)
	if t == nil {
		return nil
	}
	switch {
	case len(t.parts) > 0 && t.parts[0].name != "":
		return t // starts with a variable: checked when the run starts
	case !hasHTTPScheme(s):
		d.add(p, "must be an absolute http(s) URL, such as http://127.0.0.1:8080")
		return nil
	case !d.checkAbsolute(t, p):
		return nil
	case strings.ContainsAny(s, "?#"):
		d.add(p, "must not have a query or a fragment")
		return nil
	}
	return t
}

// requestURL reads a request's url, prefixing a relative one with the base URL.
func (d *decoder) requestURL(n *yaml.Node, p pos, base *Template) *Template {
	s, t := d.urlTemplate(n, p)
	if t == nil {
		return nil
	}
	switch {
	case s == "":
		d.add(p, "must not be empty")
	case t.parts[0].name != "":
		return t // starts with a variable, such as an extracted Location: checked when sent
	case strings.HasPrefix(s, "/"):
		if base == nil {
			if !d.badBase {
				d.add(p, "starts with / but the script has no base_url")
			}
			return nil
		}
		var b builder
		b.add(base.parts, escNone)
		b.flush()
		if last := len(b.parts) - 1; b.parts[last].name == "" {
			b.parts[last].lit = strings.TrimSuffix(b.parts[last].lit, "/")
		}
		b.add(t.parts, escNone)
		joined := b.template(p)
		joined.src = strings.TrimSuffix(base.src, "/") + s
		return joined
	case !hasHTTPScheme(s):
		d.add(p, "must be an absolute http(s) URL or start with /")
	case d.checkAbsolute(t, p):
		return t
	}
	return nil
}
