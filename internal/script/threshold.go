package script

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/quantity"
)

// Metric is what a threshold measures.
type Metric string

// The metrics a threshold can check. Latencies are of the requests in scope; error_rate is the
// share of requests that failed (no response, or a failed assertion or extraction).
const (
	P50       Metric = "p50"
	P90       Metric = "p90"
	P95       Metric = "p95"
	P99       Metric = "p99"
	P999      Metric = "p99.9"
	Avg       Metric = "avg"
	Min       Metric = "min"
	Max       Metric = "max"
	ErrorRate Metric = "error_rate"
	RPS       Metric = "rps"
	Count     Metric = "count"
)

var metrics = []Metric{P50, P90, P95, P99, P999, Avg, Min, Max, ErrorRate, RPS, Count}

// IsLatency reports whether m is a response time, whose threshold value is a duration.
func (m Metric) IsLatency() bool {
	switch m {
	case P50, P90, P95, P99, P999, Avg, Min, Max:
		return true
	}
	return false
}

// Percentile returns the percentile m stands for, such as 95 for p95, and whether it is one.
func (m Metric) Percentile() (float64, bool) {
	switch m {
	case P50, P90, P95, P99, P999:
		f, err := strconv.ParseFloat(string(m[1:]), 64)
		return f, err == nil
	}
	return 0, false
}

// Op is a threshold's comparison.
type Op string

// The comparisons of a threshold.
const (
	Less         Op = "<"
	LessEqual    Op = "<="
	Greater      Op = ">"
	GreaterEqual Op = ">="
)

// Threshold is a pass criterion of a run, such as "p95 < 300ms".
type Threshold struct {
	Source string `json:"source"` // the check as written, such as "p95 < 300ms over 30s"
	Metric Metric `json:"metric"`
	Op     Op     `json:"op"`
	// Value is the bound in the metric's unit: seconds for latencies, a fraction from 0 to 1
	// for error_rate (1% is 0.01), requests per second for rps, requests for count.
	Value float64 `json:"value"`
	// Latency is the bound of a latency metric as a duration; Value holds it in seconds.
	Latency time.Duration `json:"latency_ns,omitempty"`
	// Window is the sliding window the metric is computed over; 0 means the whole run.
	Window time.Duration `json:"window_ns,omitempty"`
	// Abort stops the run as soon as the threshold is broken.
	Abort bool `json:"abort,omitempty"`
	// Request limits the threshold to one request's metrics, by name; empty means all requests.
	Request string `json:"request,omitempty"`
}

// Text is the threshold in full, the settings of its mapping form included:
// `p95 < 300ms over 30s for "checkout", abort`.
func (t *Threshold) Text() string {
	s := t.Source
	if t.Window > 0 && !strings.Contains(s, " over ") {
		s += " over " + quantity.FormatDuration(t.Window)
	}
	if t.Request != "" {
		s += " for " + strconv.Quote(t.Request)
	}
	if t.Abort {
		s += ", abort"
	}
	return s
}

// Worse says whether observed a is further from holding than b: higher for an upper bound,
// lower for a lower one.
func (t *Threshold) Worse(a, b float64) bool {
	if t.Op == Greater || t.Op == GreaterEqual {
		return a < b
	}
	return a > b
}

// Holds reports whether an observed value, in the unit of Value, meets the threshold.
func (t *Threshold) Holds(observed float64) bool {
	switch t.Op {
	case Less:
		return observed < t.Value
	case LessEqual:
		return observed <= t.Value
	case Greater:
		return observed > t.Value
	case GreaterEqual:
		return observed >= t.Value
	}
	return false
}

var thresholdRe = regexp.MustCompile(`^\s*([a-z_]+[0-9.]*)\s*(<=|>=|<|>)\s*(\S+?)(?:\s+over\s+(\S+))?\s*$`)

// ParseThreshold parses a check such as "p95 < 300ms", "error_rate < 1%" or
// "rps > 500 over 30s" into a Threshold without Abort or Request.
func ParseThreshold(s string) (*Threshold, error) {
	m := thresholdRe.FindStringSubmatch(s)
	if m == nil {
		return nil, errors.New(`must read "<metric> <op> <value>", optionally followed by "over <window>", as in "p95 < 300ms" or "error_rate < 1% over 30s"`)
	}
	t := &Threshold{Source: strings.TrimSpace(s), Metric: Metric(m[1]), Op: Op(m[2])}
	known := false
	for _, k := range metrics {
		known = known || k == t.Metric
	}
	if !known {
		return nil, fmt.Errorf("unknown metric %q: use p50, p90, p95, p99, p99.9, avg, min, max, error_rate, rps or count", m[1])
	}
	var err error
	switch {
	case t.Metric.IsLatency():
		t.Latency, err = quantity.ParseDuration(m[3])
		t.Value = t.Latency.Seconds()
	case t.Metric == ErrorRate:
		t.Value, err = parseRatio(m[3])
	case t.Metric == RPS:
		t.Value, err = quantity.ParsePerSecond(m[3])
	case t.Metric == Count:
		var n int
		n, err = strconv.Atoi(m[3])
		if err != nil || n < 0 {
			err = errors.New("must be a whole number of requests, as in 1000")
		}
		t.Value = float64(n)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: value %q: %w", t.Metric, m[3], err)
	}
	if m[4] != "" {
		t.Window, err = quantity.ParseDuration(m[4])
		if err != nil {
			return nil, fmt.Errorf("window %q: %w", m[4], err)
		}
		if t.Window < time.Second {
			return nil, fmt.Errorf("window %q: must be at least 1s", m[4])
		}
	}
	return t, nil
}

// parseRatio reads "1%" or "0.01" as 0.01.
func parseRatio(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("must be a percentage such as 1% or a fraction such as 0.01")
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return 0, errors.New("must be between 0% and 100%")
	}
	return f, nil
}

// thresholds reads the thresholds section; names are the script's request names.
func (d *decoder) thresholds(n *yaml.Node, p pos, names map[string]bool) []*Threshold {
	var out []*Threshold
	for i, c := range d.seq(n, p) {
		cp := at(c, index(p.path, i))
		if c.Kind == yaml.ScalarNode {
			if t := d.thresholdCheck(c, cp); t != nil {
				out = append(out, t)
			}
			continue
		}
		o := d.object(c, cp, "check", "over", "abort", "request")
		if o == nil {
			continue
		}
		n, kp := o.need("check")
		if n == nil {
			continue
		}
		t := d.thresholdCheck(n, kp)
		if t == nil {
			continue
		}
		ok := true
		if n, p := o.get("over"); n != nil {
			if t.Window != 0 {
				d.add(p, "the check already says over %s", quantity.FormatDuration(t.Window))
				ok = false
			} else if t.Window, ok = d.durationIn(n, p, time.Second, maxRunDuration); !ok {
				continue
			}
		}
		if n, p := o.get("abort"); n != nil {
			var aok bool
			t.Abort, aok = d.boolean(n, p)
			ok = ok && aok
		}
		if n, p := o.get("request"); n != nil {
			name, rok := d.str(n, p)
			if rok && !names[name] {
				d.add(p, "no request is named %s", quote(name))
				rok = false
			}
			t.Request = name
			ok = ok && rok
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// thresholdCheck reads a threshold's check, such as "p95 < 300ms", as ParseThreshold reads it;
// nil when it is refused (the error is recorded).
func (d *decoder) thresholdCheck(n *yaml.Node, p pos) *Threshold {
	s, ok := d.str(n, p)
	if !ok {
		return nil
	}
	t, err := ParseThreshold(s)
	if err != nil {
		d.add(p, "%s", err)
		return nil
	}
	return t
}
