// Package blob keeps content-addressed blobs, the plugin marketplace's artifacts: a blob's key
// is the hex SHA-256 of its bytes, so a blob is never replaced, only stored again as itself.
// Stores stream what they keep and what they give, never holding a blob in memory, and a
// reader checks the bytes against their key as it goes: storage that was tampered with fails
// the read at its end, before the reader's user may take the bytes for good.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Errors of the stores.
var (
	ErrNotFound = errors.New("blob not found")
	// ErrTooLarge: what Put read passed its limit; nothing was stored.
	ErrTooLarge = errors.New("blob too large")
	// ErrMismatch: what Put read is not the blob it was told to expect; nothing was stored.
	ErrMismatch = errors.New("blob is not the one expected")
	// ErrTampered: the stored bytes do not hash to their key, or their size is not the one
	// stored.
	ErrTampered = errors.New("stored blob does not match its digest")
)

// Info says what a blob is: its key and size.
type Info struct {
	SHA256 string // hex, lower case
	Size   int64
}

// Store keeps blobs by their SHA-256.
type Store interface {
	// Put reads r to its end and keeps what it read under its SHA-256, unless it passes max
	// bytes (ErrTooLarge) or, want being set, its SHA-256 is not want (ErrMismatch): then
	// nothing is kept. A blob kept already is kept once.
	Put(ctx context.Context, r io.Reader, max int64, want string) (Info, error)
	// Open reads the blob of sum. The reader fails with ErrTampered at the end when the bytes
	// read do not hash to sum.
	Open(ctx context.Context, sum string) (io.ReadCloser, Info, error)
	// Stat says whether the blob of sum is kept (ErrNotFound) and its size.
	Stat(ctx context.Context, sum string) (Info, error)
	// Walk calls fn with every blob kept and when it was last put, in no order.
	Walk(ctx context.Context, fn func(sum string, put time.Time) error) error
	// Delete forgets the blob of sum; one not kept is no error.
	Delete(ctx context.Context, sum string) error
}

// Sweep deletes the blobs of s last put before cutoff that keep does not hold, and says how
// many it deleted. Every Put of a blob renews its time, so a blob being published again as
// the sweep runs is not taken: give cutoff a margin longer than any upload.
func Sweep(ctx context.Context, s Store, cutoff time.Time, keep map[string]bool) (int, error) {
	var old []string
	err := s.Walk(ctx, func(sum string, put time.Time) error {
		if put.Before(cutoff) && !keep[sum] {
			old = append(old, sum)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i, sum := range old {
		if err := s.Delete(ctx, sum); err != nil {
			return i, err
		}
	}
	return len(old), nil
}

// ValidSum reports whether s is a key: 64 lower-case hex digits.
func ValidSum(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkSum(s string) error {
	if !ValidSum(s) {
		return fmt.Errorf("%w: %q is not a SHA-256 in hex", ErrNotFound, s)
	}
	return nil
}

// limited reads r and hashes what it reads, failing with ErrTooLarge past max bytes.
type limited struct {
	r    io.Reader
	left int64
	n    int64
	h    hash.Hash
}

func newLimited(r io.Reader, max int64) *limited {
	return &limited{r: r, left: max, h: sha256.New()}
}

func (l *limited) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, ErrTooLarge
	}
	l.h.Write(p[:n])
	return n, err
}

func (l *limited) info() Info { return Info{SHA256: hex.EncodeToString(l.h.Sum(nil)), Size: l.n} }

// check says whether what was read is the blob want (any, want being empty).
func (l *limited) check(want string) (Info, error) {
	info := l.info()
	if want != "" && info.SHA256 != want {
		return Info{}, fmt.Errorf("%w: read %d bytes of sha256 %s, want %s", ErrMismatch, info.Size, info.SHA256, want)
	}
	return info, nil
}

// verifying reads a stored blob and fails at its end when the bytes do not match want.
type verifying struct {
	rc   io.ReadCloser
	want Info
	h    hash.Hash
	n    int64
}

func newVerifying(rc io.ReadCloser, want Info) *verifying {
	return &verifying{rc: rc, want: want, h: sha256.New()}
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.want.Size {
		return n, ErrTampered
	}
	if errors.Is(err, io.EOF) && (v.n != v.want.Size || hex.EncodeToString(v.h.Sum(nil)) != v.want.SHA256) {
		return n, ErrTampered
	}
	return n, err
}

func (v *verifying) Close() error { return v.rc.Close() }
