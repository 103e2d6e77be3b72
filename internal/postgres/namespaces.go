package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// ClaimNamespace makes the namespace name, owned by owner (reserved when an admin reserves it).
// A name taken already, or reserved, is an ErrConflict.
func (s *Store) ClaimNamespace(ctx context.Context, name string, owner uuid.UUID, reserved bool, q Quota) (barrage.Namespace, error) {
	err := s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		var claimedBy *uuid.UUID
		if !reserved {
			claimedBy = &owner
		}
		if _, err := s.q.NamespaceInsert(ctx, tx, dbsqlc.NamespaceInsertParams{Name: name, Reserved: reserved, ClaimedBy: claimedBy}); err != nil {
			if errors.Is(translate(err, "namespace"), barrage.ErrConflict) {
				return barrage.Errorf(barrage.ErrConflict, "namespace %q is taken", name)
			}
			return translate(err, "namespace")
		}
		return s.q.NamespaceOwnerAdd(ctx, tx, dbsqlc.NamespaceOwnerAddParams{Namespace: name, UserID: owner})
	})
	if err != nil {
		return barrage.Namespace{}, err
	}
	return s.Namespace(ctx, name)
}

// TakeBackNamespace makes the namespace name, which a user claimed, reserved and admin's alone,
// saying why; its signing keys are retired, and its versions waiting for review rejected with
// that reason. It returns who owned it. A name nobody claimed is an ErrNotFound; one reserved
// already an ErrConflict.
func (s *Store) TakeBackNamespace(ctx context.Context, name string, admin uuid.UUID, reason string) ([]uuid.UUID, error) {
	var from []uuid.UUID
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.NamespaceGetForUpdate(ctx, tx, name)
		if err != nil {
			return translate(err, "namespace")
		}
		if row.Reserved {
			return barrage.Errorf(barrage.ErrConflict, "namespace %q is reserved already", name)
		}
		if from, err = s.q.NamespaceOwnersClear(ctx, tx, name); err != nil {
			return err
		}
		if err := s.q.SigningKeysRetireAll(ctx, tx, name); err != nil {
			return err
		}
		why := "the namespace was taken back: " + reason
		if _, err := s.q.PluginVersionsRejectPending(ctx, tx, dbsqlc.PluginVersionsRejectPendingParams{
			Namespace: name, StateReason: why, ReviewedBy: &admin}); err != nil {
			return err
		}
		if err := s.q.NamespaceTakeBack(ctx, tx, dbsqlc.NamespaceTakeBackParams{Name: name, Reason: &reason}); err != nil {
			return err
		}
		return s.q.NamespaceOwnerAdd(ctx, tx, dbsqlc.NamespaceOwnerAddParams{Namespace: name, UserID: admin})
	})
	return from, err
}

// Namespace reads the namespace name with its owners and keys.
func (s *Store) Namespace(ctx context.Context, name string) (barrage.Namespace, error) {
	row, err := s.q.NamespaceGet(ctx, s.pool, name)
	if err != nil {
		return barrage.Namespace{}, translate(err, "namespace")
	}
	return s.withOwnersAndKeys(ctx, row)
}

func (s *Store) withOwnersAndKeys(ctx context.Context, row dbsqlc.Namespace) (barrage.Namespace, error) {
	name := row.Name
	ns := barrage.Namespace{Name: row.Name, Reserved: row.Reserved, CreatedAt: row.CreatedAt}
	if row.ReservedReason != nil {
		ns.ReservedReason = *row.ReservedReason
	}
	var err error
	if ns.Owners, err = s.q.NamespaceOwnerIDs(ctx, s.pool, name); err != nil {
		return barrage.Namespace{}, err
	}
	keys, err := s.q.SigningKeys(ctx, s.pool, name)
	if err != nil {
		return barrage.Namespace{}, err
	}
	for _, k := range keys {
		ns.Keys = append(ns.Keys, signingKeyFromRow(k))
	}
	return ns, nil
}

// NamespacesOf lists the namespaces user owns, each with its owners and keys (a user owns few).
func (s *Store) NamespacesOf(ctx context.Context, user uuid.UUID) ([]barrage.Namespace, error) {
	rows, err := s.q.NamespacesOfUser(ctx, s.pool, user)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Namespace, len(rows))
	for i, r := range rows {
		if out[i], err = s.withOwnersAndKeys(ctx, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReservedNamespaces lists the namespaces admins reserved, by name, each with its owners and
// keys, read together from one snapshot in three queries however many there are.
func (s *Store) ReservedNamespaces(ctx context.Context) ([]barrage.Namespace, error) {
	var out []barrage.Namespace
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := s.q.NamespacesReserved(ctx, tx)
		if err != nil {
			return err
		}
		out = make([]barrage.Namespace, len(rows))
		names := make([]string, len(rows))
		byName := make(map[string]*barrage.Namespace, len(rows))
		for i, r := range rows {
			out[i] = barrage.Namespace{Name: r.Name, Reserved: r.Reserved, ReservedReason: deref(r.ReservedReason), CreatedAt: r.CreatedAt}
			names[i] = r.Name
			byName[r.Name] = &out[i]
		}
		owners, err := s.q.NamespaceOwnersOf(ctx, tx, names)
		if err != nil {
			return err
		}
		for _, o := range owners {
			ns := byName[o.Namespace]
			ns.Owners = append(ns.Owners, o.UserID)
		}
		keys, err := s.q.SigningKeysOf(ctx, tx, names)
		if err != nil {
			return err
		}
		for _, k := range keys {
			ns := byName[k.Namespace]
			ns.Keys = append(ns.Keys, signingKeyFromRow(k))
		}
		return nil
	})
	return out, err
}

// owned checks, in tx, that actor owns the namespace name: another user's namespace is not
// found, as every other owner-only thing.
func (s *Store) owned(ctx context.Context, tx pgx.Tx, name string, actor uuid.UUID) error {
	ok, err := s.q.NamespaceIsOwner(ctx, tx, dbsqlc.NamespaceIsOwnerParams{Namespace: name, UserID: actor})
	if err != nil {
		return err
	}
	if !ok {
		return barrage.Errorf(barrage.ErrNotFound, "namespace %q not found among yours", name)
	}
	return nil
}

// AddNamespaceOwner makes user a co-owner of actor's namespace name.
func (s *Store) AddNamespaceOwner(ctx context.Context, name string, actor, user uuid.UUID) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, name, actor); err != nil {
			return err
		}
		err := s.q.NamespaceOwnerAdd(ctx, tx, dbsqlc.NamespaceOwnerAddParams{Namespace: name, UserID: user})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgForeignKeyViolation {
			return barrage.Errorf(barrage.ErrNotFound, "user %s not found", user)
		}
		return translate(err, "owner")
	})
}

// RemoveNamespaceOwner removes user from the owners of actor's namespace name; the last owner
// stays (an ErrConflict).
func (s *Store) RemoveNamespaceOwner(ctx context.Context, name string, actor, user uuid.UUID) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, name, actor); err != nil {
			return err
		}
		n, err := s.q.NamespaceOwnerRemove(ctx, tx, dbsqlc.NamespaceOwnerRemoveParams{Namespace: name, UserID: user})
		if err != nil {
			return err
		}
		if n == 0 {
			return barrage.Errorf(barrage.ErrConflict, "not removed: not an owner of %q, or its last", name)
		}
		return nil
	})
}

// AddSigningKey registers key on actor's namespace name. A key registered already is an
// ErrConflict.
func (s *Store) AddSigningKey(ctx context.Context, name string, actor uuid.UUID, id string, key []byte) (barrage.SigningKey, error) {
	var k barrage.SigningKey
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, name, actor); err != nil {
			return err
		}
		row, err := s.q.SigningKeyInsert(ctx, tx, dbsqlc.SigningKeyInsertParams{Namespace: name, ID: id, PublicKey: key, AddedBy: &actor})
		if errors.Is(translate(err, "key"), barrage.ErrConflict) {
			return barrage.Errorf(barrage.ErrConflict, "key %s is registered on %q already", id, name)
		}
		if err != nil {
			return translate(err, "key")
		}
		k = signingKeyFromRow(row)
		return nil
	})
	return k, err
}

// RetireSigningKey retires the key id of actor's namespace name: it signs nothing new, and
// still verifies what it signed. Retiring it again changes nothing.
func (s *Store) RetireSigningKey(ctx context.Context, name string, actor uuid.UUID, id string) (barrage.SigningKey, error) {
	var k barrage.SigningKey
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, name, actor); err != nil {
			return err
		}
		row, err := s.q.SigningKeyRetire(ctx, tx, dbsqlc.SigningKeyRetireParams{Namespace: name, ID: id})
		if err != nil {
			return translate(err, fmt.Sprintf("key %s", id))
		}
		k = signingKeyFromRow(row)
		return nil
	})
	return k, err
}

func signingKeyFromRow(r dbsqlc.SigningKey) barrage.SigningKey {
	return barrage.SigningKey{ID: r.ID, PublicKey: r.PublicKey, AddedBy: r.AddedBy, CreatedAt: r.CreatedAt, RetiredAt: r.RetiredAt}
}
