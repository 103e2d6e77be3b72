package pgtest_test

import (
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/pgtest"
)

func TestPoolGivesEachTestItsOwnDatabase(t *testing.T) {
	t.Parallel()
	first, second := pgtest.Pool(t), pgtest.Pool(t)

	insertUser(t, first, "only-in-first@example.com")

	require.Equal(t, 1, countUsers(t, first))
	require.Equal(t, 0, countUsers(t, second), "a row written in one database is not seen in another")
	require.NotEqual(t, currentDatabase(t, first), currentDatabase(t, second))
}

func TestPoolUnderParallelTests(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	for _, name := range []string{"a", "b", "c", "d"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Pool(t)

			insertUser(t, pool, name+"@example.com")

			require.Equal(t, 1, countUsers(t, pool), "the schema is applied and the database holds only this test's rows")
			db := currentDatabase(t, pool)
			mu.Lock()
			defer mu.Unlock()
			require.False(t, seen[db], "database %s handed out twice", db)
			seen[db] = true
		})
	}
}

func TestURLDatabaseIsDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("user", func(t *testing.T) {
		name = currentDatabase(t, pgtest.Pool(t))
	})
	probe := pgtest.Pool(t)

	var exists bool
	require.NoError(t, probe.QueryRow(t.Context(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists))

	require.False(t, exists, "database %s outlived its test", name)
}

func insertUser(t *testing.T, pool *pgxpool.Pool, email string) {
	t.Helper()
	_, err := pool.Exec(t.Context(),
		"INSERT INTO users (id, email, name, password_hash, role) VALUES (gen_random_uuid(), $1, 'Test', 'x', 'user')", email)
	require.NoError(t, err)
}

func countUsers(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM users").Scan(&n))
	return n
}

func currentDatabase(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var db string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&db))
	return db
}

// BenchmarkURL measures what a test pays for its database: a clone of the template. The drops
// happen at clean-up, after the measurement.
func BenchmarkURL(b *testing.B) {
	pgtest.URL(b) // the server and the template, once
	for b.Loop() {
		pgtest.URL(b)
	}
}
