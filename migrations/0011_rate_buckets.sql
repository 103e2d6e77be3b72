-- Throttles as token buckets (issue 14): a bucket of a key holds up to its rate's allowance and
-- refills continuously, so no window boundary lets a burst of twice the allowance through. The
-- fixed windows they replace go.
CREATE TABLE rate_buckets (
    key        text PRIMARY KEY,
    tokens     double precision NOT NULL,
    updated_at timestamptz NOT NULL
);

DROP TABLE rate_limits;
