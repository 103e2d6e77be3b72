// Package pluginset prepares the plugins of one run: it finds each plugin a script uses in a
// Source (the local plugin directory, or the marketplace plugins the script pins, fetched into
// a verified cache), starts it through the plugin host, checks that it is of the kind the
// script says, validates the script's config for it against the plugin's own JSON Schema, and
// configures it. Source plugins rewrite the script first (Rewrite, or Generate as an agent does
// it for the server); the rewritten script is loaded and checked like any other, and its
// plugins are started (Start).
package pluginset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// Options say where plugins come from and how they run.
type Options struct {
	// Source is where the plugins are: a Dir, a Market, or Sources of both.
	Source Source
	// Host configures the plugin processes.
	Host pluginhost.Options
	// VUs is the most virtual users the run will have, to size url plugins' processes.
	VUs int
	// Pins, when not nil, are the digests a generated script pinned its plugins to, by alias:
	// a plugin of the directory whose digest differs, or that is not pinned, is refused.
	Pins map[string]string
	// Grants are hosts granted to plugins beside the script's own grants (network), by alias:
	// what the person running gives. Each must be within what the plugin declares it needs,
	// as the script's must.
	Grants map[string][]script.Grant
}

// Set is the started plugins of a run.
type Set struct {
	host *pluginhost.Host
	// Plugins are the element and url plugins, for engine.Options.Plugins.
	Plugins map[string]engine.Plugin
}

// Sandbox says how the set's plugins are confined; false when the set started none.
func (s *Set) Sandbox() (pluginhost.Sandbox, bool) {
	if s == nil || s.host == nil {
		return pluginhost.Sandbox{}, false
	}
	return s.host.Sandbox(), true
}

// HasURLHooks says whether some plugin of the set runs around requests.
func (s *Set) HasURLHooks() bool {
	for _, p := range s.Plugins {
		if len(p.URL) > 0 {
			return true
		}
	}
	return false
}

// Close ends every plugin process of the set.
func (s *Set) Close() error {
	if s == nil || s.host == nil {
		return nil
	}
	return s.host.Close()
}

// vusPerProcess is how many VUs share one process of a url plugin. A process answers a
// batch of calls at a time, so a few processes serve many VUs; more than one per core only
// adds switching.
const vusPerProcess = 250

// Origin is where a script was loaded from: its text, for source plugins to rewrite, and the
// folder of its data files, for the rewritten script to read.
type Origin struct {
	Source []byte
	FS     fs.FS
	Name   string // the script's slash-separated path in FS
	// Filename names the script in error messages.
	Filename string
}

// FileOrigin is the script file at path.
func FileOrigin(path string) (Origin, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return Origin{}, err
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return Origin{Source: text, FS: os.DirFS(dir), Name: name, Filename: path}, nil
}

// BundleOrigin is a script stored with its data files by name (see script.LoadBundle).
func BundleOrigin(source []byte, files map[string][]byte) Origin {
	return Origin{Source: source, FS: script.BundleFS(files), Name: script.BundleName, Filename: script.BundleName}
}

// Open rewrites the script from origin (already loaded as s) with its source plugins, if it
// has any, and starts the plugins of the result, which it returns.
func Open(ctx context.Context, origin Origin, s *script.Script, opts Options) (*Set, *script.Script, error) {
	s, err := Rewrite(ctx, origin, s, opts)
	if err != nil {
		return nil, nil, err
	}
	set, err := Start(ctx, s, opts)
	if err != nil {
		return nil, nil, err
	}
	return set, s, nil
}

// Rewrite runs the source plugins of the script from origin (loaded as s) on its text, and
// loads what they made with the script's data files. A script without source plugins is s.
func Rewrite(ctx context.Context, origin Origin, s *script.Script, opts Options) (*script.Script, error) {
	if err := checkGrants(ctx, s, opts, origin.Filename); err != nil {
		return nil, err
	}
	if !hasSources(s) {
		return s, nil
	}
	if opts.Pins != nil {
		return nil, errors.New("a pinned script has no source plugins: they ran when it was generated")
	}
	h, err := pluginhost.New(opts.Host)
	if err != nil {
		return nil, err
	}
	set := &Set{host: h}
	defer set.Close()
	return set.applySources(ctx, origin, s, opts)
}

// Start starts the session-element and url plugins of s; its source plugins, if any, have
// rewritten it already (Rewrite).
func Start(ctx context.Context, s *script.Script, opts Options) (*Set, error) {
	set := &Set{Plugins: make(map[string]engine.Plugin)}
	if err := checkGrants(ctx, s, opts, "script"); err != nil {
		return nil, err
	}
	if len(s.Plugins) == 0 {
		return set, nil
	}
	if opts.Pins != nil && hasSources(s) {
		return nil, errors.New("a pinned script has no source plugins: they ran when it was generated")
	}
	h, err := pluginhost.New(opts.Host)
	if err != nil {
		return nil, err
	}
	set.host = h
	ok := false
	defer func() {
		if !ok {
			_ = set.Close()
		}
	}()
	for _, sp := range s.Plugins {
		switch sp.Kind {
		case script.ElementPlugin:
			p, err := set.start(ctx, sp, opts, sdk.KindSessionElement)
			if err != nil {
				return nil, err
			}
			if _, err := p.Element().Configure(ctx, configJSON(sp)); err != nil {
				return nil, configError(sp, err)
			}
			scope := sp.Scope
			if scope == 0 {
				scope = scopeFromSDK(p.Info().Scope)
			}
			set.Plugins[sp.As] = engine.Plugin{Element: p.Element(), Scope: scope}
		case script.URLPlugin:
			n := min(max(1, (opts.VUs+vusPerProcess-1)/vusPerProcess), runtime.GOMAXPROCS(0))
			first, err := set.start(ctx, sp, opts, sdk.KindURL)
			if err != nil {
				return nil, err
			}
			var hooks []sdk.URLHook
			for i := range n {
				p := first
				if i > 0 {
					// The same binary: its kind and config were checked with the first.
					if p, err = set.host.Start(ctx, first.Spec()); err != nil {
						return nil, err
					}
				}
				if err := p.URL().Configure(ctx, configJSON(sp)); err != nil {
					return nil, configError(sp, err)
				}
				hooks = append(hooks, p.URL())
			}
			set.Plugins[sp.As] = engine.Plugin{URL: hooks}
		}
	}
	ok = true
	return set, nil
}

// applySources runs the script's source plugins on its text and loads the result.
func (set *Set) applySources(ctx context.Context, origin Origin, s *script.Script, opts Options) (*script.Script, error) {
	if !hasSources(s) {
		return s, nil
	}
	doc, err := script.ToJSON(origin.Source)
	if err != nil {
		return nil, err
	}
	if doc, err = set.rewrite(ctx, doc, s, opts); err != nil {
		return nil, err
	}
	file := origin.Filename + " (after source plugins)"
	out, err := script.LoadData(origin.FS, origin.Name, doc, script.ParseOptions{Filename: file})
	if err != nil {
		return nil, err
	}
	if err := checkSourcesGrantNothing(s, out, opts, file); err != nil {
		return nil, err
	}
	// The same grants, at their place in the rewritten script.
	return out, checkGrants(ctx, out, opts, file)
}

func hasSources(s *script.Script) bool {
	return slices.ContainsFunc(s.Plugins, func(sp *script.Plugin) bool { return sp.Kind == script.SourcePlugin })
}

// rewrite runs the source plugins of s in order on doc (s as JSON), each on the previous one's
// output, and returns the last output.
func (set *Set) rewrite(ctx context.Context, doc []byte, s *script.Script, opts Options) ([]byte, error) {
	for _, sp := range s.Plugins {
		if sp.Kind != script.SourcePlugin {
			continue
		}
		p, err := set.start(ctx, sp, opts, sdk.KindSourceModifier)
		if err != nil {
			return nil, err
		}
		out, err := p.Modify(ctx, doc, configJSON(sp))
		p.Close()
		if err != nil {
			return nil, configError(sp, err)
		}
		if !json.Valid(out) {
			return nil, fmt.Errorf("source plugin %s returned a script that is not JSON", sp.Ref)
		}
		doc = out
	}
	return doc, nil
}

// Generate is a script's generation, as an agent does it for the server: the source plugins of
// s (parsed from source, YAML or JSON) rewrite it, and they are removed from the result, which
// is JSON; every other plugin of the result is pinned by the digest of the binary the directory
// holds for it, or by the signed SHA256SUMS of the marketplace version a Market source pins. No
// data file is read: the server checks the result with them.
func Generate(ctx context.Context, source []byte, s *script.Script, opts Options) ([]byte, []barrage.PluginPin, error) {
	doc, err := script.ToJSON(source)
	if err != nil {
		return nil, nil, err
	}
	if err := checkGrants(ctx, s, opts, "script"); err != nil {
		return nil, nil, err
	}
	if hasSources(s) {
		h, err := pluginhost.New(opts.Host)
		if err != nil {
			return nil, nil, err
		}
		set := &Set{host: h}
		doc, err = set.rewrite(ctx, doc, s, opts)
		_ = set.Close()
		if err != nil {
			return nil, nil, err
		}
		if doc, err = withoutSources(doc); err != nil {
			return nil, nil, err
		}
	}
	out, err := script.Parse(doc, script.ParseOptions{Filename: "script (after source plugins)"})
	if err != nil {
		return nil, nil, err
	}
	if err := checkSourcesGrantNothing(s, out, opts, "script (after source plugins)"); err != nil {
		return nil, nil, err
	}
	pins := []barrage.PluginPin{}
	exact := map[string]string{} // a use that names a range, and the version it was pinned to
	for _, sp := range out.Plugins {
		if sp.Kind == script.SourcePlugin {
			return nil, nil, fmt.Errorf("source plugin %s added a source plugin (%s) to the script", sp.Ref, sp.As)
		}
		loc, err := opts.Source.Locate(ctx, sp.Name, sp.Version)
		if err != nil {
			return nil, nil, err
		}
		pin := loc.Pin
		pin.Alias, pin.Kind = sp.As, sp.Kind.String()
		pins = append(pins, pin)
		if pin.Version != sp.Version {
			exact[sp.Ref] = pin.Ref()
		}
	}
	if len(exact) > 0 {
		// The script runs what was pinned: each range becomes the version it matched.
		if doc, err = editPlugins(doc, func(p map[string]any) bool {
			if use, _ := p["use"].(string); exact[use] != "" {
				if _, named := p["as"]; !named {
					// The alias came from the name; it stays what it was.
					_, name, _ := strings.Cut(use, "/")
					p["as"] = strings.SplitN(name, "@", 2)[0]
				}
				p["use"] = exact[use]
			}
			return true
		}); err != nil {
			return nil, nil, err
		}
	}
	return doc, pins, nil
}

// withoutSources removes the source plugins from a script as JSON: they have done their work.
func withoutSources(doc []byte) ([]byte, error) {
	return editPlugins(doc, func(p map[string]any) bool {
		k, _ := p["kind"].(string)
		return script.KindOf(k) != script.SourcePlugin
	})
}

// editPlugins edits the plugins of a script as JSON: keep may change each entry, and says
// whether to keep it.
func editPlugins(doc []byte, keep func(p map[string]any) bool) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var top map[string]any
	if err := d.Decode(&top); err != nil {
		return nil, fmt.Errorf("the script after source plugins: %w", err)
	}
	list, _ := top["plugins"].([]any)
	kept := []any{}
	for _, p := range list {
		if m, ok := p.(map[string]any); ok && !keep(m) {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		delete(top, "plugins")
	} else {
		top["plugins"] = kept
	}
	return json.Marshal(top)
}

// start finds and starts one process of sp, with the hosts the run grants it, checks its kind
// and what it declares it needs, and validates its config.
func (set *Set) start(ctx context.Context, sp *script.Plugin, opts Options, kind sdk.Kind) (*pluginhost.Process, error) {
	loc, err := opts.Source.Locate(ctx, sp.Name, sp.Version)
	if err != nil {
		return nil, err
	}
	m := loc.Manifest
	spec := pluginhost.Spec{Name: m.Name, Version: m.Version, SHA256: m.SHA256, Path: loc.Path, Network: hosts(grantsOf(sp, opts))}
	if opts.Pins != nil && opts.Pins[sp.As] != loc.Pin.SHA256 {
		if opts.Pins[sp.As] == "" {
			return nil, fmt.Errorf("plugin %s (%s) is not pinned by the script's manifest", sp.Ref, sp.As)
		}
		return nil, fmt.Errorf("plugin %s: this agent's binary has sha256 %s, the script pins %s", sp.Ref, loc.Pin.SHA256, opts.Pins[sp.As])
	}
	p, err := set.host.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(p.Info().Kinds, kind) {
		return nil, barrage.Invalid("plugins."+sp.As+".kind",
			fmt.Sprintf("%s is not a %s plugin (it implements %v)", sp.Ref, kind, p.Info().Kinds))
	}
	if !slices.Equal(p.Info().Network, m.Network) {
		// The grants were checked against the manifest: it must say what the binary says.
		return nil, fmt.Errorf("plugin %s declares it needs to reach %v, its manifest %v: add it to the plugin directory again", sp.Ref, p.Info().Network, m.Network)
	}
	if err := validateConfig(sp, p.Info().ConfigSchema); err != nil {
		return nil, err
	}
	return p, nil
}

func configJSON(sp *script.Plugin) []byte {
	if sp.Config == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(sp.Config)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// validateConfig checks the script's config for sp against the plugin's JSON Schema.
func validateConfig(sp *script.Plugin, schema string) error {
	cs, err := sdk.CompileConfigSchema(schema)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", sp.Ref, err)
	}
	var fields []barrage.FieldError
	for _, ce := range cs.Validate(configJSON(sp)) {
		fields = append(fields, barrage.FieldError{Field: configField(sp, ce.Field), Reason: ce.Reason})
	}
	if len(fields) > 0 {
		return &barrage.InvalidError{Fields: fields}
	}
	return nil
}

// configField names a field of sp's config in the script.
func configField(sp *script.Plugin, field string) string {
	if field == "" {
		return "plugins." + sp.As + ".config"
	}
	return "plugins." + sp.As + ".config." + field
}

// configError turns a plugin's refusal of its config into an invalid-input error naming the
// field in the script.
func configError(sp *script.Plugin, err error) error {
	var ce *sdk.ConfigError
	if errors.As(err, &ce) {
		return barrage.Invalid(configField(sp, ce.Field), ce.Reason)
	}
	return err
}

func scopeFromSDK(s sdk.Scope) script.Scope {
	switch s {
	case sdk.ScopeRun:
		return script.ScopeRun
	case sdk.ScopeIteration:
		return script.ScopeIteration
	}
	return script.ScopeVU
}
