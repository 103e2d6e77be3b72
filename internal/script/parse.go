package script

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/sdk"
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

// maxMonitors and maxMonitorSeries bound what a run scrapes each second.
const (
	maxMonitors      = 8
	maxMonitorSeries = 16
)

// monitors reads the monitors section.
func (d *decoder) monitors(n *yaml.Node, p pos) []*Monitor {
	var out []*Monitor
	seen := make(map[string]bool)
	items := d.seq(n, p)
	if len(items) > maxMonitors {
		d.add(p, "at most %d monitors", maxMonitors)
		return nil
	}
	for i, c := range items {
		ep := at(c, index(p.path, i))
		o := d.object(c, ep, "name", "url", "series")
		if o == nil {
			continue
		}
		m := &Monitor{}
		if n, p := o.need("name"); n != nil {
			m.Name, _ = d.name(n, p)
			if seen[m.Name] {
				d.add(p, "another monitor is already named %s", quote(m.Name))
			}
			seen[m.Name] = true
		}
		if n, p := o.need("url"); n != nil {
			if raw, ok := d.str(n, p); ok {
				u, err := url.Parse(raw)
				if err == nil && u.Port() != "" {
					if n, perr := strconv.Atoi(u.Port()); perr != nil || n < 1 || n > 65535 {
						err = errors.New("bad port")
					}
				}
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
					d.add(p, "must be an absolute http(s) URL without credentials, such as http://127.0.0.1:9100/metrics")
				} else {
					m.URL = raw
				}
			}
		}
		if n, p := o.need("series"); n != nil {
			list := d.seq(n, p)
			if len(list) == 0 || len(list) > maxMonitorSeries {
				d.add(p, "name from 1 to %d series", maxMonitorSeries)
			}
			for j, sn := range list {
				sp := at(sn, index(p.path, j))
				src, ok := d.str(sn, sp)
				if !ok {
					continue
				}
				sel, err := ParseMonitorSeries(src)
				if err != nil {
					d.add(sp, "%v", err)
					continue
				}
				if slices.ContainsFunc(m.Series, func(o *MonitorSeries) bool { return o.Source == sel.Source }) {
					d.add(sp, "%s is named twice", quote(src))
					continue
				}
				m.Series = append(m.Series, sel)
			}
		}
		out = append(out, m)
	}
	return out
}

// variables reads the variables section.
func (d *decoder) variables(n *yaml.Node, p pos) Variables {
	var v Variables
	o := d.object(n, p, "constants", "env", "data")
	if o == nil {
		return v
	}
	defined := make(map[string]string)
	define := func(kp pos, name, what string) bool {
		if !identRe.MatchString(name) {
			d.add(kp, "%s is not a valid variable name: use letters, digits and _, not starting with a digit", quote(name))
			return false
		}
		if prev, dup := defined[name]; dup {
			d.add(kp, "%s is already %s", name, prev)
			return false
		}
		defined[name] = what
		return true
	}
	if n, p := o.get("constants"); n != nil {
		if d.mapping(n, p) {
			for _, kv := range d.pairs(n, p) {
				val, ok := d.text(kv.val, kv.valPos)
				if define(kv.keyPos, kv.key, "a constant") && ok {
					v.Constants = append(v.Constants, Constant{Name: kv.key, Value: val})
				}
			}
		}
	}
	if n, p := o.get("env"); n != nil {
		if d.mapping(n, p) {
			for _, kv := range d.pairs(n, p) {
				e, ok := d.envVar(kv)
				if define(kv.keyPos, kv.key, "an environment variable") && ok {
					v.Env = append(v.Env, e)
				}
			}
		}
	}
	if n, p := o.get("data"); n != nil {
		for i, c := range d.seq(n, p) {
			if df := d.dataFile(c, at(c, index(p.path, i))); df != nil {
				v.Data = append(v.Data, df)
			}
		}
	}
	return v
}

// mapping reports whether n is a mapping, reporting it when it is not.
func (d *decoder) mapping(n *yaml.Node, p pos) bool {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping, not %s", kindName(n))
		return false
	}
	return true
}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envVar reads "name: ENV_NAME" or "name: { from: ENV_NAME, default: value }".
func (d *decoder) envVar(kv pair) (EnvVar, bool) {
	e := EnvVar{Name: kv.key, p: kv.valPos}
	var fromNode *yaml.Node
	fromPos := kv.valPos
	if kv.val.Kind == yaml.MappingNode {
		o := d.object(kv.val, kv.valPos, "from", "default")
		if o == nil {
			return e, false
		}
		fromNode, fromPos = o.need("from")
		if n, p := o.get("default"); n != nil {
			var ok bool
			if e.Default, ok = d.text(n, p); !ok {
				return e, false
			}
			e.HasDefault = true
		}
	} else {
		fromNode = kv.val
	}
	if fromNode == nil {
		return e, false
	}
	from, ok := d.str(fromNode, fromPos)
	if !ok {
		return e, false
	}
	if !envNameRe.MatchString(from) {
		d.add(fromPos, "%s is not an environment variable name", quote(from))
		return e, false
	}
	e.From = from
	return e, true
}

// dataFile reads one entry of variables.data.
func (d *decoder) dataFile(n *yaml.Node, p pos) *DataFile {
	o := d.object(n, p, "file", "order", "separator")
	if o == nil {
		return nil
	}
	df := &DataFile{Order: Circular, Separator: ',', p: p}
	ok := true
	if n, p := o.need("file"); n != nil {
		f, fok := d.str(n, p)
		switch {
		case !fok:
			ok = false
		case f == "" || !fs.ValidPath(path.Clean(f)) || strings.Contains(f, `\`):
			d.add(p, "must be a path relative to the script's folder and inside it, with / between folders")
			ok = false
		default:
			df.File = path.Clean(f)
		}
	} else {
		ok = false
	}
	if n, p := o.get("order"); n != nil {
		s, sok := d.str(n, p)
		switch s {
		case "sequential":
			df.Order = Sequential
		case "random":
			df.Order = Random
		case "circular":
			df.Order = Circular
		default:
			if sok {
				d.add(p, "must be sequential, random or circular")
			}
			ok = false
		}
	}
	if n, p := o.get("separator"); n != nil {
		s, sok := d.str(n, p)
		r := []rune(s)
		if sok && (len(r) != 1 || r[0] == '"' || r[0] == '\r' || r[0] == '\n' || r[0] == unicode.ReplacementChar) {
			d.add(p, "must be one character other than a quote or a line break, such as \";\"")
			sok = false
		}
		if sok {
			df.Separator = r[0]
		}
		ok = ok && sok
	}
	if !ok {
		return nil
	}
	return df
}

var (
	// pluginUseRe is what a script's use says: a plugin's name, then an exact version or a
	// range that registry.ParseConstraint checks.
	pluginUseRe = regexp.MustCompile(`^((?:[a-z0-9][a-z0-9._-]*/)?([a-z0-9][a-z0-9._-]*))@([\^~]?[0-9][0-9A-Za-z.+-]*)$`)
	pluginRefRe = regexp.MustCompile(`^((?:[a-z0-9][a-z0-9._-]*/)?([a-z0-9][a-z0-9._-]*))@((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)$`)
)

// ParsePluginRef splits a plugin reference, name@version, as scripts write it: a name of
// lowercase letters, digits, '.', '_' and '-' with an optional owner/, and an exact semantic
// version. ok is false for anything else, such as a name or version that would climb out of a
// folder.
func ParsePluginRef(ref string) (name, version string, ok bool) {
	m := pluginRefRe.FindStringSubmatch(ref)
	if m == nil {
		return "", "", false
	}
	return m[1], m[3], true
}

// plugins reads the plugins section.
func (d *decoder) plugins(n *yaml.Node, p pos) []*Plugin {
	var out []*Plugin
	seen := make(map[string]bool)
	for i, c := range d.seq(n, p) {
		ep := at(c, index(p.path, i))
		o := d.object(c, ep, "use", "as", "kind", "scope", "config", "network")
		if o == nil {
			continue
		}
		pl := &Plugin{}
		ok := true
		if n, p := o.need("use"); n != nil {
			ref, rok := d.str(n, p)
			m := pluginUseRe.FindStringSubmatch(ref)
			if m != nil {
				if _, err := registry.ParseConstraint(m[3]); err != nil {
					m = nil
				}
			}
			if rok && m == nil {
				d.add(p, "must be name@version with an exact version (random-data@1.2.0) or a range of versions (acme/random-data@^1.2)")
			}
			if m != nil {
				if ns, name, market := strings.Cut(m[1], "/"); market {
					// A marketplace plugin: its names follow the marketplace's rules.
					err := registry.CheckName("namespace", ns)
					if err == nil {
						err = registry.CheckName("name", name)
					}
					if err != nil {
						d.add(p, "%s: a namespaced name is a marketplace plugin's", err)
						m = nil
					}
				}
			}
			if m != nil {
				pl.Ref, pl.Name, pl.Version = ref, m[1], m[3]
				if identRe.MatchString(m[2]) {
					pl.As = m[2]
				}
			}
			ok = ok && m != nil
		} else {
			ok = false
		}
		if n, p := o.get("as"); n != nil {
			as, aok := d.ident(n, p)
			pl.As = as
			ok = ok && aok
		} else if pl.Ref != "" && pl.As == "" {
			d.add(pos{path: field(ep.path, "as"), line: ep.line, col: ep.col}, "required: the plugin's name is not a valid local name")
			ok = false
		}
		if pl.As == SecretAlias {
			d.add(ep, "a plugin may not be named %s: ${%s.NAME} reads your secret NAME; give it another name with as", SecretAlias, SecretAlias)
			ok = false
		} else if pl.As != "" {
			if seen[pl.As] {
				d.add(ep, "another plugin is already named %s; give this one another name with as", quote(pl.As))
				ok = false
			}
			seen[pl.As] = true
		}
		if n, p := o.need("kind"); n != nil {
			s, _ := d.str(n, p)
			switch pl.Kind = KindOf(s); {
			case pl.Kind == 0:
				if isString(n) {
					d.add(p, "must be session-element (produces variables), url (rewrites the requests it is attached to) or source-modifier (rewrites this script before the run)")
				}
				ok = false
			case s != pl.Kind.String():
				d.note(p, "%s is the old spelling of %s, the SDK's and the marketplace's: write %s", s, pl.Kind, pl.Kind)
			}
		} else {
			ok = false
		}
		if n, p := o.get("scope"); n != nil {
			switch s, _ := d.str(n, p); s {
			case "run":
				pl.Scope = ScopeRun
			case "vu":
				pl.Scope = ScopeVU
			case "iteration":
				pl.Scope = ScopeIteration
			default:
				if isString(n) {
					d.add(p, "must be run, vu or iteration")
				}
				ok = false
			}
		}
		if n, p := o.get("config"); n != nil {
			if d.mapping(n, p) {
				v, vok := d.value(n, p)
				pl.Config, _ = v.(map[string]any)
				ok = ok && vok
			} else {
				ok = false
			}
		}
		if n, p := o.get("network"); n != nil {
			var gok bool
			pl.Network, gok = d.grants(n, p)
			ok = ok && gok
		}
		if ok {
			out = append(out, pl)
		}
	}
	return out
}

// grants reads a plugin's network: the hosts the script lets it reach, as host:port.
func (d *decoder) grants(n *yaml.Node, p pos) ([]Grant, bool) {
	items := d.seq(n, p)
	if n.Kind != yaml.SequenceNode {
		return nil, false
	}
	if len(items) > sdk.MaxHostPatterns {
		d.add(p, "grants %d hosts; at most %d", len(items), sdk.MaxHostPatterns)
		return nil, false
	}
	var out []Grant
	ok := true
	seen := make(map[string]bool)
	for i, c := range items {
		gp := at(c, index(p.path, i))
		s, sok := d.str(c, gp)
		if !sok {
			ok = false
			continue
		}
		h, err := sdk.ParseHostPattern(s)
		switch {
		case err != nil:
			d.add(gp, "%v", err)
		case h.Any():
			d.add(gp, "%q grants every host: name the hosts the plugin may reach", s)
		case seen[h.String()]:
			d.add(gp, "repeats %s", h)
		default:
			seen[h.String()] = true
			out = append(out, Grant{Host: h, Path: gp.path, Line: gp.line, Column: gp.col})
			continue
		}
		ok = false
	}
	return out, ok
}

// session reads the session section; names collects the request names.
// maxScenarios bounds a script's scenarios.
const maxScenarios = 16

// scenarios reads the scenarios section: names to { session, load, tags }.
func (d *decoder) scenarios(n *yaml.Node, p pos, s *Script, groups, names map[string]bool) []*Scenario {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping of scenario names to their session, load and tags, not %s", kindName(n))
		return nil
	}
	var out []*Scenario
	for _, kv := range d.pairs(n, p) {
		sc := &Scenario{Name: kv.key}
		if !identRe.MatchString(kv.key) {
			d.add(kv.keyPos, "a scenario's name is letters, digits and _, not starting with a digit")
		}
		o := d.object(kv.val, kv.valPos, "session", "load", "tags")
		if o == nil {
			continue
		}
		if sn, sp := o.need("session"); sn != nil {
			sc.Session = d.session(sn, sp, s, groups, names)
		}
		if ln, lp := o.need("load"); ln != nil {
			sc.Load = d.load(ln, lp)
		}
		if tn, tp := o.get("tags"); tn != nil {
			sc.Tags = map[string]string{}
			for _, t := range d.pairs(tn, tp) {
				if v, ok := d.str(t.val, t.valPos); ok {
					sc.Tags[t.key] = v
				}
			}
		}
		out = append(out, sc)
	}
	switch {
	case len(out) == 0:
		d.add(p, "must name at least one scenario")
	case len(out) > maxScenarios:
		d.add(p, "at most %d scenarios", maxScenarios)
	}
	return out
}

// together is scenarios' sessions and loads as one: every group in order, and a load of all
// their VUs (an open one's most) for the longest of their durations, open when all are.
func together(scenarios []*Scenario) (Session, Workload) {
	ses := Session{Cookies: true}
	w := Workload{Model: Open}
	for _, sc := range scenarios {
		ses.Groups = append(ses.Groups, sc.Session.Groups...)
		if sc.Load.Model != Open {
			w.Model = Closed
		}
		w.VUs += max(sc.Load.VUs, sc.Load.MaxVUs)
		w.Duration = max(w.Duration, sc.Load.Duration)
		w.GracefulStop = max(w.GracefulStop, sc.Load.GracefulStop)
	}
	if w.Model == Open {
		w.MaxVUs, w.VUs = w.VUs, 0
	}
	return ses, w
}

func (d *decoder) session(n *yaml.Node, p pos, s *Script, groups, names map[string]bool) Session {
	ses := Session{Cookies: true}
	o := d.object(n, p, "cookies", "headers", "groups")
	if o == nil {
		return ses
	}
	if n, p := o.get("cookies"); n != nil {
		ses.Cookies, _ = d.boolean(n, p)
	}
	var headers []Header
	if n, p := o.get("headers"); n != nil {
		headers = d.headers(n, p)
	}
	n, gp := o.need("groups")
	if n == nil {
		return ses
	}
	list := d.nonEmpty(n, gp, "must hold at least one group")
	for i, c := range list {
		if g := d.group(c, at(c, index(gp.path, i)), s, headers, groups, names); g != nil {
			ses.Groups = append(ses.Groups, g)
		}
	}
	return ses
}

// group reads one measurement group.
func (d *decoder) group(n *yaml.Node, p pos, s *Script, inherited []Header, groups, names map[string]bool) *Group {
	o := d.object(n, p, "name", "headers", "requests", "think")
	if o == nil {
		return nil
	}
	g := &Group{}
	if n, p := o.need("name"); n != nil {
		if name, ok := d.name(n, p); ok {
			if groups[name] {
				d.add(p, "another group is already named %s", quote(name))
			}
			groups[name] = true
			g.Name = name
		}
	}
	if n, p := o.get("headers"); n != nil {
		inherited = mergeHeaders(d.headers(n, p), inherited)
	}
	if n, p := o.get("think"); n != nil {
		g.Think = d.think(n, p)
	}
	n, rp := o.need("requests")
	if n == nil {
		return g
	}
	list := d.nonEmpty(n, rp, "must hold at least one request")
	batches := 0
	for i, c := range list {
		cp := at(c, index(rp.path, i))
		if c.Kind == yaml.MappingNode && len(c.Content) == 2 && c.Content[0].Value == "batch" {
			batches++
			bn, bp := c.Content[1], at(c.Content[1], field(cp.path, "batch"))
			items := d.seq(bn, bp)
			if bn.Kind == yaml.SequenceNode && (len(items) < 2 || len(items) > maxBatch) {
				d.add(bp, "must hold from 2 to %d requests", maxBatch)
			}
			for j, bc := range items {
				r := d.request(bc, at(bc, index(bp.path, j)), s, inherited, names)
				if r == nil {
					continue
				}
				if r.Think != nil || r.WebSocket != nil {
					d.add(at(bc, index(bp.path, j)), "a request of a batch has no think time and is no websocket: the batch's requests go at once")
				}
				r.Group, r.Batch = g.Name, batches
				g.Requests = append(g.Requests, r)
			}
			continue
		}
		if r := d.request(c, cp, s, inherited, names); r != nil {
			r.Group = g.Name
			g.Requests = append(g.Requests, r)
		}
	}
	return g
}

// maxBatch bounds the requests of a batch.
const maxBatch = 50

// mergeHeaders returns own followed by the inherited headers own does not name.
func mergeHeaders(own, inherited []Header) []Header {
	out := append([]Header(nil), own...)
	for _, h := range inherited {
		overridden := false
		for _, o := range own {
			overridden = overridden || strings.EqualFold(o.Name, h.Name)
		}
		if !overridden {
			out = append(out, h)
		}
	}
	return out
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// request reads one request.
func (d *decoder) request(n *yaml.Node, p pos, s *Script, inherited []Header, names map[string]bool) *Request {
	o := d.object(n, p, "name", "method", "url", "headers", "query", "body", "timeout", "redirects", "http2", "extract", "assert", "think", "plugins", "websocket")
	if o == nil {
		return nil
	}
	r := &Request{Method: "GET", Timeout: defaultTimeout}
	if n, p := o.need("name"); n != nil {
		if name, ok := d.name(n, p); ok {
			if names[name] {
				d.add(p, "another request is already named %s; names are metric labels and must be unique", quote(name))
			}
			names[name] = true
			r.Name = name
		}
	}
	if n, p := o.get("method"); n != nil {
		if m, ok := d.str(n, p); ok {
			r.Method = strings.ToUpper(m)
			if !contains(methods, r.Method) {
				d.add(p, "must be one of %s", strings.Join(methods, ", "))
			}
		}
	}
	if n, p := o.need("url"); n != nil {
		if o.has("websocket") {
			n = wsAsHTTP(n)
		}
		r.URL = d.requestURL(n, p, s.BaseURL)
	}
	var own []Header
	if n, p := o.get("headers"); n != nil {
		own = d.headers(n, p)
	}
	r.Headers = mergeHeaders(own, inherited)
	if n, p := o.get("query"); n != nil {
		r.Query = d.params(n, p)
		r.query = compileQuery(r.Query)
	}
	if n, p := o.get("body"); n != nil {
		r.Body = d.body(n, p)
	}
	if n, p := o.get("timeout"); n != nil {
		r.Timeout, _ = d.durationIn(n, p, time.Millisecond, maxTimeout)
	}
	if n, p := o.get("redirects"); n != nil {
		r.Redirects, _ = d.integer(n, p, 0, maxRedirects)
	}
	if n, p := o.get("http2"); n != nil {
		r.HTTP2, _ = d.boolean(n, p)
	}
	if n, p := o.get("extract"); n != nil {
		for i, c := range d.seq(n, p) {
			if e := d.extractor(c, at(c, index(p.path, i))); e != nil {
				r.Extract = append(r.Extract, e)
			}
		}
	}
	hasStatus := false
	if n, p := o.get("assert"); n != nil {
		named := map[string]bool{}
		for i, c := range d.seq(n, p) {
			if a := d.assertion(c, at(c, index(p.path, i))); a != nil && d.checkNamed(named, a, at(c, index(p.path, i))) {
				r.Assert = append(r.Assert, a)
				hasStatus = hasStatus || a.Kind == AssertStatus
			}
		}
	}
	if !hasStatus {
		implied := &Assertion{Kind: AssertStatus, Status: []StatusRange{{200, 399}}, Implied: true}
		r.Assert = append([]*Assertion{implied}, r.Assert...)
	}
	if n, p := o.get("think"); n != nil {
		r.Think = d.think(n, p)
	}
	if n, p := o.get("websocket"); n != nil {
		r.WebSocket = d.websocket(n, p, o, r, names)
	}
	if n, p := o.get("plugins"); n != nil {
		for i, c := range d.seq(n, p) {
			cp := at(c, index(p.path, i))
			as, ok := d.str(c, cp)
			if !ok {
				continue
			}
			pl := findPlugin(s.Plugins, as)
			switch {
			case pl != nil && slices.Contains(r.Plugins, pl):
				d.add(cp, "repeats plugin %s", quote(as))
			case pl == nil:
				d.add(cp, "no plugin is named %s (the as of an entry of plugins)", quote(as))
			case pl.Kind != URLPlugin:
				d.add(cp, "plugin %s is %s plugin; only url plugins are attached to requests", quote(as), pl.Kind.article())
			default:
				r.Plugins = append(r.Plugins, pl)
			}
		}
	}
	return r
}

func findPlugin(plugins []*Plugin, as string) *Plugin {
	for _, p := range plugins {
		if p.As == as {
			return p
		}
	}
	return nil
}

// hasHTTPScheme reports whether s starts with http:// or https://, in any case.
func hasHTTPScheme(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// checkURLText reports spaces and control characters in the literal text of a URL template.
func (d *decoder) checkURLText(t *Template, p pos) bool {
	for _, x := range t.parts {
		if x.name == "" && strings.IndexFunc(x.lit, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0 {
			d.add(p, "must not contain spaces or control characters; encode them, a space as %%20")
			return false
		}
	}
	return true
}

// wsAsHTTP is a WebSocket URL node with its ws or wss scheme written http or https, as the
// upgrade's request goes; other nodes as they are.
func wsAsHTTP(n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.ScalarNode {
		return n
	}
	c := *n
	lower := strings.ToLower(c.Value)
	switch {
	case strings.HasPrefix(lower, "ws://"):
		c.Value = "http://" + c.Value[len("ws://"):]
	case strings.HasPrefix(lower, "wss://"):
		c.Value = "https://" + c.Value[len("wss://"):]
	}
	return &c
}

// websocket reads a WebSocket request's steps: { send: TEXT } or { receive: NAME?, timeout,
// extract, assert }.
func (d *decoder) websocket(n *yaml.Node, p pos, o *obj, r *Request, names map[string]bool) *WebSocket {
	for _, k := range []string{"method", "body", "redirects", "http2", "plugins"} {
		if o.has(k) {
			_, kp := o.get(k)
			d.add(kp, "a websocket request takes no %s", k)
		}
	}
	ws := &WebSocket{Connect: r.Name + " connect"}
	label := func(name string, p pos) string {
		if names[name] {
			d.add(p, "another request or step is already labelled %s; labels must be unique", quote(name))
		}
		names[name] = true
		return name
	}
	label(ws.Connect, p)
	items := d.nonEmpty(n, p, "must list at least one step")
	receives := 0
	for i, c := range items {
		cp := at(c, index(p.path, i))
		so := d.object(c, cp, "send", "receive", "timeout", "extract", "assert")
		if so == nil {
			continue
		}
		kind := so.exactlyOne("a step", "send", "receive")
		st := &WSStep{Timeout: r.Timeout}
		switch kind {
		case "send":
			sn, sp := so.get("send")
			st.Send = d.template(sn, sp)
			for _, k := range []string{"timeout", "extract", "assert"} {
				if so.has(k) {
					_, kp := so.get(k)
					d.add(kp, "belongs to a receive step, not a send")
				}
			}
		case "receive":
			receives++
			st.Name = fmt.Sprintf("%s receive %d", r.Name, receives)
			if rn, rp := so.get("receive"); rn.Kind == yaml.ScalarNode && rn.Tag != "!!null" && rn.Value != "" {
				st.Name, _ = d.name(rn, rp)
			} else if rn.Kind != yaml.ScalarNode {
				d.add(rp, "must be the step's label, or empty")
			}
			label(st.Name, cp)
			if tn, tp := so.get("timeout"); tn != nil {
				st.Timeout, _ = d.durationIn(tn, tp, time.Millisecond, maxTimeout)
			}
			if en, ep := so.get("extract"); en != nil {
				for j, e := range d.seq(en, ep) {
					if x := d.extractor(e, at(e, index(ep.path, j))); x != nil {
						if x.Kind == ExtractHeader || x.Kind == ExtractCookie {
							d.add(at(e, index(ep.path, j)), "a message has no headers or cookies: use json or regex")
							continue
						}
						st.Extract = append(st.Extract, x)
					}
				}
			}
			if an, ap := so.get("assert"); an != nil {
				named := map[string]bool{}
				for j, e := range d.seq(an, ap) {
					if a := d.assertion(e, at(e, index(ap.path, j))); a != nil && d.checkNamed(named, a, at(e, index(ap.path, j))) {
						if a.Kind == AssertStatus {
							d.add(at(e, index(ap.path, j)), "a message has no status: check its body")
							continue
						}
						st.Assert = append(st.Assert, a)
					}
				}
			}
		default:
			continue
		}
		ws.Steps = append(ws.Steps, st)
	}
	// The upgrade answers 101: that is its success, unless the script says otherwise.
	for _, a := range r.Assert {
		if a.Implied {
			a.Status = []StatusRange{{101, 101}}
		}
	}
	return ws
}

// checkAbsolute checks that t, a template starting with http:// or https://, makes a URL with
// a host, rendering each variable as x.
func (d *decoder) checkAbsolute(t *Template, p pos) bool {
	sample, _ := t.Render(func(string) (string, bool) { return "x", true }, nil)
	u, err := url.Parse(string(sample))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		d.add(p, "is not a valid URL: %v", err)
		return false
	}
	if u.Host == "" {
		d.add(p, "has no host")
		return false
	}
	return true
}

// urlTemplate reads a URL as a template and checks its text; t is nil when it is refused
// (the error is recorded).
func (d *decoder) urlTemplate(n *yaml.Node, p pos) (string, *Template) {
	s, ok := d.str(n, p)
	if !ok {
		return "", nil
	}
	t, err := newTemplate(s, p)
	if err != nil {
		d.add(p, "%s", err)
		return "", nil
	}
	if !d.checkURLText(t, p) {
		return "", nil
	}
	return s, t
}

// baseURL reads base_url: an absolute http(s) URL, which may use constants and environment
// variables.
func (d *decoder) baseURL(n *yaml.Node, p pos) *Template {
	s, t := d.urlTemplate(n, p)
	if t == nil {
		return nil
	}
	switch {
	case len(t.parts) > 0 && t.parts[0].name != "":
		return t // starts with a variable: checked when the run starts
	case !hasHTTPScheme(s):
		d.add(p, "must be an absolute http(s) URL, such as http://127.0.0.1:8080")
		return nil
	case !d.checkAbsolute(t, p):
		return nil
	case strings.ContainsAny(s, "?#"):
		d.add(p, "must not have a query or a fragment")
		return nil
	}
	return t
}

// requestURL reads a request's url, prefixing a relative one with the base URL.
func (d *decoder) requestURL(n *yaml.Node, p pos, base *Template) *Template {
	s, t := d.urlTemplate(n, p)
	if t == nil {
		return nil
	}
	switch {
	case s == "":
		d.add(p, "must not be empty")
	case t.parts[0].name != "":
		return t // starts with a variable, such as an extracted Location: checked when sent
	case strings.HasPrefix(s, "/"):
		if base == nil {
			if !d.badBase {
				d.add(p, "starts with / but the script has no base_url")
			}
			return nil
		}
		var b builder
		b.add(base.parts, escNone)
		b.flush()
		if last := len(b.parts) - 1; b.parts[last].name == "" {
			b.parts[last].lit = strings.TrimSuffix(b.parts[last].lit, "/")
		}
		b.add(t.parts, escNone)
		joined := b.template(p)
		joined.src = strings.TrimSuffix(base.src, "/") + s
		return joined
	case !hasHTTPScheme(s):
		d.add(p, "must be an absolute http(s) URL or start with /")
	case d.checkAbsolute(t, p):
		return t
	}
	return nil
}

var headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// headers reads a mapping of header names to values.
func (d *decoder) headers(n *yaml.Node, p pos) []Header {
	if !d.mapping(n, p) {
		return nil
	}
	var out []Header
	for _, kv := range d.pairs(n, p) {
		if !headerNameRe.MatchString(kv.key) {
			d.add(kv.keyPos, "%s is not a valid header name", quote(kv.key))
			continue
		}
		for _, h := range out {
			if strings.EqualFold(h.Name, kv.key) {
				d.add(kv.keyPos, "repeats header %s", h.Name)
			}
		}
		t := d.template(kv.val, kv.valPos)
		if t == nil {
			continue
		}
		if strings.ContainsAny(t.src, "\r\n\x00") {
			d.add(kv.valPos, "must not contain line breaks or NUL")
			continue
		}
		out = append(out, Header{Name: kv.key, Value: t})
	}
	return out
}

// params reads a mapping of names to a value or a list of values, as query: and form: are.
func (d *decoder) params(n *yaml.Node, p pos) []Param {
	if !d.mapping(n, p) {
		return nil
	}
	var out []Param
	for _, kv := range d.pairs(n, p) {
		vals := []*yaml.Node{kv.val}
		if kv.val.Kind == yaml.SequenceNode {
			vals = kv.val.Content
		}
		for i, v := range vals {
			vp := kv.valPos
			if kv.val.Kind == yaml.SequenceNode {
				vp = at(v, index(vp.path, i))
			}
			if t := d.template(v, vp); t != nil {
				out = append(out, Param{Name: kv.key, Value: t})
			}
		}
	}
	return out
}

// compileQuery compiles parameters into one form-encoded template: a=1&b=${x}.
func compileQuery(params []Param) *Template {
	var b builder
	for i, q := range params {
		if i > 0 {
			b.text("&")
		}
		b.text(url.QueryEscape(q.Name) + "=")
		b.add(q.Value.parts, escQuery)
	}
	return b.template(pos{})
}

// body reads a request body.
func (d *decoder) body(n *yaml.Node, p pos) *Body {
	o := d.object(n, p, "json", "form", "raw", "file", "multipart", "content_type")
	if o == nil {
		return nil
	}
	b := &Body{}
	if n, p := o.get("content_type"); n != nil {
		ct, ok := d.str(n, p)
		if ok {
			if _, _, err := mime.ParseMediaType(ct); err != nil {
				d.add(p, "is not a media type such as text/plain; charset=utf-8")
				ok = false
			}
		}
		if !ok {
			return nil
		}
		b.ContentType = ct
	}
	kind := o.exactlyOne("a body", "json", "form", "raw", "file", "multipart")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	switch kind {
	case "json":
		b.Kind = JSONBody
		if b.ContentType == "" {
			b.ContentType = "application/json"
		}
		var tb builder
		if !d.jsonBody(n, vp, &tb) {
			return nil
		}
		b.Content = tb.template(vp)
	case "form":
		b.Kind = FormBody
		if b.ContentType == "" {
			b.ContentType = "application/x-www-form-urlencoded"
		}
		params := d.params(n, vp)
		if params == nil && n.Kind != yaml.MappingNode {
			return nil
		}
		b.Content = compileQuery(params)
		b.Content.p = vp
	case "raw":
		b.Kind = RawBody
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		t, err := newTemplate(s, vp)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		b.Content = t
	case "file":
		b.Kind = FileBody
		if b.File = d.file(n, vp); b.File == nil {
			return nil
		}
		if b.ContentType == "" {
			b.ContentType = "application/octet-stream"
		}
	case "multipart":
		b.Kind = MultipartBody
		if b.ContentType != "" {
			d.add(p, "a multipart body sets its own content_type, with its boundary")
			return nil
		}
		if b.Parts = d.multipart(n, vp); b.Parts == nil {
			return nil
		}
	}
	return b
}

// multipart reads a multipart body's parts: name to a field's value, or to a file as
// { file, filename, content_type }.
func (d *decoder) multipart(n *yaml.Node, p pos) []*Part {
	if n.Kind != yaml.MappingNode {
		d.add(p, "must be a mapping of part names to field values or files, not %s", kindName(n))
		return nil
	}
	var parts []*Part
	ok := true
	for _, kv := range d.pairs(n, p) {
		part := &Part{Name: kv.key}
		if strings.ContainsAny(kv.key, "\"\r\n") || kv.key == "" {
			d.add(kv.keyPos, "a part's name may not be empty or hold quotes or line breaks")
			ok = false
			continue
		}
		if kv.val.Kind != yaml.MappingNode {
			if part.Value = d.template(kv.val, kv.valPos); part.Value == nil {
				ok = false
			}
			parts = append(parts, part)
			continue
		}
		o := d.object(kv.val, kv.valPos, "file", "filename", "content_type")
		if o == nil {
			ok = false
			continue
		}
		if fn, fp := o.need("file"); fn == nil {
			ok = false
		} else if part.File = d.file(fn, fp); part.File == nil {
			ok = false
		} else {
			part.Filename = path.Base(part.File.Name)
			if strings.ContainsAny(part.Filename, "\"\r\n") {
				d.add(fp, "the file's name holds a quote or a line break, which a part's header cannot carry: give the part a filename")
				ok = false
			}
		}
		if fn, fp := o.get("filename"); fn != nil {
			if name, sok := d.str(fn, fp); !sok || name == "" || strings.ContainsAny(name, "\"\r\n") {
				d.add(fp, "must be a file name without quotes or line breaks")
				ok = false
			} else {
				part.Filename = name
			}
		}
		part.ContentType = "application/octet-stream"
		if cn, cp := o.get("content_type"); cn != nil {
			ct, sok := d.str(cn, cp)
			if _, _, err := mime.ParseMediaType(ct); sok && err != nil || strings.ContainsAny(ct, "\r\n") {
				d.add(cp, "is not a media type such as image/png")
				sok = false
			}
			part.ContentType, ok = ct, ok && sok
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 && ok {
		d.add(p, "must name at least one part")
	}
	if !ok || len(parts) == 0 {
		return nil
	}
	return parts
}

// jsonBody writes n as JSON into b, parsing its strings as templates whose variables are
// escaped for a JSON string.
func (d *decoder) jsonBody(n *yaml.Node, p pos, b *builder) bool {
	switch n.Kind {
	case yaml.MappingNode:
		b.text("{")
		ok := true
		for i, kv := range d.pairs(n, p) {
			if i > 0 {
				b.text(",")
			}
			b.text(`"` + string(appendJSONString(nil, kv.key)) + `":`)
			ok = d.jsonBody(kv.val, kv.valPos, b) && ok
		}
		b.text("}")
		return ok
	case yaml.SequenceNode:
		b.text("[")
		ok := true
		for i, c := range n.Content {
			if i > 0 {
				b.text(",")
			}
			ok = d.jsonBody(c, at(c, index(p.path, i)), b) && ok
		}
		b.text("]")
		return ok
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.text("null")
			return true
		case "!!bool":
			v, ok := d.boolean(n, p)
			if v {
				b.text("true")
			} else {
				b.text("false")
			}
			return ok
		case "!!int", "!!float":
			num, ok := jsonNumber(n)
			if !ok {
				d.add(p, "%s is not a number JSON can hold", quote(n.Value))
				return false
			}
			b.text(num)
			return true
		}
		parts, err := parseTemplate(n.Value)
		if err != nil {
			d.add(p, "%s", err)
			return false
		}
		b.text(`"`)
		b.add(parts, escJSON)
		b.text(`"`)
		return true
	}
	d.add(p, "unsupported value")
	return false
}

// extractor reads one entry of extract.
func (d *decoder) extractor(n *yaml.Node, p pos) *Extractor {
	o := d.object(n, p, "var", "json", "regex", "header", "cookie", "default")
	if o == nil {
		return nil
	}
	e := &Extractor{p: p}
	ok := true
	if n, p := o.need("var"); n != nil {
		e.Var, ok = d.ident(n, p)
		e.p = p
	} else {
		ok = false
	}
	if n, p := o.get("default"); n != nil {
		var dok bool
		e.Default, dok = d.text(n, p)
		e.HasDefault = true
		ok = ok && dok
	}
	kind := o.exactlyOne("an extractor", "json", "regex", "header", "cookie")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	s, sok := d.str(n, vp)
	if !sok {
		return nil
	}
	switch kind {
	case "json":
		e.Kind = ExtractJSON
		jp, err := ParseJSONPath(s)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		e.JSONPath = jp
	case "regex":
		e.Kind = ExtractRegex
		re, err := regexp.Compile(s)
		if err != nil {
			d.add(vp, "%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return nil
		}
		e.Regex = re
	case "header", "cookie":
		e.Kind = ExtractHeader
		if kind == "cookie" {
			e.Kind = ExtractCookie
		}
		if !headerNameRe.MatchString(s) {
			d.add(vp, "%s is not a valid %s name", quote(s), kind)
			return nil
		}
		e.Name = s
	}
	if !ok {
		return nil
	}
	return e
}

// assertion reads one entry of assert.
func (d *decoder) assertion(n *yaml.Node, p pos) *Assertion {
	o := d.object(n, p, "name", "status", "body_contains", "body_matches", "json", "equals", "exists", "max_duration")
	if o == nil {
		return nil
	}
	var name string
	if nn, np := o.get("name"); nn != nil {
		var ok bool
		if name, ok = d.name(nn, np); !ok {
			return nil
		}
	}
	kind := o.exactlyOne("an assertion", "status", "body_contains", "body_matches", "json", "max_duration")
	if kind != "json" {
		for _, k := range []string{"equals", "exists"} {
			if n, kp := o.get(k); n != nil {
				d.add(kp, "goes only with json")
			}
		}
	}
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	a := &Assertion{}
	switch kind {
	case "status":
		a.Kind = AssertStatus
		a.Status = d.status(n, vp)
		if a.Status == nil {
			return nil
		}
	case "body_contains":
		a.Kind = AssertBodyContains
		if a.Text = d.template(n, vp); a.Text == nil {
			return nil
		}
	case "body_matches":
		a.Kind = AssertBodyMatches
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		re, err := regexp.Compile(s)
		if err != nil {
			d.add(vp, "%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return nil
		}
		a.Regex = re
	case "json":
		a.Kind = AssertJSON
		s, ok := d.str(n, vp)
		if !ok {
			return nil
		}
		jp, err := ParseJSONPath(s)
		if err != nil {
			d.add(vp, "%s", err)
			return nil
		}
		a.JSONPath = jp
		en, ep := o.get("equals")
		xn, xp := o.get("exists")
		if en != nil && xn != nil {
			d.add(xp, "goes without equals: a value that equals something exists")
			return nil
		}
		switch {
		case en != nil && isString(en):
			if a.EqualsText = d.template(en, ep); a.EqualsText == nil {
				return nil
			}
		case en != nil:
			v, ok := d.value(en, ep)
			if !ok {
				return nil
			}
			a.Equals, a.HasEquals = v, true
		case xn != nil:
			exists, ok := d.boolean(xn, xp)
			if !ok {
				return nil
			}
			a.Absent = !exists
		}
	case "max_duration":
		a.Kind = AssertMaxDuration
		v, ok := d.durationIn(n, vp, time.Millisecond, maxTimeout)
		if !ok {
			return nil
		}
		a.MaxDuration = v
	}
	a.Name = cmp.Or(name, checkText(a.describe(n)))
	return a
}

// checkText is an assertion's text as a name: its control characters escaped, as Go quotes them,
// and cut to 200 bytes, as a name may be.
func checkText(s string) string {
	if strings.IndexFunc(s, notPrintable) >= 0 {
		var b strings.Builder
		for _, r := range s {
			if notPrintable(r) {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if len(s) > maxNameBytes {
		cut := maxNameBytes - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// notPrintable is a rune a name may not hold: a control character, or one that reorders the
// text around it (bidirectional controls, which can make a line read other than it is).
func notPrintable(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

// checkNamed reports whether a's name is new among named (the names of its request's checks so
// far), reporting at p when it is not: each check is tallied apart, under a name of its own.
func (d *decoder) checkNamed(named map[string]bool, a *Assertion, p pos) bool {
	if named[a.Name] {
		d.add(p, "checks what another assertion of this request checks, as %q: each is tallied under its name, so give one a name:", a.Name)
		return false
	}
	named[a.Name] = true
	return true
}

// describe is the assertion as a tally of checks names it when the script gives no name: its
// key and value as written, `status 200, 3xx`, `json $.qty equals 3`, `max_duration 500ms`.
// n is the value of its key.
func (a *Assertion) describe(n *yaml.Node) string {
	switch a.Kind {
	case AssertStatus:
		if n.Kind == yaml.SequenceNode {
			vals := make([]string, len(n.Content))
			for i, c := range n.Content {
				vals[i] = c.Value
			}
			return "status " + strings.Join(vals, ", ")
		}
		return "status " + n.Value
	case AssertBodyContains:
		return "body_contains " + a.Text.String()
	case AssertBodyMatches:
		return "body_matches " + a.Regex.String()
	case AssertJSON:
		path := "json " + a.JSONPath.String()
		switch {
		case a.Absent:
			return path + " exists false"
		case a.EqualsText != nil:
			return path + " equals " + strconv.Quote(a.EqualsText.String())
		case a.HasEquals:
			return path + " equals " + jsonText(a.Equals)
		}
		return path + " exists"
	case AssertMaxDuration:
		return "max_duration " + a.MaxDuration.String()
	}
	return a.Kind.String()
}

var statusClassRe = regexp.MustCompile(`^[1-5][xX][xX]$`)

// status reads 200, "2xx", or a list of those.
func (d *decoder) status(n *yaml.Node, p pos) []StatusRange {
	one := func(n *yaml.Node, p pos) (StatusRange, bool) {
		if isString(n) && statusClassRe.MatchString(n.Value) {
			c := int(n.Value[0]-'0') * 100
			return StatusRange{c, c + 99}, true
		}
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
			v, ok := d.integer(n, p, 100, 599)
			return StatusRange{v, v}, ok
		}
		d.add(p, "must be a status code such as 200 or a class such as 2xx")
		return StatusRange{}, false
	}
	if n.Kind != yaml.SequenceNode {
		r, ok := one(n, p)
		if !ok {
			return nil
		}
		return []StatusRange{r}
	}
	if len(n.Content) == 0 {
		d.add(p, "must list at least one status")
		return nil
	}
	out := make([]StatusRange, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		r, rok := one(c, at(c, index(p.path, i)))
		out = append(out, r)
		ok = ok && rok
	}
	if !ok {
		return nil
	}
	return out
}

// think reads a think time: a duration, or one of fixed, uniform and gaussian.
func (d *decoder) think(n *yaml.Node, p pos) *Think {
	if n.Kind == yaml.ScalarNode {
		v, ok := d.durationIn(n, p, 0, maxThink)
		if !ok {
			return nil
		}
		return &Think{Kind: ThinkFixed, Fixed: v}
	}
	o := d.object(n, p, "fixed", "uniform", "gaussian")
	if o == nil {
		return nil
	}
	kind := o.exactlyOne("a think time", "fixed", "uniform", "gaussian")
	if kind == "" {
		return nil
	}
	n, vp := o.get(kind)
	switch kind {
	case "fixed":
		v, ok := d.durationIn(n, vp, 0, maxThink)
		if !ok {
			return nil
		}
		return &Think{Kind: ThinkFixed, Fixed: v}
	case "uniform":
		list := d.seq(n, vp)
		if list == nil {
			return nil
		}
		if len(list) != 2 {
			d.add(vp, "must be [shortest, longest], as in [1s, 3s]")
			return nil
		}
		lo, ok1 := d.durationIn(list[0], at(list[0], index(vp.path, 0)), 0, maxThink)
		hi, ok2 := d.durationIn(list[1], at(list[1], index(vp.path, 1)), 0, maxThink)
		if !ok1 || !ok2 {
			return nil
		}
		if lo > hi {
			d.add(vp, "the shortest pause comes first")
			return nil
		}
		return &Think{Kind: ThinkUniform, Min: lo, Max: hi}
	default:
		g := d.object(n, vp, "mean", "stddev")
		if g == nil {
			return nil
		}
		mn, mp := g.need("mean")
		sn, sp := g.need("stddev")
		if mn == nil || sn == nil {
			return nil
		}
		mean, ok1 := d.durationIn(mn, mp, 0, maxThink)
		sd, ok2 := d.durationIn(sn, sp, 0, maxThink)
		if !ok1 || !ok2 {
			return nil
		}
		return &Think{Kind: ThinkGaussian, Mean: mean, StdDev: sd}
	}
}

// load reads the load section.
func (d *decoder) load(n *yaml.Node, p pos) Workload {
	l := Workload{GracefulStop: defaultGrace}
	o := d.object(n, p, "vus", "ramp_up", "duration", "iterations", "graceful_stop", "rate", "stages", "max_vus", "source_addresses")
	if o == nil {
		return l
	}
	closed := o.has("vus") || o.has("ramp_up") || o.has("iterations")
	open := o.has("rate") || o.has("stages") || o.has("max_vus")
	if sn, _ := o.get("stages"); sn != nil && vuStages(sn) && !o.has("rate") && !o.has("max_vus") {
		// Stages of VU counts, not rates: the closed model, ramping its VUs.
		l.Model = Closed
		if closed {
			d.add(p, "stages of VUs go without vus, ramp_up and iterations: the stages say how many VUs, and when")
		}
		d.stages(o, &l, "vus", func(n *yaml.Node, p pos) (float64, bool) {
			v, ok := d.integer(n, p, 0, maxVUs)
			l.VUs = max(l.VUs, v)
			return float64(v), ok
		})
		if l.VUs == 0 && len(l.Stages) > 0 {
			d.add(at(sn, field(p.path, "stages")), "never runs a VU: give a stage more than 0")
		}
		closed, open = false, false
	}
	switch {
	case l.Model == Closed:
	case closed && open:
		d.add(p, "mixes the closed model (vus, ramp_up, iterations) with the open model (rate, stages, max_vus): choose one")
	case closed:
		l.Model = Closed
		d.closedLoad(o, &l)
	case open:
		l.Model = Open
		d.openLoad(o, &l)
	default:
		d.add(p, "needs vus (closed model) or rate or stages (open model)")
	}
	if n, p := o.get("graceful_stop"); n != nil {
		l.GracefulStop, _ = d.durationIn(n, p, 0, time.Hour)
	}
	if n, p := o.get("source_addresses"); n != nil {
		l.SourceAddrs = d.sourceAddrs(n, p)
	}
	return l
}

// closedLoad reads the closed model's keys.
func (d *decoder) closedLoad(o *obj, l *Workload) {
	if n, p := o.need("vus"); n != nil {
		l.VUs, _ = d.integer(n, p, 1, maxVUs)
	}
	if n, p := o.get("iterations"); n != nil {
		l.Iterations, _ = d.integer(n, p, 1, maxIterations)
	}
	dn, dp := o.get("duration")
	if dn != nil {
		l.Duration, _ = d.durationIn(dn, dp, time.Second, maxRunDuration)
	}
	if n, p := o.get("ramp_up"); n != nil {
		var ok bool
		if l.RampUp, ok = d.durationIn(n, p, 0, maxRunDuration); ok && l.Duration > 0 && l.RampUp > l.Duration {
			d.add(p, "is longer than duration")
		}
	}
	if dn == nil && !o.has("iterations") {
		d.add(o.p, "needs duration, iterations or both (the run ends at whichever comes first)")
	}
}

// openLoad reads the open model's keys.
func (d *decoder) openLoad(o *obj, l *Workload) {
	if n, p := o.need("max_vus"); n != nil {
		l.MaxVUs, _ = d.integer(n, p, 1, maxVUs)
	}
	rn, rp := o.get("rate")
	sn, sp := o.get("stages")
	dn, dp := o.get("duration")
	switch {
	case rn != nil && sn != nil:
		d.add(sp, "goes without rate: give either rate and duration, or stages")
	case rn != nil:
		r, ok := d.rate(rn, rp, false)
		if dn == nil {
			d.add(pos{path: field(o.p.path, "duration"), line: o.p.line, col: o.p.col}, "required with rate")
			return
		}
		dur, dok := d.durationIn(dn, dp, time.Second, maxRunDuration)
		if ok && dok {
			l.Stages = []Stage{{From: r, To: r, Duration: dur}}
			l.Duration = dur
		}
	case sn != nil:
		d.stages(o, l, "rate", func(n *yaml.Node, p pos) (float64, bool) { return d.rate(n, p, true) })
	default:
		d.add(o.p, "the open model needs rate and duration, or stages")
	}
}

// vuStages says whether stages are written in VUs (numbers) rather than rates (200/s).
func vuStages(n *yaml.Node) bool {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return false
	}
	c := n.Content[0].Content
	for i := 0; i+1 < len(c); i += 2 {
		switch c[i].Value {
		case "vus":
			return true
		case "ramp_to":
			return c[i+1].Kind == yaml.ScalarNode && c[i+1].Tag == "!!int"
		}
	}
	return false
}

// stages reads the stages of either model: each holds a level (under hold: rate, or vus) or
// ramps to one (ramp_to) over its duration; level reads a level, a rate or a number of VUs.
func (d *decoder) stages(o *obj, l *Workload, hold string, level func(*yaml.Node, pos) (float64, bool)) {
	sn, sp := o.get("stages")
	if dn, dp := o.get("duration"); dn != nil {
		d.add(dp, "goes without stages: the stages' durations add up to the run's")
	}
	list := d.seq(sn, sp)
	if sn.Kind == yaml.SequenceNode && (len(list) == 0 || len(list) > maxStages) {
		d.add(sp, "must hold from 1 to %d stages", maxStages)
		return
	}
	prev := 0.0
	for i, c := range list {
		cp := at(c, index(sp.path, i))
		so := d.object(c, cp, hold, "ramp_to", "duration")
		if so == nil {
			continue
		}
		st := Stage{From: prev}
		switch kind := so.exactlyOne("a stage", hold, "ramp_to"); kind {
		case hold, "ramp_to":
			n, p := so.get(kind)
			r, ok := level(n, p)
			if !ok {
				continue
			}
			st.To = r
			if kind == hold {
				st.From = r
			}
		default:
			continue
		}
		if n, p := so.need("duration"); n != nil {
			v, ok := d.durationIn(n, p, time.Second, maxRunDuration)
			if !ok {
				continue
			}
			st.Duration = v
		} else {
			continue
		}
		prev = st.To
		l.Stages = append(l.Stages, st)
		l.Duration += st.Duration
	}
	if l.Duration > maxRunDuration {
		d.add(sp, "add up to more than %s", fmtDuration(maxRunDuration))
	}
}

// rate reads an arrival rate such as 200/s; zero is allowed only in stages.
func (d *decoder) rate(n *yaml.Node, p pos, zero bool) (float64, bool) {
	s, ok := d.str(n, p)
	if !ok {
		return 0, false
	}
	r, err := parseRate(s)
	if err != nil {
		d.add(p, "%s", err)
		return 0, false
	}
	if r == 0 && !zero {
		d.add(p, "must be more than 0/s")
		return 0, false
	}
	return r, true
}

// thresholds reads the thresholds section; names are the script's request names.
func (d *decoder) thresholds(n *yaml.Node, p pos, names map[string]bool) []*Threshold {
	var out []*Threshold
	for i, c := range d.seq(n, p) {
		cp := at(c, index(p.path, i))
		if c.Kind == yaml.ScalarNode {
			s, ok := d.str(c, cp)
			if !ok {
				continue
			}
			t, err := ParseThreshold(s)
			if err != nil {
				d.add(cp, "%s", err)
				continue
			}
			out = append(out, t)
			continue
		}
		o := d.object(c, cp, "check", "over", "abort", "request")
		if o == nil {
			continue
		}
		n, kp := o.need("check")
		if n == nil {
			continue
		}
		s, ok := d.str(n, kp)
		if !ok {
			continue
		}
		t, err := ParseThreshold(s)
		if err != nil {
			d.add(kp, "%s", err)
			continue
		}
		if n, p := o.get("over"); n != nil {
			if t.Window != 0 {
				d.add(p, "the check already says over %s", fmtDuration(t.Window))
				ok = false
			} else if t.Window, ok = d.durationIn(n, p, time.Second, maxRunDuration); !ok {
				continue
			}
		}
		if n, p := o.get("abort"); n != nil {
			var aok bool
			t.Abort, aok = d.boolean(n, p)
			ok = ok && aok
		}
		if n, p := o.get("request"); n != nil {
			name, rok := d.str(n, p)
			if rok && !names[name] {
				d.add(p, "no request is named %s", quote(name))
				rok = false
			}
			t.Request = name
			ok = ok && rok
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}
