package barrage

import (
	"time"

	"github.com/google/uuid"
)

// Agent is a measuring agent: a `barrage agent` process that pulls work from the server and
// generates the load. A shared (platform) agent has no owner and serves every user; a private
// one serves its owner alone.
type Agent struct {
	ID      uuid.UUID
	Name    string
	OwnerID *uuid.UUID // nil: shared; else who registered it
	// ProjectID is the project whose runs a private agent serves (nil: shared).
	ProjectID *uuid.UUID
	// Limits are the agent's own limits per job (MaxConcurrentRuns is not used).
	Limits Limits
	// Version and Cores are what the agent said of itself when it last asked for work.
	Version    string
	Cores      int
	LastSeenAt *time.Time
	LastIP     string
	Disabled   bool
	// Sandbox says whether the agent's plugin host held the whole kernel sandbox when it last
	// asked for work.
	Sandbox bool
	// Protocol is the protocol it spoke when it last asked for work.
	Protocol int
	// Busy says whether the agent holds a shard not yet ended: waiting to start, or running.
	Busy      bool
	CreatedAt time.Time
}

// Shared reports whether the agent serves every user.
func (a Agent) Shared() bool { return a.OwnerID == nil }

// AgentOnlineWithin is how recently an agent must have asked for work or reported to count as
// online: agents long-poll for work and report every second, so a silence this long means the
// agent is gone.
const AgentOnlineWithin = 10 * time.Second

// AgentState is what a user sees of an agent.
type AgentState string

// The agent states.
const (
	AgentOnline   AgentState = "online"
	AgentBusy     AgentState = "busy"
	AgentOffline  AgentState = "offline"
	AgentDisabled AgentState = "disabled"
)

// State is the agent's state at now.
func (a Agent) State(now time.Time) AgentState {
	switch {
	case a.Disabled:
		return AgentDisabled
	case a.LastSeenAt == nil || now.Sub(*a.LastSeenAt) > AgentOnlineWithin:
		return AgentOffline
	case a.Busy:
		return AgentBusy
	}
	return AgentOnline
}

// AgentProtocol is the version of the protocol between server and agents that this build
// speaks; MinAgentProtocol the oldest the server accepts. An agent that speaks an older one is
// refused with a message naming the version it needs.
const (
	// 2: jobs (debug, generate) and pinned plugins; 3: stages in a run's load, metrics keyed by
	// kind; 4: plugin kinds spelled as the SDK spells them (session-element, source-modifier);
	// 5: marketplace plugins, pinned by their signed SHA256SUMS and fetched by digest; 6: the
	// script's monitors scraped by the shard that starts the run, their values in its seconds
	// (an agent of 5 runs such a script without them); 7: the run's destinations, the only
	// hosts and ports its load may reach (an agent of 5 or 6 gets no run that has them); 8: the
	// run's environment, the values of its script's environment variables (an agent of 5 to 7
	// gets no run that has one); 9: assertions tallied, labels of kind check in its seconds
	// (an agent of 5 to 8 sends none: its run's summary has no checks).
	AgentProtocol    = 9
	MinAgentProtocol = 5
	// DestinationsProtocol is the first protocol that holds a run to its destinations.
	DestinationsProtocol = 7
	// EnvProtocol is the first protocol that hands a run's environment (ShardJob.env) to its
	// script.
	EnvProtocol = 8
)
