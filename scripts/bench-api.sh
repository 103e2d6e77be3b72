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
go build -o "$work/barrage" ./cmd/barrage
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

"$work/barrage" serve --addr "127.0.0.1:$port" --data-dir "$work/data" --log-level warn >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
cleanup() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

for _ in $(seq 1 600); do
  curl -sf "$base/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "$base/readyz" >/dev/null || { echo "bench-api: serve did not become ready"; cat "$work/serve.err"; exit 1; }
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
