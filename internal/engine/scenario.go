package engine

import (
	"sync/atomic"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// scenarioPlan is a workload of the run: the script's own, or one of its scenarios, with the
// shard's share of its load and its groups. Its VUs run its groups alone.
type scenarioPlan struct {
	name    string
	load    script.Workload
	groups  []*compiledGroup
	cookies bool // each VU keeps a jar, emptied at each iteration
	vuBase  int  // its first VU's id: ids are unique across scenarios (source addresses, data)
	tags    map[string]string

	iterations atomic.Int64 // completed
}

// scenarioResults are the run's scenarios, nil for a script without.
func (p *plan) scenarioResults() []run.ScenarioResult {
	if len(p.s.Scenarios) == 0 {
		return nil
	}
	out := make([]run.ScenarioResult, len(p.scenarios))
	for i, sc := range p.scenarios {
		ses := p.s.Scenarios[i].Session
		out[i] = run.ScenarioResult{Name: sc.name, Tags: sc.tags, Model: sc.load.Model, Requests: ses.RequestLabels(), Iterations: sc.iterations.Load()}
	}
	return out
}

// scenarioScripts are the script's scenarios, or its session and load as the only one.
func (p *plan) scenarioScripts() []*script.Scenario {
	if len(p.s.Scenarios) > 0 {
		return p.s.Scenarios
	}
	return []*script.Scenario{{Session: p.s.Session, Load: p.load}}
}

// planScenarios makes the run's scenario plans, each with its load as the options change it.
func (p *plan) planScenarios() {
	base := 0
	for _, sc := range p.scenarioScripts() {
		w := sc.Load
		if len(p.s.Scenarios) > 0 {
			w = scenarioWorkload(sc.Load, p.opts)
		}
		p.scenarios = append(p.scenarios, &scenarioPlan{name: sc.Name, load: w, cookies: sc.Session.Cookies, vuBase: base, tags: sc.Tags})
		base += max(w.VUs, w.MaxVUs)
	}
}

// scenarioWorkload is a scenario's load with --duration folded in: the only override a script
// of scenarios takes.
func scenarioWorkload(w script.Workload, opts Options) script.Workload {
	run.Override(&w, barrage.LoadOverrides{Duration: opts.Duration})
	return w
}
