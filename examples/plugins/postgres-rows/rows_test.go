package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// setupDB creates the items table with n rows in a fresh database and returns the database's
// URL. Every tenth item has a NULL price.
func setupDB(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2), active bool NOT NULL)`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
		INSERT INTO items
		SELECT g, 'item-' || g, CASE WHEN g % 10 = 0 THEN NULL ELSE g * 1.5 END, g % 2 = 0
		FROM generate_series(1, $1::int) AS g`, n)
	require.NoError(t, err)
	return dsn
}

// start starts the plugin in-process, with env as its process's environment.
func start(t *testing.T, env map[string]string) sdk.SessionElement {
	t.Helper()
	return sdktest.Start(t, newPlugin(func(name string) string { return env[name] })).Element()
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	info, err := sdktest.Start(t, newPlugin(nil)).Describe(context.Background())
	require.NoError(t, err)
	require.Equal(t, "postgres-rows", info.Name)
	require.Equal(t, "1.0.0", info.Version)
	require.Equal(t, sdk.ScopeIteration, info.Scope)
	require.Equal(t, []sdk.Kind{sdk.KindSessionElement}, info.Kinds)
}

func TestEveryRowOnceThenExhausted(t *testing.T) {
	t.Parallel()
	const rows = 1000
	dsn := setupDB(t, rows)
	e := start(t, nil)
	ctx := context.Background()
	// batch divides the row count, so the last full batch is followed by an empty one: the
	// edge where the end is only seen on the next fetch.
	cfg := fmt.Sprintf(`{"dsn": %q, "query": "SELECT id, name, price, active FROM items", "batch": 100}`, dsn)
	vars, err := e.Configure(ctx, []byte(cfg))
	require.NoError(t, err)
	require.Equal(t, []string{"id", "name", "price", "active"}, vars)

	var (
		mu   sync.Mutex
		seen = map[int]sdk.Vars{}
		dups []int
		wg   sync.WaitGroup
	)
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				sets, err := e.Next(ctx, 3+w) // callers ask for different amounts
				mu.Lock()
				for _, s := range sets {
					id, _ := strconv.Atoi(s["id"])
					if _, ok := seen[id]; ok {
						dups = append(dups, id)
					}
					seen[id] = s
				}
				mu.Unlock()
				if errors.Is(err, sdk.ErrExhausted) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	require.Empty(t, dups, "rows handed out twice")
	require.Len(t, seen, rows)
	for id := 1; id <= rows; id++ {
		want := sdk.Vars{
			"id": strconv.Itoa(id), "name": fmt.Sprintf("item-%d", id),
			"price": fmt.Sprintf("%d.%02d", id*3/2, id*3%2*50), "active": "f",
		}
		if id%10 == 0 {
			want["price"] = "" // NULL
		}
		if id%2 == 0 {
			want["active"] = "t"
		}
		require.Equal(t, want, seen[id])
	}

	// Exhausted stays exhausted.
	sets, err := e.Next(ctx, 5)
	require.ErrorIs(t, err, sdk.ErrExhausted)
	require.Empty(t, sets)
}

func TestLastRowsComeWithExhausted(t *testing.T) {
	t.Parallel()
	// dsn_env reads the plugin process's environment.
	e := start(t, map[string]string{"ITEMS_DSN": setupDB(t, 5)})
	ctx := context.Background()
	_, err := e.Configure(ctx, []byte(`{"dsn_env": "ITEMS_DSN", "query": "SELECT id FROM items ORDER BY id"}`))
	require.NoError(t, err)

	sets, err := e.Next(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, []sdk.Vars{{"id": "1"}, {"id": "2"}, {"id": "3"}}, sets)
	sets, err = e.Next(ctx, 3)
	require.ErrorIs(t, err, sdk.ErrExhausted)
	require.Equal(t, []sdk.Vars{{"id": "4"}, {"id": "5"}}, sets)
}

func TestEmptyResultIsExhaustedAtOnce(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := context.Background()
	vars, err := e.Configure(ctx, fmt.Appendf(nil, `{"dsn": %q, "query": "SELECT id AS item_id FROM items WHERE false"}`, setupDB(t, 3)))
	require.NoError(t, err)
	require.Equal(t, []string{"item_id"}, vars)
	sets, err := e.Next(ctx, 10)
	require.ErrorIs(t, err, sdk.ErrExhausted)
	require.Empty(t, sets)
}

func TestBadQueryIsAConfigErrorOnQuery(t *testing.T) {
	t.Parallel()
	dsn := setupDB(t, 3)
	tests := []struct {
		name, query, reason string
	}{
		{"unknown table", "SELECT id FROM missing", `relation "missing" does not exist`},
		{"error in a late row", "SELECT 10 / (3 - id) AS ratio FROM items ORDER BY id", "division by zero"},
		{"unnamed column", "SELECT 1", `column "?column?" is not a variable name`},
		{"same name twice", "SELECT id, id FROM items", `two columns are named "id"`},
		{"two statements", "SELECT id FROM items; DROP TABLE items", "multiple commands"},
		{"a write", "WITH gone AS (DELETE FROM items RETURNING id) SELECT id FROM gone", "SQLSTATE"},
	}
	for _, tt := range tests {
		// Not parallel: the check after the loop must see what the queries did.
		t.Run(tt.name, func(t *testing.T) {
			_, err := start(t, nil).Configure(context.Background(), fmt.Appendf(nil, `{"dsn": %q, "query": %q}`, dsn, tt.query))
			sdktest.RequireConfigError(t, err, "query", tt.reason)
		})
	}

	// The table survived the queries that would have changed it.
	ctx := context.Background()
	e := start(t, nil)
	_, err := e.Configure(ctx, fmt.Appendf(nil, `{"dsn": %q, "query": "SELECT count(*) AS n FROM items"}`, dsn))
	require.NoError(t, err)
	sets, err := e.Next(ctx, 1)
	require.ErrorIs(t, err, sdk.ErrExhausted)
	require.Equal(t, []sdk.Vars{{"n": "3"}}, sets)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SET": "postgres://127.0.0.1:1/none"}
	tests := []struct {
		name, config, field, reason string
	}{
		{"no dsn", `{"query": "SELECT 1 AS n"}`, "dsn", "required"},
		{"both", `{"dsn": "postgres://x", "dsn_env": "SET", "query": "SELECT 1 AS n"}`, "dsn", "not both"},
		{"unset env", `{"dsn_env": "UNSET", "query": "SELECT 1 AS n"}`, "dsn_env", "allow-list"},
		{"no query", `{"dsn_env": "SET"}`, "query", "required"},
		{"batch zero", `{"dsn_env": "SET", "query": "SELECT 1 AS n", "batch": 0}`, "batch", "out of range"},
		{"batch a string", `{"dsn_env": "SET", "query": "SELECT 1 AS n", "batch": "10"}`, "batch", "want int"},
		{"unknown field", `{"dsn_env": "SET", "query": "SELECT 1 AS n", "limit": 5}`, "", `unknown field "limit"`},
		{"unreachable server", `{"dsn_env": "SET", "query": "SELECT 1 AS n"}`, "dsn_env", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := start(t, env).Configure(context.Background(), []byte(tt.config))
			sdktest.RequireConfigError(t, err, tt.field, tt.reason)
		})
	}
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	valid := sdktest.ValidConfig(t, &sdk.Plugin{Name: "postgres-rows", ConfigSchema: configSchema})
	require.NoError(t, valid(`{"dsn_env": "USERS_DSN", "query": "SELECT email, password FROM users", "batch": 200}`))
	require.NoError(t, valid(`{"dsn": "postgres://load@db.test/shop", "query": "SELECT 1 AS n"}`))
	for _, bad := range []string{
		`{"query": "SELECT 1 AS n"}`,
		`{"dsn": "postgres://x", "dsn_env": "X", "query": "SELECT 1 AS n"}`,
		`{"dsn": "postgres://x"}`,
		`{"dsn": "postgres://x", "query": "SELECT 1 AS n", "batch": 0}`,
		`{"dsn": "postgres://x", "query": "SELECT 1 AS n", "limit": 5}`,
	} {
		require.Error(t, valid(bad), bad)
	}
}
