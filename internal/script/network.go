package script

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Network is how a script's requests reach their targets: names pointed at chosen addresses, the
// certificates of TLS, and a proxy. The zero Network is the machine's resolver, its trusted
// roots, no client certificate and no proxy.
type Network struct {
	// Hosts points names at addresses, like /etc/hosts for the run alone: the key is a host
	// name in lower case, or a name and port ("shop.example:443") for that port only; the value
	// an address, or an address and port. TLS and the Host header still name the host.
	Hosts map[string]string
	TLS   TLS
	// Proxy, when set, is the http:// proxy every request goes through: plain http as requests
	// to the proxy, https through a CONNECT tunnel.
	Proxy *url.URL
}

// Overrides says whether the network goes elsewhere than where the requests' names point: a name
// override or a proxy.
func (n *Network) Overrides() bool { return len(n.Hosts) > 0 || n.Proxy != nil }

// Dial returns where to connect for hostport (a host and port): the address Hosts points it at,
// by host and port first, then by host alone; hostport itself when none.
func (n *Network) Dial(hostport string) string {
	if len(n.Hosts) == 0 {
		return hostport
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if to, ok := n.Hosts[net.JoinHostPort(host, port)]; ok {
		return withPort(to, port)
	}
	if to, ok := n.Hosts[host]; ok {
		return withPort(to, port)
	}
	return hostport
}

// withPort is addr with port unless addr has its own.
func withPort(addr, port string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, port)
}

// TLS is what a script's TLS connections trust and present.
type TLS struct {
	// CA is a PEM bundle of certificates trusted besides the machine's roots.
	CA *File
	// Cert is the client certificate presented to every host that asks for one, unless Hosts
	// gives the host its own.
	Cert  *KeyPair
	Hosts map[string]*KeyPair // by host name, lower case
}

// File is a file a script names, relative to its folder; Data is filled by Load and LoadFS.
type File struct {
	Name string
	Data []byte
	p    pos
}

// KeyPair is a client certificate and its private key, both PEM files. Certificate is filled by
// Load and LoadFS.
type KeyPair struct {
	Cert, Key   *File
	Certificate *tls.Certificate
	p           pos
}

// Pool returns the CA bundle as a pool with the machine's roots, or nil when there is none.
func (t *TLS) Pool() (*x509.CertPool, error) {
	if t.CA == nil {
		return nil, nil
	}
	if t.CA.Data == nil {
		return nil, fmt.Errorf("tls.ca %s was not loaded", t.CA.Name)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(t.CA.Data) {
		return nil, fmt.Errorf("tls.ca %s holds no PEM certificate", t.CA.Name)
	}
	return pool, nil
}

// Files names every file the script reads, relative to its folder, once each: its data files,
// its TLS files and its body files. They travel with the script when it is uploaded.
func (s *Script) Files() []string {
	var out []string
	for _, df := range s.Variables.Data {
		out = append(out, df.File)
	}
	for _, f := range s.fileRefs() {
		out = append(out, f.Name)
	}
	slices.Sort(out[len(s.Variables.Data):]) // the data files first, in order; the rest by name
	return slices.Compact(out)
}

// fileRefs are the files the script names besides its data files: its TLS section's, then its
// requests' bodies'.
func (s *Script) fileRefs() []*File {
	out := s.Network.TLS.files()
	for _, r := range s.Session.Requests() {
		if b := r.Body; b != nil {
			if b.File != nil {
				out = append(out, b.File)
			}
			for _, p := range b.Parts {
				if p.File != nil {
					out = append(out, p.File)
				}
			}
		}
	}
	return out
}

// files are the TLS section's files, in the order the script gives them.
func (t *TLS) files() []*File {
	var out []*File
	if t.CA != nil {
		out = append(out, t.CA)
	}
	for _, kp := range t.pairs() {
		out = append(out, kp.Cert, kp.Key)
	}
	return out
}

// pairs are the client certificates, the script-wide one first, then by host name.
func (t *TLS) pairs() []*KeyPair {
	var out []*KeyPair
	if t.Cert != nil {
		out = append(out, t.Cert)
	}
	for _, h := range slices.Sorted(maps.Keys(t.Hosts)) {
		out = append(out, t.Hosts[h])
	}
	return out
}

// readFiles reads the files the script names besides its data files from fsys, relative to dir,
// and checks its TLS files.
func (d *decoder) readFiles(fsys fs.FS, dir string, s *Script) {
	for _, f := range s.fileRefs() {
		data, err := fs.ReadFile(fsys, path.Join(dir, f.Name))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			d.add(f.p, "cannot read %s: %v", f.Name, err)
			continue
		}
		f.Data = data
	}
	d.checkTLS(&s.Network.TLS)
}

// checkTLS checks the TLS section's files, once read: the CA file holds a certificate, each
// certificate and key make a pair.
func (d *decoder) checkTLS(t *TLS) {
	if t.CA != nil && t.CA.Data != nil {
		if _, err := t.Pool(); err != nil {
			d.add(t.CA.p, "%s holds no PEM certificate", t.CA.Name)
		}
	}
	for _, kp := range t.pairs() {
		if kp.Cert.Data == nil || kp.Key.Data == nil {
			continue
		}
		c, err := tls.X509KeyPair(kp.Cert.Data, kp.Key.Data)
		if err != nil {
			d.add(kp.p, "the certificate and key do not make a pair: %v", err)
			continue
		}
		kp.Certificate = &c
	}
}

// hosts reads the hosts key: names, or names and ports, to addresses.
func (d *decoder) hosts(n *yaml.Node, p pos) map[string]string {
	out := make(map[string]string)
	for _, kv := range d.pairs(n, p) {
		from := strings.TrimSuffix(strings.ToLower(kv.key), ".")
		host, port, err := net.SplitHostPort(from)
		if err != nil {
			host, port = from, ""
		}
		if !validHostName(host) || (port != "" && !validPort(port)) {
			d.add(kv.keyPos, "must be a host name, or a host name and port (shop.example:443)")
			continue
		}
		to, ok := d.str(kv.val, kv.valPos)
		if !ok {
			continue
		}
		addr, aport, err := net.SplitHostPort(to)
		if err != nil {
			addr, aport = to, ""
		}
		if _, err := netip.ParseAddr(addr); err != nil || (aport != "" && !validPort(aport)) {
			d.add(kv.valPos, "must be an IP address, or an address and port (127.0.0.5:8443)")
			continue
		}
		out[from] = to
	}
	return out
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return false // an address needs no override
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// tlsSection reads the tls key.
func (d *decoder) tlsSection(n *yaml.Node, p pos) TLS {
	var t TLS
	o := d.object(n, p, "ca", "cert", "key", "hosts")
	if o == nil {
		return t
	}
	if n, p := o.get("ca"); n != nil {
		t.CA = d.file(n, p)
	}
	t.Cert = d.keyPair(o, p)
	if n, p := o.get("hosts"); n != nil {
		t.Hosts = make(map[string]*KeyPair)
		for _, kv := range d.pairs(n, p) {
			host := strings.TrimSuffix(strings.ToLower(kv.key), ".")
			if !validHostName(host) {
				d.add(kv.keyPos, "must be a host name")
				continue
			}
			ho := d.object(kv.val, kv.valPos, "cert", "key")
			if ho == nil {
				continue
			}
			if kp := d.keyPair(ho, kv.valPos); kp != nil {
				t.Hosts[host] = kp
			} else if !ho.has("cert") && !ho.has("key") {
				d.add(kv.valPos, "needs cert and key")
			}
		}
	}
	return t
}

// keyPair reads the cert and key of o, both or neither.
func (d *decoder) keyPair(o *obj, p pos) *KeyPair {
	cn, cp := o.get("cert")
	kn, kp := o.get("key")
	switch {
	case cn == nil && kn == nil:
		return nil
	case cn == nil:
		d.add(pos{path: field(p.path, "cert"), line: p.line, col: p.col}, "required with key")
		return nil
	case kn == nil:
		d.add(pos{path: field(p.path, "key"), line: p.line, col: p.col}, "required with cert")
		return nil
	}
	c, k := d.file(cn, cp), d.file(kn, kp)
	if c == nil || k == nil {
		return nil
	}
	return &KeyPair{Cert: c, Key: k, p: p}
}

// file reads a path relative to the script's folder.
func (d *decoder) file(n *yaml.Node, p pos) *File {
	f, ok := d.str(n, p)
	if !ok {
		return nil
	}
	if f == "" || !fs.ValidPath(path.Clean(f)) || strings.Contains(f, `\`) {
		d.add(p, "must be a path relative to the script's folder and inside it, with / between folders")
		return nil
	}
	return &File{Name: path.Clean(f), p: p}
}

// proxy reads the proxy key: an http:// URL, with credentials when the proxy needs them.
func (d *decoder) proxy(n *yaml.Node, p pos) *url.URL {
	raw, ok := d.str(n, p)
	if !ok {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" ||
		(u.Port() != "" && !validPort(u.Port())) {
		d.add(p, "must be an http:// proxy URL such as http://127.0.0.1:3128, with user:password@ when it needs them")
		return nil
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	return u
}
