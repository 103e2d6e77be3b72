package run_test

import (
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
