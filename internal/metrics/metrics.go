// Package metrics is the measurement core of the load engine: what a virtual user's request
// leaves behind, per request label and per interval (one second, as agents report it).
//
// The engine records through a Recorder, whose Record is cheap enough for the hot path of a load
// generator and safe from every virtual user at once. Each second the agent rotates the
// Recorder into a Snapshot and ships it in its compact binary form. Snapshots and their latency
// Histograms merge exactly, across seconds and across agents, so every percentile is read from
// a merged histogram and none is ever averaged.
package metrics

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrorClass is why a request failed, or NoError. Classes are counted apart because they point
// at different culprits: the network, a slow target, the test's own requests, the target's
// faults, or the test's expectations.
type ErrorClass uint8

// The error classes. NoError is the zero value, so a result nobody classified is a success
// rather than an invented failure.
const (
	NoError      ErrorClass = iota // the request succeeded
	ErrConnect                     // dialling, TLS or the connection failed before a response
	ErrTimeout                     // no complete response within the request's timeout
	Err4xx                         // the target answered 4xx
	Err5xx                         // the target answered 5xx
	ErrAssertion                   // the response came but failed a check of the test

	// NumErrorClasses is the number of ErrorClass values, NoError included: the length of
	// Stats.Errors, so that Errors can be indexed by class directly.
	NumErrorClasses
)

var classNames = [NumErrorClasses]string{"ok", "connect", "timeout", "4xx", "5xx", "assertion"}

// String is the class's name in reports and logs: "ok", "connect", "timeout", "4xx", "5xx",
// "assertion".
func (c ErrorClass) String() string {
	if c < NumErrorClasses {
		return classNames[c]
	}
	return fmt.Sprintf("ErrorClass(%d)", uint8(c))
}

// Stats is what one request label did during one interval. Every request is counted in
// Requests and in Latency, failed ones too (a failure's latency is how long it took to fail), and
// failures also in Errors by class.
type Stats struct {
	Requests int64
	// Errors counts failed requests by class; Errors[NoError] stays 0.
	Errors   [NumErrorClasses]int64
	BytesIn  int64 // response bytes read, headers included
	BytesOut int64 // request bytes written, headers included
	// Latency holds one sample per request. Nil reads as empty.
	Latency *Histogram
}

// NewStats returns empty stats with an empty latency histogram.
func NewStats() *Stats { return &Stats{Latency: NewHistogram()} }

// Failed is the number of failed requests, whatever their class.
func (s *Stats) Failed() int64 {
	var n int64
	for _, e := range s.Errors[NoError+1:] {
		n += e
	}
	return n
}

// Merge adds o's counts to s. Like Histogram.Merge it is exact. s keeps no reference to o.
func (s *Stats) Merge(o *Stats) {
	if o == nil {
		return
	}
	s.Requests += o.Requests
	for c := range s.Errors {
		s.Errors[c] += o.Errors[c]
	}
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	if o.Latency != nil {
		if s.Latency == nil {
			s.Latency = NewHistogram()
		}
		s.Latency.Merge(o.Latency)
	}
}

// Clone returns an independent copy of s.
func (s *Stats) Clone() *Stats {
	c := NewStats()
	c.Merge(s)
	return c
}

// Kind is what a label measures. Labels of different kinds never merge, whatever their names: a
// request named like a group is still a request.
type Kind uint8

// The kinds of labels.
const (
	Request Kind = iota // one request of the session
	Group               // a group of requests: one sample per pass through it
	Hook                // a url plugin's hook calls
	// Schedule is the open model's latency from the schedule: from when each iteration was
	// due to the end of its first request, the generator's own lateness included.
	Schedule
	// Step is a WebSocket session's: the whole session, or one receive's round trip. Its
	// upgrade is a request; its steps are not, so that they do not count as requests.
	Step
	// Check is an assertion's tally: Requests counts the responses it judged and
	// Errors[ErrAssertion] those that failed it. Its latency is not a time (every sample is 0).
	Check

	// NumKinds is the number of Kind values.
	NumKinds
)

var kindNames = [NumKinds]string{"request", "group", "hook", "schedule", "step", "check"}

// ScheduleKey is the one label of kind Schedule.
var ScheduleKey = Key{Schedule, "from schedule"}

// String is the kind's name in reports and the API: "request", "group", "hook".
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Key names a label: its kind and its name.
type Key struct {
	Kind Kind
	Name string
}

// RequestKey, GroupKey, HookKey, StepKey and CheckKey are the keys of a request, a group, a url
// plugin's hooks, a WebSocket step and a check (script.Check.Label).
func RequestKey(name string) Key { return Key{Request, name} }
func GroupKey(name string) Key   { return Key{Group, name} }
func HookKey(alias string) Key   { return Key{Hook, alias} }
func StepKey(name string) Key    { return Key{Step, name} }
func CheckKey(label string) Key  { return Key{Check, label} }

// String is the key as people read it: a request's name, or "group NAME", "hook ALIAS".
func (k Key) String() string {
	if k.Kind == Request {
		return k.Name
	}
	return k.Kind.String() + " " + k.Name
}

// Compare orders keys by kind, then by name's bytes: the order labels are encoded in.
func (k Key) Compare(o Key) int {
	return cmp.Or(cmp.Compare(k.Kind, o.Kind), strings.Compare(k.Name, o.Name))
}

// Snapshot is every label's Stats over one interval: what an agent ships each second, and what
// the server merges across agents and seconds. Labels without requests in the interval may be
// absent; an absent label reads as zero.
type Snapshot struct {
	Start    time.Time
	Duration time.Duration
	Labels   map[Key]*Stats
}

// End is when the interval ends.
func (s *Snapshot) End() time.Time { return s.Start.Add(s.Duration) }

// Merge adds o into s: the union of their labels, with the Stats of a label both share merged.
// The interval becomes the smallest one covering both (merge adjacent seconds to get a longer
// span; merge the same second from several agents to get that second of the whole run). A
// snapshot with a zero Start and Duration has no interval yet and takes o's. s keeps no reference
// to o.
func (s *Snapshot) Merge(o *Snapshot) {
	if o == nil {
		return
	}
	switch {
	case s.Start.IsZero() && s.Duration == 0:
		s.Start, s.Duration = o.Start, o.Duration
	case o.Start.IsZero() && o.Duration == 0:
	default:
		start, end := s.Start, s.End()
		if o.Start.Before(start) {
			start = o.Start
		}
		if oe := o.End(); oe.After(end) {
			end = oe
		}
		s.Start, s.Duration = start, end.Sub(start)
	}
	if len(o.Labels) > 0 && s.Labels == nil {
		s.Labels = make(map[Key]*Stats, len(o.Labels))
	}
	for name, os := range o.Labels {
		if ss := s.Labels[name]; ss != nil {
			ss.Merge(os)
		} else {
			s.Labels[name] = os.Clone()
		}
	}
}

// Clone returns an independent copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := &Snapshot{Start: s.Start, Duration: s.Duration, Labels: make(map[Key]*Stats, len(s.Labels))}
	for name, st := range s.Labels {
		c.Labels[name] = st.Clone()
	}
	return c
}

// Requests is the Stats of every request label together, for a run's headline figures: groups
// and hooks, which time the same requests again or time something else, are left out.
func (s *Snapshot) Requests() *Stats {
	t := NewStats()
	for k, st := range s.Labels {
		if k.Kind == Request {
			t.Merge(st)
		}
	}
	return t
}

// FormatDuration writes d as summaries and verdicts show times: 2 decimals of seconds or
// milliseconds, whole microseconds below a millisecond.
func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
}
