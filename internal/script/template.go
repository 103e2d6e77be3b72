package script

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Lookup returns a variable's value and whether it is set.
type Lookup func(name string) (string, bool)

// Template is text with ${name} placeholders, parsed once so that rendering it only copies
// bytes. A name is a variable (user_agent) or an element plugin's output (rnd.email); $${ stands
// for a literal ${.
type Template struct {
	src   string
	parts []part
	vars  []string
	p     pos
}

// part is a literal run of text, already escaped for where it goes, or a variable.
type part struct {
	lit  string
	name string // a variable when not empty
	esc  escape
}

// escape is how a variable's value is encoded where the template puts it.
type escape uint8

const (
	escNone  escape = iota
	escJSON         // inside a JSON string
	escQuery        // a form-encoded name or value
)

// UnsetVariableError is the error of a Render that needs a variable Lookup does not have.
type UnsetVariableError struct {
	Name string
}

// Error names the variable.
func (e *UnsetVariableError) Error() string { return "variable ${" + e.Name + "} is not set" }

// Render appends the template's text to buf, with each variable's value from lookup, and
// returns the extended buffer. A variable lookup does not have stops it with an
// *UnsetVariableError.
func (t *Template) Render(lookup Lookup, buf []byte) ([]byte, error) {
	for _, p := range t.parts {
		if p.name == "" {
			buf = append(buf, p.lit...)
			continue
		}
		v, ok := lookup(p.name)
		if !ok {
			return buf, &UnsetVariableError{Name: p.name}
		}
		buf = appendEscaped(buf, v, p.esc)
	}
	return buf, nil
}

// RenderKnown is the template's text with the value of each variable lookup has and ${name}
// left for each it has not: what a request that could not be sent would have been, for a trace.
func (t *Template) RenderKnown(lookup Lookup) string {
	var buf []byte
	for _, p := range t.parts {
		if p.name == "" {
			buf = append(buf, p.lit...)
			continue
		}
		if v, ok := lookup(p.name); ok {
			buf = appendEscaped(buf, v, p.esc)
		} else {
			buf = append(buf, "${"+p.name+"}"...)
		}
	}
	return string(buf)
}

// Vars returns the names of the variables the template uses, each once, in order.
func (t *Template) Vars() []string { return t.vars }

// Literal returns the template's text and true when it uses no variable.
func (t *Template) Literal() (string, bool) {
	switch {
	case len(t.vars) > 0:
		return "", false
	case len(t.parts) == 0:
		return "", true
	}
	return t.parts[0].lit, true
}

// String returns the template as written: composed templates, such as a JSON body, show their
// encoded literal text around ${name} placeholders.
func (t *Template) String() string { return t.src }

// nameRe matches a variable name: an identifier, or a plugin's alias then dotted identifiers.
var nameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// identRe matches the name of a variable, column or plugin alias.
var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseTemplate splits s into literal and variable parts, none of them escaped.
func parseTemplate(s string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, errors.New("unterminated ${ (write $${ for a literal ${)")
			}
			name := strings.TrimSpace(s[i+2 : i+2+end])
			if !nameRe.MatchString(name) {
				if name == "" {
					return nil, errors.New("empty variable name in ${}")
				}
				return nil, errors.New("invalid variable name " + quote(name) + " in ${...}: use letters, digits and _, and a dot after a plugin's name")
			}
			if lit.Len() > 0 {
				parts = append(parts, part{lit: lit.String()})
				lit.Reset()
			}
			parts = append(parts, part{name: name})
			i += 2 + end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, part{lit: lit.String()})
	}
	return parts, nil
}

// builder composes a template from literal text and parsed templates, escaping both for the
// place they go.
type builder struct {
	parts []part
	lit   strings.Builder // literal text not yet a part: a form of many fields is not copied at each
	src   strings.Builder
}

// text appends literal text that is already encoded.
func (b *builder) text(s string) {
	if s == "" {
		return
	}
	b.src.WriteString(strings.ReplaceAll(s, "${", "$${"))
	b.lit.WriteString(s)
}

// flush makes the pending literal text a part.
func (b *builder) flush() {
	if b.lit.Len() == 0 {
		return
	}
	if n := len(b.parts); n > 0 && b.parts[n-1].name == "" {
		b.parts[n-1].lit += b.lit.String() // literal parts stay one: Literal reads the first
	} else {
		b.parts = append(b.parts, part{lit: b.lit.String()})
	}
	b.lit.Reset()
}

// add appends parsed parts, escaping their literal text now and their variables when rendered.
func (b *builder) add(parts []part, esc escape) {
	for _, p := range parts {
		if p.name == "" {
			b.text(string(appendEscaped(nil, p.lit, esc)))
			continue
		}
		b.src.WriteString("${" + p.name + "}")
		b.flush()
		b.parts = append(b.parts, part{name: p.name, esc: esc})
	}
}

// template returns the composed template.
func (b *builder) template(p pos) *Template {
	b.flush()
	t := &Template{src: b.src.String(), parts: slices.Clip(b.parts), p: p}
	for _, x := range t.parts {
		if x.name != "" && !slices.Contains(t.vars, x.name) {
			t.vars = append(t.vars, x.name)
		}
	}
	return t
}

// newTemplate parses s into a template whose variables are inserted as they are.
func newTemplate(s string, p pos) (*Template, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	var b builder
	b.add(parts, escNone)
	t := b.template(p)
	t.src = s
	return t, nil
}

// MustTemplate parses s as a template and panics if it is malformed; it is meant for tests and
// for code building scripts by hand.
func MustTemplate(s string) *Template {
	t, err := newTemplate(s, pos{})
	if err != nil {
		panic("script: " + err.Error())
	}
	return t
}

func appendEscaped(buf []byte, s string, esc escape) []byte {
	switch esc {
	case escJSON:
		return appendJSONString(buf, s)
	case escQuery:
		return append(buf, url.QueryEscape(s)...)
	}
	return append(buf, s...)
}

const hexDigits = "0123456789abcdef"

// JSONEscape is s as a JSON body's template writes it inside a string, without the quotes.
func JSONEscape(s string) string { return string(appendJSONString(nil, s)) }

// appendJSONString appends s escaped for the inside of a JSON string, without the quotes.
// Invalid UTF-8 becomes U+FFFD.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return buf
}

// quote quotes s for an error message.
func quote(s string) string {
	const max = 60
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
