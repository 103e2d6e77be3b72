#!/usr/bin/env bash
# Measures the API's throughput with wrk against a real `barrage serve` on 127.0.0.1:
# GET /v1/me with a personal API token (authentication hits PostgreSQL) beside GET /healthz (no
# database), with the same connections and duration, and prints both rates and their ratio.
# Usage: scripts/bench-api.sh [seconds] [connections]   (needs wrk: installed with apt-get when run as
# root; otherwise it fails naming it)
set -euo pipefail
secs=${1:-10}
conns=${2:-32}
cd "$(dirname "$0")/.."
scripts/need.sh bench-api wrk python3

work=$(mktemp -d /tmp/barrage-bench-XXXXXX)
chmod 755 "$work"
. scripts/bench-lib.sh # start_serve (the working folder is the repository)
start_serve bench-api
code=$(grep -o 'brg_inv_[a-z2-7]*' "$work/serve.out")
export BARRAGE_CONFIG_DIR="$work/cli" BARRAGE_SERVER="$base"
echo "bench password 123" | "$work/barrage" signup --code "$code" --email bench@example.com --name Bench >/dev/null
token=$("$work/barrage" tokens create --name bench --scopes read 2>/dev/null)

run() { wrk -t2 -c"$conns" -d"${secs}s" --latency "$@"; }
me=$(run -H "Authorization: Bearer $token" "$base/v1/me")
health=$(run "$base/healthz")
rate() { awk '/Requests\/sec/ {print $2}' <<<"$1"; }
p99() { awk '$1 == "99%" {print $2}' <<<"$1"; }
echo "GET /v1/me (personal token): $(rate "$me") requests/s, p99 $(p99 "$me")"
echo "GET /healthz (no database):  $(rate "$health") requests/s, p99 $(p99 "$health")"
awk -v a="$(rate "$me")" -v b="$(rate "$health")" 'BEGIN { printf "ratio me/healthz = %.2f\n", a / b }'
