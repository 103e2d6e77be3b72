package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// PutSecret stores owner's secret name sealed, new or in place of the one of its name; created
// says which. A new one past barrage.MaxSecrets is refused, and nothing is stored.
func (s *Store) PutSecret(ctx context.Context, owner uuid.UUID, name string, sealed []byte) (barrage.Secret, bool, error) {
	var out barrage.Secret
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The owner's row, locked: two new secrets at once are counted one after the other.
		if _, err := tx.Exec(ctx, "SELECT 1 FROM users WHERE id = $1 FOR UPDATE", owner); err != nil {
			return err
		}
		row, err := s.q.SecretPut(ctx, tx, dbsqlc.SecretPutParams{OwnerID: owner, Name: name, Sealed: sealed})
		if err != nil {
			return err
		}
		if row.Inserted {
			n, err := s.q.SecretCount(ctx, tx, owner)
			if err != nil {
				return err
			}
			if n > barrage.MaxSecrets {
				return barrage.Errorf(barrage.ErrLimitExceeded, "you have %d secrets, the most one may keep: delete one first", barrage.MaxSecrets)
			}
		}
		out, created = barrage.Secret{Name: row.Name, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, row.Inserted
		return nil
	})
	if err != nil {
		return out, false, translate(err, "secret")
	}
	return out, created, nil
}

// Secrets lists owner's secrets by name, without their values.
func (s *Store) Secrets(ctx context.Context, owner uuid.UUID) ([]barrage.Secret, error) {
	rows, err := s.q.SecretList(ctx, s.pool, owner)
	if err != nil {
		return nil, translate(err, "secrets")
	}
	out := make([]barrage.Secret, len(rows))
	for i, r := range rows {
		out[i] = barrage.Secret{Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// DeleteSecret deletes owner's secret name; one that does not exist is not found.
func (s *Store) DeleteSecret(ctx context.Context, owner uuid.UUID, name string) error {
	n, err := s.q.SecretDelete(ctx, s.pool, dbsqlc.SecretDeleteParams{OwnerID: owner, Name: name})
	if err != nil {
		return translate(err, "secret")
	}
	if n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "you have no secret %s", name)
	}
	return nil
}

// SealedSecrets reads the sealed values of owner's secrets of names, by name; a name owner has
// no secret of is absent.
func (s *Store) SealedSecrets(ctx context.Context, owner uuid.UUID, names []string) (map[string][]byte, error) {
	if len(names) == 0 {
		return map[string][]byte{}, nil
	}
	rows, err := s.q.SecretGetMany(ctx, s.pool, dbsqlc.SecretGetManyParams{OwnerID: owner, Names: names})
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", translate(err, "secrets"))
	}
	out := make(map[string][]byte, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Sealed
	}
	return out, nil
}
