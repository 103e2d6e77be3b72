package script

import (
	"time"
)

// MaxSize is the largest script, in bytes, that Parse reads.
const MaxSize = 4 << 20

// MaxSourceAddrs is the most source addresses a script may list, ranges expanded.
const MaxSourceAddrs = 4096

// Bounds of a script's values, generous enough for any real test and small enough that a
// mistyped number is caught before it reaches an agent.
const (
	maxVUs         = 1_000_000
	maxIterations  = 1_000_000_000
	maxRunDuration = 7 * 24 * time.Hour
	maxTimeout     = time.Hour
	maxThink       = time.Hour
	maxRedirects   = 50
	maxStages      = 100
	maxRate        = 1e9 // iterations a second
	defaultTimeout = 30 * time.Second
	defaultGrace   = 30 * time.Second
)

// ParseOptions tunes Parse, Load and LoadFS.
type ParseOptions struct {
	// Filename names the script in error messages; Load and LoadFS default it to the path
	// they read.
	Filename string
	// CheckDataOnly checks the data files' rows without keeping them: their Rows stay nil. For
	// the server, which runs nothing: a row kept costs about eight times its bytes.
	CheckDataOnly bool
}

// Parse reads a script, YAML or JSON, without reading the data files it names: their Columns
// and Rows stay nil and, when the script has any, a variable no other source defines is taken
// to be one of their columns. A refused script's error is an ErrorList.
func Parse(data []byte, opts ParseOptions) (*Script, error) {
	s, err := parseAsFarAsRead(data, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseName checks data as Parse does and returns, with Parse's error, the script's name as
// far as the parser read it: a refused script's too, when that name is valid ("" when the
// script names none, or is not a document that could).
func ParseName(data []byte, opts ParseOptions) (string, error) {
	s, err := parseAsFarAsRead(data, opts)
	if s == nil {
		return "", err
	}
	return s.Name, err
}

// parseAsFarAsRead is Parse that keeps the model of a refused script as far as it was read
// (nil when data is not a document).
func parseAsFarAsRead(data []byte, opts ParseOptions) (*Script, error) {
	d := &decoder{errs: errs{file: opts.Filename}}
	s := d.parse(data)
	if s != nil {
		d.checkVars(s)
	}
	if list := d.refused(nil); list != nil {
		return s, list
	}
	s.Deprecations = d.notes
	return s, nil
}

// parse builds the model from data, nil when data is not a readable document. The model may
// be partial when errors were reported.
func (d *decoder) parse(data []byte) *Script {
	root := d.document(data)
	if root == nil {
		return nil
	}
	o := d.object(root, at(root, ""), "version", "name", "description", "base_url", "variables", "plugins", "session", "load", "scenarios", "thresholds", "monitors", "hosts", "tls", "proxy")
	if o == nil {
		return nil
	}
	s := &Script{}
	if n, p := o.need("version"); n != nil {
		if v, ok := wholeNumber(n); !ok || v != Version {
			d.add(p, "must be 1, the only version of the format")
		}
		s.Version = Version
	}
	if n, p := o.get("name"); n != nil {
		s.Name, _ = d.name(n, p)
	}
	if n, p := o.get("description"); n != nil {
		s.Description, _ = d.str(n, p)
	}
	if n, p := o.get("base_url"); n != nil {
		s.BaseURL = d.baseURL(n, p)
		d.badBase = s.BaseURL == nil
	}
	if n, p := o.get("variables"); n != nil {
		s.Variables = d.variables(n, p)
	}
	if n, p := o.get("plugins"); n != nil {
		s.Plugins = d.plugins(n, p)
	}
	names := make(map[string]bool)
	groups := make(map[string]bool)
	if n, p := o.get("scenarios"); n != nil {
		for _, k := range []string{"session", "load"} {
			if o.has(k) {
				_, kp := o.get(k)
				d.add(kp, "goes without scenarios: each scenario has its own session and load")
			}
		}
		s.Scenarios = d.scenarios(n, p, s, groups, names)
		s.Session, s.Load = together(s.Scenarios)
	} else {
		if n, p := o.need("session"); n != nil {
			s.Session = d.session(n, p, s, groups, names)
		}
		if n, p := o.need("load"); n != nil {
			s.Load = d.load(n, p)
		}
	}
	if n, p := o.get("thresholds"); n != nil {
		s.Thresholds = d.thresholds(n, p, names)
	}
	if n, p := o.get("monitors"); n != nil {
		s.Monitors = d.monitors(n, p)
	}
	if n, p := o.get("hosts"); n != nil {
		s.Network.Hosts = d.hosts(n, p)
	}
	if n, p := o.get("tls"); n != nil {
		s.Network.TLS = d.tlsSection(n, p)
	}
	if n, p := o.get("proxy"); n != nil {
		s.Network.Proxy = d.proxy(n, p)
	}
	if n := s.Labels(); n > MaxLabels {
		d.add(pos{}, "the script measures %d labels (its requests, groups, WebSocket steps and checks); at most %d: an agent reports each every second", n, MaxLabels)
	}
	return s
}

// MaxLabels bounds the labels a script's run measures, as the server bounds the labels of an
// agent's second: a script past it is refused when it is read, not its run's reports.
const MaxLabels = 1000
