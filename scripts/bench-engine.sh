#!/usr/bin/env bash
# Compares `barrage run` with wrk (and k6 when installed) against the same local nginx: one worker
# serving a small file on 127.0.0.1, same connections and duration, the target and the generator
# each pinned to its own core where taskset exists. wrk and barrage alternate for five rounds;
# the script prints each run's rate, CPU time per request and p99, then lines a script can read
# (for barrage against wrk, the medians of the rounds' ratios):
#   ratio barrage/wrk = 0.91
#   cpu per request barrage/wrk = 1.12
#   p99 barrage/wrk = 1.10
#   ratio barrage/k6 = 4.2            (when k6 ran)
#   bytes per idle VU = 9300          (BenchmarkIdleVU: 10,000 idle VUs, after a collection)
#   ratio hook/nohook = 0.47          (a url plugin on every request against none; median of 5 rounds)
#   hook time p99 = 0.9ms
#   open p50 barrage/vegeta 200/s = 0.6     (the open model's p50 against vegeta's, same quiet nginx)
#   open p50 barrage/vegeta 1000/s = 0.6
#   stall p99 error = 2.0%                  (p99 against a target that stalls 100 ms every 2 s, vs its truth)
#   open ceiling barrage/vegeta = 1.1       (the most arrivals a second each starts on the generator's core)
#   open ceiling/closed rate = 0.8          (that of barrage's open model, against its closed model's rate)
# Usage: scripts/bench-engine.sh [seconds] [connections] [rounds]   (needs nginx and wrk: installed with
# apt-get when run as root; otherwise it fails naming what is missing). BENCH_SMOKE=1 shortens the
# parts of fixed length too (500 idle VUs rather than 10,000, the open model's and the stall's
# runs; the open ceiling's runs last as long as the closed ones): a check that every figure is
# printed, in seconds, whose figures measure nothing (scripts/bench-smoke.sh).
set -euo pipefail
secs=${1:-10}
conns=${2:-64}
rounds=${3:-5}
smoke=${BENCH_SMOKE:-}
"$(dirname "$0")/need.sh" bench-engine nginx:nginx-light wrk python3
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/barrage-bench-engine-XXXXXX)
chmod 755 "$work" # nginx's worker (nobody when started as root) reads the files
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

pin_target="" pin_gen=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_target="taskset -c 0"; pin_gen="taskset -c 1"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/html" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/html/index.html"
cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
worker_rlimit_nofile 19000;
events { worker_connections 15000; }
http {
  access_log off;
  keepalive_requests 100000000;
  server { listen 127.0.0.1:$port; root $work/html; }
}
NGINX
(ulimit -n "$(ulimit -Hn)"; exec $pin_target nginx -c "$work/nginx.conf" -p "$work") &
pids+=($!)
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/index.html" >/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/index.html"

go build -o "$work/barrage" ./cmd/barrage
cat >"$work/bench.yaml" <<YAML
version: 1
name: bench
session:
  cookies: false
  groups:
    - name: g
      requests:
        - name: index
          method: GET
          url: $url
load:
  vus: $conns
  duration: ${secs}s
YAML

. scripts/bench-lib.sh # cputime, median_range (the working folder is the repository)

to_ms() { python3 -c "import sys,re; v=sys.argv[1]; m=re.match(r'([0-9.]+)(us|ms|s)', v); f={'us':0.001,'ms':1,'s':1000}[m.group(2)]; print(float(m.group(1))*f)" "$1"; }

# The machine is shared and noisy: wrk and barrage alternate for a few rounds, each round's
# ratios compare two runs made seconds apart (which goes first alternates too, so that a
# drifting load on the machine favours neither), and the medians of the rounds are the figures.
run_wrk() {
  wrk_out=$(cputime $pin_gen wrk -t1 -c"$conns" -d"${secs}s" --latency "$url")
  wrk_rps=$(awk '/Requests\/sec/ {print $2}' <<<"$wrk_out")
  wrk_n=$(awk '/requests in/ {print $1}' <<<"$wrk_out")
  wrk_cpu=$(awk '/^CPU/ {print $2}' <<<"$wrk_out")
  wrk_p99=$(awk '$1 == "99%" {print $2}' <<<"$wrk_out")
}
run_barrage() {
  b_out=$(cputime $pin_gen "$work/barrage" run --quiet --out "$work/result.json" "$work/bench.yaml")
  read -r b_rps b_n b_p99 < <(python3 - "$work/result.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print(t["rps"], t["count"], "%.3fms" % (t["p99_ms"]))
PY
)
  b_cpu=$(awk '/^CPU/ {print $2}' <<<"$b_out")
}
rate_r=() cpu_r=() p99_r=() b_rates=()
printf "%-14s %12s %16s %10s\n" run "requests/s" "cpu/request" p99
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then run_wrk; run_barrage; else run_barrage; run_wrk; fi
  printf "%-14s %12.0f %14.2fus %10s\n" "wrk $round" "$wrk_rps" "$(python3 -c "print($wrk_cpu/$wrk_n*1e6)")" "$wrk_p99"
  printf "%-14s %12.0f %14.2fus %10s\n" "barrage $round" "$b_rps" "$(python3 -c "print($b_cpu/$b_n*1e6)")" "$b_p99"
  rate_r+=("$(python3 -c "print($b_rps / $wrk_rps)")")
  cpu_r+=("$(python3 -c "print(($b_cpu / $b_n) / ($wrk_cpu / $wrk_n))")")
  p99_r+=("$(python3 -c "print($(to_ms "$b_p99") / $(to_ms "$wrk_p99"))")")
  b_rates+=("$b_rps")
done
read -r rate_med rate_min rate_max < <(median_range "${rate_r[@]}")
read -r cpu_med cpu_min cpu_max < <(median_range "${cpu_r[@]}")
read -r p99_med p99_min p99_max < <(median_range "${p99_r[@]}")
read -r b_rps _ _ < <(median_range "${b_rates[@]}")

# Memory per idle VU: BenchmarkIdleVU's 10,000 VUs (500 in a smoke) that each made one request
# and now think, against a target in another process; the resident anonymous memory they add,
# read after two collections and the return of the freed pages to the system. Read without
# them, the process's resident size moved by a fifth between runs with the collector's timing
# (14.1 to 17.6 KB a VU): garbage not yet collected, stacks not yet shrunk.
idle_short=""
[ -z "$smoke" ] || idle_short=-short
idle_out=$(go test -run '^$' -bench '^BenchmarkIdleVU$' -benchtime 1x $idle_short ./internal/engine/)
idle_bytes=$(awk '/^BenchmarkIdleVU/ { for (i = 2; i <= NF; i++) if ($i == "rss-B/VU") print int($(i-1)) }' <<<"$idle_out")
[ -n "$idle_bytes" ] || { echo "bench-engine: BenchmarkIdleVU printed no rss-B/VU" >&2; echo "$idle_out" >&2; exit 1; }
echo "idle VUs: $(grep '^BenchmarkIdleVU' <<<"$idle_out")"


k6_rps=""
if command -v k6 >/dev/null; then
  cat >"$work/k6.js" <<JS
import http from 'k6/http';
export const options = { vus: $conns, duration: '${secs}s', discardResponseBodies: true, summaryTrendStats: ['p(99)'] };
export default function () { http.get('$url'); }
JS
  k6_out=$(cputime $pin_gen k6 run --quiet --no-usage-report --address "" --summary-export "$work/k6.json" "$work/k6.js")
  k6_rps=$(python3 -c "import json; print(json.load(open('$work/k6.json'))['metrics']['http_reqs']['rate'])")
  k6_n=$(python3 -c "import json; print(json.load(open('$work/k6.json'))['metrics']['http_reqs']['count'])")
  k6_cpu=$(awk '/^CPU/ {print $2}' <<<"$k6_out")
  printf "%-14s %12.0f %14.2fus\n" k6 "$k6_rps" "$(python3 -c "print($k6_cpu/$k6_n*1e6)")"
fi

# A url plugin on every request (hmac-sign, which signs each one) against the same run without
# it. The plugin's processes inherit the generator's core: they share the agent's machine.
CGO_ENABLED=0 go build -o "$work/hmac-sign" ./examples/plugins/hmac-sign
export BARRAGE_PLUGIN_DIR="$work/plugins"
"$work/barrage" plugin add "$work/hmac-sign" >/dev/null
sed -e 's/^name: bench$/name: bench-hook/' \
    -e 's|^session:$|plugins:\n  - { use: hmac-sign@1.0.0, as: sign, kind: url, config: { key: bench-key } }\nsession:|' \
    -e 's|^          url: \(.*\)$|          url: \1\n          plugins: [sign]|' "$work/bench.yaml" >"$work/hook.yaml"
# The machine is shared and noisy: the two runs alternate for a few rounds, and the median of
# the rounds' ratios is the figure.
ratios=() hook_line=""
for round in $(seq 1 "$rounds"); do
  $pin_gen "$work/barrage" run --quiet --out "$work/nohook.json" "$work/bench.yaml" >/dev/null
  $pin_gen "$work/barrage" run --quiet --out "$work/hook.json" "$work/hook.yaml" >/dev/null
  read -r ratio line < <(python3 - "$work/nohook.json" "$work/hook.json" <<'PY'
import json, sys
n, h = (json.load(open(p)) for p in sys.argv[1:3])
hook = h["hooks"][0]
print("%.3f" % (h["total"]["rps"] / n["total"]["rps"]),
      "%.0f req/s without, %.0f with (hook calls %d, hook time p50 %.3fms p99 %.3fms)" % (
          n["total"]["rps"], h["total"]["rps"], hook["count"], hook["p50_ms"], hook["p99_ms"]))
PY
)
  ratios+=("$ratio")
  echo "hook round $round: $line, ratio $ratio"
  hook_line=$line
done
read -r h_ratio h_min h_max < <(median_range "${ratios[@]}")
hook_p99=$(python3 -c "import json; print('%.3fms' % json.load(open('$work/hook.json'))['hooks'][0]['p99_ms'])")

# The open model's timing against a peer with an open model, vegeta (k6 would be the natural peer,
# but it is under the AGPL and the project does not use it): the same quiet nginx at 200/s and
# 1,000/s, barrage and vegeta alternating for the rounds; the median of the rounds' ratios of
# their p50 response times. Then a target that stalls 100 ms every 2 s (scripts/stall), which
# measures the true latency of what it held: barrage's p99 at 200/s against that truth.
go build -modfile=tools/go.mod -o "$work/vegeta" github.com/tsenart/vegeta/v12
open_secs=$(( secs > 10 || ${smoke:-0} ? secs : 10 ))
cat >"$work/open.yaml" <<YAML
version: 1
name: open
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: index, url: "$url" }
load: { rate: 200/s, duration: ${open_secs}s, max_vus: 200 }
YAML
declare -A open_ratio
for rate in 200 1000; do
  ratios=()
  for round in $(seq 1 "$rounds"); do
    $pin_gen "$work/barrage" run --quiet --rate "$rate" --duration "${open_secs}s" --out "$work/open.json" "$work/open.yaml" >/dev/null
    echo "GET $url" | $pin_gen "$work/vegeta" attack -rate "$rate" -duration "${open_secs}s" >"$work/vegeta.bin"
    "$work/vegeta" report -type=json <"$work/vegeta.bin" >"$work/vegeta.json"
    read -r ratio line < <(python3 - "$work/open.json" "$work/vegeta.json" <<'PY'
import json, sys
b, v = (json.load(open(p)) for p in sys.argv[1:3])
bp50, vp50 = b["total"]["p50_ms"], v["latencies"]["50th"] / 1e6
sched = b.get("schedule", {}).get("p50_ms", 0)
print("%.3f" % (bp50 / vp50), "barrage p50 %.3fms (from the schedule %.3fms), vegeta p50 %.3fms" % (bp50, sched, vp50))
PY
)
    ratios+=("$ratio")
    echo "open ${rate}/s round $round: $line, ratio $ratio"
  done
  read -r med lo hi < <(median_range "${ratios[@]}")
  open_ratio[$rate]="$med $lo $hi"
done

# The open model's ceiling: asked for far more arrivals than one core can start (400,000/s), with
# as many VUs as the closed runs had connections, against the same nginx; vegeta, asked the same
# with as many workers, alternating with it for the rounds. Its rate against vegeta's (the median
# of the rounds' ratios) and against the closed model's above (the medians of their rounds): the
# open model's cost of keeping a schedule, as what it starts a second on the same core.
run_ceil_barrage() {
  $pin_gen "$work/barrage" run --quiet --rate 400000 --vus "$conns" --duration "${secs}s" --out "$work/ceil.json" "$work/open.yaml" >/dev/null
}
run_ceil_vegeta() {
  echo "GET $url" | $pin_gen "$work/vegeta" attack -rate 400000 -workers "$conns" -max-workers "$conns" -duration "${secs}s" >"$work/vegeta-ceil.bin"
}
ceil_ratios=() ceil_rates=()
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then run_ceil_barrage; run_ceil_vegeta; else run_ceil_vegeta; run_ceil_barrage; fi
  "$work/vegeta" report -type=json <"$work/vegeta-ceil.bin" >"$work/vegeta-ceil.json"
  read -r ratio b_ceil line < <(python3 - "$work/ceil.json" "$work/vegeta-ceil.json" <<'PY'
import json, sys
b, v = (json.load(open(p)) for p in sys.argv[1:3])
br, vr = b["total"]["rps"], v["throughput"]
print("%.3f" % (br / vr), "%.0f" % br, "barrage %.0f/s (%d dropped), vegeta %.0f/s" % (br, b.get("dropped", 0), vr))
PY
)
  ceil_ratios+=("$ratio")
  ceil_rates+=("$b_ceil")
  echo "open ceiling round $round: $line, ratio $ratio"
done
read -r ceil_med ceil_min ceil_max < <(median_range "${ceil_ratios[@]}")
read -r ceil_rate _ _ < <(median_range "${ceil_rates[@]}")

go build -o "$work/stall" ./scripts/stall
$pin_target "$work/stall" -period 2s -stall 100ms >"$work/stall.port" &
pids+=($!)
for _ in $(seq 1 50); do [ -s "$work/stall.port" ] && break; sleep 0.1; done
stall_port=$(head -1 "$work/stall.port")
stall_url="http://127.0.0.1:$stall_port/"
for _ in $(seq 1 50); do curl -sf "$stall_url" >/dev/null && break; sleep 0.1; done
sed "s|$url|$stall_url|" "$work/open.yaml" >"$work/stall.yaml"
curl -sf "http://127.0.0.1:$stall_port/reset" >/dev/null
stall_secs=20
[ -z "$smoke" ] || stall_secs=3
$pin_gen "$work/barrage" run --quiet --duration "${stall_secs}s" --out "$work/stall.json" "$work/stall.yaml" >/dev/null
curl -sf "http://127.0.0.1:$stall_port/truth" >"$work/truth.json"
read -r stall_err stall_line < <(python3 - "$work/stall.json" "$work/truth.json" <<'PY'
import json, sys
b, t = (json.load(open(p)) for p in sys.argv[1:3])
p99, truth = b["total"]["p99_ms"], t["p99_ms"]
print("%.1f" % (abs(p99 - truth) / truth * 100), "barrage p99 %.2fms, the target held its p99 %.2fms (%d requests)" % (p99, truth, t["n"]))
PY
)
echo "stall: $stall_line"

python3 - <<PY
print("ratio barrage/wrk = %.2f" % $rate_med)
print("cpu per request barrage/wrk = %.2f" % $cpu_med)
print("p99 barrage/wrk = %.2f" % $p99_med)
print("ranges over $rounds rounds (the medians above): rate %.2f to %.2f, cpu per request %.2f to %.2f, p99 %.2f to %.2f" % (
    $rate_min, $rate_max, $cpu_min, $cpu_max, $p99_min, $p99_max))
if "$k6_rps":
    print("ratio barrage/k6 = %.1f" % ($b_rps / float("$k6_rps" or 1)))
print("bytes per idle VU = %d" % $idle_bytes)
print("ratio hook/nohook = %.2f" % $h_ratio)
print("ratio hook/nohook range = %.2f to %.2f ($rounds rounds, the median above)" % ($h_min, $h_max))
print("hook time p99 = $hook_p99")
for rate, (med, lo, hi) in (("200", "${open_ratio[200]}".split()), ("1000", "${open_ratio[1000]}".split())):
    print("open p50 barrage/vegeta %s/s = %s" % (rate, med))
    print("open p50 barrage/vegeta %s/s range = %s to %s ($rounds rounds, the median above)" % (rate, lo, hi))
print("stall p99 error = $stall_err%")
print("open ceiling barrage/vegeta = %.2f" % $ceil_med)
print("open ceiling barrage/vegeta range = %.2f to %.2f ($rounds rounds, the median above)" % ($ceil_min, $ceil_max))
print("open ceiling/closed rate = %.2f" % ($ceil_rate / $b_rps))
print("open ceiling = %.0f/s, closed rate = %.0f/s (medians)" % ($ceil_rate, $b_rps))
PY
