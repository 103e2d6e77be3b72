// Package secrets keeps projects' secrets for their scripts: each value sealed with the server's
// keyring and bound to the user who set it and its name, listed without it, and opened only for
// what hands it to an agent (a shard, a debug) or keeps it out of what is stored (a HAR's
// import).
package secrets

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
)

// Store is what the secrets keep in PostgreSQL (*postgres.Store).
type Store interface {
	PutSecret(ctx context.Context, project, owner uuid.UUID, name string, sealed []byte) (barrage.Secret, bool, error)
	Secrets(ctx context.Context, project uuid.UUID) ([]barrage.Secret, error)
	DeleteSecret(ctx context.Context, project uuid.UUID, name string) error
	SealedSecrets(ctx context.Context, project uuid.UUID, names []string) (map[string]postgres.Sealed, error)
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
		ring = seal.Ephemeral()
	}
	return &Service{store: store, ring: ring}
}

// PutSecret sets the secret name of project (nil: p's home project, where p must be an editor)
// to value, sealed with the server's keyring; created says whether it is new. Its value is never
// returned or logged.
func (s *Service) PutSecret(ctx context.Context, p barrage.Principal, project *uuid.UUID, name, value string) (barrage.Secret, bool, error) {
	in, err := p.ProjectFor(project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Secret{}, false, err
	}
	if err := barrage.CheckSecretName("name", name); err != nil {
		return barrage.Secret{}, false, err
	}
	if err := barrage.CheckSecretValue("value", value); err != nil {
		return barrage.Secret{}, false, err
	}
	audit.Project(ctx, in)
	return s.store.PutSecret(ctx, in, p.User.ID, name, s.ring.Seal([]byte(value), secretOwner(p.User.ID, name)))
}

// Secrets lists the secrets of project (nil: p's home project), without their values.
func (s *Service) Secrets(ctx context.Context, p barrage.Principal, project *uuid.UUID) ([]barrage.Secret, error) {
	in, err := p.ProjectFor(project, barrage.ProjectViewer)
	if err != nil {
		return nil, err
	}
	return s.store.Secrets(ctx, in)
}

// DeleteSecret deletes the secret name of project (nil: p's home project, where p must be an
// editor). A run already admitted that reads it fails when an agent takes it, saying so.
func (s *Service) DeleteSecret(ctx context.Context, p barrage.Principal, project *uuid.UUID, name string) error {
	in, err := p.ProjectFor(project, barrage.ProjectEditor)
	if err != nil {
		return err
	}
	if err := barrage.CheckSecretName("name", name); err != nil {
		return err
	}
	audit.Project(ctx, in)
	return s.store.DeleteSecret(ctx, in, name)
}

// Values opens the project's secrets of names, by name. A name the project has no secret of is
// a *barrage.InvalidError naming it (its field is where it was asked for: secrets.NAME).
func (s *Service) Values(ctx context.Context, project uuid.UUID, names []string) (map[string]string, error) {
	sealed, err := s.store.SealedSecrets(ctx, project, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	missing := &barrage.InvalidError{}
	for _, name := range names {
		if _, ok := sealed[name]; !ok {
			missing.Fields = append(missing.Fields, barrage.FieldError{Field: "secrets." + name,
				Reason: "the project has no secret of this name, which the script reads as ${secret." + name + "}: set it (barrage secrets set " + name + ")"})
		}
	}
	if len(missing.Fields) > 0 {
		return nil, missing
	}
	for _, name := range names {
		v := sealed[name]
		plain, err := s.ring.Open(v.Value, secretOwner(v.Owner, name))
		if err != nil {
			// The server's keyring lacks the key that sealed it: an operator's mistake, not the
			// user's, and said without the value.
			return nil, fmt.Errorf("secret %s of project %s: %w (is the key that sealed it still in the keyring?)", name, project, err)
		}
		out[name] = string(plain)
	}
	return out, nil
}

// All opens every secret of the project, by name.
func (s *Service) All(ctx context.Context, project uuid.UUID) (map[string]string, error) {
	list, err := s.store.Secrets(ctx, project)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	names := make([]string, len(list))
	for i, sec := range list {
		names[i] = sec.Name
	}
	return s.Values(ctx, project, names)
}

// secretOwner is what a secret's sealed value is bound to: the user who set it and its name.
func secretOwner(owner uuid.UUID, name string) []byte { return []byte(owner.String() + "/" + name) }
