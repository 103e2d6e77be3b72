package record

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// decode undoes a response's Content-Encoding (gzip, deflate, br, zstd, or several, applied in
// order), within maxBody: the HAR keeps a body as the browser read it.
func decode(encodings string, body []byte) ([]byte, error) {
	parts := strings.Split(encodings, ",")
	for i := len(parts) - 1; i >= 0; i-- {
		var r io.Reader
		var err error
		switch enc := strings.ToLower(strings.TrimSpace(parts[i])); enc {
		case "identity", "":
			continue
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(bytes.NewReader(body))
		case "deflate":
			// Servers send zlib as the standard says, or raw deflate as some always have.
			if zr, zerr := zlib.NewReader(bytes.NewReader(body)); zerr == nil {
				r = zr
			} else {
				r = flate.NewReader(bytes.NewReader(body))
			}
		case "br":
			r = brotli.NewReader(bytes.NewReader(body))
		case "zstd":
			var zr *zstd.Decoder
			zr, err = zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1))
			if err == nil {
				defer zr.Close()
				r = zr
			}
		default:
			return nil, fmt.Errorf("unknown content encoding %q", enc)
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", parts[i], err)
		}
		out, err := io.ReadAll(io.LimitReader(r, maxBody+1))
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", parts[i], err)
		}
		if len(out) > maxBody {
			return nil, fmt.Errorf("decode %s: more than %d MiB", parts[i], maxBody>>20)
		}
		body = out
	}
	return body, nil
}

// certPEM is the CA's certificate as PEM, the form clients are told to trust.
func certPEM(ca *CA) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}
