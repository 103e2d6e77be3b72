package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where an S3-compatible bucket is and how to sign in to it.
type S3Config struct {
	// Endpoint is the server's URL: https://s3.eu-west-1.amazonaws.com, http://127.0.0.1:9000.
	Endpoint  string
	Region    string
	Bucket    string
	Prefix    string // keys are Prefix + sha256
	AccessKey string
	SecretKey string
}

// S3 keeps blobs in an S3-compatible bucket, for servers that share their artifacts.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
}

// s3PartSize is what a put holds in memory at once: a blob of unknown size goes up in parts.
const s3PartSize = 5 << 20 // S3's least

// NewS3 keeps blobs in cfg's bucket, which must exist.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("S3 endpoint %q: want http(s)://host[:port]", cfg.Endpoint)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: u.Scheme == "https", Region: cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("S3 bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("S3 bucket %q at %s does not exist", cfg.Bucket, cfg.Endpoint)
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// Put streams r to a key of its own, then copies it, on the server, to its SHA-256's.
func (s *S3) Put(ctx context.Context, r io.Reader, max int64, want string) (Info, error) {
	tmp := s.prefix + "tmp/" + uuid.NewString()
	src := newLimited(r, max)
	// The payload is not signed part by part: its digest is checked on every read, and some
	// S3-compatible servers keep the chunk signatures in the object.
	_, err := s.c.PutObject(ctx, s.bucket, tmp, readerWithContext{ctx, src}, -1,
		minio.PutObjectOptions{PartSize: s3PartSize, DisableContentSha256: true})
	defer func() { // gone already when the put failed
		_ = s.c.RemoveObject(context.WithoutCancel(ctx), s.bucket, tmp, minio.RemoveObjectOptions{})
	}()
	switch {
	case src.left < 0:
		return Info{}, ErrTooLarge
	case err != nil:
		return Info{}, fmt.Errorf("S3 put: %w", err)
	}
	info, err := src.check(want)
	if err != nil {
		return Info{}, err
	}
	if _, err := s.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: s.bucket, Object: s.prefix + info.SHA256},
		minio.CopySrcOptions{Bucket: s.bucket, Object: tmp}); err != nil {
		return Info{}, fmt.Errorf("S3 copy: %w", err)
	}
	return info, nil
}

// Open reads the blob of sum, checked as it is read.
func (s *S3) Open(ctx context.Context, sum string) (io.ReadCloser, Info, error) {
	info, err := s.Stat(ctx, sum)
	if err != nil {
		return nil, Info{}, err
	}
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+sum, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, fmt.Errorf("S3 get: %w", err)
	}
	return newVerifying(o, info), info, nil
}

// Stat says whether the blob of sum is kept.
func (s *S3) Stat(ctx context.Context, sum string) (Info, error) {
	if err := checkSum(sum); err != nil {
		return Info{}, err
	}
	st, err := s.c.StatObject(ctx, s.bucket, s.prefix+sum, minio.StatObjectOptions{})
	if err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "NoSuchKey" || er.StatusCode == 404) {
			return Info{}, ErrNotFound
		}
		return Info{}, fmt.Errorf("S3 stat: %w", err)
	}
	return Info{SHA256: sum, Size: st.Size}, nil
}

// Walk calls fn with every blob in the bucket under the prefix and the time it was last put.
func (s *S3) Walk(ctx context.Context, fn func(sum string, put time.Time) error) error {
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("S3 list: %w", o.Err)
		}
		sum := strings.TrimPrefix(o.Key, s.prefix)
		if !ValidSum(sum) {
			continue // tmp/, and anything not ours
		}
		if err := fn(sum, o.LastModified); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes the blob of sum.
func (s *S3) Delete(ctx context.Context, sum string) error {
	if err := checkSum(sum); err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.prefix+sum, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("S3 delete: %w", err)
	}
	return nil
}
