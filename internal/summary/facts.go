package summary

import (
	"errors"
	"slices"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// Facts are what a run's script and its load overrides make of it, as far as telling its
// figures goes: derived once, when the server creates the run, and stored with it, so that its
// live view, its aborting thresholds, its summary, its comparison and its sweep read them and
// nothing parses the script again.
type Facts struct {
	Script string `json:"script"` // the script's name
	// Workload is the load the run was admitted with: the script's, overridden.
	Workload   script.Workload     `json:"workload"`
	Requests   []string            `json:"requests"` // request labels, in session order
	Groups     []string            `json:"groups"`   // group labels, in session order
	Checks     []script.Check      `json:"checks"`   // the assertions tallied, in session order
	Scenarios  []Scenario          `json:"scenarios,omitempty"`
	Thresholds []*script.Threshold `json:"thresholds"`
	// Monitors are the series the agents scrape beside the load, in the order they report
	// them, without values.
	Monitors []*monitor.Series `json:"monitors"`
}

// FactsOf derives the facts of a run of s under the overrides o.
func FactsOf(s *script.Script, o barrage.LoadOverrides) Facts {
	groups := make([]string, len(s.Session.Groups))
	for i, g := range s.Session.Groups {
		groups[i] = g.Name
	}
	return Facts{
		Script:     s.Name,
		Workload:   run.Workload(s, o),
		Requests:   s.Session.RequestLabels(),
		Groups:     groups,
		Checks:     s.Session.Checks(),
		Scenarios:  ScriptScenarios(s),
		Thresholds: s.Thresholds,
		Monitors:   monitor.Skeleton(s.Monitors),
	}
}

// Check tells facts that no script could have made: a row changed by hand.
func (f *Facts) Check() error {
	switch {
	case f.Script == "":
		return errors.New("no script name")
	case f.Workload.Model != script.Closed && f.Workload.Model != script.Open:
		return errors.New("no load model")
	case slices.Contains(f.Thresholds, nil):
		return errors.New("a threshold that is null")
	case slices.Contains(f.Monitors, nil):
		return errors.New("a monitor series that is null")
	}
	return nil
}

// Skeleton is the run's monitor series with no value yet, each new, for monitor.Record to fill.
func (f *Facts) Skeleton() []*monitor.Series {
	out := make([]*monitor.Series, len(f.Monitors))
	for i, s := range f.Monitors {
		out[i] = &monitor.Series{Monitor: s.Monitor, Series: s.Series, Unit: s.Unit}
	}
	return out
}

// Aborting are the thresholds that stop the run when broken.
func (f *Facts) Aborting() []*script.Threshold {
	var out []*script.Threshold
	for _, t := range f.Thresholds {
		if t.Abort {
			out = append(out, t)
		}
	}
	return out
}
