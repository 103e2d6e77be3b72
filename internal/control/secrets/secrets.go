// Package secrets keeps users' secrets for their scripts: each value sealed with the server's
// keyring and bound to its owner and name, listed without it, and opened only for what hands it
// to an agent (a shard, a debug) or keeps it out of what is stored (a HAR's import).
package secrets

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/seal"
)

// Store is what the secrets keep in PostgreSQL (*postgres.Store).
type Store interface {
	PutSecret(ctx context.Context, owner uuid.UUID, name string, sealed []byte) (barrage.Secret, bool, error)
	Secrets(ctx context.Context, owner uuid.UUID) ([]barrage.Secret, error)
	DeleteSecret(ctx context.Context, owner uuid.UUID, name string) error
	SealedSecrets(ctx context.Context, owner uuid.UUID, names []string) (map[string][]byte, error)
}

// Service keeps users' secrets.
type Service struct {
	store Store
	ring  *seal.Ring
}

// New returns the secrets on store, sealed with ring; a nil ring seals with a key of this process
// alone (tests).
func New(store Store, ring *seal.Ring) *Service {
	if ring == nil {
		key := make([]byte, seal.KeySize)
		_, _ = rand.Read(key)
		ring, _ = seal.New(key) // a key of the right size never fails
	}
	return &Service{store: store, ring: ring}
}

// PutSecret sets p's secret name to value, sealed with the server's keyring; created says
// whether it is new. Its value is never returned or logged.
func (s *Service) PutSecret(ctx context.Context, p barrage.Principal, name, value string) (barrage.Secret, bool, error) {
	if err := barrage.CheckSecretName("name", name); err != nil {
		return barrage.Secret{}, false, err
	}
	if err := barrage.CheckSecretValue("value", value); err != nil {
		return barrage.Secret{}, false, err
	}
	return s.store.PutSecret(ctx, p.User.ID, name, s.ring.Seal([]byte(value), secretOwner(p.User.ID, name)))
}

// Secrets lists p's secrets, without their values.
func (s *Service) Secrets(ctx context.Context, p barrage.Principal) ([]barrage.Secret, error) {
	return s.store.Secrets(ctx, p.User.ID)
}

// DeleteSecret deletes p's secret name. A run already admitted that reads it fails when an agent
// takes it, saying so.
func (s *Service) DeleteSecret(ctx context.Context, p barrage.Principal, name string) error {
	if err := barrage.CheckSecretName("name", name); err != nil {
		return err
	}
	return s.store.DeleteSecret(ctx, p.User.ID, name)
}

// Values opens owner's secrets of names, by name. A name owner has no secret of is a
// *barrage.InvalidError naming it (its field is where it was asked for: secrets.NAME).
func (s *Service) Values(ctx context.Context, owner uuid.UUID, names []string) (map[string]string, error) {
	sealed, err := s.store.SealedSecrets(ctx, owner, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	missing := &barrage.InvalidError{}
	for _, name := range names {
		if _, ok := sealed[name]; !ok {
			missing.Fields = append(missing.Fields, barrage.FieldError{Field: "secrets." + name,
				Reason: "you have no secret of this name, which the script reads as ${secret." + name + "}: set it (barrage secrets set " + name + ")"})
		}
	}
	if len(missing.Fields) > 0 {
		return nil, missing
	}
	for _, name := range names {
		v := sealed[name]
		plain, err := s.ring.Open(v, secretOwner(owner, name))
		if err != nil {
			// The server's keyring lacks the key that sealed it: an operator's mistake, not the
			// user's, and said without the value.
			return nil, fmt.Errorf("secret %s of %s: %w (is the key that sealed it still in the keyring?)", name, owner, err)
		}
		out[name] = string(plain)
	}
	return out, nil
}

// All opens every secret of owner, by name.
func (s *Service) All(ctx context.Context, owner uuid.UUID) (map[string]string, error) {
	list, err := s.store.Secrets(ctx, owner)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	names := make([]string, len(list))
	for i, sec := range list {
		names[i] = sec.Name
	}
	return s.Values(ctx, owner, names)
}

// secretOwner is what a secret's sealed value is bound to: its owner and name.
func secretOwner(owner uuid.UUID, name string) []byte { return []byte(owner.String() + "/" + name) }
