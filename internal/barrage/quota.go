package barrage

import "fmt"

// Quotas bound what one user keeps on the server: the bytes of what they upload (tests' sources
// and data files, scripts, plugin artifacts pending or published), and the number of their tests,
// namespaces, plugin versions pending review and targets. A zero field bounds nothing. They apply
// to users with a license; the unlimited (admins) have none.
type Quotas struct {
	StorageBytes    int64
	Tests           int64
	Namespaces      int64
	PendingVersions int64
	Targets         int64
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
