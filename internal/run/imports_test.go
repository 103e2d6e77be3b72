package run_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// deps lists every package that pkgs import, directly or not, by import path.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	require.NoError(t, err, "go list -deps %v", pkgs)
	return strings.Fields(string(out))
}

const mod = "github.com/barrage-load/barrage/internal/"

// The run's vocabulary sits below the engine, so that the server can speak of runs without the
// load generator; and the server, which never executes a plugin nor generates load, imports
// neither the engine, nor the pipeline and agent built on it, nor the plugin host. (The demo
// agent, which runs in serve's process, is started by cmd/barrage beside the server.)
func TestTheServerSpeaksOfRunsWithoutTheEngine(t *testing.T) {
	require.NotContains(t, deps(t, mod+"run"), mod+"engine", "run imports the engine")
	server := deps(t, mod+"server", mod+"httpapi", mod+"control", mod+"jobs", mod+"market", mod+"report")
	for _, never := range []string{"engine", "pipeline", "agent", "pluginhost", "pluginset"} {
		require.NotContains(t, server, mod+never, "a server package imports %s", never)
	}
	require.Contains(t, server, mod+"run", "the server speaks of runs through package run")
}

// layers are the rows of CONTRIBUTING.md's list of internal packages, from the ground up: each
// row's packages, by the last element of their path.
func layers(t *testing.T) map[string]int {
	t.Helper()
	doc, err := os.ReadFile("../../CONTRIBUTING.md")
	require.NoError(t, err)
	text := string(doc)
	start := strings.Index(text, "`internal/`, from the ground up")
	require.GreaterOrEqual(t, start, 0, "CONTRIBUTING.md lists internal's packages from the ground up")
	text = text[start:]
	text = text[strings.Index(text, "```\n")+4:]
	text = text[:strings.Index(text, "```")]
	rank := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		names, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		for _, n := range strings.Split(names, ",") {
			rank[strings.TrimSpace(n)] = i
		}
	}
	return rank
}

// No package imports one that CONTRIBUTING.md lists above it, and every package is listed: the
// layout it describes is the one the imports draw.
func TestNoImportPointsUp(t *testing.T) {
	rank := layers(t)
	key := func(path string) string {
		rel := strings.TrimPrefix(path, mod)
		if _, ok := rank[rel[strings.LastIndex(rel, "/")+1:]]; ok {
			return rel[strings.LastIndex(rel, "/")+1:]
		}
		first, _, _ := strings.Cut(rel, "/")
		return first
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		me := key(fields[0])
		r, ok := rank[me]
		require.True(t, ok, "CONTRIBUTING.md does not list %s", fields[0])
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			ri, ok := rank[key(imp)]
			require.True(t, ok, "CONTRIBUTING.md does not list %s", imp)
			require.LessOrEqual(t, ri, r, "%s imports %s, which CONTRIBUTING.md lists after it", fields[0], imp)
		}
	}
}
