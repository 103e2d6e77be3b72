package barrage

import (
	"time"

	"github.com/google/uuid"
)

// Namespace is where a marketplace author publishes plugins (namespace/name): claimed by a
// user, first come, owned with the co-owners added, or reserved by an admin. Its keys sign its
// versions.
type Namespace struct {
	Name     string
	Reserved bool
	// ReservedReason says why an admin took it back from the user who claimed it.
	ReservedReason string
	Owners         []uuid.UUID
	Keys           []SigningKey
	CreatedAt      time.Time
}

// SigningKey is an Ed25519 public key of a namespace. A retired key signs nothing new and still
// verifies what it signed.
type SigningKey struct {
	ID        string // the first 16 hex digits of the SHA-256 of PublicKey
	PublicKey []byte
	AddedBy   *uuid.UUID
	CreatedAt time.Time
	RetiredAt *time.Time
}
