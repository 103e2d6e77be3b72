package script

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	metricNameRe = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRe  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// ParseMonitorSeries reads a series selector as Prometheus writes one, with label equality
// only: node_load1, or node_cpu_seconds_total{mode="iowait",cpu="0"}.
func ParseMonitorSeries(src string) (*MonitorSeries, error) {
	name, rest, braced := strings.Cut(strings.TrimSpace(src), "{")
	if !metricNameRe.MatchString(name) {
		return nil, fmt.Errorf("%s: want a metric name, then label matchers in braces: node_cpu_seconds_total{mode=\"iowait\"}", quote(src))
	}
	sel := &MonitorSeries{Source: src, Metric: name, Labels: map[string]string{}}
	if !braced {
		return sel, nil
	}
	body, ok := strings.CutSuffix(rest, "}")
	if !ok {
		return nil, fmt.Errorf("%s: the label matchers end with }", quote(src))
	}
	for body = strings.TrimSpace(body); body != ""; {
		label, after, ok := strings.Cut(body, "=")
		label = strings.TrimSpace(label)
		if !ok || !labelNameRe.MatchString(label) || !strings.HasPrefix(strings.TrimSpace(after), `"`) {
			return nil, fmt.Errorf("%s: want label=\"value\" matchers (only equality)", quote(src))
		}
		value, tail, err := quotedValue(strings.TrimSpace(after)[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", quote(src), err)
		}
		if _, dup := sel.Labels[label]; dup {
			return nil, fmt.Errorf("%s: label %s is matched twice", quote(src), label)
		}
		sel.Labels[label] = value
		tail = strings.TrimSpace(tail)
		if tail != "" && !strings.HasPrefix(tail, ",") {
			return nil, fmt.Errorf("%s: separate matchers with commas", quote(src))
		}
		body = strings.TrimSpace(strings.TrimPrefix(tail, ","))
	}
	return sel, nil
}

// quotedValue reads a label value up to its closing quote (\" \\ \n escaped) and returns it
// and what follows.
func quotedValue(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("a label value ends in a lone \\")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("a label value has no closing quote")
}

// maxMonitors and maxMonitorSeries bound what a run scrapes each second.
const (
	maxMonitors      = 8
	maxMonitorSeries = 16
)

// monitors reads the monitors section.
func (d *decoder) monitors(n *yaml.Node, p pos) []*Monitor {
	var out []*Monitor
	seen := make(map[string]bool)
	items := d.seq(n, p)
	if len(items) > maxMonitors {
		d.add(p, "at most %d monitors", maxMonitors)
		return nil
	}
	for i, c := range items {
		ep := at(c, index(p.path, i))
		o := d.object(c, ep, "name", "url", "series")
		if o == nil {
			continue
		}
		m := &Monitor{}
		if n, p := o.need("name"); n != nil {
			m.Name, _ = d.name(n, p)
			if seen[m.Name] {
				d.add(p, "another monitor is already named %s", quote(m.Name))
			}
			seen[m.Name] = true
		}
		if n, p := o.need("url"); n != nil {
			if raw, ok := d.str(n, p); ok {
				u, err := url.Parse(raw)
				if err == nil && u.Port() != "" {
					if n, perr := strconv.Atoi(u.Port()); perr != nil || n < 1 || n > 65535 {
						err = errors.New("bad port")
					}
				}
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
					d.add(p, "must be an absolute http(s) URL without credentials, such as http://127.0.0.1:9100/metrics")
				} else {
					m.URL = raw
				}
			}
		}
		if n, p := o.need("series"); n != nil {
			list := d.seq(n, p)
			if len(list) == 0 || len(list) > maxMonitorSeries {
				d.add(p, "name from 1 to %d series", maxMonitorSeries)
			}
			for j, sn := range list {
				sp := at(sn, index(p.path, j))
				src, ok := d.str(sn, sp)
				if !ok {
					continue
				}
				if strings.IndexFunc(src, notPrintable) >= 0 {
					d.add(sp, "must not contain control characters (nor bidirectional ones, which reorder what a line shows)")
					continue
				}
				sel, err := ParseMonitorSeries(src)
				if err != nil {
					d.add(sp, "%v", err)
					continue
				}
				if slices.ContainsFunc(m.Series, func(o *MonitorSeries) bool { return o.Source == sel.Source }) {
					d.add(sp, "%s is named twice", quote(src))
					continue
				}
				m.Series = append(m.Series, sel)
			}
		}
		out = append(out, m)
	}
	return out
}
