package script

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/barrage-load/barrage/internal/barrage"
)

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

// orders are the orders of a data file's rows, by the names a script gives them.
var orders = map[string]Order{"sequential": Sequential, "random": Random, "circular": Circular}

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
		var sok bool
		df.Order, sok = choice(d, n, p, orders, "must be sequential, random or circular")
		ok = ok && sok
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

// checkVars checks that every variable a template uses is defined before it is used, and that
// no two sources define the same name. When some data file has not been read, a name no other
// source defines is taken to be one of its columns.
func (d *decoder) checkVars(s *Script) {
	sources := make(map[string]string) // name -> what defines it, for messages
	for _, c := range s.Variables.Constants {
		sources[c.Name] = "a constant"
	}
	for _, e := range s.Variables.Env {
		sources[e.Name] = "an environment variable"
	}
	runLevel := make(map[string]bool, len(sources))
	for name := range sources {
		runLevel[name] = true
	}
	columnsKnown := true
	for _, df := range s.Variables.Data {
		if df.Columns == nil {
			columnsKnown = false
			continue
		}
		for _, c := range df.Columns {
			if prev, dup := sources[c]; dup {
				d.add(df.p, "column %s of %s is already %s", c, df.File, prev)
				continue
			}
			sources[c] = "a column of " + df.File
		}
	}
	reqs := s.Session.Requests()
	firstSet := make(map[string]int) // extracted variable -> index of the first request setting it
	for i, r := range reqs {
		extracts := r.Extract
		if ws := r.WebSocket; ws != nil {
			for _, st := range ws.Steps {
				extracts = append(slices.Clip(extracts), st.Extract...)
			}
		}
		for _, e := range extracts {
			if prev, dup := sources[e.Var]; dup {
				d.add(e.p, "%s is already %s; extract into another name", e.Var, prev)
				continue
			}
			if _, seen := firstSet[e.Var]; !seen {
				firstSet[e.Var] = i
			}
		}
	}

	secrets := map[string]bool{}
	checked := make(map[*Template]bool)
	// check reports the variables of t that are not set when it is rendered: last is the index
	// of the last request whose extractions have run by then, -1 for none.
	check := func(t *Template, last int, skip []string) {
		if t == nil || checked[t] {
			return
		}
		checked[t] = true
		for _, name := range t.Vars() {
			if slices.Contains(skip, name) {
				continue
			}
			if alias, rest, dotted := strings.Cut(name, "."); dotted {
				if alias == SecretAlias {
					if !secretRe.MatchString(rest) {
						d.add(t.p, "${%s}: a secret's name is 1 to 64 letters, digits and _ (${secret.NAME})", name)
					}
					secrets[rest] = true
					continue
				}
				switch pl := findPlugin(s.Plugins, alias); {
				case pl == nil:
					d.add(t.p, "${%s}: no plugin is named %s", name, alias)
				case pl.Kind == SourcePlugin:
					d.add(t.p, "${%s}: plugin %s is a source plugin and produces no variables", name, alias)
				}
				continue
			}
			if _, ok := sources[name]; ok {
				continue
			}
			if i, ok := firstSet[name]; ok {
				if i > last {
					d.add(t.p, "${%s} is not set yet: it is first extracted by request %s, which comes later", name, quote(reqs[i].Name))
				}
				continue
			}
			if !columnsKnown {
				continue
			}
			d.add(t.p, "${%s} is not defined: no constant, environment variable, data column or extractor has that name", name)
		}
	}

	var baseVars []string
	if s.BaseURL != nil {
		baseVars = s.BaseURL.Vars()
		for _, name := range baseVars {
			if !runLevel[name] {
				d.add(s.BaseURL.p, "${%s}: base_url may use only constants and environment variables", name)
			}
		}
	}
	for i, r := range reqs {
		// What the requests before have extracted; a batch's requests go at once, so not what
		// the others of their batch extract.
		prev := i - 1
		for prev >= 0 && r.Batch != 0 && reqs[prev].Batch == r.Batch && reqs[prev].Group == r.Group {
			prev--
		}
		check(r.URL, prev, baseVars)
		for _, h := range r.Headers {
			check(h.Value, prev, nil)
		}
		for _, q := range r.Query {
			check(q.Value, prev, nil)
		}
		if r.Body != nil {
			check(r.Body.Content, prev, nil)
			for _, part := range r.Body.Parts {
				check(part.Value, prev, nil)
			}
		}
		for _, a := range r.Assert {
			check(a.Text, i, nil)
			check(a.EqualsText, i, nil)
		}
		if ws := r.WebSocket; ws != nil {
			// A session's steps may use what its earlier receives extracted.
			for _, st := range ws.Steps {
				check(st.Send, i, nil)
				for _, a := range st.Assert {
					check(a.Text, i, nil)
					check(a.EqualsText, i, nil)
				}
			}
		}
	}
	s.Secrets = slices.Sorted(maps.Keys(secrets))
}

// SecretAlias is the name before the dot of ${secret.NAME}, which reads the secret NAME of the
// run's owner: no plugin may have it.
const SecretAlias = "secret"

var secretRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// SecretVar is the variable that ${secret.NAME} reads, whose value a run is given.
func SecretVar(name string) string { return SecretAlias + "." + name }

// ResolveEnv reads the script's environment variables through lookup, as a run starts. It
// returns their values by variable name, or an ErrorList naming each one that is missing and
// has no default.
func (s *Script) ResolveEnv(lookup func(string) (string, bool)) (map[string]string, error) {
	vals := make(map[string]string, len(s.Variables.Env))
	var list ErrorList
	for _, e := range s.Variables.Env {
		v, ok := lookup(e.From)
		switch {
		case ok:
			vals[e.Name] = v
		case e.HasDefault:
			vals[e.Name] = e.Default
		default:
			list = append(list, &Error{Line: e.p.line, Column: e.p.col, Path: e.p.path,
				Message: "environment variable " + e.From + " is not set and has no default"})
		}
	}
	if list != nil {
		return nil, list
	}
	return vals, nil
}

// EnvNames are the names of the environment variables the script reads (variables.env: each
// variable's from), in its order.
func (s *Script) EnvNames() []string {
	out := make([]string, len(s.Variables.Env))
	for i, v := range s.Variables.Env {
		out[i] = v.From
	}
	return out
}

// CheckRunEnv checks a run's environment against the script sc that it is for: each name one the
// script reads a variable from, each value within bounds, and a value for every variable the
// script reads without a default.
func CheckRunEnv(sc *Script, env map[string]string) error {
	if len(env) > barrage.MaxRunEnv {
		return barrage.Invalid("env", fmt.Sprintf("%d variables; at most %d", len(env), barrage.MaxRunEnv))
	}
	reads := sc.EnvNames()
	for _, name := range slices.Sorted(maps.Keys(env)) {
		switch {
		case !slices.Contains(reads, name) && len(reads) == 0:
			return barrage.Invalid("env."+name, "the script reads no environment variable (variables.env)")
		case !slices.Contains(reads, name):
			return barrage.Invalid("env."+name, "the script reads no environment variable of this name; it reads "+strings.Join(reads, ", "))
		case len(env[name]) > barrage.MaxRunEnvValue:
			return barrage.Invalid("env."+name, fmt.Sprintf("%d bytes; at most %d", len(env[name]), barrage.MaxRunEnvValue))
		case strings.ContainsRune(env[name], 0):
			return barrage.Invalid("env."+name, "must not hold a NUL byte")
		}
	}
	for _, v := range sc.Variables.Env {
		if _, given := env[v.From]; !given && !v.HasDefault {
			return barrage.Invalid("env."+v.From, fmt.Sprintf("the script reads %s from it, which has no default: give it (barrage runs start -e %s=VALUE)", v.Name, v.From))
		}
	}
	return nil
}
