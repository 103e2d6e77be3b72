package pluginset_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
)

// testPlugin is pluginhost's test plugin, which behaves by the name it is started under.
var testPlugin string

func TestMain(m *testing.M) {
	pluginhost.Launch()
	dir, err := os.MkdirTemp("", "pluginset-test-")
	if err != nil {
		panic(err)
	}
	testPlugin = filepath.Join(dir, "testplugin")
	build := exec.Command("go", "build", "-o", testPlugin, "../pluginhost/testdata/testplugin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("build test plugin: %v\n%s", err, out))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// named copies the test plugin under name, which picks its behaviour.
func named(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testPlugin)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, b, 0o755))
	return path
}

func TestAddFindsAndLists(t *testing.T) {
	t.Parallel()
	h, err := pluginhost.New(pluginhost.Options{})
	require.NoError(t, err)
	defer h.Close()
	dir := pluginset.Dir(t.TempDir())
	m, err := dir.Add(context.Background(), h, named(t, "good"))
	require.NoError(t, err)
	require.Equal(t, "good", m.Name)
	loc, err := dir.Locate(context.Background(), "good", "1.0.0")
	require.NoError(t, err)
	require.Equal(t, m.SHA256, loc.Manifest.SHA256)
	require.Equal(t, m.SHA256, loc.Pin.SHA256)
	require.FileExists(t, loc.Path)
	list, err := dir.List()
	require.NoError(t, err)
	require.Len(t, list, 1)

	_, err = dir.Locate(context.Background(), "good", "2.0.0")
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = dir.Locate(context.Background(), "../../etc", "1.0.0")
	require.ErrorIs(t, err, barrage.ErrInvalid)
}

func TestAddRefusesAPluginWhoseVersionClimbsOutOfTheDirectory(t *testing.T) {
	t.Parallel()
	h, err := pluginhost.New(pluginhost.Options{})
	require.NoError(t, err)
	defer h.Close()
	root := t.TempDir()
	dir := pluginset.Dir(filepath.Join(root, "a", "b", "plugins"))
	_, err = dir.Add(context.Background(), h, named(t, "evil"))
	require.ErrorIs(t, err, barrage.ErrInvalid)
	require.ErrorContains(t, err, "exact semantic version")
	require.NoDirExists(t, "/tmp/barrage-escaped")
	entries, _ := os.ReadDir(root)
	require.Empty(t, entries, "nothing was written")
}

// A plugin that names itself with a namespace is not added: a namespaced name is the
// marketplace's, and one added by hand would be taken for it.
func TestAddRefusesANamespacedName(t *testing.T) {
	t.Parallel()
	h, err := pluginhost.New(pluginhost.Options{})
	require.NoError(t, err)
	defer h.Close()
	dir := pluginset.Dir(t.TempDir())
	_, err = dir.Add(context.Background(), h, named(t, "squatter"))
	require.ErrorIs(t, err, barrage.ErrInvalid)
	require.ErrorContains(t, err, "says it is mycorp/squatter: a name with a namespace is a marketplace plugin's")
	entries, _ := os.ReadDir(string(dir))
	require.Empty(t, entries, "nothing was written")
}
