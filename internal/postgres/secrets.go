package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// PutSecret stores the project's secret name sealed, set by owner, new or in place of the one of
// its name; created says which. A new one past barrage.MaxSecrets is refused, and nothing is
// stored.
func (s *Store) PutSecret(ctx context.Context, project, owner uuid.UUID, name string, sealed []byte) (barrage.Secret, bool, error) {
	var out barrage.Secret
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The project's row, locked: two new secrets at once are counted one after the other.
		if _, err := s.q.ProjectLock(ctx, tx, project); err != nil {
			return err
		}
		row, err := s.q.SecretPut(ctx, tx, dbsqlc.SecretPutParams{OwnerID: owner, ProjectID: project, Name: name, Sealed: sealed})
		if err != nil {
			return err
		}
		if row.Inserted {
			n, err := s.q.SecretCount(ctx, tx, project)
			if err != nil {
				return err
			}
			if n > barrage.MaxSecrets {
				return barrage.Errorf(barrage.ErrLimitExceeded, "the project has %d secrets, the most one may keep: delete one first", barrage.MaxSecrets)
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

// Secrets lists the project's secrets by name, without their values.
func (s *Store) Secrets(ctx context.Context, project uuid.UUID) ([]barrage.Secret, error) {
	rows, err := s.q.SecretList(ctx, s.pool, project)
	if err != nil {
		return nil, translate(err, "secrets")
	}
	out := make([]barrage.Secret, len(rows))
	for i, r := range rows {
		out[i] = barrage.Secret{Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// DeleteSecret deletes the project's secret name; one that does not exist is not found.
func (s *Store) DeleteSecret(ctx context.Context, project uuid.UUID, name string) error {
	n, err := s.q.SecretDelete(ctx, s.pool, dbsqlc.SecretDeleteParams{ProjectID: project, Name: name})
	if err != nil {
		return translate(err, "secret")
	}
	if n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "the project has no secret %s", name)
	}
	return nil
}

// Sealed is a secret's value as stored, sealed, with the user who set it (whom it is bound to).
type Sealed struct {
	Value []byte
	Owner uuid.UUID
}

// SealedSecrets reads the sealed values of the project's secrets of names, by name; a name the
// project has no secret of is absent.
func (s *Store) SealedSecrets(ctx context.Context, project uuid.UUID, names []string) (map[string]Sealed, error) {
	if len(names) == 0 {
		return map[string]Sealed{}, nil
	}
	rows, err := s.q.SecretGetMany(ctx, s.pool, dbsqlc.SecretGetManyParams{ProjectID: project, Names: names})
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", translate(err, "secrets"))
	}
	out := make(map[string]Sealed, len(rows))
	for _, r := range rows {
		out[r.Name] = Sealed{Value: r.Sealed, Owner: r.OwnerID}
	}
	return out, nil
}
