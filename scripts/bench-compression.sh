#!/usr/bin/env bash
# Measures what decoding compressed responses costs `barrage run` against k6, on the same local
# nginx: one worker on 127.0.0.1 serving a 20 KB JSON document (an array of products) gzipped at
# /gzip/ and as it is at /plain/, the target and the generator each pinned to its own core where
# taskset exists. Each tool reads the body of every response: barrage with a JSON assertion,
# k6 with a check that parses it, both asking for `Accept-Encoding: gzip, deflate, br, zstd`
# (barrage's default; k6 sends no Accept-Encoding unless told, and would get the plain body).
# Every round runs barrage and k6 against both paths; which tool and which path go first
# alternate between rounds, so that a drifting load on the machine favours neither. The script
# prints each run's rate, CPU time per request and bytes per request (as they came on the wire),
# then lines a script can read, the medians of the rounds' ratios (the higher middle one when the
# rounds are even):
#   cpu per request gzip barrage/k6 = 0.56
#   cpu per request plain barrage/k6 = 0.60
#   decode cost barrage (gzip/plain cpu per request) = 1.20
#   decode cost k6 (gzip/plain cpu per request) = 1.27
# A run whose checks failed, or whose bytes show the body did not come as the path says
# (compressed at /gzip/, not at /plain/), stops the script: its figures would measure nothing.
# k6 is a separate program (AGPL; the project neither links nor vendors it): the k6 on PATH,
# else BENCH_K6_VERSION (default v1.8.1) built from the Go module proxy once into
# ${XDG_CACHE_HOME:-~/.cache}/barrage-bench. It runs with its REST API and usage report off.
# Usage: scripts/bench-compression.sh [seconds] [connections] [rounds]   (needs nginx, python3
# and curl: installed with apt-get when run as root; otherwise it fails naming what is missing)
set -euo pipefail
secs=${1:-10}
conns=${2:-32}
rounds=${3:-3}
"$(dirname "$0")/need.sh" bench-compression nginx:nginx-light python3 curl
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/barrage-bench-compression-XXXXXX)
chmod 755 "$work"  # nginx's worker (www-data when started as root) reads the document from here
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# k6: the one on PATH, else the pinned release from the module proxy, built once and cached.
k6_version=${BENCH_K6_VERSION:-v1.8.1}
if command -v k6 >/dev/null; then
  k6=$(command -v k6)
else
  k6_dir=${XDG_CACHE_HOME:-$HOME/.cache}/barrage-bench/k6-$k6_version
  k6=$k6_dir/k6
  if [ ! -x "$k6" ]; then
    echo "bench-compression: building k6 $k6_version from the Go module proxy into $k6_dir (once)" >&2
    mkdir -p "$k6_dir"
    GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3} GOBIN=$k6_dir timeout 1200 go install "go.k6.io/k6@$k6_version" >&2 || true
  fi
  [ -x "$k6" ] || {
    echo "bench-compression: k6 is needed and could not be installed (GOBIN=$k6_dir go install go.k6.io/k6@$k6_version)" >&2
    exit 1
  }
fi
k6_says=$("$k6" version 2>&1 | head -1) || { echo "bench-compression: $k6 does not run: $k6_says" >&2; exit 1; }

pin_target="" pin_gen=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_target="taskset -c 0"; pin_gen="taskset -c 1"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/html/gzip" "$work/html/plain" "$work/logs"

# The document: 32 products as a shop's catalogue API would list them, about 20 KB, the same
# every time (a fixed seed) so that it compresses the same from one run of the script to the next.
python3 - "$work/html/plain/products.json" <<'PY'
import json, random, sys
rng = random.Random(20240611)
adjectives = ["Compact", "Wireless", "Ergonomic", "Stainless", "Organic", "Heavy-duty", "Portable", "Vintage",
              "Smart", "Waterproof", "Foldable", "Premium", "Lightweight", "Adjustable", "Rechargeable"]
nouns = ["Coffee Grinder", "Desk Lamp", "Backpack", "Water Bottle", "Keyboard", "Headphones", "Yoga Mat",
         "Chef Knife", "Running Shoes", "Office Chair", "Bluetooth Speaker", "Tent", "Monitor Stand", "Kettle"]
categories = ["kitchen", "electronics", "outdoor", "office", "sports", "home"]
brands = ["Northwind", "Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark"]
colors = ["black", "white", "silver", "navy", "forest green", "sand", "red", "graphite"]
words = ("durable designed everyday use with a clean finish that fits any space and lasts for years "
         "includes two year warranty free returns within thirty days made from recycled materials").split()
products = []
for i in range(32):
    name = "%s %s" % (rng.choice(adjectives), rng.choice(nouns))
    price = round(rng.uniform(9, 400), 2)
    products.append({
        "id": 100000 + i * 37,
        "sku": "SKU-%06d-%s" % (rng.randrange(10**6), rng.choice("ABCDEFGH")),
        "name": name,
        "slug": name.lower().replace(" ", "-"),
        "brand": rng.choice(brands),
        "category": rng.choice(categories),
        "description": " ".join(rng.choice(words) for _ in range(rng.randrange(14, 24))).capitalize() + ".",
        "price": {"amount": price, "currency": "EUR", "compare_at": round(price * 1.2, 2) if rng.random() < 0.3 else None},
        "stock": {"available": rng.randrange(0, 500), "warehouse": rng.choice(["AMS-1", "FRA-2", "DUB-1"])},
        "rating": {"average": round(rng.uniform(2.5, 5), 1), "count": rng.randrange(0, 3000)},
        "colors": rng.sample(colors, rng.randrange(1, 4)),
        "tags": rng.sample(["new", "sale", "bestseller", "eco", "gift", "limited"], rng.randrange(0, 3)),
        "images": ["https://cdn.example.com/p/%d/%d.jpg" % (100000 + i * 37, n) for n in range(rng.randrange(1, 4))],
        "created_at": "2024-%02d-%02dT%02d:%02d:00Z" % (rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24), rng.randrange(60)),
    })
json.dump(products, open(sys.argv[1], "w"))
PY
cp "$work/html/plain/products.json" "$work/html/gzip/products.json"
doc_bytes=$(wc -c <"$work/html/plain/products.json")

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
  types { application/json json; }
  server {
    listen 127.0.0.1:$port;
    root $work/html;
    location /gzip/ { gzip on; gzip_types application/json; gzip_min_length 0; }
    location /plain/ { gzip off; }
  }
}
NGINX
(ulimit -n "$(ulimit -Hn)"; exec $pin_target nginx -c "$work/nginx.conf" -p "$work") &
pids+=($!)
declare -A url=([gzip]="http://127.0.0.1:$port/gzip/products.json" [plain]="http://127.0.0.1:$port/plain/products.json")
for _ in $(seq 1 50); do curl -sf -m 2 "${url[plain]}" >/dev/null && break; sleep 0.1; done
# The target as each path should answer: gzip at /gzip/ (and smaller), as it is at /plain/.
for t in gzip plain; do
  enc=$(curl -sf -m 5 -o /dev/null -D - -H 'Accept-Encoding: gzip, deflate, br, zstd' "${url[$t]}" |
    awk -F': *' 'tolower($1) == "content-encoding" {gsub("\r", "", $2); print $2}') ||
    { echo "bench-compression: nginx does not answer at ${url[$t]}" >&2; tail -3 "$work/logs/error.log" >&2; exit 1; }
  want=$([ "$t" = gzip ] && echo gzip || echo "")
  [ "$enc" = "$want" ] || { echo "bench-compression: ${url[$t]} came with Content-Encoding '$enc', not '$want'" >&2; exit 1; }
done
gz_bytes=$(curl -sf -m 5 -H 'Accept-Encoding: gzip' "${url[gzip]}" | wc -c)
echo "target: $doc_bytes bytes of JSON, $gz_bytes gzipped; k6: $k6_says"

timeout 600 go build -o "$work/barrage" ./cmd/barrage
for t in gzip plain; do
  cat >"$work/barrage-$t.yaml" <<YAML
version: 1
name: bench-compression-$t
session:
  cookies: false
  groups:
    - name: g
      requests:
        - name: products
          method: GET
          url: ${url[$t]}
          assert:
            - { json: "\$[0].id", exists: true }
load:
  vus: $conns
  duration: ${secs}s
YAML
  cat >"$work/k6-$t.js" <<JS
import http from 'k6/http';
import { check } from 'k6';
export const options = { vus: $conns, duration: '${secs}s', summaryTrendStats: ['p(99)'] };
const params = { headers: { 'Accept-Encoding': 'gzip, deflate, br, zstd' } };
export default function () {
  const r = http.get('${url[$t]}', params);
  check(r, { ok: (r) => r.json()[0].id !== undefined });
}
JS
done

. scripts/bench-lib.sh # cputime, median_range (the working folder is the repository)
# Each run may take its duration plus a minute (k6 compiles its script and winds down); past
# that it is stopped and the script fails.
limit=$((secs + 60))

# run TOOL TARGET sets rps, n (requests), cpu (seconds) and bpr (bytes in per request), after
# checking that every request passed its check and that the bytes are the path's.
run() {
  local tool=$1 t=$2 out figures
  if [ "$tool" = barrage ]; then
    out=$(cputime timeout -k 5 "$limit" $pin_gen "$work/barrage" run --quiet --out "$work/result.json" "$work/barrage-$t.yaml") ||
      { echo "bench-compression: barrage against $t failed:" >&2; echo "$out" >&2; exit 1; }
    figures=$(python3 - "$work/result.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print(t["rps"], t["count"], t["bytes_in"] / max(t["count"], 1), t["error_rate"] * t["count"])
PY
)
  else
    # K6_* from the caller's environment would change the run: only these apply.
    out=$(cputime timeout -k 5 "$limit" env $(env | awk -F= '/^K6_/ {printf "-u %s ", $1}') \
      $pin_gen "$k6" run --quiet --no-color --no-usage-report --address "" \
      --summary-export "$work/k6.json" "$work/k6-$t.js") ||
      { echo "bench-compression: k6 against $t failed:" >&2; echo "$out" >&2; exit 1; }
    figures=$(python3 - "$work/k6.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
n = m["http_reqs"]["count"]
failed = m["checks"]["fails"] + m["http_req_failed"].get("passes", 0)
print(m["http_reqs"]["rate"], n, m["data_received"]["count"] / max(n, 1), failed)
PY
)
  fi
  read -r rps n bpr failed <<<"$figures"
  cpu=$(awk '/^CPU/ {print $2}' <<<"$out")
  python3 - "$tool" "$t" "$n" "$failed" "$bpr" "$doc_bytes" <<'PY' || exit 1
import sys
tool, t, n, failed, bpr, doc = sys.argv[1], sys.argv[2], int(float(sys.argv[3])), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
why = None
if n == 0:
    why = "made no request"
elif failed:
    why = "had %d of %d requests fail (a check or an error)" % (failed, n)
elif t == "gzip" and bpr > doc / 2:
    why = "received %.0f bytes a request for a %d-byte document: the body did not come compressed" % (bpr, doc)
elif t == "plain" and bpr < doc:
    why = "received %.0f bytes a request for a %d-byte document: the body came compressed" % (bpr, doc)
if why:
    sys.exit("bench-compression: %s against %s %s" % (tool, t, why))
PY
}

declare -A cpr  # "tool target" -> CPU per request of this round, in seconds
gzip_r=() plain_r=() dec_b=() dec_k=()
printf "%-18s %12s %14s %14s\n" run "requests/s" "cpu/request" "bytes/request"
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then tools=(barrage k6); else tools=(k6 barrage); fi
  if (( (round - 1) / 2 % 2 )); then targets=(plain gzip); else targets=(gzip plain); fi
  for t in "${targets[@]}"; do
    for tool in "${tools[@]}"; do
      run "$tool" "$t"
      cpr["$tool $t"]=$(python3 -c "print($cpu / $n)")
      printf "%-18s %12.0f %12.2fus %14.0f\n" "$tool $t $round" "$rps" "$(python3 -c "print(${cpr["$tool $t"]} * 1e6)")" "$bpr"
    done
  done
  gzip_r+=("$(python3 -c "print(${cpr[barrage gzip]} / ${cpr[k6 gzip]})")")
  plain_r+=("$(python3 -c "print(${cpr[barrage plain]} / ${cpr[k6 plain]})")")
  dec_b+=("$(python3 -c "print(${cpr[barrage gzip]} / ${cpr[barrage plain]})")")
  dec_k+=("$(python3 -c "print(${cpr[k6 gzip]} / ${cpr[k6 plain]})")")
done
read -r g_med g_min g_max < <(median_range "${gzip_r[@]}")
read -r p_med p_min p_max < <(median_range "${plain_r[@]}")
read -r b_med b_min b_max < <(median_range "${dec_b[@]}")
read -r k_med k_min k_max < <(median_range "${dec_k[@]}")

python3 - <<PY
print("cpu per request gzip barrage/k6 = %.2f" % $g_med)
print("cpu per request plain barrage/k6 = %.2f" % $p_med)
print("decode cost barrage (gzip/plain cpu per request) = %.2f" % $b_med)
print("decode cost k6 (gzip/plain cpu per request) = %.2f" % $k_med)
print("ranges over $rounds rounds (the medians above): gzip barrage/k6 %.2f to %.2f, plain barrage/k6 %.2f to %.2f, "
      "decode cost barrage %.2f to %.2f, decode cost k6 %.2f to %.2f" % (
    $g_min, $g_max, $p_min, $p_max, $b_min, $b_max, $k_min, $k_max))
PY
