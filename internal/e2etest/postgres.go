package e2etest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/pgembed"
)

// StartPostgres starts an embedded PostgreSQL of the test's own, for serve replicas to share
// (DATABASE_URL=pg.DSN()), stopped at the test's end. Its port is picked as it starts; a port
// taken by another process between the pick and PostgreSQL's bind (a loaded machine running
// other suites) is picked again, rather than failing the test.
func StartPostgres(t testing.TB) *pgembed.Instance {
	t.Helper()
	cfg := pgembed.Config{DataDir: ReachableDir(t), Database: "barrage", Fast: true}
	var pg *pgembed.Instance
	var err error
	for range 3 {
		if pg, err = pgembed.Start(context.Background(), cfg); !errors.Is(err, pgembed.ErrStartup) {
			break
		}
		t.Logf("the embedded PostgreSQL did not start, trying again: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	return pg
}
