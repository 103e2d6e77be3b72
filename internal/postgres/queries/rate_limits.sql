-- name: RateLimitHit :one
INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, $2, 1)
ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + 1
RETURNING hits;

-- name: RateLimitDeleteBefore :execrows
DELETE FROM rate_limits WHERE window_start < $1;
