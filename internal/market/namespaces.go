package market

import (
	"context"
	"log/slog"
	"slices"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
)

// ClaimNamespace makes the namespace name p's, first come; reserved when an admin reserves it.
// A reserved name (registry.Reserved, with Config.ReservedNamespaces) only an admin may
// reserve.
func (s *Service) ClaimNamespace(ctx context.Context, p barrage.Principal, name string, reserve bool) (barrage.Namespace, error) {
	if err := registry.CheckName("name", name); err != nil {
		return barrage.Namespace{}, barrage.Invalid("name", err.Error())
	}
	if !reserve && registry.Reserved(name, s.cfg.ReservedNamespaces) {
		return barrage.Namespace{}, barrage.Errorf(barrage.ErrConflict, "namespace %q is reserved for the service: ask an admin, who may reserve it and add you as an owner", name)
	}
	return s.store.ClaimNamespace(ctx, name, p.User.ID, reserve, postgres.QuotaOf(p, s.cfg.Quotas))
}

// TakeBackNamespace reserves the namespace name that a user claimed, for the admin p, saying
// why: its owners lose it and its signing keys are retired (what they published stays, for the
// admin to review), and the log records who took it from whom, and why.
func (s *Service) TakeBackNamespace(ctx context.Context, p barrage.Principal, name, reason string) (barrage.Namespace, error) {
	if err := registry.CheckName("name", name); err != nil {
		return barrage.Namespace{}, barrage.Invalid("name", err.Error())
	}
	reason, err := barrage.CheckText("reason", reason, 1, 500)
	if err != nil {
		return barrage.Namespace{}, err
	}
	from, err := s.store.TakeBackNamespace(ctx, name, p.User.ID, reason)
	if err != nil {
		return barrage.Namespace{}, err
	}
	s.log.WarnContext(ctx, "namespace taken back", slog.String("namespace", name), slog.String("admin_id", p.User.ID.String()),
		slog.Any("from_user_ids", from), slog.String("reason", reason))
	return s.store.Namespace(ctx, name)
}

// Namespaces lists p's namespaces.
func (s *Service) Namespaces(ctx context.Context, p barrage.Principal) ([]barrage.Namespace, error) {
	return s.store.NamespacesOf(ctx, p.User.ID)
}

// ReservedNamespaces lists the namespaces admins reserved, by name, with their owners and keys,
// for an admin.
func (s *Service) ReservedNamespaces(ctx context.Context) ([]barrage.Namespace, error) {
	return s.store.ReservedNamespaces(ctx)
}

// Namespace reads the namespace name, as p may see it: its owners only when p is one of them.
func (s *Service) Namespace(ctx context.Context, p barrage.Principal, name string) (barrage.Namespace, error) {
	ns, err := s.store.Namespace(ctx, name)
	if err != nil {
		return ns, err
	}
	if !slices.Contains(ns.Owners, p.User.ID) {
		ns.Owners = nil
	}
	return ns, nil
}

// AddSigningKey registers the public key text ("ed25519:<base64>") on p's namespace name,
// proof being the key's signature of that registration (registry.ProveKey).
func (s *Service) AddSigningKey(ctx context.Context, p barrage.Principal, name, text string, proof []byte) (barrage.SigningKey, error) {
	key, err := registry.ParsePublicKey(text)
	if err != nil {
		return barrage.SigningKey{}, barrage.Invalid("public_key", err.Error())
	}
	if err := registry.VerifyKeyProof(key, name, proof); err != nil {
		return barrage.SigningKey{}, barrage.Invalid("proof", err.Error()+": make it with barrage namespaces add-key")
	}
	return s.store.AddSigningKey(ctx, name, p.User.ID, key.ID(), key)
}

// RetireSigningKey retires the key id of p's namespace name.
func (s *Service) RetireSigningKey(ctx context.Context, p barrage.Principal, name, id string) (barrage.SigningKey, error) {
	return s.store.RetireSigningKey(ctx, name, p.User.ID, id)
}

// AddNamespaceOwner makes user a co-owner of p's namespace name, and returns it.
func (s *Service) AddNamespaceOwner(ctx context.Context, p barrage.Principal, name string, user uuid.UUID) (barrage.Namespace, error) {
	if err := s.store.AddNamespaceOwner(ctx, name, p.User.ID, user); err != nil {
		return barrage.Namespace{}, err
	}
	return s.Namespace(ctx, p, name)
}

// RemoveNamespaceOwner removes user from the owners of p's namespace name (not the last), and
// returns it as p may see it now.
func (s *Service) RemoveNamespaceOwner(ctx context.Context, p barrage.Principal, name string, user uuid.UUID) (barrage.Namespace, error) {
	if err := s.store.RemoveNamespaceOwner(ctx, name, p.User.ID, user); err != nil {
		return barrage.Namespace{}, err
	}
	return s.Namespace(ctx, p, name)
}
