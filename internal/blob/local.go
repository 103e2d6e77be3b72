package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Local keeps blobs in a folder, each at ab/abcdef… by its SHA-256, read-only.
type Local struct {
	dir string
}

// NewLocal keeps blobs in dir, which it makes if it must.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("blob folder: %w", err)
	}
	return &Local{dir: dir}, nil
}

func (l *Local) path(sum string) string { return filepath.Join(l.dir, sum[:2], sum) }

// Put streams r into a file of the folder's own, then moves it to its key: a reader never sees
// a blob half written, and two puts of one blob keep one.
func (l *Local) Put(ctx context.Context, r io.Reader, max int64, want string) (Info, error) {
	tmp, err := os.CreateTemp(filepath.Join(l.dir, "tmp"), "put-")
	if err != nil {
		return Info{}, err
	}
	defer os.Remove(tmp.Name()) // gone once moved; else what failed
	src := newLimited(r, max)
	_, err = io.Copy(tmp, readerWithContext{ctx, src})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Info{}, err
	}
	info, err := src.check(want)
	if err != nil {
		return Info{}, err
	}
	dst := l.path(info.SHA256)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return Info{}, err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return Info{}, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return Info{}, err
	}
	return info, nil
}

// Open reads the blob of sum, checked as it is read.
func (l *Local) Open(_ context.Context, sum string) (io.ReadCloser, Info, error) {
	if err := checkSum(sum); err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(l.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, ErrNotFound
	} else if err != nil {
		return nil, Info{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, err
	}
	info := Info{SHA256: sum, Size: st.Size()}
	return newVerifying(f, info), info, nil
}

// Stat says whether the blob of sum is kept.
func (l *Local) Stat(_ context.Context, sum string) (Info, error) {
	if err := checkSum(sum); err != nil {
		return Info{}, err
	}
	st, err := os.Stat(l.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNotFound
	} else if err != nil {
		return Info{}, err
	}
	return Info{SHA256: sum, Size: st.Size()}, nil
}

// Walk calls fn with every blob in the folder and the time it was last put.
func (l *Local) Walk(ctx context.Context, fn func(sum string, put time.Time) error) error {
	dirs, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue // tmp, and anything not ours
		}
		files, err := os.ReadDir(filepath.Join(l.dir, d.Name()))
		if err != nil {
			return err
		}
		for _, f := range files {
			if !ValidSum(f.Name()) || f.Name()[:2] != d.Name() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			st, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			if err := fn(f.Name(), st.ModTime()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Delete removes the blob of sum.
func (l *Local) Delete(_ context.Context, sum string) error {
	if err := checkSum(sum); err != nil {
		return err
	}
	if err := os.Remove(l.path(sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// readerWithContext stops reading when ctx ends: an upload whose client left.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
