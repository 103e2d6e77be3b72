package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// MaxAccessTTL is the longest an access token may live.
const MaxAccessTTL = 15 * time.Minute

func init() {
	// Millisecond iat and exp: a password change refuses access tokens issued before it, and
	// whole seconds would let one issued in the same second through.
	jwt.TimePrecision = time.Millisecond
}

// signingMethod is the one algorithm Barrage signs and accepts.
var signingMethod = jwt.SigningMethodEdDSA

// ErrInvalidToken is returned for any access token that is not accepted.
var ErrInvalidToken = errors.New("invalid access token")

// AccessClaims are the claims of an access token.
type AccessClaims struct {
	UserID   uuid.UUID
	IssuedAt time.Time
	Expiry   time.Time
}

// Tokens issues and verifies access tokens.
type Tokens struct {
	key      ed25519.PrivateKey
	issuer   string
	audience string
	ttl      time.Duration
	parser   *jwt.Parser
	now      func() time.Time
}

// NewTokens returns Tokens signing with key. ttl is capped at MaxAccessTTL.
func NewTokens(key ed25519.PrivateKey, issuer, audience string, ttl time.Duration) *Tokens {
	if ttl <= 0 || ttl > MaxAccessTTL {
		ttl = MaxAccessTTL
	}
	return &Tokens{
		key:      key,
		issuer:   issuer,
		audience: audience,
		ttl:      ttl,
		now:      time.Now,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{signingMethod.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(issuer),
			jwt.WithAudience(audience),
			jwt.WithLeeway(5*time.Second),
		),
	}
}

// TTL is how long issued access tokens live.
func (t *Tokens) TTL() time.Duration { return t.ttl }

// Issue returns a signed access token for the user.
func (t *Tokens) Issue(userID uuid.UUID) (string, time.Time, error) {
	now := t.now()
	exp := now.Add(t.ttl)
	claims := jwt.RegisteredClaims{
		Issuer:    t.issuer,
		Subject:   userID.String(),
		Audience:  jwt.ClaimStrings{t.audience},
		ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ID:        uuid.NewString(),
	}
	s, err := jwt.NewWithClaims(signingMethod, claims).SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign access token: %w", err)
	}
	return s, exp, nil
}

// Verify checks an access token's algorithm, signature, issuer, audience, expiry and issue time,
// refuses one with critical extensions (crit), and returns its claims. Every failure wraps
// ErrInvalidToken.
func (t *Tokens) Verify(token string) (AccessClaims, error) {
	var claims jwt.RegisteredClaims
	_, err := t.parser.ParseWithClaims(token, &claims, func(tok *jwt.Token) (any, error) {
		if _, ok := tok.Header["crit"]; ok {
			// RFC 7515 4.1.11: a recipient must refuse a token whose critical extensions it does
			// not understand, and these tokens have none.
			return nil, errors.New("the crit header names extensions this server does not understand")
		}
		return t.key.Public(), nil
	})
	if err != nil {
		return AccessClaims{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if claims.IssuedAt == nil || claims.ExpiresAt == nil {
		return AccessClaims{}, fmt.Errorf("%w: iat and exp are required", ErrInvalidToken)
	}
	if claims.ExpiresAt.Sub(claims.IssuedAt.Time) > MaxAccessTTL {
		return AccessClaims{}, fmt.Errorf("%w: lifetime over %s", ErrInvalidToken, MaxAccessTTL)
	}
	id, err := uuid.Parse(claims.Subject)
	if err != nil {
		return AccessClaims{}, fmt.Errorf("%w: subject is not a user id", ErrInvalidToken)
	}
	return AccessClaims{UserID: id, IssuedAt: claims.IssuedAt.Time, Expiry: claims.ExpiresAt.Time}, nil
}

// LoadOrCreateKey reads an Ed25519 private key (PKCS#8 PEM) from path, or, when the file does
// not exist and create is set, generates one and writes it with mode 0600.
func LoadOrCreateKey(path string, create bool) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("signing key %s: want a PEM \"PRIVATE KEY\" block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: want an Ed25519 key, got %T", path, k)
	}
	return ek, nil
}

func createKey(path string) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create signing key: %w", err)
	}
	// Write a complete file aside, then link it into place: link fails if the name exists, so
	// replicas sharing a folder never see a half-written key nor overwrite each other's.
	tmp, err := os.CreateTemp(dir, ".signing-key-*")
	if err != nil {
		return nil, fmt.Errorf("create signing key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return LoadOrCreateKey(path, false)
	} else if err != nil {
		return nil, fmt.Errorf("create signing key: %w", err)
	}
	return key, nil
}
