#!/usr/bin/env bash
# Measures the portal's live run page with 100 request labels at one update a second, in a
# headless Chromium against a real `barrage serve` on 127.0.0.1 (scripts/bench-portal.sh
# [seconds], 600 by default): a run of a 100-request test on an agent of the user's own against
# `barrage demo-shop`, its page watched for that long by scripts/livepage, which prints how long
# the page took to draw each second (from its arrival to the page drawn), the longest task the
# browser saw, and the page's JavaScript heap and DOM nodes at the start and the end:
#   live page labels = 100
#   live page update p99 ms = 9.8
#   live page longest task ms = 0
#   live page heap growth KiB per minute = 4.1
# Needs chromium (installed with apt-get when run as root), curl and python3; fails naming what
# is missing otherwise. BENCH_SMOKE=1 watches for 20 seconds (scripts/bench-smoke.sh).
set -euo pipefail
secs=${1:-600}
[ -z "${BENCH_SMOKE:-}" ] || secs=20
cd "$(dirname "$0")/.."
scripts/need.sh bench-portal chromium curl python3
work=$(mktemp -d /tmp/barrage-bench-portal-XXXXXX)
chmod 755 "$work" # PostgreSQL's own account must enter the data folder when run as root
. scripts/bench-lib.sh
start_serve bench-portal
shop_pid="" agent_pid=""
trap 'kill "$shop_pid" "$agent_pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/livepage" ./scripts/livepage
B="$work/barrage"
export BARRAGE_SERVER="$base" BARRAGE_CONFIG_DIR="$work/cli"

shop_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$B" demo-shop --addr "127.0.0.1:$shop_port" >"$work/shop.out" 2>&1 &
shop_pid=$!
code=$(grep -o 'brg_inv_[a-z2-7]*' "$work/serve.out" | head -1)
echo "bench password 123" | "$B" signup --code "$code" --email bench@example.com --name Bench >/dev/null
echo "bench password 123" | "$B" login --email bench@example.com >/dev/null
token=$("$B" tokens create --name bench --scopes read,write 2>/dev/null)
BARRAGE_AGENT_TOKEN=$("$B" agents create bench 2>/dev/null) "$B" agent --server "$base" --allow-target "127.0.0.1:$shop_port" >"$work/agent.out" 2>&1 &
agent_pid=$!

# 100 requests, one label each; one VU sends them all, then thinks for half a second: every
# label is sent in every second, some 200 requests a second in all.
python3 - "$shop_port" >"$work/hundred.yaml" <<'PY'
import sys
print("version: 1\nname: hundred\nbase_url: http://127.0.0.1:%s\nsession:\n  groups:\n    - name: all\n      think: 500ms\n      requests:" % sys.argv[1])
for i in range(100):
    print("        - { name: request %03d, url: /api/products }" % i)
print("load:\n  vus: 1\n  duration: 24h")
PY
test_id=$("$B" tests push "$work/hundred.yaml" 2>/dev/null)
for _ in $(seq 1 100); do "$B" agents list | grep -q ' online ' && break; sleep 0.2; done
run=$(curl -sf -X POST "$base/v1/runs" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d "{\"test_id\":\"$test_id\",\"duration_seconds\":$((secs + 120))}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
"$work/livepage" -server "$base" -email bench@example.com -password "bench password 123" -run "$run" -seconds "$secs" -labels 100
curl -sf -X POST "$base/v1/runs/$run/cancel" -H "Authorization: Bearer $token" >/dev/null || true
