#!/usr/bin/env bash
# Measures how one `barrage serve` and its embedded PostgreSQL take agents' metrics
# (scripts/bench-ingest.sh [agents] [seconds] [agents per run]): simulated agents (scripts/ingest)
# in runs of at most 100, each sending a snapshot of 20 labels a second, as real agents do, while
# the runs' live streams are followed. Prints the CPU that serve and its PostgreSQL used, in
# cores, the delay from a second's end at the agents to its event on the live stream, what the
# database grew by, and then fails unless every snapshot sent is in its run's summary:
#   ingest 1000 agents: cpu cores = 1.4, live delay p99 ms = 900
#   ingest cpu cores = 1.4
#   live delay p50 ms = 300
#   live delay p99 ms = 900
#   live delay of the runs' last seconds ms = [400 500 ...]   (each followed run's; it waits for the shards' ends)
#   reports refused = 0
#   database growth per agent-hour MB = 30
# Needs curl and python3. BENCH_SMOKE=1 simulates 5 agents for 15 seconds: a check that every
# figure is printed, whose figures measure nothing (scripts/bench-smoke.sh).
set -euo pipefail
agents=${1:-1000}
secs=${2:-60}
per_run=${3:-100}
if [ -n "${BENCH_SMOKE:-}" ]; then agents=5 secs=15; fi
cd "$(dirname "$0")/.."
scripts/need.sh bench-ingest curl python3
work=$(mktemp -d /tmp/barrage-bench-ingest-XXXXXX)
chmod 755 "$work" # PostgreSQL's own account must enter the data folder when run as root
. scripts/bench-lib.sh

go build -o "$work/ingest" ./scripts/ingest
# The simulated agents are shared ones (a user keeps at most 50 of their own), which load only
# targets opened to all or proved: the script's address, which no request reaches, is opened.
start_serve bench-ingest --open-targets 127.0.0.1:9
export BARRAGE_SERVER=$base BARRAGE_CONFIG_DIR="$work/cli"
B="$work/barrage"
code=$(grep -o 'brg_inv_[a-z2-7]*' "$work/serve.out" | head -1)
echo "bench password 123" | "$B" signup --code "$code" --email bench@example.com --name Bench >/dev/null
echo "bench password 123" | "$B" login --email bench@example.com >/dev/null
token=$("$B" tokens create --name bench --scopes read,write,admin 2>/dev/null)
pg_pid=$(pgrep -o -f "$work/data/postgres" || true)
[ -n "$pg_pid" ] || { echo "bench-ingest: cannot find the embedded PostgreSQL's process" >&2; exit 1; }
pgdata=$(dirname "$(ls -d "$work"/data/postgres*/PG_VERSION "$work"/data/postgres*/*/PG_VERSION 2>/dev/null | head -1)")

"$work/ingest" --server "$base" --token "$token" --agents "$agents" --per-run "$per_run" --labels 20 \
  --seconds "$secs" --pids "$pid,$pg_pid" --pgdata "$pgdata" | tee "$work/ingest.out"
awk -v n="$agents" '/^ingest cpu cores = / { cpu = $5 } /^live delay p99 ms = / { p99 = $6 }
  END { printf "ingest %d agents: cpu cores = %s, live delay p99 ms = %s\n", n, cpu, p99 }' "$work/ingest.out"
