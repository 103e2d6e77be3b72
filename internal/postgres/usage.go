package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// Usage is what user keeps, as quotas count it (barrage.Quotas).
func (s *Store) Usage(ctx context.Context, user uuid.UUID) (barrage.Usage, error) {
	row, err := s.q.UserUsage(ctx, s.pool, user)
	if err != nil {
		return barrage.Usage{}, translate(err, "usage")
	}
	return barrage.Usage{StorageBytes: row.StorageBytes, Tests: row.Tests, Namespaces: row.Namespaces,
		PendingVersions: row.PendingVersions, Targets: row.Targets}, nil
}

// CheckQuotas refuses, with a *barrage.QuotaError, a change by p that adds adds to what p keeps,
// past q. A user without a license (unlimited) has no quotas. The check reads what p keeps and
// does not hold it: two changes at once may pass it together, which the bound on a user's heavy
// requests in flight keeps to two.
func (s *Store) CheckQuotas(ctx context.Context, p barrage.Principal, q barrage.Quotas, adds ...barrage.Adding) error {
	if p.User.License == nil || q == (barrage.Quotas{}) {
		return nil
	}
	u, err := s.Usage(ctx, p.User.ID)
	if err != nil {
		return err
	}
	return q.CheckAll(u, adds...)
}

// TestFileSize is the size of owner's test's file name, 0 when there is none: what replacing it
// frees.
func (s *Store) TestFileSize(ctx context.Context, owner, test uuid.UUID, name string) (int64, error) {
	n, err := s.q.TestFileSize(ctx, s.pool, dbsqlc.TestFileSizeParams{TestID: test, Name: name, OwnerID: owner})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
