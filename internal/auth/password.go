// Package auth holds the credentials primitives: argon2id password hashes, Ed25519-signed JWT
// access tokens, and the opaque secrets (refresh tokens, API tokens, invitation codes) that are
// shown once and stored as hashes.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the argon2id cost parameters.
type Argon2Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
	SaltLen     uint32
	KeyLen      uint32
}

// OWASPParams are OWASP's recommended argon2id settings: 19 MiB, 2 iterations, 1 lane.
var OWASPParams = Argon2Params{MemoryKiB: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}

// ErrMismatch means the password does not match the hash.
var ErrMismatch = errors.New("password does not match")

// Hasher hashes and verifies passwords. It bounds how many hashes run at once, because each
// takes MemoryKiB of memory and a burst of sign-ins must not exhaust the host.
type Hasher struct {
	params Argon2Params
	slots  chan struct{}
	// dummy is a hash of nothing in particular, verified when an account does not exist so
	// that an unknown email costs as much time as a wrong password.
	dummy string
}

// NewHasher returns a Hasher with the given parameters.
func NewHasher(p Argon2Params) *Hasher {
	h := &Hasher{params: p, slots: make(chan struct{}, 2*runtime.GOMAXPROCS(0))}
	h.dummy = h.hash([]byte("barrage-dummy-password"))
	return h
}

// Hash returns the PHC-encoded argon2id hash of password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return h.hash([]byte(password)), nil
}

func (h *Hasher) hash(password []byte) string {
	salt := make([]byte, h.params.SaltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails on supported platforms
	key := argon2.IDKey(password, salt, h.params.Iterations, h.params.MemoryKiB, h.params.Parallelism, h.params.KeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		h.params.MemoryKiB, h.params.Iterations, h.params.Parallelism, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify returns nil when password matches encoded, ErrMismatch when it does not.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer h.release()
	p, salt, key, err := decodeHash(encoded)
	if err != nil {
		return err
	}
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(len(key)))
	if subtle.ConstantTimeCompare(got, key) != 1 {
		return ErrMismatch
	}
	return nil
}

// VerifyDummy spends the time of one verification and always fails: call it when there is no
// account, so that timing does not tell unknown emails from wrong passwords.
func (h *Hasher) VerifyDummy(ctx context.Context, password string) error {
	if err := h.Verify(ctx, h.dummy, password+"\x00"); err != nil && !errors.Is(err, ErrMismatch) {
		return err
	}
	return ErrMismatch
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.slots }

func decodeHash(encoded string) (Argon2Params, []byte, []byte, error) {
	var p Argon2Params
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, errors.New("password hash: not an argon2id PHC string")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errors.New("password hash: unsupported argon2 version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil {
		return p, nil, nil, fmt.Errorf("password hash: parameters: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return p, nil, nil, fmt.Errorf("password hash: salt: %w", err)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return p, nil, nil, fmt.Errorf("password hash: key: %w", err)
	}
	return p, salt, key, nil
}
