// Package script reads Barrage test scripts, YAML or JSON documents of format version 1, into a
// validated, typed model that the load engine compiles and runs: variables and data files, a
// session of measurement groups and requests, the load model, thresholds and plugin
// references. Parse checks a document on its own; Load also reads the CSV data files it names.
// docs/scripts.md is the format's reference for testers, schema.json its JSON Schema.
//
// The parser reads each part of a script in a file named for it: parse.go the document's top
// level, decode.go the values every section shares (strings, names, numbers, durations),
// vars.go variables and data files, plugin.go plugins, scenario.go scenarios, session.go the
// session's groups and requests (url.go their URLs, body.go their bodies, websocket.go their
// steps, check.go their extractors and assertions), workload.go the load and its stages,
// threshold.go thresholds, monitor.go monitors, network.go hosts, tls and proxy, addr.go
// source addresses.
package script

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/barrage-load/barrage/sdk"
)

// Version is the only format version this package reads.
const Version = 1

// Script is a parsed and validated test script. Every field holds its final value: defaults are
// filled in and relative request URLs already carry the base URL.
type Script struct {
	Version     int
	Name        string
	Description string
	// BaseURL is the base_url as written, nil when the script has none. It may use constants
	// and environment variables; it is already folded into every relative Request.URL.
	BaseURL   *Template
	Variables Variables
	Plugins   []*Plugin
	// Session and Load are the script's, or with Scenarios all their groups in order and
	// their loads together (the VUs of all, the longest duration), which admission judges.
	Session Session
	Load    Workload
	// Scenarios, when the script has them, are workloads that run side by side, each its own
	// session under its own load.
	Scenarios  []*Scenario
	Thresholds []*Threshold
	// Monitors are the target's own metrics endpoints, scraped beside the load.
	Monitors []*Monitor
	// Network is where requests connect and what their TLS trusts and presents.
	Network Network
	// Secrets are the names of the secrets the script reads (${secret.NAME}), sorted: a run is
	// given their values, its owner's, and masks them wherever it could show one.
	Secrets []string
	// Deprecations are what the script should change and need not yet (old spellings), each
	// with its line: tools show them as warnings.
	Deprecations ErrorList
}

// Variables are the values a script's templates may use besides extracted ones and those
// produced by element plugins.
type Variables struct {
	Constants []Constant
	Env       []EnvVar
	Data      []*DataFile
}

// Constant is a variable whose value is written in the script.
type Constant struct {
	Name, Value string
}

// EnvVar is a variable read from the environment when a run starts; see Script.ResolveEnv.
type EnvVar struct {
	Name       string // the variable's name in templates
	From       string // the environment variable it is read from
	Default    string
	HasDefault bool // whether a missing environment variable takes Default instead of failing

	p pos
}

// Order is how a data file's rows are handed out.
type Order int

// The orders in which data file rows are handed out. Each virtual user takes one row of every
// data file at the start of each iteration, and the row's columns are its variables for that
// iteration.
const (
	// Sequential hands each row out once, in file order, shared by all virtual users. A virtual
	// user that finds the file exhausted stops instead of starting the iteration; the others
	// finish the iteration they are in and stop too, so the run ends once the rows are used up.
	Sequential Order = iota + 1
	// Random hands out a row drawn at random, independently for each iteration.
	Random
	// Circular hands rows out in file order, shared by all virtual users, starting over after
	// the last one. It is the default.
	Circular
)

// String returns the order as a script writes it.
func (o Order) String() string {
	switch o {
	case Sequential:
		return "sequential"
	case Random:
		return "random"
	case Circular:
		return "circular"
	}
	return "unknown"
}

// MarshalText writes the model as String does.
func (m Model) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (m *Model) UnmarshalText(b []byte) error {
	switch string(b) {
	case "closed":
		*m = Closed
	case "open":
		*m = Open
	default:
		return fmt.Errorf("unknown load model %q", b)
	}
	return nil
}

// DataFile is a CSV file whose header row names its columns; each column is a variable.
type DataFile struct {
	File      string // as written: a slash-separated path relative to the script's folder
	Order     Order
	Separator rune // the field separator, ',' by default

	// Columns and Rows are filled by Load and LoadFS; Parse leaves them nil. Every row has
	// len(Columns) fields.
	Columns []string
	Rows    [][]string

	p pos
}

// PluginKind says what a plugin does for a script.
type PluginKind int

// The kinds of plugin a script can use.
const (
	// ElementPlugin is a session-element plugin: it produces variables that templates use as
	// ${alias.name}.
	ElementPlugin PluginKind = iota + 1
	// URLPlugin rewrites the requests it is attached to (Request.Plugins), for example to sign
	// their URLs, and reads their responses; variables it sets are ${alias.name}.
	URLPlugin
	// SourcePlugin is a source modifier: it rewrites the script itself before the run.
	SourcePlugin
)

// String returns the kind as a script writes it: the SDK's spelling (sdk.Kind), which the
// marketplace and the API use too.
func (k PluginKind) String() string {
	switch k {
	case ElementPlugin:
		return "session-element"
	case URLPlugin:
		return "url"
	case SourcePlugin:
		return "source-modifier"
	}
	return "unknown"
}

// KindOf reads a kind as a script writes it, the old spellings (element, source) included;
// 0 when s is none.
func KindOf(s string) PluginKind {
	switch s {
	case "session-element", "element":
		return ElementPlugin
	case "url":
		return URLPlugin
	case "source-modifier", "source":
		return SourcePlugin
	}
	return 0
}

// article is the kind with its article, for messages: "a session-element", "a url".
func (k PluginKind) article() string { return "a " + k.String() }

// Scope is how often an element plugin's variables take new values. Zero means the scope the
// plugin itself declares.
type Scope int

// The scopes of an element plugin's values.
const (
	ScopeRun       Scope = iota + 1 // one set of values for the whole run
	ScopeVU                         // one set per virtual user, kept for all its iterations
	ScopeIteration                  // a fresh set for every iteration
)

// String returns the scope as a script writes it.
func (s Scope) String() string {
	switch s {
	case ScopeRun:
		return "run"
	case ScopeVU:
		return "vu"
	case ScopeIteration:
		return "iteration"
	case 0:
		return "the plugin's own"
	}
	return "unknown"
}

// Plugin is a reference to a plugin the plugin runtime will fetch and execute.
type Plugin struct {
	Ref  string // name@version, as written
	Name string // e.g. random-data or acme/hmac-sign
	// Version is an exact semantic version such as 1.2.0, or a range such as ^1.2 that
	// generation pins to the newest version it matches (registry.Constraint).
	Version string
	As      string // the local name templates and requests use
	Kind    PluginKind
	Scope   Scope
	// Config is handed to the plugin as JSON. Its values are string, json.Number, bool, nil,
	// []any and map[string]any; it is nil when the script gives none.
	Config map[string]any
	// Network is the hosts the script grants the plugin (network): it may reach them, within
	// those it declares it needs, through the host's dial policy. Empty: no network.
	Network []Grant
}

// Grant is a host a script lets a plugin reach, and where the script says so: a grant outside
// what the plugin declares is refused when the plugin is loaded, at this place.
type Grant struct {
	Host sdk.HostPattern
	// Path, Line and Column place the grant in the script, as an Error does.
	Path         string
	Line, Column int
}

// Scenario is a workload of a script beside its others: a session under a load of its own,
// with tags that name it in results.
type Scenario struct {
	Name    string
	Session Session
	Load    Workload
	Tags    map[string]string
}

// Session is what every virtual user does in each iteration: its groups, in order.
type Session struct {
	// Cookies says whether each virtual user keeps a cookie jar. The jar is emptied at the
	// start of each iteration, as are extracted variables, so an iteration is one visitor.
	Cookies bool
	Groups  []*Group
}

// Requests returns the session's requests in the order they are sent.
func (s *Session) Requests() []*Request {
	var rs []*Request
	for _, g := range s.Groups {
		rs = append(rs, g.Requests...)
	}
	return rs
}

// Group is a measurement group: requests measured together, such as a page or a business step.
type Group struct {
	Name     string // a metrics label, unique among groups
	Requests []*Request
	Think    *Think // the pause after the group; nil for none
}

// Request is one HTTP request of the session.
type Request struct {
	Name   string // the metrics label, unique in the script
	Group  string // the name of the group it belongs to
	Method string // upper case
	// URL renders the absolute URL, base URL included, without the Query parameters; see
	// AppendURL.
	URL *Template
	// Headers are the request's own headers, then its group's and the session's that it does
	// not override (names compare case-insensitively).
	Headers   []Header
	Query     []Param // added to the URL, form-encoded, in order
	Body      *Body   // nil for none
	Timeout   time.Duration
	Redirects int  // how many redirects to follow; 0 returns the redirect response
	HTTP2     bool // whether to ask for HTTP/2 (negotiated over TLS)
	// Extract runs, in order, on the response before Assert does, so assertions may use the
	// variables extracted here.
	Extract []*Extractor
	// Assert always holds at least one status assertion: when the script gives none, an
	// Implied one accepts 200 to 399.
	Assert []*Assertion
	// Batch numbers the batch of the group the request belongs to, from 1; 0 for none. The
	// requests of a batch go at once, as a browser fetches a page's assets.
	Batch   int
	Think   *Think    // the pause after the request; nil for none
	Plugins []*Plugin // URL plugins applied to the request, in order
	// WebSocket, when set, makes the request a WebSocket session: the URL (http, https, ws or
	// wss) is opened with an upgrade, then the steps run in order. Its extractors and
	// assertions judge the upgrade's response.
	WebSocket *WebSocket

	query *Template // the Query parameters compiled to a form-encoded string
}

// WebSocket is a WebSocket session's steps and labels. The request's own name labels the whole
// session, a step; Connect labels the upgrade, a request; each receive step labels its round
// trip, a step, from the start of the last message sent (or the upgrade) to the message it
// awaited.
type WebSocket struct {
	Connect string // the upgrade's label: "<name> connect"
	Steps   []*WSStep
}

// WSStep is a step of a WebSocket session: it sends a text message, or awaits the next message
// and checks it.
type WSStep struct {
	Send *Template // the message to send; nil for a receive
	// Name labels a receive's round trip: "<name> receive <n>" unless the script names it.
	Name    string
	Timeout time.Duration // how long a receive waits; the request's timeout by default
	// Extract and Assert judge a received message as they judge a response's body.
	Extract []*Extractor
	Assert  []*Assertion
}

// RequestLabels are the request labels of the session in order: each request's name, or for a
// WebSocket request its upgrade's label (its session and receives are steps: StepLabels).
func (s *Session) RequestLabels() []string {
	var out []string
	for _, r := range s.Requests() {
		if ws := r.WebSocket; ws != nil {
			out = append(out, ws.Connect)
		} else {
			out = append(out, r.Name)
		}
	}
	return out
}

// StepLabels are the labels of the session's WebSocket steps in order: each session's name,
// then its receives'.
func (s *Session) StepLabels() []string {
	var out []string
	for _, r := range s.Requests() {
		if ws := r.WebSocket; ws != nil {
			out = append(out, r.Name)
			for _, st := range ws.Steps {
				if st.Send == nil {
					out = append(out, st.Name)
				}
			}
		}
	}
	return out
}

// Check is an assertion as a run's results tally it: the request, or WebSocket receive, it
// judges, and its name.
type Check struct {
	Request string `json:"request"`
	Name    string `json:"name"`
}

// Label is the check's metrics label (of kind metrics.Check): its request and name with a unit
// separator between, which no name holds, so that no two checks share a label.
func (c Check) Label() string { return c.Request + checkSep + c.Name }

const checkSep = "\x1f"

// CheckLabelText is a check's label as people read it: "<request>: <name>".
func CheckLabelText(label string) string { return strings.Replace(label, checkSep, ": ", 1) }

// Checks are the session's assertions that results tally, in session order: every request's,
// then its WebSocket receives'. The status check implied for a request whose
// script gives none is left out: a failed status counts among the errors already.
func (s *Session) Checks() []Check {
	var out []Check
	add := func(request string, as []*Assertion) {
		for _, a := range as {
			if !a.Implied {
				out = append(out, Check{request, a.Name})
			}
		}
	}
	for _, r := range s.Requests() {
		add(r.Name, r.Assert)
		if ws := r.WebSocket; ws != nil {
			for _, st := range ws.Steps {
				add(st.Name, st.Assert)
			}
		}
	}
	return out
}

// Labels counts, at most, the labels a run of s measures: each request's (a WebSocket session's
// upgrade, the session and its receives), each group's, each check's, each plugin's hook time,
// and the open model's latency from the schedule.
func (s *Script) Labels() int {
	ses := &s.Session
	return len(ses.RequestLabels()) + len(ses.StepLabels()) + len(ses.Groups) + len(ses.Checks()) + len(s.Plugins) + 1
}

// Header is a request header; its value may use variables.
type Header struct {
	Name  string
	Value *Template
}

// Param is a query parameter; its value may use variables.
type Param struct {
	Name  string
	Value *Template
}

// BodyKind is the form a request body is written in.
type BodyKind int

// The forms of request body.
const (
	JSONBody      BodyKind = iota + 1 // a JSON document; variables are inserted into its strings
	FormBody                          // application/x-www-form-urlencoded fields
	RawBody                           // text sent as written
	FileBody                          // a file's bytes, sent as they are
	MultipartBody                     // multipart/form-data fields and files
)

// String returns the key a script writes the body under.
func (k BodyKind) String() string {
	switch k {
	case JSONBody:
		return "json"
	case FormBody:
		return "form"
	case RawBody:
		return "raw"
	case FileBody:
		return "file"
	case MultipartBody:
		return "multipart"
	}
	return "unknown"
}

// Body is a request body, compiled to one template that renders the bytes to send.
type Body struct {
	Kind BodyKind
	// ContentType goes in the Content-Type header unless Request.Headers has one. It is empty
	// for a raw body without content_type.
	ContentType string
	// Content renders the whole body of a json, form or raw body. Variables are escaped as the
	// kind needs: JSON string escaping in a JSON body, form encoding in a form body, none in a raw
	// body. It is nil for a file or multipart body.
	Content *Template
	// File is a file body's file; Parts a multipart body's parts, in order. A file's bytes are
	// held once for the whole run and streamed at each send.
	File  *File
	Parts []*Part
}

// Part is a part of a multipart/form-data body: a field whose value may use variables, or a file.
type Part struct {
	Name  string
	Value *Template // a field's; nil for a file
	File  *File
	// Filename and ContentType describe a file part: by default the file's base name and
	// application/octet-stream.
	Filename, ContentType string
}

// ExtractKind is where an extractor looks in a response.
type ExtractKind int

// The kinds of extractor.
const (
	ExtractJSON   ExtractKind = iota + 1 // a JSONPath into the JSON body
	ExtractRegex                         // a regular expression on the body
	ExtractHeader                        // a response header
	ExtractCookie                        // a cookie the response sets
)

// String returns the key a script writes the extractor with.
func (k ExtractKind) String() string {
	switch k {
	case ExtractJSON:
		return "json"
	case ExtractRegex:
		return "regex"
	case ExtractHeader:
		return "header"
	case ExtractCookie:
		return "cookie"
	}
	return "unknown"
}

// Extractor sets a variable from a response. When it finds nothing, the variable takes Default
// if HasDefault, and otherwise the request fails.
type Extractor struct {
	Var  string
	Kind ExtractKind
	// JSONPath is set for ExtractJSON. Its value becomes the variable's: a string as is, any
	// other value as JSON text (see JSONPath.FindString).
	JSONPath *JSONPath
	// Regex is set for ExtractRegex: the variable takes the first capture group of the first
	// match, or the whole match when the expression has no group.
	Regex *regexp.Regexp
	// Name is the header's name (ExtractHeader) or the cookie's (ExtractCookie).
	Name       string
	Default    string
	HasDefault bool

	p pos // of Var
}

// AssertKind is what an assertion checks.
type AssertKind int

// The kinds of assertion.
const (
	AssertStatus       AssertKind = iota + 1 // the status code is in Status
	AssertBodyContains                       // the body contains Text
	AssertBodyMatches                        // Regex matches the body
	AssertJSON                               // a JSONPath's value in the JSON body
	AssertMaxDuration                        // the response took at most MaxDuration
)

// String returns the key a script writes the assertion with.
func (k AssertKind) String() string {
	switch k {
	case AssertStatus:
		return "status"
	case AssertBodyContains:
		return "body_contains"
	case AssertBodyMatches:
		return "body_matches"
	case AssertJSON:
		return "json"
	case AssertMaxDuration:
		return "max_duration"
	}
	return "unknown"
}

// Assertion is a check on a response; a request whose assertion fails counts as an error.
type Assertion struct {
	Kind AssertKind
	// Name is what a tally of checks calls it: the script's name for it, or its key and value
	// as written (`status 200`, `json $.qty equals 3`).
	Name   string
	Status []StatusRange // AssertStatus: any of these ranges passes
	// Implied marks the status assertion added to a request whose script gives none.
	Implied bool
	Text    *Template      // AssertBodyContains
	Regex   *regexp.Regexp // AssertBodyMatches
	// JSONPath, Equals, EqualsText and Absent describe an AssertJSON; see CheckJSON.
	JSONPath    *JSONPath
	Equals      any       // a non-string value the path's value must equal; nil with HasEquals is null
	HasEquals   bool      // whether Equals is set (it may be JSON null)
	EqualsText  *Template // a string the path's value, as text, must equal
	Absent      bool      // the path must find nothing
	MaxDuration time.Duration
}

// StatusRange is an inclusive range of status codes; 2xx is {200, 299}.
type StatusRange struct {
	Min, Max int
}

// ThinkKind is the shape of a think time.
type ThinkKind int

// The kinds of think time.
const (
	ThinkFixed    ThinkKind = iota + 1 // always Fixed
	ThinkUniform                       // uniform between Min and Max
	ThinkGaussian                      // normal around Mean with StdDev, never below zero
)

// String returns the key a script writes the think time with.
func (k ThinkKind) String() string {
	switch k {
	case ThinkFixed:
		return "fixed"
	case ThinkUniform:
		return "uniform"
	case ThinkGaussian:
		return "gaussian"
	}
	return "unknown"
}

// Think is a pause a virtual user takes, as a person would, after a request or a group.
type Think struct {
	Kind         ThinkKind
	Fixed        time.Duration
	Min, Max     time.Duration
	Mean, StdDev time.Duration
}

// Sample draws one pause.
func (t *Think) Sample(r *rand.Rand) time.Duration {
	switch t.Kind {
	case ThinkFixed:
		return t.Fixed
	case ThinkUniform:
		if t.Max <= t.Min {
			return t.Min
		}
		return t.Min + time.Duration(r.Int64N(int64(t.Max-t.Min)+1))
	case ThinkGaussian:
		d := float64(t.Mean) + float64(t.StdDev)*r.NormFloat64()
		if d < 0 {
			return 0
		}
		return time.Duration(d)
	}
	return 0
}

// Model is how load is generated.
type Model int

// The load models.
const (
	// Closed runs a fixed number of virtual users, each starting its next iteration when the
	// previous one ends.
	Closed Model = iota + 1
	// Open starts iterations at a given arrival rate, whatever the response times, with as many
	// virtual users as that takes, up to MaxVUs.
	Open
)

// String returns "closed" or "open".
func (m Model) String() string {
	switch m {
	case Closed:
		return "closed"
	case Open:
		return "open"
	}
	return "unknown"
}

// Workload is how much load a run puts on the target, and for how long.
type Workload struct {
	Model Model `json:"model"`

	// Closed model. VUs virtual users start evenly spread over RampUp. The run lasts Duration
	// (when not 0) or until Iterations iterations, counted over all virtual users together,
	// have started (when not 0), whichever comes first.
	VUs        int           `json:"vus,omitempty"`
	RampUp     time.Duration `json:"ramp_up_ns,omitempty"`
	Iterations int           `json:"iterations,omitempty"`

	// Open model. Stages run one after the other; MaxVUs bounds the virtual users, and an
	// iteration due when all are busy is dropped and counted.
	Stages []Stage `json:"stages,omitempty"`
	MaxVUs int     `json:"max_vus,omitempty"`

	// Duration is the closed model's duration, or the open model's total of its stages.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// GracefulStop is how long iterations still running when the run ends may take to finish
	// before they are interrupted. It defaults to 30s.
	GracefulStop time.Duration `json:"graceful_stop_ns,omitempty"`
	// SourceAddrs are local addresses the requests are sent from, assigned round-robin: the
	// i-th virtual user (from 0) uses SourceAddrs[i%len(SourceAddrs)]. Empty leaves the choice
	// to the system.
	SourceAddrs []netip.Addr `json:"source_addrs,omitempty"`
}

// Stage is a period of the open model during which the arrival rate goes linearly from From to
// To iterations per second; a constant stage has From == To.
type Stage struct {
	From     float64       `json:"from"`
	To       float64       `json:"to"`
	Duration time.Duration `json:"duration_ns"`
}

// RateAt returns the arrival rate, in iterations per second, at elapsed time t into the stage.
func (s Stage) RateAt(t time.Duration) float64 {
	if s.Duration <= 0 || t >= s.Duration {
		return s.To
	}
	if t <= 0 {
		return s.From
	}
	return s.From + (s.To-s.From)*float64(t)/float64(s.Duration)
}

// Monitor is a Prometheus text endpoint on the target's side (node_exporter, postgres_exporter,
// the target's own /metrics), scraped every second of a run, and the series kept from it.
type Monitor struct {
	Name   string // a label, unique among monitors
	URL    string // an absolute http(s) URL
	Series []*MonitorSeries
}

// MonitorSeries selects the samples of one metric whose labels have the given values. What a
// second's value is depends on the metric's type: see internal/monitor.
type MonitorSeries struct {
	Source string // as written: node_cpu_seconds_total{mode="iowait"}
	Metric string
	Labels map[string]string
}
