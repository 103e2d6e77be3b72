package metrics

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ErrorSample is one distinct reason requests of a label failed, and how many did for it: what
// a tester reads to learn why ("dial tcp 127.0.0.1:8080: connect: connection refused"), where the
// counts by class say only how many.
type ErrorSample struct {
	Label   string `json:"label"`
	Class   string `json:"class"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// Bounds of the samples kept: the first few distinct messages of each label and class, as k6
// logs them; later new ones are counted under OtherErrors.
const (
	MaxSamplesPerClass = 5
	maxSamples         = 200
	// OtherErrors is the message that counts the failures of a label and class whose distinct
	// messages were past the bound.
	OtherErrors = "(other messages)"
)

// ErrorSamples keeps the first distinct messages of each label and class, with counts. Its
// methods are safe for concurrent use; the zero value is ready.
type ErrorSamples struct {
	mu      sync.Mutex
	byKey   map[sampleKey]int // index into list
	perKind map[[2]string]int // distinct messages per label and class
	list    []ErrorSample
}

type sampleKey struct{ label, class, message string }

// localAddr is the local end of a connection in an error ("127.0.0.1:41234->"): it changes with
// every connection and would make each failure a message of its own.
var localAddr = regexp.MustCompile(`(?:\[[0-9a-fA-F:.%]+\]|[0-9.]+):[0-9]+->`)

// Add counts n failures of label and class for message.
func (s *ErrorSamples) Add(label, class, message string, n int64) {
	if strings.Contains(message, "->") { // a failed request's hot path: no regexp for a status
		message = localAddr.ReplaceAllString(message, "")
	}
	if len(message) > 300 {
		message = message[:300] + "…"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey, s.perKind = make(map[sampleKey]int), make(map[[2]string]int)
	}
	k := sampleKey{label, class, message}
	if i, ok := s.byKey[k]; ok {
		s.list[i].Count += n
		return
	}
	kind := [2]string{label, class}
	switch {
	case message == OtherErrors: // merged from another shard: takes no message's place
	case s.perKind[kind] >= MaxSamplesPerClass || len(s.list) >= maxSamples:
		k.message = OtherErrors
		if i, ok := s.byKey[k]; ok {
			s.list[i].Count += n
			return
		}
	default:
		s.perKind[kind]++
	}
	s.byKey[k] = len(s.list)
	s.list = append(s.list, ErrorSample{Label: label, Class: class, Message: k.message, Count: n})
}

// Merge adds samples, as another shard of a run counted them.
func (s *ErrorSamples) Merge(samples []ErrorSample) {
	for _, e := range samples {
		s.Add(e.Label, e.Class, e.Message, e.Count)
	}
}

// List returns the samples by label, then class, then the most frequent first; nil when none.
func (s *ErrorSamples) List() []ErrorSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == 0 {
		return nil
	}
	out := slices.Clone(s.list)
	slices.SortStableFunc(out, func(a, b ErrorSample) int {
		return cmp.Or(cmp.Compare(a.Label, b.Label), cmp.Compare(a.Class, b.Class), cmp.Compare(b.Count, a.Count))
	})
	return out
}
