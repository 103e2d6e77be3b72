package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// AcceptEncoding is the Accept-Encoding every request sends unless the script sets its own (an
// empty value sends none): what browsers send, so that the target compresses as it does for
// real visitors.
const AcceptEncoding = "gzip, deflate, br, zstd"

// MaxExpansion is how many times its size on the wire a compressed body may grow past the body
// cap: no real page comes near it, and a compression bomb (a few kilobytes that decode to
// gigabytes) passes it at once, so decoding stops there instead of spending the generator's CPU.
const MaxExpansion = 100

// A DecodeError is a response body that could not be decoded from its Content-Encoding, or that
// grew past MaxExpansion: the request fails as a check does, since the target answered but not
// with a body anyone can read.
type DecodeError struct {
	Encoding string
	Wire     int64 // compressed bytes read when decoding stopped
	Decoded  int64 // decoded bytes then; for a bomb, the body cap it passed
	Bomb     bool  // it grew past MaxExpansion times Wire
	Err      error // why decoding failed, when not a bomb
}

func (e *DecodeError) Error() string {
	if e.Bomb {
		return fmt.Sprintf("%s body decoded to more than %d bytes from %d on the wire (over %d times): stopped, a compression bomb?",
			e.Encoding, e.Decoded, e.Wire, MaxExpansion)
	}
	return fmt.Sprintf("%s body does not decode: %v", e.Encoding, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// decoder is a pooled decompressor of one encoding.
type decoder interface {
	io.Reader
	reset(src io.Reader) error
	release()
}

// decoders are pooled: a VU holds one only while it reads a body.
var (
	gzipPool  sync.Pool
	zlibPool  sync.Pool
	flatePool sync.Pool
	brPool    sync.Pool
	zstdPool  sync.Pool
)

type gzipDecoder struct{ *gzip.Reader }

func (d *gzipDecoder) reset(src io.Reader) error { return d.Reset(src) }
func (d *gzipDecoder) release()                  { gzipPool.Put(d) }

type zlibDecoder struct{ io.ReadCloser }

func (d *zlibDecoder) reset(src io.Reader) error {
	return d.ReadCloser.(zlib.Resetter).Reset(src, nil)
}
func (d *zlibDecoder) release() { zlibPool.Put(d) }

type flateDecoder struct{ io.ReadCloser }

func (d *flateDecoder) reset(src io.Reader) error {
	return d.ReadCloser.(flate.Resetter).Reset(src, nil)
}
func (d *flateDecoder) release() { flatePool.Put(d) }

type brDecoder struct{ *brotli.Reader }

func (d *brDecoder) reset(src io.Reader) error { return d.Reset(src) }
func (d *brDecoder) release()                  { brPool.Put(d) }

type zstdDecoder struct{ *zstd.Decoder }

func (d *zstdDecoder) reset(src io.Reader) error { return d.Reset(src) }
func (d *zstdDecoder) release() {
	_ = d.Reset(nil) // lets go of the body's reader
	zstdPool.Put(d)
}

// newDecoder returns a decoder of enc reading src, or nil for an encoding it does not know.
func newDecoder(enc string, src io.Reader) (decoder, error) {
	var d decoder
	switch enc {
	case "gzip", "x-gzip":
		if v := gzipPool.Get(); v != nil {
			d = v.(decoder)
		} else {
			d = &gzipDecoder{new(gzip.Reader)}
		}
	case "deflate":
		// HTTP's deflate is zlib (RFC 9110), but some servers send raw deflate: the zlib header
		// tells them apart.
		head := make([]byte, 2)
		n, err := io.ReadFull(src, head)
		src = io.MultiReader(bytes.NewReader(head[:n]), src)
		if err == nil && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
			if v := zlibPool.Get(); v != nil {
				d = v.(decoder)
			} else {
				zr, err := zlib.NewReader(src)
				if err != nil {
					return nil, err
				}
				return &zlibDecoder{zr}, nil
			}
		} else if v := flatePool.Get(); v != nil {
			d = v.(decoder)
		} else {
			return &flateDecoder{flate.NewReader(src)}, nil
		}
	case "br":
		if v := brPool.Get(); v != nil {
			d = v.(decoder)
		} else {
			d = &brDecoder{brotli.NewReader(nil)}
		}
	case "zstd":
		if v := zstdPool.Get(); v != nil {
			d = v.(decoder)
		} else {
			// One block at a time, in the VU's goroutine, with a window of at most 8 MiB as
			// RFC 8878 asks of HTTP clients.
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(8<<20))
			if err != nil {
				return nil, err
			}
			d = &zstdDecoder{zd}
		}
	default:
		return nil, nil
	}
	if err := d.reset(src); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// contentEncoding is the encoding a Content-Encoding value names, lower case, or "" for none
// (identity). A list of several encodings is returned whole: no decoder knows it.
func contentEncoding(v []byte) string {
	s := strings.ToLower(strings.TrimSpace(string(v)))
	if s == "identity" {
		return ""
	}
	return s
}

// decodeBody reads all of src, a body in encoding enc, and keeps its first bodyCap decoded bytes
// in r.body. Past the cap it stops decoding and reads the rest without decoding it, as a body
// that came plain is read past the cap; a body that grows past MaxExpansion times what it took
// on the wire by then is a *DecodeError, as is one that does not decode. An encoding it does not
// know is kept as it came.
func (t *transport) decodeBody(enc string, src io.Reader, r *reply) error {
	wire := &countingReader{r: src}
	d, err := newDecoder(enc, wire)
	if err != nil {
		return &DecodeError{Encoding: enc, Wire: wire.n, Err: err}
	}
	if d == nil {
		return t.readBody(src, r)
	}
	defer d.release()
	r.encoding = enc
	for {
		n, err := t.readOnce(d, r)
		r.decoded += int64(n)
		if r.decoded > int64(t.bodyCap) {
			if r.decoded > MaxExpansion*max(wire.n, 1) {
				return &DecodeError{Encoding: enc, Wire: wire.n, Decoded: int64(t.bodyCap), Bomb: true}
			}
			r.decodedPart = true
			_, err := io.Copy(io.Discard, src) // the rest, counted by the connection
			return err
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &DecodeError{Encoding: enc, Wire: wire.n, Decoded: r.decoded, Err: err}
		}
	}
}
