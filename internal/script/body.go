package script

import (
	"mime"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// body reads a request body.
func (d *decoder) body(n *yaml.Node, p pos) *Body {
	o := d.object(n, p, "json", "form", "raw", "file", "multipart", "content_type")
	if o == nil {
		return nil
	}
	b := &Body{}
	if n, p := o.get("content_type"); n != nil {
		ct, ok := d.str(n, p)
		if ok {
			if _, _, err := mime.ParseMediaType(ct); err != nil {
				d.add(p, "is not a media type such as text/plain; charset=utf-8")
				ok = false
			}
		}
		if !ok {
			return nil
		}
		b.ContentType = ct
	}
	kind := o.exactlyOne("a body", "json", "form", "raw", "file", "multipart")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	switch kind {
	case "json":
		b.Kind = JSONBody
		if b.ContentType == "" {
			b.ContentType = "application/json"
		}
		var tb builder
		if !d.jsonBody(n, vp, &tb) {
			return nil
		}
		b.Content = tb.template(vp)
	case "form":
		b.Kind = FormBody
		if b.ContentType == "" {
			b.ContentType = "application/x-www-form-urlencoded"
		}
		params := d.params(n, vp)
		if params == nil && n.Kind != yaml.MappingNode {
			return nil
		}
		b.Content = compileQuery(params)
		b.Content.p = vp
	case "raw":
		b.Kind = RawBody
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		t, err := newTemplate(s, vp)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		b.Content = t
	case "file":
		b.Kind = FileBody
		if b.File = d.file(n, vp); b.File == nil {
			return nil
		}
		if b.ContentType == "" {
			b.ContentType = "application/octet-stream"
		}
	case "multipart":
		b.Kind = MultipartBody
		if b.ContentType != "" {
			d.add(p, "a multipart body sets its own content_type, with its boundary")
			return nil
		}
		if b.Parts = d.multipart(n, vp); b.Parts == nil {
			return nil
		}
	}
	return b
}

// multipart reads a multipart body's parts: name to a field's value, or to a file as
// { file, filename, content_type }.
func (d *decoder) multipart(n *yaml.Node, p pos) []*Part {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping of part names to field values or files, not %s", kindName(n))
		return nil
	}
	var parts []*Part
	ok := true
	for _, kv := range d.pairs(n, p) {
		part := &Part{Name: kv.key}
		if strings.ContainsAny(kv.key, "\"\r\n") || kv.key == "" {
			d.add(kv.keyPos, "a part's name may not be empty or hold quotes or line breaks")
			ok = false
			continue
		}
		if kv.val.Kind != yaml.MappingNode {
			if part.Value = d.template(kv.val, kv.valPos); part.Value == nil {
				ok = false
			}
			parts = append(parts, part)
			continue
		}
		o := d.object(kv.val, kv.valPos, "file", "filename", "content_type")
		if o == nil {
			ok = false
			continue
		}
		if fn, fp := o.need("file"); fn == nil {
			ok = false
		} else if part.File = d.file(fn, fp); part.File == nil {
			ok = false
		} else {
			part.Filename = path.Base(part.File.Name)
			if strings.ContainsAny(part.Filename, "\"\r\n") {
				d.add(fp, "the file's name holds a quote or a line break, which a part's header cannot carry: give the part a filename")
				ok = false
			}
		}
		if fn, fp := o.get("filename"); fn != nil {
			if name, sok := d.str(fn, fp); !sok || name == "" || strings.ContainsAny(name, "\"\r\n") {
				d.add(fp, "must be a file name without quotes or line breaks")
				ok = false
			} else {
				part.Filename = name
			}
		}
		part.ContentType = "application/octet-stream"
		if cn, cp := o.get("content_type"); cn != nil {
			ct, sok := d.str(cn, cp)
			if _, _, err := mime.ParseMediaType(ct); sok && err != nil || strings.ContainsAny(ct, "\r\n") {
				d.add(cp, "is not a media type such as image/png")
				sok = false
			}
			part.ContentType, ok = ct, ok && sok
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 && ok {
		d.add(p, "must name at least one part")
	}
	if !ok || len(parts) == 0 {
		return nil
	}
	return parts
}

// jsonBody writes n as JSON into b, parsing its strings as templates whose variables are
// escaped for a JSON string.
func (d *decoder) jsonBody(n *yaml.Node, p pos, b *builder) bool {
	switch n.Kind {
	case yaml.MappingNode:
		b.text("{")
		ok := true
		for i, kv := range d.pairs(n, p) {
			if i > 0 {
				b.text(",")
			}
			b.text(`"` + string(appendJSONString(nil, kv.key)) + `":`)
			ok = d.jsonBody(kv.val, kv.valPos, b) && ok
		}
		b.text("}")
		return ok
	case yaml.SequenceNode:
		b.text("[")
		ok := true
		for i, c := range n.Content {
			if i > 0 {
				b.text(",")
			}
			ok = d.jsonBody(c, at(c, index(p.path, i)), b) && ok
		}
		b.text("]")
		return ok
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.text("null")
			return true
		case "!!bool":
			v, ok := d.boolean(n, p)
			if v {
				b.text("true")
			} else {
				b.text("false")
			}
			return ok
		case "!!int", "!!float":
			num, ok := jsonNumber(n)
			if !ok {
				d.add(p, "%s is not a number JSON can hold", quote(n.Value))
				return false
			}
			b.text(num)
			return true
		}
		parts, err := parseTemplate(n.Value)
		if err != nil {
			d.add(p, "%s", err)
			return false
		}
		b.text(`"`)
		b.add(parts, escJSON)
		b.text(`"`)
		return true
	}
	d.add(p, "unsupported value")
	return false
}
