#!/usr/bin/env bash
# Runs every benchmark once, in seconds, and fails unless each prints the figure lines it
# promises: CI runs it (make bench-smoke) so that a bench can no longer rot unnoticed, as
# bench-runs.sh once did (it spoke an agent protocol the server no longer took, and printed
# nothing). The figures of so short a run measure nothing: read `make bench` for them.
# Installs what the benches need as they do (nginx, wrk; k6 from the Go module proxy), and fails
# naming what it could not.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp -d /tmp/barrage-bench-smoke-XXXXXX)
trap 'rm -rf "$log"' EXIT
failed=()

# run NAME COMMAND...: runs the command with BENCH_SMOKE=1, its output kept in $log/NAME.
run() {
  local name=$1
  shift
  echo "--- $name: $*"
  local start=$SECONDS
  if ! BENCH_SMOKE=1 "$@" >"$log/$name" 2>&1; then
    tail -n 30 "$log/$name"
    failed+=("$name exited with an error")
    return
  fi
  echo "    $((SECONDS - start)) s"
}

# expect NAME LINE...: each LINE (a figure's name) must be printed by NAME as "LINE = <number>".
expect() {
  local name=$1
  shift
  [ -f "$log/$name" ] || return
  for line in "$@"; do
    awk -v want="$line" 'index($0, want " = ") == 1 && substr($0, length(want) + 4) ~ /^-?[0-9][0-9.e+-]*[a-z%]*$/ {
        print "    " $0; found = 1; exit } END { exit !found }' "$log/$name" ||
      failed+=("$name printed no \"$line = <number>\"")
  done
}

# The Go benchmarks, one iteration each: each must run and none may fail.
run go go test -run '^$' -bench . -benchtime 1x ./...
if [ -f "$log/go" ]; then
  n=$(grep -c '^Benchmark' "$log/go" || true)
  echo "    $n benchmarks ran"
  [ "$n" -gt 0 ] || failed+=("go: no benchmark ran")
fi

run api scripts/bench-api.sh 1 4
expect api "ratio me/healthz"

run engine scripts/bench-engine.sh 1 8 1
expect engine "ratio barrage/wrk" "cpu per request barrage/wrk" "p99 barrage/wrk" "bytes per idle VU" \
  "ratio hook/nohook" "hook time p99" "open p50 barrage/vegeta 200/s" "open p50 barrage/vegeta 1000/s" "stall p99 error"

run compression scripts/bench-compression.sh 1 4 1
expect compression "cpu per request gzip barrage/k6" "cpu per request plain barrage/k6" \
  "decode cost barrage (gzip/plain cpu per request)" "decode cost k6 (gzip/plain cpu per request)"

run runs scripts/bench-runs.sh 2 1
expect runs "ratio agent/local" "live delay p99 ms" "ingest cpu cores"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'bench-smoke: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "bench-smoke: every bench ran and printed its figures"
