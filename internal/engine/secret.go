package engine

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// Masked is what a secret's value reads as wherever the engine could show it.
const Masked = script.Masked

// masker masks the values of a run's secrets (script.Masker) in traces, error samples and stop
// reasons.
type masker struct{ m *script.Masker }

// newMasker masks values; nil when there are none.
func newMasker(values []string) *masker {
	m := script.NewMasker(values)
	if m == nil {
		return nil
	}
	return &masker{m}
}

func (m *masker) string(s string) string {
	if m == nil {
		return s
	}
	return m.m.String(s)
}

func (m *masker) bytes(b []byte) []byte {
	if m == nil {
		return b
	}
	return m.m.Bytes(b)
}

func (m *masker) err(err error) error {
	if m == nil || err == nil {
		return err
	}
	if s := m.string(err.Error()); s != err.Error() {
		return errors.New(s)
	}
	return err
}

// event is ev with every value it shows masked.
func (m *masker) event(ev run.TraceEvent) run.TraceEvent {
	if m == nil {
		return ev
	}
	ev.URL = m.string(ev.URL)
	ev.RequestHeader = slices.Clone(ev.RequestHeader)
	for i, h := range ev.RequestHeader {
		ev.RequestHeader[i][1] = m.string(h[1])
	}
	ev.RequestBody, ev.ResponseBody = m.bytes(ev.RequestBody), m.bytes(ev.ResponseBody)
	ev.ResponseHeader = m.header(ev.ResponseHeader)
	ev.Redirects = slices.Clone(ev.Redirects)
	for i, r := range ev.Redirects {
		ev.Redirects[i].URL = m.string(r.URL)
	}
	ev.Err = m.err(ev.Err)
	for k, v := range ev.Vars {
		ev.Vars[k] = m.string(v)
	}
	ev.Failures = slices.Clone(ev.Failures)
	for i, f := range ev.Failures {
		ev.Failures[i] = m.string(f)
	}
	return ev
}

func (m *masker) header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		for _, v := range vs {
			out[k] = append(out[k], m.string(v))
		}
	}
	return out
}

func (m *masker) samples(list []metrics.ErrorSample) []metrics.ErrorSample {
	if m == nil {
		return list
	}
	for i := range list {
		list[i].Message = m.string(list[i].Message)
	}
	return list
}

// secrets sets the values of the secrets s reads, from given, as the variables ${secret.NAME}
// reads, and returns them; a secret s reads and was not given is an error naming each.
func secrets(s *script.Script, given map[string]string, consts map[string]string) ([]string, error) {
	var missing, values []string
	for _, name := range s.Secrets {
		v, ok := given[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		consts[script.SecretVar(name)] = v
		values = append(values, v)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the script reads secrets it was not given: %s", strings.Join(missing, ", "))
	}
	return values, nil
}
