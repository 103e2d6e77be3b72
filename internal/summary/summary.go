// Package summary holds the figures a run's results are told in, whoever ran it: `barrage run`
// writing its --out document, and the server summarizing the merged seconds of a run's agents.
// One label's figures come from one histogram, the same way in both.
package summary

import (
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
)

// Label is one request's, group's or hook's figures.
type Label struct {
	Name      string  `json:"name"`
	Count     int64   `json:"count"`
	RPS       float64 `json:"rps"`
	ErrorRate float64 `json:"error_rate"`
	BytesIn   int64   `json:"bytes_in"`
	BytesOut  int64   `json:"bytes_out"`
	MinMS     float64 `json:"min_ms"`
	MeanMS    float64 `json:"mean_ms"`
	P50MS     float64 `json:"p50_ms"`
	P90MS     float64 `json:"p90_ms"`
	P95MS     float64 `json:"p95_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
	// Histogram is the latency histogram in its binary encoding (base64 in JSON): merge it with
	// other runs' exactly.
	Histogram []byte `json:"histogram"`
}

// NewLabel is name's figures from st over elapsed.
func NewLabel(name string, st *metrics.Stats, elapsed time.Duration) Label {
	h := st.Latency
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	enc, _ := h.MarshalBinary()
	var rate float64
	if st.Requests > 0 {
		rate = float64(st.Failed()) / float64(st.Requests)
	}
	return Label{
		Name: name, Count: st.Requests, RPS: float64(st.Requests) / elapsed.Seconds(), ErrorRate: rate,
		BytesIn: st.BytesIn, BytesOut: st.BytesOut,
		MinMS: ms(h.Min()), MeanMS: ms(h.Mean()), P50MS: ms(h.Quantile(0.5)), P90MS: ms(h.Quantile(0.9)),
		P95MS: ms(h.Quantile(0.95)), P99MS: ms(h.Quantile(0.99)), MaxMS: ms(h.Max()), Histogram: enc,
	}
}

// Threshold is a threshold's verdict.
type Threshold struct {
	Check    string  `json:"check"`
	Observed float64 `json:"observed"`
	Passed   bool    `json:"passed"`
}

// Verdict says whether a generator, rather than the target, limited the load.
type Verdict struct {
	GeneratorLimited bool     `json:"generator_limited"`
	Reasons          []string `json:"reasons,omitempty"`
}

// Errors is st's errors by class, every class named.
func Errors(st *metrics.Stats) map[string]int64 {
	out := map[string]int64{}
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		out[c.String()] = st.Errors[c]
	}
	return out
}
