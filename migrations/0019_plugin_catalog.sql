-- The marketplace's catalogue (issue 28): a plugin's runs (its versions' together), and the
-- protocols and platforms of the version it shows, so that a search filters and sorts by them.
ALTER TABLE plugins
    ADD COLUMN runs      bigint    NOT NULL DEFAULT 0,
    ADD COLUMN protocols integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN platforms text[]    NOT NULL DEFAULT '{}';

UPDATE plugins p SET
    runs = (SELECT coalesce(sum(v.runs), 0) FROM plugin_versions v WHERE v.namespace = p.namespace AND v.name = p.name),
    protocols = coalesce((SELECT v.protocols FROM plugin_versions v
                          WHERE v.namespace = p.namespace AND v.name = p.name AND v.version = p.latest), '{}'),
    platforms = ARRAY(SELECT a.os || '/' || a.arch FROM plugin_artifacts a
                      WHERE a.namespace = p.namespace AND a.name = p.name AND a.version = p.latest ORDER BY 1);

