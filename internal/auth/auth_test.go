package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/auth"
)

var cheap = auth.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

func TestPasswordHashAndVerify(t *testing.T) {
	t.Parallel()
	h := auth.NewHasher(cheap)
	ctx := context.Background()
	enc, err := h.Hash(ctx, "correct horse battery staple")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(enc, "$argon2id$v=19$m=64,t=1,p=1$"), enc)
	require.NoError(t, h.Verify(ctx, enc, "correct horse battery staple"))
	require.ErrorIs(t, h.Verify(ctx, enc, "correct horse battery stapl"), auth.ErrMismatch)
	again, err := h.Hash(ctx, "correct horse battery staple")
	require.NoError(t, err)
	require.NotEqual(t, enc, again, "salted")
	require.ErrorIs(t, h.VerifyDummy(ctx, "anything"), auth.ErrMismatch)

	// A hash made with other parameters still verifies: parameters travel in the hash.
	other := auth.NewHasher(auth.OWASPParams)
	require.NoError(t, other.Verify(ctx, enc, "correct horse battery staple"))

	for _, bad := range []string{"", "$2a$10$bcrypt", "$argon2id$v=18$m=64,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=x$AAAA$AAAA"} {
		err := h.Verify(ctx, bad, "x")
		require.Error(t, err, bad)
		require.NotErrorIs(t, err, auth.ErrMismatch, "a broken hash is not a wrong password: %q", bad)
	}
}

func TestOWASPParams(t *testing.T) {
	t.Parallel()
	require.Equal(t, uint32(19*1024), auth.OWASPParams.MemoryKiB)
	require.Equal(t, uint32(2), auth.OWASPParams.Iterations)
	require.Equal(t, uint8(1), auth.OWASPParams.Parallelism)
	enc, err := auth.NewHasher(auth.OWASPParams).Hash(context.Background(), "pw")
	require.NoError(t, err)
	require.Contains(t, enc, "$m=19456,t=2,p=1$")
}

// BenchmarkHashOWASP measures one argon2id hash at the production parameters.
func BenchmarkHashOWASP(b *testing.B) {
	h := auth.NewHasher(auth.OWASPParams)
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Hash(ctx, "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		s := auth.NewSecret(auth.PrefixAPIToken)
		require.Regexp(t, `^brg_pat_[A-Za-z0-9_-]{43}$`, s)
		require.False(t, seen[s])
		seen[s] = true
		c := auth.NewInvitationCode()
		require.Regexp(t, `^brg_inv_[a-z2-7]{32}$`, c)
	}
	require.Len(t, auth.HashSecret("x"), 32)
	require.Equal(t, auth.HashSecret("abc"), auth.HashSecret(" abc\n"), "pasted whitespace does not matter")
	require.NotEqual(t, auth.HashSecret("abc"), auth.HashSecret("abd"))
}

func TestTokensRoundTripAndRefuseOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := auth.LoadOrCreateKey(filepath.Join(dir, "k.pem"), true)
	require.NoError(t, err)
	tok := auth.NewTokens(key, "barrage", "barrage-api", time.Hour)
	require.Equal(t, auth.MaxAccessTTL, tok.TTL(), "capped at 15 minutes")
	id := uuid.New()
	before := time.Now()
	s, exp, err := tok.Issue(id)
	require.NoError(t, err)
	after := time.Now()
	// 15 minutes from its issue, a moment between before and after.
	require.False(t, exp.Before(before.Add(15*time.Minute)), "expires %s", exp)
	require.False(t, exp.After(after.Add(15*time.Minute)), "expires %s", exp)
	claims, err := tok.Verify(s)
	require.NoError(t, err)
	require.Equal(t, id, claims.UserID)

	otherIss := auth.NewTokens(key, "other", "barrage-api", time.Minute)
	_, err = otherIss.Verify(s)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	otherAud := auth.NewTokens(key, "barrage", "other", time.Minute)
	_, err = otherAud.Verify(s)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	key2, err := auth.LoadOrCreateKey(filepath.Join(dir, "k2.pem"), true)
	require.NoError(t, err)
	_, err = auth.NewTokens(key2, "barrage", "barrage-api", time.Minute).Verify(s)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	// Tamper with the signature's first character (the last one carries padding bits that
	// lenient base64 decoding ignores).
	sig := strings.LastIndexByte(s, '.') + 1
	flipped := byte('A')
	if s[sig] == 'A' {
		flipped = 'B'
	}
	_, err = tok.Verify(s[:sig] + string(flipped) + s[sig+1:])
	require.ErrorIs(t, err, auth.ErrInvalidToken)

	// A token of this key that names critical extensions is refused, signature right or not.
	crit := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{Issuer: "barrage", Audience: jwt.ClaimStrings{"barrage-api"},
		Subject: id.String(), IssuedAt: jwt.NewNumericDate(time.Now()), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))})
	crit.Header["crit"] = []string{"exp-ext"}
	signed, err := crit.SignedString(key)
	require.NoError(t, err)
	_, err = tok.Verify(signed)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	require.ErrorContains(t, err, "crit")
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "key.pem")
	_, err := auth.LoadOrCreateKey(path, false)
	require.Error(t, err, "no file and create off")

	// Replicas racing to create the key all end up with the same one.
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := auth.LoadOrCreateKey(path, true)
			if err == nil {
				keys[i] = k
			}
		}()
	}
	wg.Wait()
	for _, k := range keys {
		require.Equal(t, keys[0], k)
	}
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary files left behind")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("not a key"), 0o600))
	_, err = auth.LoadOrCreateKey(filepath.Join(dir, "bad.pem"), true)
	require.ErrorContains(t, err, "PEM")
}
