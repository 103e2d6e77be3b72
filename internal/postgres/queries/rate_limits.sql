-- name: RateBucketGetForUpdate :one
SELECT tokens, updated_at FROM rate_buckets WHERE key = $1 FOR UPDATE;

-- name: RateBucketPut :exec
INSERT INTO rate_buckets (key, tokens, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at;

-- RateBucketDeleteBefore removes buckets untouched since a time: full again long ago.
-- name: RateBucketDeleteBefore :execrows
DELETE FROM rate_buckets WHERE updated_at < $1;
