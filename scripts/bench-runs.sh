#!/usr/bin/env bash
# Measures runs through the server (scripts/bench-runs.sh [seconds] [rounds]): the same script
# against the same local nginx, run by `barrage run` locally and by one `barrage agent` through
# `barrage serve`, alternating for some rounds (the generator pinned to core 1 and nginx to core 0
# either way); the median of the rounds' ratios of requests per second:
#   ratio agent/local = 0.98
# (Many agents on one server: scripts/bench-ingest.sh.) Needs nginx (installed with apt-get when
# run as root), curl and python3; fails naming what is missing otherwise.
set -euo pipefail
secs=${1:-10}
rounds=${2:-3}
cd "$(dirname "$0")/.."
scripts/need.sh bench-runs nginx:nginx-light curl python3
work=$(mktemp -d /tmp/barrage-bench-runs-XXXXXX)
chmod 755 "$work" # PostgreSQL's own account must enter the data folder when run as root
pids=()
cleanup() {
  status=$?
  if [ "$status" != 0 ] && [ -f "$work/serve.err" ]; then echo "--- serve's first errors:" >&2; grep -m5 "level=ERROR" "$work/serve.err" >&2 || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pin_target="" pin_gen=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_target="taskset -c 0"; pin_gen="taskset -c 1"; fi

go build -o "$work/barrage" ./cmd/barrage
B="$work/barrage"
export BARRAGE_CONFIG_DIR="$work/cli"

# The server, on its embedded PostgreSQL.
api_port=$(free_port)
"$B" serve --addr "127.0.0.1:$api_port" --data-dir "$work/data" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=($serve_pid)
export BARRAGE_SERVER="http://127.0.0.1:$api_port"
for _ in $(seq 1 600); do curl -sf "$BARRAGE_SERVER/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "$BARRAGE_SERVER/readyz" >/dev/null || { echo "bench-runs: serve did not start" >&2; cat "$work/serve.err" >&2; exit 1; }
code=$(grep -o 'brg_inv_[a-z2-7]*' "$work/serve.out" | head -1)
echo "bench password 123" | "$B" signup --code "$code" --email bench@example.com --name Bench >/dev/null
echo "bench password 123" | "$B" login --email bench@example.com >/dev/null
token=$("$B" tokens create --name bench --scopes read,write 2>/dev/null)

# (a) agent against local, on nginx.
port=$(free_port)
mkdir -p "$work/html" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/html/index.html"
cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  server { listen 127.0.0.1:$port; root $work/html; }
}
NGINX
$pin_target nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/index.html" >/dev/null && break; sleep 0.1; done
cat >"$work/bench.yaml" <<YAML
version: 1
name: bench
session:
  groups:
    - name: g
      requests:
        - { name: index, url: "http://127.0.0.1:$port/index.html" }
load:
  vus: 64
  duration: ${secs}s
YAML
agent_token=$("$B" agents create bench-agent 2>/dev/null)
BARRAGE_AGENT_TOKEN=$agent_token $pin_gen "$B" agent --server "$BARRAGE_SERVER" --allow-target 127.0.0.0/8 2>"$work/agent.err" &
pids+=($!)
for _ in $(seq 1 100); do "$B" agents list | grep -q ' online ' && break; sleep 0.2; done

rps() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["rps"])' "$1"; }
ratios=()
for r in $(seq 1 "$rounds"); do
  $pin_gen "$B" run --quiet --out "$work/local.json" "$work/bench.yaml" >/dev/null
  local_rps=$(rps "$work/local.json")
  out=$("$B" runs start --file "$work/bench.yaml" --watch 2>/dev/null)
  run_id=${out%%$'\n'*}
  curl -sf -H "Authorization: Bearer $token" "$BARRAGE_SERVER/v1/runs/$run_id/summary" >"$work/agent.json"
  agent_rps=$(rps "$work/agent.json")
  ratio=$(python3 -c "print(round($agent_rps / $local_rps, 3))")
  echo "round $r: local $local_rps req/s, agent $agent_rps req/s, agent/local $ratio"
  ratios+=("$ratio")
done
echo "ratio agent/local = $(python3 -c 'import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))' "${ratios[@]}")"

