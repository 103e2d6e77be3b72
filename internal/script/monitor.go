package script

import (
	"fmt"
	"regexp"
	"strings"
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
