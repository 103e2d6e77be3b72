-- The target's own metrics beside the load (issue 13): the values of the script's monitor
-- series in a second, as the one shard that scrapes them sent them (a JSON array of numbers and
-- nulls, in the script's order); NULL in the other shards' seconds and where the script has
-- no monitors.
ALTER TABLE shard_seconds ADD COLUMN monitors jsonb;
