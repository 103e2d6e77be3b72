package barrage

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits bound what one run may ask for. Licenses carry them; so do agents (the shared demo
// agent caps each job at 500 VUs and 5 minutes). A zero field means "no limit".
type Limits struct {
	MaxVUs            int
	MaxRunDuration    time.Duration
	MaxConcurrentRuns int
}

// Tightest returns the limits that satisfy both l and o.
func (l Limits) Tightest(o Limits) Limits {
	return Limits{
		MaxVUs:            minLimit(l.MaxVUs, o.MaxVUs),
		MaxRunDuration:    minLimit(l.MaxRunDuration, o.MaxRunDuration),
		MaxConcurrentRuns: minLimit(l.MaxConcurrentRuns, o.MaxConcurrentRuns),
	}
}

func minLimit[T int | time.Duration](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// License is what a user may run, and until when.
type License struct {
	Plan   string
	Limits Limits
	// Quotas are the license's own, over the server's defaults (zero fields: the defaults).
	Quotas     Quotas
	ValidUntil time.Time
}

// LicenseTemplate is the license an invitation grants; its validity starts at redemption.
type LicenseTemplate struct {
	Plan      string
	Limits    Limits
	Quotas    Quotas
	ValidDays int
}

// PlanDemo names the demo template.
const PlanDemo = "demo"

// DemoLicense is the ready "demo" template: 100 virtual users for two weeks. Runs are capped at
// 30 minutes and two at a time so a demo cannot hold a shared agent for long.
var DemoLicense = LicenseTemplate{
	Plan: PlanDemo,
	Limits: Limits{
		MaxVUs:            100,
		MaxRunDuration:    30 * time.Minute,
		MaxConcurrentRuns: 2,
	},
	ValidDays: 14,
}

// Issue returns the license this template grants when redeemed at now.
func (t LicenseTemplate) Issue(now time.Time) License {
	return License{
		Plan:       t.Plan,
		Limits:     t.Limits,
		Quotas:     t.Quotas,
		ValidUntil: now.Add(time.Duration(t.ValidDays) * 24 * time.Hour),
	}
}

// Load is what a run asks for, checked against limits when the run is admitted.
type Load struct {
	VUs      int
	Duration time.Duration
	// ActiveRuns counts the user's runs already in progress, not including this one.
	ActiveRuns int
}

// The limit names a LimitViolation reports; they match the API's field names.
const (
	LimitValidUntil        = "valid_until"
	LimitMaxVUs            = "max_vus"
	LimitMaxRunDuration    = "max_run_duration_seconds"
	LimitMaxConcurrentRuns = "max_concurrent_runs"
)

// LimitViolation says which limit a load breaks, what is allowed and what was asked.
type LimitViolation struct {
	Limit     string `json:"limit"`
	Allowed   any    `json:"allowed"`
	Requested any    `json:"requested"`
	// SetBy says whose limit it is: the license's, or an agent's own.
	SetBy string `json:"set_by,omitempty"`
}

// String is the violation as people read it.
func (v LimitViolation) String() string {
	s := fmt.Sprintf("%s: allowed %v, requested %v", v.Limit, v.Allowed, v.Requested)
	if v.SetBy != "" {
		s += " (the limit of " + v.SetBy + ")"
	}
	return s
}

// LimitError is an ErrLimitExceeded listing every limit broken, in a fixed order.
type LimitError struct {
	Violations []LimitViolation
}

func (e *LimitError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "limit exceeded: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrLimitExceeded) hold.
func (e *LimitError) Unwrap() error { return ErrLimitExceeded }

// Whose says in each violation of err, a *LimitError of a load checked against the tightest
// of lic's limits and those of agents, whose limit it is: the license's (first, when both have
// it), or the agent's whose own limit was the tightest. Other errors are returned as they are.
func Whose(err error, lic *License, agents []Agent) error {
	var lim *LimitError
	if !errors.As(err, &lim) {
		return err
	}
	licensed := "your license"
	if lic != nil && lic.Plan != "" {
		licensed = "your " + lic.Plan + " license"
	}
	for i, v := range lim.Violations {
		lim.Violations[i].SetBy = licensed
		own := func(l Limits) any {
			if v.Limit == LimitMaxVUs {
				return l.MaxVUs
			}
			return int64(l.MaxRunDuration / time.Second)
		}
		if (v.Limit != LimitMaxVUs && v.Limit != LimitMaxRunDuration) || (lic != nil && fmt.Sprint(own(lic.Limits)) == fmt.Sprint(v.Allowed)) {
			continue
		}
		for _, a := range agents {
			if fmt.Sprint(own(a.Limits)) == fmt.Sprint(v.Allowed) {
				lim.Violations[i].SetBy = fmt.Sprintf("agent %q, for each run on it", a.Name)
				if a.Shared() {
					lim.Violations[i].SetBy = fmt.Sprintf("the shared agent %q, for each run on it", a.Name)
				}
				break
			}
		}
	}
	return err
}

// Check returns a *LimitError naming each limit the load breaks, or nil.
func (l Limits) Check(load Load) error {
	return limitError(l.violations(load))
}

func (l Limits) violations(load Load) []LimitViolation {
	var vs []LimitViolation
	if l.MaxVUs > 0 && load.VUs > l.MaxVUs {
		vs = append(vs, LimitViolation{Limit: LimitMaxVUs, Allowed: l.MaxVUs, Requested: load.VUs})
	}
	if l.MaxRunDuration > 0 && load.Duration > l.MaxRunDuration {
		// Rounded up: 300.001 s is past a limit of 300 and must not read as 300.
		asked := (load.Duration + time.Second - 1) / time.Second
		vs = append(vs, LimitViolation{Limit: LimitMaxRunDuration, Allowed: int64(l.MaxRunDuration / time.Second), Requested: int64(asked)})
	}
	if l.MaxConcurrentRuns > 0 && load.ActiveRuns+1 > l.MaxConcurrentRuns {
		vs = append(vs, LimitViolation{Limit: LimitMaxConcurrentRuns, Allowed: l.MaxConcurrentRuns, Requested: load.ActiveRuns + 1})
	}
	return vs
}

// Check returns a *LimitError naming each way the load breaks the license at now, including an
// expired license, or nil. A nil license means no limits.
func (l *License) Check(now time.Time, load Load) error {
	if l == nil {
		return nil
	}
	var vs []LimitViolation
	if !now.Before(l.ValidUntil) {
		vs = append(vs, LimitViolation{Limit: LimitValidUntil, Allowed: l.ValidUntil.UTC().Format(time.RFC3339), Requested: now.UTC().Format(time.RFC3339)})
	}
	return limitError(append(vs, l.Limits.violations(load)...))
}

func limitError(vs []LimitViolation) error {
	if len(vs) == 0 {
		return nil
	}
	return &LimitError{Violations: vs}
}
