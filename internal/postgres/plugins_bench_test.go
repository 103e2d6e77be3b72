package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

// BenchmarkPluginSearch measures a marketplace search (a page of 50) with 10,000 plugins and
// 50,000 versions stored, over a mix of searches: every plugin, word prefixes, a kind, a tag.
// It reports the p99 of the searches it timed.
func BenchmarkPluginSearch(b *testing.B) {
	pool := pgtest.Pool(b)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO namespaces (name) SELECT 'ns' || i FROM generate_series(0, 99) i`,
		`INSERT INTO signing_keys (namespace, id, public_key) SELECT 'ns' || i, 'key', decode(repeat('00', 32), 'hex') FROM generate_series(0, 99) i`,
		`INSERT INTO plugins (namespace, name, listed, latest, kinds, description, license, source_url, tags, search_text)
		 SELECT 'ns' || (i % 100), 'plugin-' || i, true, '1.0.4', ARRAY[(ARRAY['url', 'session-element', 'source-modifier'])[i % 3 + 1]],
		        'Plugin number ' || i || ' ' || md5(i::text), 'MIT', '', ARRAY['tag' || (i % 50)],
		        'ns' || (i % 100) || ' plugin-' || i || ' plugin ' || i || ' Plugin number ' || i || ' ' || md5(i::text) || ' tag' || (i % 50)
		 FROM generate_series(0, 9999) i`,
		`INSERT INTO plugin_versions (namespace, name, version, version_core, state, kinds, description, readme, license, source_url,
		     tags, protocols, config_schema, network, sums, signature, signer)
		 SELECT p.namespace, p.name, '1.0.' || v, '1.0.' || v, 'published', p.kinds, p.description, '# readme', 'MIT', '', p.tags,
		        ARRAY[1], '', ARRAY[]::text[], '\x00'::bytea, '\x00'::bytea, 'key'
		 FROM plugins p, generate_series(0, 4) v`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	store := postgres.NewStore(pool)
	viewer := postgres.Viewer{User: uuid.New()}
	searches := []postgres.PluginSearch{
		{Limit: 50},
		{Query: market.TSQuery("plugin 42"), Limit: 50},
		{Query: market.TSQuery("ab"), Limit: 50},
		{Query: market.TSQuery("number"), Kind: "url", Limit: 50},
		{Tag: "tag7", Limit: 50},
		{Query: market.TSQuery("zzz"), Limit: 50},
		{After: postgres.PluginCursor{Namespace: "ns50", Name: "plugin-5000"}, Limit: 50},
		{Sort: postgres.PluginsByDownloads, Limit: 50},
		{Query: market.TSQuery("plugin 42"), Sort: postgres.PluginsByRuns, Limit: 50},
	}
	names := []string{"all", "plugin 42", "ab", "number+url", "tag7", "zzz", "after", "by downloads", "plugin 42 by runs"}
	run := func(name string, pick func(i int) postgres.PluginSearch) {
		b.Run(name, func(b *testing.B) {
			durations := make([]time.Duration, 0, b.N)
			for i := range b.N {
				start := time.Now()
				if _, _, err := store.SearchPlugins(ctx, viewer, pick(i)); err != nil {
					b.Fatal(err)
				}
				durations = append(durations, time.Since(start))
			}
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
	for i, name := range names {
		run(name, func(int) postgres.PluginSearch { return searches[i] })
	}
	run("mix", func(i int) postgres.PluginSearch { return searches[i%len(searches)] })
}
