package summary

import (
	"encoding/csv"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// SeriesLabel is one label's figures in one second of a series, as the API and the CSV give them.
// A check's (kind check) is named "<request>: <name>" and has no times: they read 0.
type SeriesLabel struct {
	Name, Kind                 string
	Count, BytesIn, BytesOut   int64
	Errors                     map[string]int64
	P50MS, P95MS, P99MS, MaxMS float64
}

// NewSeriesLabel is the figures of label k whose second's stats are st.
func NewSeriesLabel(k metrics.Key, st *metrics.Stats) SeriesLabel {
	l := SeriesLabel{Name: k.Name, Kind: k.Kind.String(), Count: st.Requests, BytesIn: st.BytesIn, BytesOut: st.BytesOut, Errors: Errors(st)}
	if k.Kind == metrics.Check {
		l.Name = script.CheckLabelText(k.Name)
		return l
	}
	h := st.Latency
	l.P50MS, l.P95MS, l.P99MS, l.MaxMS = Millis(h.Quantile(0.5)), Millis(h.Quantile(0.95)), Millis(h.Quantile(0.99)), Millis(h.Max())
	return l
}

// SeriesCSV writes a run's per-second series as CSV while the run goes on, so that a long run's
// seconds need not be kept in memory: one row per second and label, with its kind (request,
// group, hook). The first error sticks and is returned by Flush.
type SeriesCSV struct {
	w   *csv.Writer
	err error
}

// NewSeriesCSV writes the header to w and returns the writer of the rows.
func NewSeriesCSV(w io.Writer) *SeriesCSV {
	s := &SeriesCSV{w: csv.NewWriter(w)}
	head := []string{"second", "kind", "label", "count", "rps"}
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		head = append(head, "errors_"+c.String())
	}
	head = append(head, "bytes_in", "bytes_out", "p50_ms", "p95_ms", "p99_ms", "max_ms", "cpu", "vus")
	s.err = s.w.Write(head)
	return s
}

// Write writes the rows of the run's second of index (0 for the first; the column counts from 1),
// in which the run had vus active and used cpu of its generator's machine. A last second cut
// short keeps its number; its rate is over the part it lasted.
func (s *SeriesCSV) Write(index int64, second *metrics.Snapshot, cpu float64, vus int64) {
	if s.err != nil {
		return
	}
	fms := func(ms float64) string { return strconv.FormatFloat(ms, 'f', 3, 64) }
	for _, k := range slices.SortedFunc(maps.Keys(second.Labels), metrics.Key.Compare) {
		l := NewSeriesLabel(k, second.Labels[k])
		rec := []string{strconv.FormatInt(index+1, 10), l.Kind, l.Name, strconv.FormatInt(l.Count, 10),
			strconv.FormatFloat(float64(l.Count)/max(second.Duration.Seconds(), 1e-9), 'f', 1, 64)}
		for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
			rec = append(rec, strconv.FormatInt(l.Errors[c.String()], 10))
		}
		rec = append(rec, strconv.FormatInt(l.BytesIn, 10), strconv.FormatInt(l.BytesOut, 10))
		if k.Kind == metrics.Check {
			rec = append(rec, "", "", "", "") // a check's tally has no times
		} else {
			rec = append(rec, fms(l.P50MS), fms(l.P95MS), fms(l.P99MS), fms(l.MaxMS))
		}
		rec = append(rec, strconv.FormatFloat(cpu, 'f', 3, 64), strconv.FormatInt(vus, 10))
		if s.err = s.w.Write(rec); s.err != nil {
			return
		}
	}
	s.w.Flush()
	s.err = s.w.Error()
}

// Flush writes what is buffered and returns the first error met.
func (s *SeriesCSV) Flush() error {
	s.w.Flush()
	if s.err == nil {
		s.err = s.w.Error()
	}
	return s.err
}

// SummaryCSVHeader are the columns of a summary as CSV: one row per label, all requests first,
// then each request, group and hook, and in the open model the latency from the schedule.
var SummaryCSVHeader = []string{"kind", "label", "count", "rps", "error_rate", "bytes_in", "bytes_out",
	"min_ms", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"}

// WriteCSV writes s as CSV: SummaryCSVHeader, then a row for all requests (kind total) and for
// each request, group and hook.
func (s *Summary) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(SummaryCSVHeader); err != nil {
		return err
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	row := func(kind string, l Label) error {
		return cw.Write([]string{kind, l.Name, strconv.FormatInt(l.Count, 10), f(l.RPS, 3), f(l.ErrorRate, 6),
			strconv.FormatInt(l.BytesIn, 10), strconv.FormatInt(l.BytesOut, 10), f(l.MinMS, 3), f(l.MeanMS, 3),
			f(l.P50MS, 3), f(l.P90MS, 3), f(l.P95MS, 3), f(l.P99MS, 3), f(l.MaxMS, 3)})
	}
	if err := row("total", s.Total); err != nil {
		return err
	}
	for _, set := range []struct {
		kind   string
		labels []Label
	}{{"request", s.Requests}, {"group", s.Groups}, {"step", s.Steps}, {"hook", s.Hooks}, {"schedule", scheduleLabels(s.Schedule)}} {
		for _, l := range set.labels {
			if err := row(set.kind, l); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func scheduleLabels(l *Label) []Label {
	if l == nil {
		return nil
	}
	return []Label{*l}
}
