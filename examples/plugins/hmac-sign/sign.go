package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/barrage-load/barrage/sdk"
)

// configSchema describes the config. The host checks a script's config against it before
// Configure, and the marketplace shows it.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "hmac-sign config",
  "description": "Signs each request with an HMAC of its method, path and query, and body.",
  "type": "object",
  "properties": {
    "key": {
      "type": "string",
      "minLength": 1,
      "description": "The shared key. Prefer key_env: a key in the script is stored with it."
    },
    "key_env": {
      "type": "string",
      "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
      "description": "Environment variable of the plugin process holding the key; it must be on the plugin environment allow-list."
    },
    "header": {
      "type": "string",
      "pattern": "^[A-Za-z0-9-]+$",
      "default": "X-Signature",
      "description": "The header that carries the signature, in hex."
    },
    "algorithm": {
      "enum": ["sha256", "sha512"],
      "default": "sha256"
    },
    "read_header": {
      "type": "string",
      "pattern": "^[A-Za-z][A-Za-z0-9-]*$",
      "description": "A response header to keep as a variable: X-Request-Id becomes x_request_id."
    }
  },
  "oneOf": [
    { "required": ["key"] },
    { "required": ["key_env"] }
  ],
  "additionalProperties": false
}`

// newPlugin returns the plugin, for main to serve and for tests to start in-process. getenv
// reads the plugin process's environment, for key_env.
func newPlugin(getenv func(string) string) *sdk.Plugin {
	return &sdk.Plugin{
		Name:         "hmac-sign",
		Version:      "1.0.0",
		Description:  "Signs requests with an HMAC (SHA-256 or SHA-512) of their method, path and query, and body.",
		ConfigSchema: configSchema,
		URL:          &hook{getenv: getenv},
	}
}

// config is the plugin's config; see configSchema.
type config struct {
	Key        string `json:"key"`
	KeyEnv     string `json:"key_env"`
	Header     string `json:"header"`
	Algorithm  string `json:"algorithm"`
	ReadHeader string `json:"read_header"`
}

// hook signs requests. Before and After run for many virtual users at once, so the signer is
// immutable once built and swapped in whole by Configure.
type hook struct {
	getenv func(string) string
	signer atomic.Pointer[signer]
}

// signer is a checked config.
type signer struct {
	key     []byte
	newHash func() hash.Hash
	header  string
	// readHeader is the response header to keep, and readVar the variable it goes to.
	readHeader, readVar string
	// macs holds keyed HMACs for reuse: keying one hashes the key's pads, a cost per call.
	macs sync.Pool
}

var (
	algorithms  = map[string]func() hash.Hash{"sha256": sha256.New, "sha512": sha512.New}
	headerName  = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
	readableVar = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`) // becomes a variable name
)

func (h *hook) Configure(_ context.Context, raw []byte) error {
	var cfg config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	s := &signer{key: []byte(cfg.Key), header: "X-Signature", newHash: sha256.New}
	switch {
	case cfg.Key != "" && cfg.KeyEnv != "":
		return &sdk.ConfigError{Field: "key", Reason: "give key or key_env, not both"}
	case cfg.Key == "" && cfg.KeyEnv == "":
		return &sdk.ConfigError{Field: "key", Reason: "required: give key, or key_env naming an environment variable that holds it"}
	case cfg.KeyEnv != "":
		s.key = []byte(h.getenv(cfg.KeyEnv))
		if len(s.key) == 0 {
			// Plugins start with an environment limited to an allow-list, so a variable set
			// for Barrage is not seen here unless the operator allows it.
			return &sdk.ConfigError{Field: "key_env", Reason: fmt.Sprintf("%s is not set in the plugin's environment: set it, and add it to the plugin environment allow-list", cfg.KeyEnv)}
		}
	}
	if cfg.Header != "" {
		if !headerName.MatchString(cfg.Header) {
			return &sdk.ConfigError{Field: "header", Reason: fmt.Sprintf("%q is not a header name: use letters, digits and -", cfg.Header)}
		}
		s.header = cfg.Header
	}
	if cfg.Algorithm != "" {
		newHash, ok := algorithms[cfg.Algorithm]
		if !ok {
			return &sdk.ConfigError{Field: "algorithm", Reason: fmt.Sprintf("unknown algorithm %q: want sha256 or sha512", cfg.Algorithm)}
		}
		s.newHash = newHash
	}
	if cfg.ReadHeader != "" {
		if !readableVar.MatchString(cfg.ReadHeader) {
			return &sdk.ConfigError{Field: "read_header", Reason: fmt.Sprintf("%q is not a header name that makes a variable name: use letters, digits and -, starting with a letter", cfg.ReadHeader)}
		}
		s.readHeader = cfg.ReadHeader
		s.readVar = strings.ReplaceAll(strings.ToLower(cfg.ReadHeader), "-", "_")
	}
	s.macs.New = func() any { return hmac.New(s.newHash, s.key) }
	h.signer.Store(s)
	return nil
}

// Before sets the signature header. It sets no other header, so that the signature depends on
// the request alone and a test can predict it.
func (h *hook) Before(_ context.Context, _ sdk.Call, req *sdk.Request) error {
	s := h.signer.Load()
	if s == nil {
		return errors.New("hmac-sign: Before before Configure")
	}
	sig, err := s.sign(req)
	if err != nil {
		return err
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set(s.header, sig)
	return nil
}

// SkipAfter tells the host that, without read_header, After has nothing to do: the host then
// skips it, and a 401 still fails the request, as any 4xx does, only without this plugin's
// reason.
func (h *hook) SkipAfter() bool {
	s := h.signer.Load()
	return s != nil && s.readHeader == ""
}

// PureBefore tells the host that Before's signature depends on the request alone (its method,
// path and query, and body, under the configured key): no timestamp, nonce or counter goes into
// it. The host then signs a request it has seen again with the signature it got the first time,
// without a call.
func (h *hook) PureBefore() bool { return h.signer.Load() != nil }

// After keeps the configured response header as a variable, and fails the request when the
// server refused it with 401, for that most likely means a wrong key or signature.
func (h *hook) After(_ context.Context, _ sdk.Call, _ *sdk.Request, resp *sdk.Response) (sdk.Outcome, error) {
	s := h.signer.Load()
	if s == nil {
		return sdk.Outcome{}, errors.New("hmac-sign: After before Configure")
	}
	var out sdk.Outcome
	if s.readHeader != "" {
		if vs := resp.Header.Values(s.readHeader); len(vs) > 0 {
			out.Vars = sdk.Vars{s.readVar: vs[0]}
		}
	}
	if resp.Status == http.StatusUnauthorized {
		out.Fail = "signature rejected (401)"
	}
	return out, nil
}

// sign returns, in hex, the HMAC of
//
//	METHOD "\n" path-and-query "\n" body
//
// where path-and-query is what the request line carries: "/orders/7?expand=items".
func (s *signer) sign(req *sdk.Request) (string, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return "", fmt.Errorf("hmac-sign: %w", err)
	}
	mac := s.macs.Get().(hash.Hash)
	defer s.macs.Put(mac)
	mac.Reset()
	mac.Write([]byte(req.Method + "\n" + u.RequestURI() + "\n"))
	mac.Write(req.Body)
	var sum [sha512.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0])), nil
}
