package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Trend is a test's ended runs, oldest first, in the figures that tell whether it got better
// or worse: requests/s, p50, p95, p99 and error rate, all requests together and each request,
// with its baseline and each run's verdict against the baseline it was compared with.
type Trend struct {
	TestID        uuid.UUID  `json:"test_id"`
	BaselineRunID *uuid.UUID `json:"baseline_run_id"`
	Runs          []TrendRun `json:"runs"`
}

// TrendRun is one run of a trend.
type TrendRun struct {
	RunID     uuid.UUID        `json:"run_id"`
	State     barrage.RunState `json:"state"`
	CreatedAt time.Time        `json:"created_at"`
	// Revision is the test's revision the run ran.
	Revision int `json:"revision"`
	// Baseline says the run is the test's baseline now.
	Baseline bool `json:"baseline"`
	// ComparedWith is the baseline the run was held against when it ended, and Verdict the
	// comparison's: improved, regressed or unchanged. Both absent when it had none.
	ComparedWith     *uuid.UUID     `json:"compared_with,omitempty"`
	Verdict          string         `json:"verdict,omitempty"`
	ThresholdsFailed int            `json:"thresholds_failed"`
	Total            TrendFigures   `json:"total"`
	Requests         []TrendFigures `json:"requests"`
}

// TrendFigures are one label's figures in a run of a trend.
type TrendFigures struct {
	Name      string  `json:"name"`
	Count     int64   `json:"count"`
	RPS       float64 `json:"rps"`
	P50MS     float64 `json:"p50_ms"`
	P95MS     float64 `json:"p95_ms"`
	P99MS     float64 `json:"p99_ms"`
	ErrorRate float64 `json:"error_rate"`
}

// NewTrend is the trend of test's runs, given newest first as the store reads them.
func NewTrend(test uuid.UUID, baseline *uuid.UUID, runs []barrage.TrendRun) (Trend, error) {
	t := Trend{TestID: test, BaselineRunID: baseline, Runs: make([]TrendRun, 0, len(runs))}
	for _, r := range slices.Backward(runs) {
		var f struct {
			Total      TrendFigures   `json:"total"`
			Requests   []TrendFigures `json:"requests"`
			Thresholds []Threshold    `json:"thresholds"`
			Baseline   *uuid.UUID     `json:"baseline"`
			Verdict    string         `json:"verdict"`
		}
		if err := json.Unmarshal(r.Figures, &f); err != nil {
			return Trend{}, fmt.Errorf("run %s: summary: %w", r.ID, err)
		}
		tr := TrendRun{RunID: r.ID, State: r.State, CreatedAt: r.CreatedAt, Revision: r.Revision,
			Baseline: baseline != nil && *baseline == r.ID, ComparedWith: f.Baseline, Verdict: f.Verdict,
			Total: f.Total, Requests: f.Requests}
		if tr.Requests == nil {
			tr.Requests = []TrendFigures{}
		}
		for _, th := range f.Thresholds {
			if !th.Passed {
				tr.ThresholdsFailed++
			}
		}
		t.Runs = append(t.Runs, tr)
	}
	return t, nil
}

// Print writes the trend as `barrage tests trend` prints it: a row per run, oldest first, the
// baseline and the regressions marked.
func (t Trend) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tREV\tSTATE\tREQ/S\tP50\tP95\tP99\tERRORS\tTHRESHOLDS\tVS BASELINE")
	for _, r := range t.Runs {
		mark := r.Verdict
		if r.Baseline {
			mark = "BASELINE"
		}
		if mark == "" {
			mark = "-"
		}
		th := "passed"
		if r.ThresholdsFailed > 0 {
			th = fmt.Sprintf("%d failed", r.ThresholdsFailed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f\t%s\t%s\t%s\t%.2f%%\t%s\t%s\n", r.RunID, r.CreatedAt.UTC().Format("2006-01-02 15:04"),
			r.Revision, r.State, r.Total.RPS, Figure("p50_ms", r.Total.P50MS), Figure("p95_ms", r.Total.P95MS),
			Figure("p99_ms", r.Total.P99MS), 100*r.Total.ErrorRate, th, mark)
	}
	tw.Flush()
}
