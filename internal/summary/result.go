package summary

import (
	"fmt"
	"io"
	"time"

	"github.com/barrage-load/barrage/internal/engine"
)

// Result is a local run's account, `barrage run --out`'s document: the run's course (its script,
// model, iterations, why it stopped) and its Summary.
type Result struct {
	Script     string    `json:"script"`
	Model      string    `json:"model"`
	Start      time.Time `json:"start"`
	ElapsedS   float64   `json:"elapsed_s"`
	Iterations int64     `json:"iterations"`
	Dropped    int64     `json:"dropped"`
	// Interrupted counts iterations cut short at the end of the graceful stop.
	Interrupted int64       `json:"interrupted"`
	Unsent      int64       `json:"unsent"`
	Stop        engine.Stop `json:"stop"`
	Exhausted   string      `json:"exhausted,omitempty"`
	Summary
}

// NewResult is res's account.
func NewResult(res *engine.Result) *Result {
	r := &Result{
		Script: res.Script, Model: res.Model.String(), Start: res.Start, ElapsedS: res.Elapsed.Seconds(),
		Iterations: res.Iterations, Dropped: res.Dropped, Interrupted: res.Interrupted, Unsent: res.Unsent,
		Stop: res.Stop, Exhausted: res.Exhausted,
		Summary: New(res.Total, res.Requests, res.Groups, res.Elapsed),
	}
	r.HookErrors = res.HookErrors
	r.Thresholds = Thresholds(res.Thresholds)
	r.Verdict = Verdict{GeneratorLimited: res.Verdict.GeneratorLimited, Reasons: res.Verdict.Reasons}
	return r
}

// Print writes the run's course in a line or three, then its Summary.
func (r *Result) Print(w io.Writer) {
	elapsed := time.Duration(r.ElapsedS * float64(time.Second))
	fmt.Fprintf(w, "\n%s: %s model, %s, %d iterations", r.Script, r.Model, elapsed.Round(time.Millisecond), r.Iterations)
	if r.Dropped > 0 {
		fmt.Fprintf(w, ", %d dropped", r.Dropped)
	}
	if r.Interrupted > 0 {
		fmt.Fprintf(w, ", %d interrupted", r.Interrupted)
	}
	if r.Unsent > 0 {
		fmt.Fprintf(w, ", %d requests not sent (a variable they use was not set)", r.Unsent)
	}
	fmt.Fprintln(w)
	if r.Stop.Reason != engine.Completed {
		fmt.Fprintf(w, "stopped early: %s\n", r.Stop.Detail)
	}
	if r.Exhausted != "" {
		fmt.Fprintf(w, "ended early: %s\n", r.Exhausted)
	}
	r.Summary.Print(w)
}
