package script

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxScenarios bounds a script's scenarios.
const maxScenarios = 16

// scenarios reads the scenarios section: names to { session, load, tags }.
func (d *decoder) scenarios(n *yaml.Node, p pos, s *Script, groups, names map[string]bool) []*Scenario {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping of scenario names to their session, load and tags, not %s", kindName(n))
		return nil
	}
	var out []*Scenario
	for _, kv := range d.pairs(n, p) {
		sc := &Scenario{Name: kv.key}
		if !identRe.MatchString(kv.key) {
			d.add(kv.keyPos, "a scenario's name is letters, digits and _, not starting with a digit")
		}
		o := d.object(kv.val, kv.valPos, "session", "load", "tags")
		if o == nil {
			continue
		}
		if sn, sp := o.need("session"); sn != nil {
			sc.Session = d.session(sn, sp, s, groups, names)
		}
		if ln, lp := o.need("load"); ln != nil {
			sc.Load = d.load(ln, lp)
		}
		if tn, tp := o.get("tags"); tn != nil {
			sc.Tags = map[string]string{}
			for _, t := range d.pairs(tn, tp) {
				v, ok := d.str(t.val, t.valPos)
				if !ok {
					continue
				}
				if strings.IndexFunc(t.key+v, notPrintable) >= 0 {
					d.add(t.valPos, "must not contain control characters (nor bidirectional ones, which reorder what a line shows)")
					continue
				}
				sc.Tags[t.key] = v
			}
		}
		out = append(out, sc)
	}
	switch {
	case len(out) == 0:
		d.add(p, "must name at least one scenario")
	case len(out) > maxScenarios:
		d.add(p, "at most %d scenarios", maxScenarios)
	}
	return out
}

// together is scenarios' sessions and loads as one: every group in order, and a load of all
// their VUs (an open one's most) for the longest of their durations, open when all are.
func together(scenarios []*Scenario) (Session, Workload) {
	ses := Session{Cookies: true}
	w := Workload{Model: Open}
	for _, sc := range scenarios {
		ses.Groups = append(ses.Groups, sc.Session.Groups...)
		if sc.Load.Model != Open {
			w.Model = Closed
		}
		w.VUs += max(sc.Load.VUs, sc.Load.MaxVUs)
		w.Duration = max(w.Duration, sc.Load.Duration)
		w.GracefulStop = max(w.GracefulStop, sc.Load.GracefulStop)
	}
	if w.Model == Open {
		w.MaxVUs, w.VUs = w.VUs, 0
	}
	return ses, w
}
