package barrage

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Test is a session a tester edits: the script format, saved as numbered revisions, with the
// data files its data variables read. Runs never execute a test: they execute a script
// generated from one of its revisions.
type Test struct {
	ID             uuid.UUID
	OwnerID        uuid.UUID // who made it: its size counts against their quotas
	ProjectID      uuid.UUID
	Name           string
	LatestRevision int
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Files are the test's data files, without their content.
	Files []TestFile
	// LastRun is the newest run of any script generated from the test; nil when there is none,
	// or when it was not read.
	LastRun *TestLastRun
	// Baseline is the run the test's later runs are compared with; nil when it has none.
	Baseline *TestBaseline
}

// TestBaseline is a test's baseline run and the tolerances its later runs are held to.
type TestBaseline struct {
	RunID uuid.UUID
	// Tolerances are a summary.Tolerances in JSON; empty for the defaults.
	Tolerances json.RawMessage
}

// TrendRun is an ended run of a test, in the figures of its summary a trend draws.
type TrendRun struct {
	ID        uuid.UUID
	State     RunState
	CreatedAt time.Time
	EndedAt   *time.Time
	Revision  int
	// Figures are the summary's total, requests (without histograms), thresholds, and the
	// baseline and verdict of its comparison, in JSON.
	Figures json.RawMessage
}

// TestLastRun is a test's newest run, in brief: what a list of tests shows of it.
type TestLastRun struct {
	ID        uuid.UUID
	State     RunState
	CreatedAt time.Time
	EndedAt   *time.Time
	// Outcome is what its summary says in brief; nil before it has one.
	Outcome *RunOutcome
}

// SourceFormat is how a test's source was written.
type SourceFormat string

// The source formats.
const (
	FormatJSON SourceFormat = "json"
	FormatYAML SourceFormat = "yaml"
)

// TestRevision is one saved state of a test's session.
type TestRevision struct {
	TestID    uuid.UUID
	Revision  int
	Format    SourceFormat
	Source    []byte // nil when listed
	SHA256    []byte
	Size      int64
	CreatedAt time.Time
}

// TestFile is a data file of a test.
type TestFile struct {
	Name      string
	Content   []byte // nil when listed
	SHA256    []byte
	Size      int64
	UpdatedAt time.Time
}

// JobKind is what an agent is asked to do for a user beside running shards.
type JobKind string

// The job kinds.
const (
	// JobDebug runs one traced iteration of one VU of a test revision.
	JobDebug JobKind = "debug"
	// JobGenerate turns a test revision into a script: source plugins rewrite it, every plugin
	// is pinned by the digest of the binary the agent would start.
	JobGenerate JobKind = "generate"
)

// AgentJobSlots is how many jobs an agent does at once, beside a shard. A shared agent gives one
// of them to each user at a time, so that one user's slow jobs cannot hold it.
const AgentJobSlots = 4

// AgentJob is a job an agent does for a user: its input is a test revision, its answer a JSON
// result or an error.
type AgentJob struct {
	ID       uuid.UUID
	AgentID  uuid.UUID
	OwnerID  uuid.UUID
	Kind     JobKind
	TestID   uuid.UUID
	Revision int
	// Plugins are the marketplace plugins the test names, resolved for its owner when the job
	// was asked for.
	Plugins []PluginPin
	// Destinations, when not nil, are the only hosts and ports ("host:port") the job may reach:
	// on a shared agent, the operator's open targets and its owner's verified ones.
	Destinations []string
	// Bundle is what the agent runs: the revision's source and the test's data files. It is
	// filled when the job is handed to the agent.
	Bundle *TestBundle
	// Secrets are the values of its owner's secrets a debug's script reads, by name: filled when
	// the job is handed to the agent, stored nowhere.
	Secrets map[string]string
	// Answered is set once the agent answered, with Result or Error.
	Answered *time.Time
	Result   json.RawMessage
	Error    string
}

// TestBundle is a test revision as an agent receives it.
type TestBundle struct {
	// ProjectID is the test's project, whose secrets, agents and scripts its jobs use.
	ProjectID uuid.UUID
	Name      string
	Format    SourceFormat
	Source    []byte
	Files     []ScriptFile
}
