package summary

import (
	"fmt"
	"math"
	"strings"
)

// Incomplete says, of a run on agents, which agents' figures stop short of the run's end and
// what that leaves out: a lost agent's last unreported moment, and every agent's share of the
// load after it stopped.
type Incomplete struct {
	Agents []Gap `json:"agents"`
	// MissingRequests estimates, at most, the requests the target may have served that no
	// figure counts, every agent's together.
	MissingRequests int64 `json:"missing_requests"`
}

// Gap is one agent whose figures stop short.
type Gap struct {
	// Agent names the agent: its name and id, or its shard once it was removed.
	Agent  string `json:"agent"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	// FromS is the first second with nothing from the agent, counted from the run's start as
	// the stability's seconds are (1 for a run's first second).
	FromS int64 `json:"from_s"`
	// RPS is the agent's requests/s over its last reported seconds (five at most).
	RPS float64 `json:"rps"`
	// UnreportedS is how long the agent may have sent load that it never reported: for a lost
	// agent, from the end of its last reported second to when its next report was due at the
	// latest (two report periods after its last report); 0 for one that reported its end.
	UnreportedS float64 `json:"unreported_s"`
	// InFlight counts the agent's VUs in its last reported second: each may have had a request
	// at the target when it went silent.
	InFlight int64 `json:"in_flight"`
	// MissingRequests bounds the requests the target served that the figures lack: RPS ×
	// UnreportedS, rounded up, plus InFlight (the agent went silent somewhere in UnreportedS).
	MissingRequests int64 `json:"missing_requests"`
}

// NewGap is the gap of an agent that reported rps over its last seconds and stopped reporting
// unreported before it went silent with inFlight VUs (a lost agent); unreported and inFlight
// are 0 for one that reported its end.
func NewGap(agent, state, reason string, fromS int64, rps, unreportedS float64, inFlight int64) Gap {
	g := Gap{Agent: agent, State: state, Reason: reason, FromS: fromS, RPS: rps, UnreportedS: max(unreportedS, 0), InFlight: inFlight}
	if g.UnreportedS > 0 || g.InFlight > 0 {
		g.MissingRequests = int64(math.Ceil(g.RPS*g.UnreportedS)) + g.InFlight
	}
	return g
}

// NewIncomplete gathers gaps; nil when there are none.
func NewIncomplete(gaps []Gap) *Incomplete {
	if len(gaps) == 0 {
		return nil
	}
	in := &Incomplete{Agents: gaps}
	for _, g := range gaps {
		in.MissingRequests += g.MissingRequests
	}
	return in
}

// From is the first second with nothing from one of the agents: where the figures stop being
// every agent's.
func (in *Incomplete) From() int64 {
	from := int64(math.MaxInt64)
	for _, g := range in.Agents {
		from = min(from, g.FromS)
	}
	return from
}

// String is the incompleteness as people read it, first in a summary: a line, then one line an
// agent.
func (in *Incomplete) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "INCOMPLETE: the figures stop short for %d agent(s)", len(in.Agents))
	if in.MissingRequests > 0 {
		fmt.Fprintf(&b, "; up to %d requests the target served may not be counted", in.MissingRequests)
	}
	for _, g := range in.Agents {
		b.WriteString("\n  - " + g.String())
	}
	return b.String()
}

// String is the gap in a sentence.
func (g Gap) String() string {
	s := fmt.Sprintf("agent %s %s from second %d (%s): ", g.Agent, g.State, g.FromS, g.Reason)
	if g.MissingRequests > 0 {
		s += fmt.Sprintf("up to %d requests it sent may not be counted (%.1f/s over its last seconds × up to %.1fs unreported, + %d in flight); ",
			g.MissingRequests, g.RPS, g.UnreportedS, g.InFlight)
	} else {
		s += "every request it sent is counted; "
	}
	return s + "its share of the load after that was not sent"
}
