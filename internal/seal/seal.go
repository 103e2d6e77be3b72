// Package seal keeps users' secrets encrypted at rest: AES-256-GCM under a keyring whose first
// key seals and whose every key opens, so that a rotated key still opens what it sealed. A
// sealed value names its key by id and is bound to what it belongs to (its owner and name, as
// additional data), so that a sealed value copied to another row does not open there.
package seal

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// idSize is the size of a key's id at the head of a sealed value.
const idSize = 8

// Ring is a keyring: the first key seals, each opens what it sealed.
type Ring struct {
	keys []key
}

type key struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// ErrOpen means a sealed value did not open: its key is not in the ring, or it was changed or
// moved.
var ErrOpen = errors.New("seal: the value does not open with this keyring")

// New is the ring of keys, the first of which seals.
func New(keys ...[]byte) (*Ring, error) {
	if len(keys) == 0 {
		return nil, errors.New("seal: no key")
	}
	r := &Ring{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("seal: key %d has %d bytes; want %d", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(k)
		var kk key
		copy(kk.id[:], sum[:idSize])
		kk.aead = aead
		r.keys = append(r.keys, kk)
	}
	return r, nil
}

// Seal encrypts plain for what it belongs to (bound as additional data): the current key's id,
// a random nonce, and the ciphertext.
func (r *Ring) Seal(plain, belongsTo []byte) []byte {
	k := r.keys[0]
	out := make([]byte, idSize+k.aead.NonceSize(), idSize+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	copy(out, k.id[:])
	_, _ = rand.Read(out[idSize:]) // crypto/rand.Read never fails on supported platforms
	return k.aead.Seal(out, out[idSize:], plain, belongsTo)
}

// Open decrypts what Seal sealed for belongsTo, with whichever key of the ring sealed it.
func (r *Ring) Open(sealed, belongsTo []byte) ([]byte, error) {
	if len(sealed) < idSize {
		return nil, ErrOpen
	}
	for _, k := range r.keys {
		if !bytes.Equal(k.id[:], sealed[:idSize]) {
			continue
		}
		ns := k.aead.NonceSize()
		if len(sealed) < idSize+ns {
			return nil, ErrOpen
		}
		plain, err := k.aead.Open(nil, sealed[idSize:idSize+ns], sealed[idSize+ns:], belongsTo)
		if err != nil {
			return nil, ErrOpen
		}
		return plain, nil
	}
	return nil, ErrOpen
}

// Ephemeral is a ring of a key of this process alone, which nothing sealed with it outlives
// (tests).
func Ephemeral() *Ring {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	r, _ := New(key) // a key of the right size never fails
	return r
}

// Load reads the keyring from path: one key a line, base64 (standard, 32 bytes), the current
// first; blank lines and lines from # are skipped. A missing file is made with one new key,
// readable by its owner alone.
func Load(path string) (*Ring, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k := make([]byte, KeySize)
		_, _ = rand.Read(k)
		text := "# Keys that seal users' secrets (AES-256-GCM), base64, one a line. The first seals; every one\n" +
			"# opens what it sealed: to rotate, put a new key first and keep the old below it.\n" +
			base64.StdEncoding.EncodeToString(k) + "\n"
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("seal: make the keyring %s: %w", path, err)
		}
		if _, err := f.WriteString(text); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		data = []byte(text)
	} else if err != nil {
		return nil, fmt.Errorf("seal: read the keyring: %w", err)
	}
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("seal: %s line %d: want %d bytes in base64", path, n, KeySize)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("seal: %s holds no key", path)
	}
	return New(keys...)
}
