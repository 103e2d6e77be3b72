package script

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// wsAsHTTP is a WebSocket URL node with its ws or wss scheme written http or https, as the
// upgrade's request goes; other nodes as they are.
func wsAsHTTP(n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.ScalarNode {
		return n
	}
	c := *n
	lower := strings.ToLower(c.Value)
	switch {
	case strings.HasPrefix(lower, "ws://"):
		c.Value = "http://" + c.Value[len("ws://"):]
	case strings.HasPrefix(lower, "wss://"):
		c.Value = "https://" + c.Value[len("wss://"):]
	}
	return &c
}

// websocket reads a WebSocket request's steps: { send: TEXT } or { receive: NAME?, timeout,
// extract, assert }.
func (d *decoder) websocket(n *yaml.Node, p pos, o *obj, r *Request, names map[string]bool) *WebSocket {
	for _, k := range []string{"method", "body", "redirects", "http2", "plugins"} {
		if o.has(k) {
			_, kp := o.get(k)
			d.add(kp, "a websocket request takes no %s", k)
		}
	}
	ws := &WebSocket{Connect: r.Name + " connect"}
	label := func(name string, p pos) string {
		if names[name] {
			d.add(p, "another request or step is already labelled %s; labels must be unique", quote(name))
		}
		names[name] = true
		return name
	}
	label(ws.Connect, p)
	items := d.nonEmpty(n, p, "must list at least one step")
	receives := 0
	for i, c := range items {
		cp := at(c, index(p.path, i))
		so := d.object(c, cp, "send", "receive", "timeout", "extract", "assert")
		if so == nil {
			continue
		}
		kind := so.exactlyOne("a step", "send", "receive")
		st := &WSStep{Timeout: r.Timeout}
		switch kind {
		case "send":
			sn, sp := so.get("send")
			st.Send = d.template(sn, sp)
			for _, k := range []string{"timeout", "extract", "assert"} {
				if so.has(k) {
					_, kp := so.get(k)
					d.add(kp, "belongs to a receive step, not a send")
				}
			}
		case "receive":
			receives++
			st.Name = fmt.Sprintf("%s receive %d", r.Name, receives)
			if rn, rp := so.get("receive"); rn.Kind == yaml.ScalarNode && rn.Tag != "!!null" && rn.Value != "" {
				st.Name, _ = d.name(rn, rp)
			} else if rn.Kind != yaml.ScalarNode {
				d.add(rp, "must be the step's label, or empty")
			}
			label(st.Name, cp)
			if tn, tp := so.get("timeout"); tn != nil {
				st.Timeout, _ = d.durationIn(tn, tp, time.Millisecond, maxTimeout)
			}
			if en, ep := so.get("extract"); en != nil {
				for j, e := range d.seq(en, ep) {
					if x := d.extractor(e, at(e, index(ep.path, j))); x != nil {
						if x.Kind == ExtractHeader || x.Kind == ExtractCookie {
							d.add(at(e, index(ep.path, j)), "a message has no headers or cookies: use json or regex")
							continue
						}
						st.Extract = append(st.Extract, x)
					}
				}
			}
			if an, ap := so.get("assert"); an != nil {
				named := map[string]bool{}
				for j, e := range d.seq(an, ap) {
					if a := d.assertion(e, at(e, index(ap.path, j))); a != nil && d.checkNamed(named, a, at(e, index(ap.path, j))) {
						if a.Kind == AssertStatus {
							d.add(at(e, index(ap.path, j)), "a message has no status: check its body")
							continue
						}
						st.Assert = append(st.Assert, a)
					}
				}
			}
		default:
			continue
		}
		ws.Steps = append(ws.Steps, st)
	}
	// The upgrade answers 101: that is its success, unless the script says otherwise.
	for _, a := range r.Assert {
		if a.Implied {
			a.Status = []StatusRange{{101, 101}}
		}
	}
	return ws
}
