package sdk_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
)

// TestSourceHoldsEveryFileOfTheSDK: a file left out of the embedded source breaks every
// project `barrage plugin new` writes.
func TestSourceHoldsEveryFileOfTheSDK(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := sdk.Source.ReadFile(filepath.ToSlash(path))
		require.NoError(t, err, "sdk.Source lacks %s: add it to the go:embed lines of source.go", path)
		require.Equal(t, string(want), string(got))
		return nil
	})
	require.NoError(t, err)
}
