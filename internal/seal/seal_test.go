package seal_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/seal"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, seal.KeySize)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

func TestASealedValueOpensOnlyWhereItBelongs(t *testing.T) {
	t.Parallel()
	ring, err := seal.New(newKey(t))
	require.NoError(t, err)
	sealed := ring.Seal([]byte("hunter2"), []byte("ada/TOKEN"))
	require.False(t, bytes.Contains(sealed, []byte("hunter2")))
	require.NotEqual(t, sealed, ring.Seal([]byte("hunter2"), []byte("ada/TOKEN")), "a nonce of its own each time")

	plain, err := ring.Open(sealed, []byte("ada/TOKEN"))
	require.NoError(t, err)
	require.Equal(t, "hunter2", string(plain))

	_, err = ring.Open(sealed, []byte("eve/TOKEN"))
	require.ErrorIs(t, err, seal.ErrOpen, "moved to another owner's row")
	sealed[len(sealed)-1] ^= 1
	_, err = ring.Open(sealed, []byte("ada/TOKEN"))
	require.ErrorIs(t, err, seal.ErrOpen, "changed")
	_, err = ring.Open([]byte("short"), nil)
	require.ErrorIs(t, err, seal.ErrOpen)
}

// A rotated key still opens what it sealed; the new one seals.
func TestARotatedKeyStillOpensWhatItSealed(t *testing.T) {
	t.Parallel()
	oldKey, newKey := newKey(t), newKey(t)
	before, err := seal.New(oldKey)
	require.NoError(t, err)
	sealed := before.Seal([]byte("v1"), nil)

	after, err := seal.New(newKey, oldKey)
	require.NoError(t, err)
	plain, err := after.Open(sealed, nil)
	require.NoError(t, err)
	require.Equal(t, "v1", string(plain))
	_, err = before.Open(after.Seal([]byte("v2"), nil), nil)
	require.ErrorIs(t, err, seal.ErrOpen, "sealed with the new key, which the old ring lacks")

	_, err = seal.New([]byte("short"))
	require.Error(t, err)
}

// A missing keyring is made with one key, readable by its owner alone, and read again the same.
func TestLoadMakesAKeyringOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys", "secret-keys")
	first, err := seal.Load(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := seal.Load(path)
	require.NoError(t, err)
	plain, err := again.Open(first.Seal([]byte("x"), nil), nil)
	require.NoError(t, err)
	require.Equal(t, "x", string(plain))

	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, []byte("# nothing\nnot-base64\n"), 0o600))
	_, err = seal.Load(bad)
	require.ErrorContains(t, err, "line 2")
}
