package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/blob"
)

// store is a blob store under test, with the means to tamper with what it keeps.
type store struct {
	blob.Store
	tamper func(t *testing.T, sum string, data []byte)
}

func localStore(t *testing.T) store {
	dir := t.TempDir()
	l, err := blob.NewLocal(dir)
	require.NoError(t, err)
	return store{Store: l, tamper: func(t *testing.T, sum string, data []byte) {
		path := filepath.Join(dir, sum[:2], sum)
		require.NoError(t, os.Chmod(path, 0o644))
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}}
}

// s3Store is a bucket on a real S3-compatible server on 127.0.0.1: gofakes3 over HTTP, or the
// server BARRAGE_TEST_S3 names (http://KEY:SECRET@127.0.0.1:9000/bucket, as a MinIO).
func s3Store(t *testing.T) store {
	ctx := context.Background()
	cfg := blob.S3Config{Region: "us-east-1", Bucket: "artifacts", Prefix: "blobs/", AccessKey: "test", SecretKey: "test-secret"}
	if env := os.Getenv("BARRAGE_TEST_S3"); env != "" {
		u, err := urlParse(env)
		require.NoError(t, err)
		cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey = u.endpoint, u.bucket, u.key, u.secret
	} else {
		srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
		t.Cleanup(srv.Close)
		cfg.Endpoint = srv.URL
	}
	raw, err := minio.New(hostOf(cfg.Endpoint), &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	if ok, _ := raw.BucketExists(ctx, cfg.Bucket); !ok {
		require.NoError(t, raw.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}))
	}
	s, err := blob.NewS3(ctx, cfg)
	require.NoError(t, err)
	return store{Store: s, tamper: func(t *testing.T, sum string, data []byte) {
		_, err := raw.PutObject(ctx, cfg.Bucket, cfg.Prefix+sum, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		require.NoError(t, err)
	}}
}

func TestStores(t *testing.T) {
	for name, open := range map[string]func(*testing.T) store{"local": localStore, "s3": s3Store} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testStore(t, open(t))
		})
	}
}

func testStore(t *testing.T, s store) {
	ctx := context.Background()
	data := make([]byte, 12<<20+123) // more than two of S3's parts
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	want := blob.Info{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}

	_, err := s.Stat(ctx, want.SHA256)
	require.ErrorIs(t, err, blob.ErrNotFound)
	info, err := s.Put(ctx, bytes.NewReader(data), 16<<20, "")
	require.NoError(t, err)
	require.Equal(t, want, info)
	again, err := s.Put(ctx, bytes.NewReader(data), 16<<20, "")
	require.NoError(t, err, "a blob kept already is kept once")
	require.Equal(t, want, again)
	got, err := s.Stat(ctx, want.SHA256)
	require.NoError(t, err)
	require.Equal(t, want, got)

	rc, info, err := s.Open(ctx, want.SHA256)
	require.NoError(t, err)
	require.Equal(t, want, info)
	read, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.True(t, bytes.Equal(data, read))

	// Past the limit: refused, and nothing kept.
	big := append(bytes.Clone(data), 'x')
	bigSum := sha256.Sum256(big)
	_, err = s.Put(ctx, bytes.NewReader(big), int64(len(data)), "")
	require.ErrorIs(t, err, blob.ErrTooLarge)
	_, err = s.Stat(ctx, hex.EncodeToString(bigSum[:]))
	require.ErrorIs(t, err, blob.ErrNotFound)
	// Exactly at the limit is within it.
	_, err = s.Put(ctx, bytes.NewReader(data), int64(len(data)), "")
	require.NoError(t, err)
	// Not the blob announced: refused, and nothing kept.
	_, err = s.Put(ctx, bytes.NewReader(big), 16<<20, want.SHA256)
	require.ErrorIs(t, err, blob.ErrMismatch)
	_, err = s.Stat(ctx, hex.EncodeToString(bigSum[:]))
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, err = s.Put(ctx, bytes.NewReader(data), 16<<20, want.SHA256)
	require.NoError(t, err, "the blob announced")

	for _, bad := range []string{"", "../etc/passwd", want.SHA256[:63], "G" + want.SHA256[1:]} {
		_, _, err := s.Open(ctx, bad)
		require.ErrorIs(t, err, blob.ErrNotFound, "%q", bad)
		require.Error(t, s.Delete(ctx, bad), "%q", bad)
	}

	// A sweep takes the blobs put before its cutoff that nothing keeps, and only those.
	orphan, err := s.Put(ctx, strings.NewReader("an upload that was refused"), 1<<20, "")
	require.NoError(t, err)
	n, err := blob.Sweep(ctx, s, time.Now().Add(-time.Hour), nil)
	require.NoError(t, err)
	require.Zero(t, n, "both were put just now")
	n, err = blob.Sweep(ctx, s, time.Now().Add(time.Hour), map[string]bool{want.SHA256: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.Stat(ctx, orphan.SHA256)
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, err = s.Stat(ctx, want.SHA256)
	require.NoError(t, err, "kept")
	require.NoError(t, s.Delete(ctx, orphan.SHA256), "deleting what is gone is no error")

	// Tampered with in storage: same size, one byte changed; then a shorter blob. The read
	// fails at its end, whatever it gave before.
	changed := bytes.Clone(data)
	changed[len(changed)/2] ^= 1
	for _, tampered := range [][]byte{changed, data[:1000]} {
		s.tamper(t, want.SHA256, tampered)
		rc, _, err := s.Open(ctx, want.SHA256)
		require.NoError(t, err)
		_, err = io.ReadAll(rc)
		require.ErrorIs(t, err, blob.ErrTampered)
		require.NoError(t, rc.Close())
	}
}

// BenchmarkLocalRead reads a 50 MB blob from the local store, checked as it goes (the
// marketplace's bar for a download: 200 MB/s).
func BenchmarkLocalRead(b *testing.B) {
	l, err := blob.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 50<<20)
	_, _ = rand.Read(data)
	info, err := l.Put(context.Background(), bytes.NewReader(data), int64(len(data)), "")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(info.Size)
	buf := make([]byte, 256<<10)
	for b.Loop() {
		rc, _, err := l.Open(context.Background(), info.SHA256)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, rc, buf); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}
