package barrage

import (
	"cmp"
	"fmt"
)

// Quotas bound what one user keeps on the server: the bytes of what they upload (tests' sources
// and data files, scripts, plugin artifacts pending or published), and the number of their tests,
// namespaces, plugin versions pending review and targets. A zero field bounds nothing. They apply
// to users with a license; the unlimited (admins) have none.
//
// The server has defaults (the operator's); a license may set its own for some, which then
// replace the server's for its user (Over).
type Quotas struct {
	StorageBytes    int64 `json:"storage_bytes,omitempty"`
	Tests           int64 `json:"tests,omitempty"`
	Namespaces      int64 `json:"namespaces,omitempty"`
	PendingVersions int64 `json:"pending_versions,omitempty"`
	Targets         int64 `json:"targets,omitempty"`
}

// Over is q where it sets a quota, defaults where it does not.
func (q Quotas) Over(defaults Quotas) Quotas {
	return Quotas{
		StorageBytes: cmp.Or(q.StorageBytes, defaults.StorageBytes), Tests: cmp.Or(q.Tests, defaults.Tests),
		Namespaces: cmp.Or(q.Namespaces, defaults.Namespaces), PendingVersions: cmp.Or(q.PendingVersions, defaults.PendingVersions),
		Targets: cmp.Or(q.Targets, defaults.Targets),
	}
}

// Set sets the quota named to n (0: not set), and reports whether there is a quota of that name.
func (q *Quotas) Set(name string, n int64) bool {
	f := map[string]*int64{QuotaStorageBytes: &q.StorageBytes, QuotaTests: &q.Tests, QuotaNamespaces: &q.Namespaces,
		QuotaPendingVersions: &q.PendingVersions, QuotaTargets: &q.Targets}[name]
	if f == nil {
		return false
	}
	*f = n
	return true
}

// Quotas are what u may keep on a server whose defaults are defaults: none for a user without a
// license (unlimited), else their license's quotas over the defaults.
func (u User) Quotas(defaults Quotas) Quotas {
	if u.License == nil {
		return Quotas{}
	}
	return u.License.Quotas.Over(defaults)
}

// Usage is what a user keeps, counted as Quotas bounds it.
type Usage Quotas

// The quotas, by the names problems and the API give them.
const (
	QuotaStorageBytes    = "storage_bytes"
	QuotaTests           = "tests"
	QuotaNamespaces      = "namespaces"
	QuotaPendingVersions = "pending_versions"
	QuotaTargets         = "targets"
)

// NamedQuota is one quota: its name, its limit (0: none), and what a user uses of it.
type NamedQuota struct {
	Name        string
	Limit, Used int64
}

// Named lists the quotas by name, each with what u uses of it.
func (q Quotas) Named(u Usage) []NamedQuota {
	return []NamedQuota{
		{QuotaStorageBytes, q.StorageBytes, u.StorageBytes}, {QuotaTests, q.Tests, u.Tests},
		{QuotaNamespaces, q.Namespaces, u.Namespaces}, {QuotaPendingVersions, q.PendingVersions, u.PendingVersions},
		{QuotaTargets, q.Targets, u.Targets},
	}
}

// Check refuses adding more of the quota named to what u uses, past q, with a *QuotaError.
func (q Quotas) Check(u Usage, name string, adding int64) error {
	for _, n := range q.Named(u) {
		if n.Name == name && n.Limit > 0 && n.Used+adding > n.Limit {
			return &QuotaError{Quota: name, Limit: n.Limit, Used: n.Used, Adding: adding}
		}
	}
	return nil
}

// QuotaError is a change refused because it would take a user past a quota: which, its size, what
// is in use, and what the change would add. It answers 403, itself in the problem's quota.
type QuotaError struct {
	Quota  string `json:"quota"`
	Limit  int64  `json:"limit"`
	Used   int64  `json:"used"`
	Adding int64  `json:"adding"`
}

func (e *QuotaError) Error() string {
	unit := ""
	if e.Quota == QuotaStorageBytes {
		unit = " bytes"
	}
	return fmt.Sprintf("quota %s exceeded: %d%s in use of %d, and this would add %d; delete what you no longer need, or ask an admin for more",
		e.Quota, e.Used, unit, e.Limit, e.Adding)
}

// Unwrap makes errors.Is(err, ErrForbidden) hold.
func (e *QuotaError) Unwrap() error { return ErrForbidden }

// CheckGrowth refuses, with the first *QuotaError, a change that took what a user keeps from
// before to after past a quota, of which they keep more than before: a change that frees, or
// keeps as much, passes even past a quota lowered since.
func (q Quotas) CheckGrowth(before, after Usage) error {
	was := q.Named(before)
	for i, n := range q.Named(after) {
		if n.Limit > 0 && n.Used > n.Limit && n.Used > was[i].Used {
			return &QuotaError{Quota: n.Name, Limit: n.Limit, Used: was[i].Used, Adding: n.Used - was[i].Used}
		}
	}
	return nil
}

// Adding is what a change adds to one quota.
type Adding struct {
	Quota string
	N     int64
}

// CheckAll refuses, with the first *QuotaError, a change that adds each of adds to what u uses.
func (q Quotas) CheckAll(u Usage, adds ...Adding) error {
	for _, a := range adds {
		if err := q.Check(u, a.Quota, a.N); err != nil {
			return err
		}
	}
	return nil
}
