package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/sdk"
)

//go:embed scaffold/*.tmpl
var scaffold embed.FS

var pluginNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// usages show how a script uses a plugin of each kind.
var usages = map[string]string{
	"url": `    plugins:
      - { use: {{.Name}}@0.1.0, as: p, kind: url, config: { value: hello } }
    session:
      groups:
        - name: g
          requests:
            - { name: home, url: "http://127.0.0.1:8081/", plugins: [p] }`,
	"session-element": `    plugins:
      - { use: {{.Name}}@0.1.0, as: p, kind: session-element }
    session:
      groups:
        - name: g
          requests:
            - { name: item, url: "http://127.0.0.1:8081/items/${p.n}" }`,
	"source-modifier": `    plugins:
      - { use: {{.Name}}@0.1.0, as: p, kind: source-modifier, config: { value: hello } }`,
}

func runPluginNew(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin new", "NAME --kind url|session-element|source-modifier [--dir DIR] [--module PATH]")
	kind := fs.String("kind", "", "url, session-element or source-modifier")
	dir := fs.String("dir", "", "where to create the project (default ./NAME)")
	module := fs.String("module", "", "the Go module path (default example.com/NAME)")
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	if !pluginNameRe.MatchString(name) {
		return fmt.Errorf("plugin name %q: use lowercase letters, digits and -", name)
	}
	if _, ok := usages[*kind]; !ok {
		return fmt.Errorf("--kind %q: want url, session-element or source-modifier", *kind)
	}
	if *dir == "" {
		*dir = name
	}
	if *module == "" {
		*module = "example.com/" + name
	}
	if _, err := os.Stat(*dir); err == nil {
		return fmt.Errorf("%s already exists", *dir)
	}
	// The header name: my-plugin becomes My-Plugin (names are lowercase ASCII).
	parts := strings.Split(name, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	title := strings.Join(parts, "-")
	data := map[string]string{"Name": name, "Kind": *kind, "Module": *module, "Title": title}
	usage, err := render("usage", usages[*kind], data)
	if err != nil {
		return err
	}
	data["Usage"] = usage
	files := map[string]string{
		"go.mod": "go.mod.tmpl", "main.go": "main.go.tmpl", "README.md": "README.md.tmpl",
		"plugin.go": *kind + ".go.tmpl", "plugin_test.go": *kind + "_test.go.tmpl",
	}
	for out, tmpl := range files {
		text, err := scaffold.ReadFile("scaffold/" + tmpl)
		if err != nil {
			return err
		}
		body, err := render(tmpl, string(text), data)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(*dir, out), []byte(body)); err != nil {
			return err
		}
	}
	if err := writeSDK(filepath.Join(*dir, "third_party", "barrage-sdk")); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "created %s (%s plugin) in %s\nnext: cd %s && go mod tidy && go test ./... && go build -o %s .\n", name, *kind, *dir, *dir, name)
	return nil
}

func render(name, text string, data any) (string, error) {
	t, err := template.New(name).Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// writeSDK writes the SDK's embedded source into dir.
func writeSDK(dir string) error {
	return fs.WalkDir(sdk.Source, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sdk.Source.ReadFile(path)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dir, filepath.FromSlash(path)), b)
	})
}

func runPluginCheck(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "plugin check", "[flags] BINARY")
	config := fs.String("config", "{}", "the config object to configure the plugin with, as JSON")
	pf := addPluginFlags(fs, e)
	path, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	if !json.Valid([]byte(*config)) {
		return fmt.Errorf("--config is not JSON")
	}
	h, err := pf.newHost()
	if err != nil {
		return err
	}
	defer h.Close()
	if _, err := checkPlugin(ctx, e.stdout, h, path, []byte(*config)); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "the plugin passed every check")
	return nil
}

// checkPlugin runs every check of the plugin at path, printing each to w, and returns what the
// plugin says it is when it passed them all.
func checkPlugin(ctx context.Context, w io.Writer, h *pluginhost.Host, path string, config []byte) (sdk.Info, error) {
	info, findings := pluginset.Check(ctx, h, path, config)
	failed := 0
	for _, f := range findings {
		if f.Err != nil {
			failed++
			fmt.Fprintf(w, "FAIL  %s: %v\n", f.Check, f.Err)
			continue
		}
		fmt.Fprintf(w, "ok    %s\n", f.Check)
	}
	if failed > 0 {
		return info, fmt.Errorf("%d check(s) failed", failed)
	}
	return info, nil
}
