package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"strings"
)

// The prefixes of Barrage's opaque secrets. They tell the kinds apart at a glance and let secret
// scanners recognise a leaked one.
const (
	PrefixAPIToken     = "brg_pat_"
	PrefixRefreshToken = "brg_rt_"
	PrefixInvitation   = "brg_inv_"
	PrefixAgentToken   = "brg_agt_"
)

// NewSecret returns prefix followed by 256 random bits, URL-safe.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// NewInvitationCode returns an invitation code: 160 random bits in lower-case base32, easy to
// read aloud and to paste.
func NewInvitationCode() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return PrefixInvitation + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// HashSecret returns the stored form of an opaque secret. The secrets carry at least 160 random
// bits, so a fast hash suffices and lookups by hash stay a single indexed query.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	return sum[:]
}
