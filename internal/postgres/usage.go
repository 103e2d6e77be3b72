package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// Usage is what user keeps, as quotas count it (barrage.Quotas).
func (s *Store) Usage(ctx context.Context, user uuid.UUID) (barrage.Usage, error) {
	return s.usage(ctx, s.pool, user)
}

func (s *Store) usage(ctx context.Context, db dbsqlc.DBTX, user uuid.UUID) (barrage.Usage, error) {
	row, err := s.q.UserUsage(ctx, db, user)
	if err != nil {
		return barrage.Usage{}, translate(err, "usage")
	}
	return barrage.Usage{StorageBytes: row.StorageBytes, Tests: row.Tests, Namespaces: row.Namespaces,
		PendingVersions: row.PendingVersions, Targets: row.Targets}, nil
}

// Quota is what a change may take its user's keeping to: the user, and their limits. The store's
// methods that add to what a user keeps make their change in a transaction that holds the user's
// quota lock, and refuse it when it took the user past a quota (inQuotaTx); the zero Quota holds
// nothing.
type Quota struct {
	User   uuid.UUID
	Limits barrage.Quotas
}

// QuotaOf is the Quota of a change by p on a server whose default quotas are defaults: p's
// license's quotas over them, none for a user without a license.
func QuotaOf(p barrage.Principal, defaults barrage.Quotas) Quota {
	return Quota{User: p.User.ID, Limits: p.User.Quotas(defaults)}
}

// inQuotaTx runs fn in a transaction that holds q's user's quota lock, and refuses what fn did,
// with a *barrage.QuotaError, when it took them past a quota they keep more of than before. What
// the change adds is measured, not foretold: a file that replaces one, content a script shares
// with a test, a script that is one already, count as what they are.
func (s *Store) inQuotaTx(ctx context.Context, q Quota, fn func(tx pgx.Tx) error) error {
	if q.Limits == (barrage.Quotas{}) {
		return s.inTx(ctx, fn)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.QuotaLock(ctx, tx, q.User.String()); err != nil {
			return err
		}
		before, err := s.usage(ctx, tx, q.User)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		after, err := s.usage(ctx, tx, q.User)
		if err != nil {
			return err
		}
		return q.Limits.CheckGrowth(before, after)
	})
}

// CheckQuotas refuses, with a *barrage.QuotaError, a change that would add adds to what q's user
// keeps, before it begins: for a change whose bytes come after (a plugin version's artifacts),
// refused before they are sent. It holds nothing: the change is held to q again as it is stored.
func (s *Store) CheckQuotas(ctx context.Context, q Quota, adds ...barrage.Adding) error {
	if q.Limits == (barrage.Quotas{}) {
		return nil
	}
	u, err := s.Usage(ctx, q.User)
	if err != nil {
		return err
	}
	return q.Limits.CheckAll(u, adds...)
}
