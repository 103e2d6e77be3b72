package registry

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"filippo.io/edwards25519"
)

// Sum is one file of a version's SHA256SUMS: the artifact for a platform.
type Sum struct {
	SHA256 string // hex, lower case
	Name   string // the artifact's file name, as random-data_1.2.0_linux_amd64
}

// FormatSums writes sums as sha256sum does ("<hex>  <name>", one a line), sorted by name: the
// document a version's signature covers.
func FormatSums(sums []Sum) ([]byte, error) {
	sorted := slices.Clone(sums)
	slices.SortFunc(sorted, func(a, b Sum) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	for i, s := range sorted {
		if !validHex(s.SHA256) {
			return nil, fmt.Errorf("sum of %q: not a SHA-256 in hex", s.Name)
		}
		if s.Name == "" || strings.ContainsAny(s.Name, " \t\r\n/\\") {
			return nil, fmt.Errorf("file name %q: no spaces, line breaks or slashes", s.Name)
		}
		if i > 0 && sorted[i-1].Name == s.Name {
			return nil, fmt.Errorf("file %q is named twice", s.Name)
		}
		fmt.Fprintf(&b, "%s  %s\n", s.SHA256, s.Name)
	}
	return b.Bytes(), nil
}

// ParseSums reads a SHA256SUMS document that FormatSums would write, and refuses any other.
func ParseSums(doc []byte) ([]Sum, error) {
	var sums []Sum
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return nil, fmt.Errorf("SHA256SUMS line %d: want \"<sha256>  <name>\"", n)
		}
		sums = append(sums, Sum{SHA256: sum, Name: name})
	}
	canonical, err := FormatSums(sums)
	if err != nil {
		return nil, fmt.Errorf("SHA256SUMS: %w", err)
	}
	if !bytes.Equal(canonical, doc) {
		return nil, errors.New("SHA256SUMS: not in its one form (sorted by name, two spaces, a line break after each line)")
	}
	return sums, nil
}

func validHex(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && s == strings.ToLower(s)
}

// A public key, as a namespace registers it and a user reads it: "ed25519:<base64>".
const keyPrefix = "ed25519:"

// PublicKey is an author's Ed25519 key that signs a namespace's versions.
type PublicKey ed25519.PublicKey

// ParsePublicKey reads "ed25519:<base64 of the 32 bytes>".
func ParsePublicKey(s string) (PublicKey, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), keyPrefix)
	b, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key: want %s<base64 of %d bytes>, as barrage plugin keygen writes", keyPrefix, ed25519.PublicKeySize)
	}
	if weak(b) {
		return nil, errors.New("public key: not a key a signature can be verified with (a point of small order, or not on the curve)")
	}
	return PublicKey(b), nil
}

// weak reports whether b is no Ed25519 public key that only its private key can sign for: not
// a point of the curve, or one of small order (the identity among them), for which a fixed
// signature verifies any message.
func weak(b []byte) bool {
	p, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		return true
	}
	return new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1
}

// keyProofMessage is what the private half of key signs to show that whoever registers key
// on namespace holds it: bound to both, a proof made for one namespace proves nothing on
// another.
func keyProofMessage(namespace string, key PublicKey) []byte {
	return []byte("barrage signing key v1\nnamespace " + namespace + "\nkey " + key.String() + "\n")
}

// ProveKey signs, with priv, that its public key may sign the versions of namespace.
func ProveKey(priv ed25519.PrivateKey, namespace string) []byte {
	return ed25519.Sign(priv, keyProofMessage(namespace, PublicKey(priv.Public().(ed25519.PublicKey))))
}

// ErrNoKeyProof: a key is registered on a namespace without a signature, by its private half,
// of its registration there.
var ErrNoKeyProof = errors.New("the proof is not a signature of this key's registration on this namespace by its private half")

// VerifyKeyProof checks ProveKey's proof that key's holder registers it on namespace.
func VerifyKeyProof(key PublicKey, namespace string, proof []byte) error {
	if weak(key) || len(proof) != ed25519.SignatureSize || !ed25519.Verify(ed25519.PublicKey(key), keyProofMessage(namespace, key), proof) {
		return ErrNoKeyProof
	}
	return nil
}

func (k PublicKey) String() string { return keyPrefix + base64.StdEncoding.EncodeToString(k) }

// ID names the key shortly, in listings and run manifests: the first 16 hex digits of its
// SHA-256.
func (k PublicKey) ID() string {
	sum := sha256.Sum256(k)
	return hex.EncodeToString(sum[:8])
}

// Sign signs a SHA256SUMS document.
func Sign(key ed25519.PrivateKey, sums []byte) []byte { return ed25519.Sign(key, sums) }

// ErrBadSignature: no key offered signed the document.
var ErrBadSignature = errors.New("the signature is not by any of the namespace's keys")

// Verify finds which of keys signed sums with sig, and returns it.
func Verify(keys []PublicKey, sums, sig []byte) (PublicKey, error) {
	if len(sig) == ed25519.SignatureSize {
		for _, k := range keys {
			if len(k) == ed25519.PublicKeySize && !weak(k) && ed25519.Verify(ed25519.PublicKey(k), sums, sig) {
				return k, nil
			}
		}
	}
	return nil, ErrBadSignature
}

// MarshalPrivateKey writes an author's private key as PKCS #8 PEM, the file keygen writes.
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads what MarshalPrivateKey wrote.
func ParsePrivateKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("private key: want a PEM block of type PRIVATE KEY")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("private key: not an Ed25519 key")
	}
	return ed, nil
}

// VerifyDownload checks a downloaded artifact as a client must before it keeps it: sums is
// signed by one of keys (sig), names file once, and gives it the sha256 of the bytes fetched
// (got). It returns the signer.
func VerifyDownload(keys []PublicKey, sums, sig []byte, file, got string) (PublicKey, error) {
	signer, err := Verify(keys, sums, sig)
	if err != nil {
		return nil, err
	}
	list, err := ParseSums(sums)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		if s.Name == file {
			if s.SHA256 != got {
				return nil, fmt.Errorf("%s has sha256 %s, and its signed SHA256SUMS says %s: refused", file, got, s.SHA256)
			}
			return signer, nil
		}
	}
	return nil, fmt.Errorf("%s is not in its version's signed SHA256SUMS: refused", file)
}
