package script

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/quantity"
)

// load reads the load section.
func (d *decoder) load(n *yaml.Node, p pos) Workload {
	l := Workload{GracefulStop: defaultGrace}
	o := d.object(n, p, "vus", "ramp_up", "duration", "iterations", "graceful_stop", "rate", "stages", "max_vus", "source_addresses")
	if o == nil {
		return l
	}
	closed := o.has("vus") || o.has("ramp_up") || o.has("iterations")
	open := o.has("rate") || o.has("stages") || o.has("max_vus")
	if sn, _ := o.get("stages"); sn != nil && vuStages(sn) && !o.has("rate") && !o.has("max_vus") {
		// Stages of VU counts, not rates: the closed model, ramping its VUs.
		l.Model = Closed
		if closed {
			d.add(p, "stages of VUs go without vus, ramp_up and iterations: the stages say how many VUs, and when")
		}
		d.stages(o, &l, "vus", func(n *yaml.Node, p pos) (float64, bool) {
			v, ok := d.integer(n, p, 0, maxVUs)
			l.VUs = max(l.VUs, v)
			return float64(v), ok
		})
		if l.VUs == 0 && len(l.Stages) > 0 {
			d.add(at(sn, field(p.path, "stages")), "never runs a VU: give a stage more than 0")
		}
		closed, open = false, false
	}
	switch {
	case l.Model == Closed:
	case closed && open:
		d.add(p, "mixes the closed model (vus, ramp_up, iterations) with the open model (rate, stages, max_vus): choose one")
	case closed:
		l.Model = Closed
		d.closedLoad(o, &l)
	case open:
		l.Model = Open
		d.openLoad(o, &l)
	default:
		d.add(p, "needs vus (closed model) or rate or stages (open model)")
	}
	if n, p := o.get("graceful_stop"); n != nil {
		l.GracefulStop, _ = d.durationIn(n, p, 0, time.Hour)
	}
	if n, p := o.get("source_addresses"); n != nil {
		l.SourceAddrs = d.sourceAddrs(n, p)
	}
	return l
}

// closedLoad reads the closed model's keys.
func (d *decoder) closedLoad(o *obj, l *Workload) {
	if n, p := o.need("vus"); n != nil {
		l.VUs, _ = d.integer(n, p, 1, maxVUs)
	}
	if n, p := o.get("iterations"); n != nil {
		l.Iterations, _ = d.integer(n, p, 1, maxIterations)
	}
	dn, dp := o.get("duration")
	if dn != nil {
		l.Duration, _ = d.durationIn(dn, dp, time.Second, maxRunDuration)
	}
	if n, p := o.get("ramp_up"); n != nil {
		var ok bool
		if l.RampUp, ok = d.durationIn(n, p, 0, maxRunDuration); ok && l.Duration > 0 && l.RampUp > l.Duration {
			d.add(p, "is longer than duration")
		}
	}
	if dn == nil && !o.has("iterations") {
		d.add(o.p, "needs duration, iterations or both (the run ends at whichever comes first)")
	}
}

// openLoad reads the open model's keys.
func (d *decoder) openLoad(o *obj, l *Workload) {
	if n, p := o.need("max_vus"); n != nil {
		l.MaxVUs, _ = d.integer(n, p, 1, maxVUs)
	}
	rn, rp := o.get("rate")
	sn, sp := o.get("stages")
	dn, dp := o.get("duration")
	switch {
	case rn != nil && sn != nil:
		d.add(sp, "goes without rate: give either rate and duration, or stages")
	case rn != nil:
		r, ok := d.rate(rn, rp, false)
		if dn == nil {
			d.add(pos{path: field(o.p.path, "duration"), line: o.p.line, col: o.p.col}, "required with rate")
			return
		}
		dur, dok := d.durationIn(dn, dp, time.Second, maxRunDuration)
		if ok && dok {
			l.Stages = []Stage{{From: r, To: r, Duration: dur}}
			l.Duration = dur
		}
	case sn != nil:
		d.stages(o, l, "rate", func(n *yaml.Node, p pos) (float64, bool) { return d.rate(n, p, true) })
	default:
		d.add(o.p, "the open model needs rate and duration, or stages")
	}
}

// vuStages says whether stages are written in VUs (numbers) rather than rates (200/s).
func vuStages(n *yaml.Node) bool {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return false
	}
	c := n.Content[0].Content
	for i := 0; i+1 < len(c); i += 2 {
		switch c[i].Value {
		case "vus":
			return true
		case "ramp_to":
			return c[i+1].Kind == yaml.ScalarNode && c[i+1].Tag == "!!int"
		}
	}
	return false
}

// stages reads the stages of either model: each holds a level (under hold: rate, or vus) or
// ramps to one (ramp_to) over its duration; level reads a level, a rate or a number of VUs.
func (d *decoder) stages(o *obj, l *Workload, hold string, level func(*yaml.Node, pos) (float64, bool)) {
	sn, sp := o.get("stages")
	if dn, dp := o.get("duration"); dn != nil {
		d.add(dp, "goes without stages: the stages' durations add up to the run's")
	}
	list := d.seq(sn, sp)
	if sn.Kind == yaml.SequenceNode && (len(list) == 0 || len(list) > maxStages) {
		d.add(sp, "must hold from 1 to %d stages", maxStages)
		return
	}
	prev := 0.0
	for i, c := range list {
		cp := at(c, index(sp.path, i))
		so := d.object(c, cp, hold, "ramp_to", "duration")
		if so == nil {
			continue
		}
		st := Stage{From: prev}
		switch kind := so.exactlyOne("a stage", hold, "ramp_to"); kind {
		case hold, "ramp_to":
			n, p := so.get(kind)
			r, ok := level(n, p)
			if !ok {
				continue
			}
			st.To = r
			if kind == hold {
				st.From = r
			}
		default:
			continue
		}
		if n, p := so.need("duration"); n != nil {
			v, ok := d.durationIn(n, p, time.Second, maxRunDuration)
			if !ok {
				continue
			}
			st.Duration = v
		} else {
			continue
		}
		prev = st.To
		l.Stages = append(l.Stages, st)
		l.Duration += st.Duration
	}
	if l.Duration > maxRunDuration {
		d.add(sp, "add up to more than %s", quantity.FormatDuration(maxRunDuration))
	}
}

// rate reads an arrival rate such as 200/s; zero is allowed only in stages.
func (d *decoder) rate(n *yaml.Node, p pos, zero bool) (float64, bool) {
	s, ok := d.str(n, p)
	if !ok {
		return 0, false
	}
	r, err := quantity.ParseRate(s)
	switch {
	case err != nil:
		d.add(p, "%s", err)
	case r == 0 && !zero:
		d.add(p, "must be more than 0/s")
	case r > maxRate:
		d.add(p, "must be at most %s", quantity.FormatRate(maxRate))
	default:
		return r, true
	}
	return 0, false
}
