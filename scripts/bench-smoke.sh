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
failed=()
# The logs go when every bench printed its figures, and stay to be read when one did not.
trap '[ ${#failed[@]} -gt 0 ] && echo "bench-smoke: the benches'"'"' output is kept in $log" >&2 || rm -rf "$log"' EXIT

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

# expect NAME LINE...: each LINE (a figure's name) must be printed by NAME as "LINE = <number>",
# a number above 0 (a rate or ratio of 0 means the bench measured nothing), or 0 too when the
# LINE ends with "?0" (an error or a delay may be none).
expect() {
  local name=$1
  shift
  [ -f "$log/$name" ] || return
  for want in "$@"; do
    local line=${want%\?0} zero=0
    [ "$line" = "$want" ] || zero=1
    if ! awk -v want="$line" -v zero="$zero" '
        index($0, want " = ") == 1 {
          v = substr($0, length(want) + 4)
          if (v ~ /^-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?(ms|us|s|%)?$/ && (zero || v + 0 > 0)) { print "    " $0; found = 1; exit }
        }
        END { exit !found }' "$log/$name"; then
      failed+=("$name printed no \"$line = <number>\"$([ "$zero" = 1 ] || echo " above 0")")
      grep -F "$line" "$log/$name" | head -3 | sed 's/^/    got: /' >&2 || true
    fi
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
  "ratio hook/nohook" "hook time p99" "open p50 barrage/vegeta 200/s" "open p50 barrage/vegeta 1000/s" "stall p99 error?0" \
  "open ceiling barrage/vegeta" "open ceiling/closed rate"

run compression scripts/bench-compression.sh 1 4 1
expect compression "cpu per request gzip barrage/k6" "cpu per request plain barrage/k6" \
  "decode cost barrage (gzip/plain cpu per request)" "decode cost k6 (gzip/plain cpu per request)"

run fairshare scripts/bench-fairshare.sh 1
expect fairshare "other user p50 ratio imports/alone" "other user p99 ratio imports/alone" "other user heavy p50 ratio imports/alone" "other user heavy p99 ratio imports/alone" "imports refused in a burst of 5?0"

run portal scripts/bench-portal.sh
expect portal "live page labels" "live page update p99 ms" "live page longest task ms?0" "live page heap growth KiB per minute?0"

run runs scripts/bench-runs.sh 2 1
expect runs "ratio agent/local"

run ingest scripts/bench-ingest.sh
expect ingest "ingest cpu cores?0" "live delay p50 ms?0" "live delay p99 ms?0" "reports refused?0" "database growth per agent-hour MB?0"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'bench-smoke: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "bench-smoke: every bench ran and printed its figures"
