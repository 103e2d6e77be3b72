package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

// The migration to projects (0022) runs on a database holding what users had before it: users,
// tests with revisions and files, scripts, runs with shards, private and shared agents, targets,
// secrets, tokens and the marketplace's namespaces. Afterwards every row is there, and each
// user reaches all they had, in their personal project, through the store's scoped reads.
func TestTheProjectsMigrationMovesEverythingIntoPersonalProjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.EmptyPool(t)
	_, err := postgres.MigrateTo(ctx, pool, 21)
	require.NoError(t, err)

	ada, bob := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	ids := map[string]uuid.UUID{}
	for _, name := range []string{"test", "script", "run", "shard", "agent", "shared", "target", "token"} {
		for _, u := range []string{"ada", "bob"} {
			ids[u+"."+name] = uuid.Must(uuid.NewV7())
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	for u, id := range map[string]uuid.UUID{"ada": ada, "bob": bob} {
		exec(`INSERT INTO users (id, email, name, password_hash, role) VALUES ($1, $2, $2, 'h', 'user')`, id, u+"@example.com")
		exec(`INSERT INTO tests (id, owner_id, name, latest_revision) VALUES ($1, $2, 'checkout', 2)`, ids[u+".test"], id)
		for rev := 1; rev <= 2; rev++ {
			exec(`INSERT INTO test_revisions (test_id, revision, format, source, sha256) VALUES ($1, $2, 'yaml', 'name: checkout', '\x00')`, ids[u+".test"], rev)
		}
		exec(`INSERT INTO test_files (test_id, name, content, sha256) VALUES ($1, 'users.csv', 'name', '\x00')`, ids[u+".test"])
		exec(`INSERT INTO scripts (id, owner_id, name, source, sha256, manifest) VALUES ($1, $2, 'checkout', 'name: checkout', '\x00', '{}')`,
			ids[u+".script"], id)
		exec(`INSERT INTO agents (id, name, owner_id, token_hash) VALUES ($1, $2, $3, $4)`, ids[u+".agent"], u+"'s agent", id, []byte(u+"-agent"))
		exec(`INSERT INTO agents (id, name, token_hash) VALUES ($1, $2, $3)`, ids[u+".shared"], u+"'s shared", []byte(u+"-shared"))
		exec(`INSERT INTO runs (id, owner_id, script_id, manifest, state, load) VALUES ($1, $2, $3, '{}', 'finished', '{}')`, ids[u+".run"], id, ids[u+".script"])
		exec(`INSERT INTO shards (id, run_id, agent_id, seg_from, seg_to, seg_of, state) VALUES ($1, $2, $3, 0, 1, 1, 'finished')`,
			ids[u+".shard"], ids[u+".run"], ids[u+".agent"])
		exec(`INSERT INTO targets (id, owner_id, scheme, host, port, token) VALUES ($1, $2, 'http', 'shop.test', 80, $3)`, ids[u+".target"], id, u+"-token")
		exec(`INSERT INTO secrets (owner_id, name, sealed) VALUES ($1, 'API_KEY', $2)`, id, []byte(u+"-sealed"))
		exec(`INSERT INTO api_tokens (id, user_id, name, token_hash, scopes, expires_at) VALUES ($1, $2, 'ci', $3, '{read}', now() + interval '1 day')`,
			ids[u+".token"], id, []byte(u+"-token"))
	}
	exec(`INSERT INTO namespaces (name) VALUES ('acme')`)
	exec(`INSERT INTO namespace_owners (namespace, user_id) VALUES ('acme', $1)`, ada)
	counts := func() map[string]int {
		out := map[string]int{}
		for _, table := range []string{"users", "tests", "test_revisions", "test_files", "scripts", "runs", "shards", "agents", "targets",
			"secrets", "api_tokens", "namespaces", "namespace_owners"} {
			var n int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
			out[table] = n
		}
		return out
	}
	before := counts()

	res, err := postgres.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Contains(t, res.Applied, "0022_projects.sql")
	require.Equal(t, before, counts(), "nothing lost")

	store := postgres.NewStore(pool)
	for u, id := range map[string]uuid.UUID{"ada": ada, "bob": bob} {
		other := map[string]string{"ada": "bob", "bob": "ada"}[u]
		m, err := store.Memberships(ctx, id)
		require.NoError(t, err)
		require.Len(t, m, 1, "%s belongs to their personal project alone", u)
		var home uuid.UUID
		for pid, mm := range m {
			require.Equal(t, barrage.Membership{Role: barrage.ProjectOwner, Personal: true}, mm)
			home = pid
		}
		in := []uuid.UUID{home}

		test, err := store.Test(ctx, in, ids[u+".test"])
		require.NoError(t, err)
		require.Equal(t, home, test.ProjectID)
		require.Equal(t, id, test.OwnerID, "the maker stays named")
		require.Len(t, test.Files, 1)
		revs, err := store.TestRevisions(ctx, in, ids[u+".test"])
		require.NoError(t, err)
		require.Len(t, revs, 2)
		_, err = store.Script(ctx, in, ids[u+".script"])
		require.NoError(t, err)
		run, err := store.Run(ctx, in, ids[u+".run"])
		require.NoError(t, err)
		require.Equal(t, id, run.OwnerID, "a run still counts against who started it")
		require.Len(t, run.Shards, 1)
		targets, err := store.Targets(ctx, in)
		require.NoError(t, err)
		require.Len(t, targets, 1)
		require.Equal(t, ids[u+".target"], targets[0].ID)
		sealed, err := store.SealedSecrets(ctx, home, []string{"API_KEY"})
		require.NoError(t, err)
		require.Equal(t, postgres.Sealed{Value: []byte(u + "-sealed"), Owner: id}, sealed["API_KEY"], "a secret opens bound to who set it, as before")
		agents, err := store.UsableAgents(ctx, in)
		require.NoError(t, err)
		var names []string
		for _, a := range agents {
			names = append(names, a.Name)
		}
		require.ElementsMatch(t, []string{u + "'s agent", "ada's shared", "bob's shared"}, names)
		tokens, err := store.ListAPITokens(ctx, id, nil, 10)
		require.NoError(t, err)
		require.Len(t, tokens, 1)
		require.Nil(t, tokens[0].ProjectID, "a token from before reaches every project of its user")

		// Nothing of the other's is reachable.
		_, err = store.Test(ctx, in, ids[other+".test"])
		require.ErrorIs(t, err, barrage.ErrNotFound)
		_, err = store.Run(ctx, in, ids[other+".run"])
		require.ErrorIs(t, err, barrage.ErrNotFound)
	}
	var owners int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM namespace_owners WHERE namespace = 'acme' AND user_id = $1", ada).Scan(&owners))
	require.Equal(t, 1, owners, "the marketplace's data is as it was")

	// An account made after the migration has its personal project from its first moment.
	carol := newUser(t, pool, store, "carol@example.com")
	m, err := store.Memberships(ctx, carol.ID)
	require.NoError(t, err)
	require.Len(t, m, 1)
}
