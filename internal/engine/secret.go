package engine

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// Masked is what a secret's value reads as wherever the engine could show it.
const Masked = "***"

// masker replaces the values of a run's secrets, as written and as a URL or JSON would carry
// them, with Masked: in traces, error samples and stop reasons.
type masker struct{ r *strings.Replacer }

// newMasker masks values; nil when there are none. Each is masked as written and in every form
// in which the run may carry or show it: form-encoded, in a URL's path (with its slashes, and
// with them escaped), escaped in a JSON string (as a body's template writes it, and as
// encoding/json does), quoted as a message quotes what it found; and each of these quoted once
// more (a JSON body quoted in a failed check's message).
func newMasker(values []string) *masker {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		first := []string{v, url.QueryEscape(v), url.PathEscape(v), (&url.URL{Path: v}).EscapedPath(), script.JSONEscape(v), jsonInner(v), goInner(v)}
		forms = append(forms, first...)
		for _, f := range first {
			forms = append(forms, script.JSONEscape(f), jsonInner(f), goInner(f))
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// The longest first: a value that holds another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Masked)
	}
	return &masker{strings.NewReplacer(pairs...)}
}

// jsonInner is s as encoding/json writes it inside a string (which escapes <, > and &).
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// goInner is s as strconv.Quote writes it, without the quotes: what %q in a message shows.
func goInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func (m *masker) string(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

func (m *masker) bytes(b []byte) []byte {
	if m == nil || b == nil {
		return b
	}
	return []byte(m.r.Replace(string(b)))
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
func (m *masker) event(ev TraceEvent) TraceEvent {
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
