package record

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CA is the recording's certificate authority: it signs a certificate for each host a client
// opens through the proxy. It is made once and kept, so that a browser or system told to trust
// it goes on trusting the recordings after it.
type CA struct {
	// CertPath is the CA certificate's file, the one a client is told to trust.
	CertPath string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	// leafKey is the key of every host's certificate: one per process, since only the
	// signature differs from host to host.
	leafKey *ecdsa.PrivateKey
	mu      sync.Mutex
	leaves  map[string]*tls.Certificate
}

// Files of a CA folder.
const (
	CertFile = "ca.pem"
	KeyFile  = "ca-key.pem"
)

// DefaultDir is where the CA is kept: $BARRAGE_CA_DIR, else beside the plugin directory in
// Barrage's data folder ($XDG_DATA_HOME/barrage/ca, else ~/.local/share/barrage/ca).
func DefaultDir(getenv func(string) string) string {
	if d := getenv("BARRAGE_CA_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "barrage", "ca")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "share", "barrage", "ca")
}

// LoadCA reads the CA kept in dir, making it the first time (created then reports true). Its
// key is readable by its owner alone.
func LoadCA(dir string) (ca *CA, created bool, err error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	ca, err = readCA(certPath, keyPath)
	switch {
	case err == nil:
		return ca, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("make the CA's folder: %w", err)
	}
	certPEM, keyPEM, err := newCA()
	if err != nil {
		return nil, false, err
	}
	// The key is created exclusively: of two recorders started at once, one makes the CA.
	kf, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("keep the CA's key: %w (remove %s and %s to make a new CA)", err, keyPath, certPath)
	}
	_, err = kf.Write(keyPEM)
	if cerr := kf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = writeFileAtomic(certPath, certPEM, 0o644)
	}
	if err != nil {
		_ = os.Remove(keyPath)
		return nil, false, fmt.Errorf("keep the CA: %w", err)
	}
	ca, err = readCA(certPath, keyPath)
	return ca, err == nil, err
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// newCA makes an ECDSA P-256 CA valid for ten years, which may sign host certificates only.
func newCA() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	ski := sha1.Sum(pub) // the subject key id of RFC 5280, 4.2.1.2 (1): not a security use
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Barrage recording CA (" + host + ")", Organization: []string{"Barrage"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("make the CA: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}

func readCA(certPath, keyPath string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("the CA %s has no key beside it: %w", certPath, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the CA in %s: %w", filepath.Dir(certPath), err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the CA %s: %w", certPath, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("%s is not an ECDSA CA certificate", certPath)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &CA{CertPath: certPath, cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{}}, nil
}

// Certificate is the CA's own certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Leaf is the certificate the proxy presents for host (a name or an IP address), made the first
// time a client opens the host and valid for 30 days, as short as browsers like them.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leaves[host]; c != nil && time.Until(c.Leaf.NotAfter) > time.Hour {
		return c, nil
	}
	now := time.Now()
	notAfter := now.AddDate(0, 0, 30)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial(),
		Subject:        pkix.Name{CommonName: host, Organization: []string{"Barrage recording"}},
		NotBefore:      now.Add(-time.Hour),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		AuthorityKeyId: ca.cert.SubjectKeyId,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey, Leaf: leaf}
	ca.leaves[host] = c
	return c, nil
}
