#!/usr/bin/env bash
# Measures what one user's heavy requests cost another user, against a real `barrage serve` on
# 127.0.0.1: user B's latency on a light route (GET /v1/tests, sequentially) alone, then while user
# A imports a HAR (internal/har/testdata/shop-chrome.har) in 4 loops at once; and a burst of 5
# imports by A at once, of which those past the 2 a user may have in flight are refused. Prints
# lines a script can read:
#   other user p50 ratio imports/alone = 1.4
#   other user p99 ratio imports/alone = 2.0
#   imports refused in a burst of 5 = 3
# Usage: scripts/bench-fairshare.sh [seconds]   (needs python3 and curl)
set -euo pipefail
secs=${1:-10}
cd "$(dirname "$0")/.."
scripts/need.sh bench-fairshare python3 curl

work=$(mktemp -d /tmp/barrage-bench-fairshare-XXXXXX)
chmod 755 "$work"
. scripts/bench-lib.sh # start_serve (the working folder is the repository)
start_serve bench-fairshare

# Two users with the demo license: A imports, B reads.
code=$(grep -o 'brg_inv_[a-z2-7]*' "$work/serve.out" | head -1)
export BARRAGE_SERVER="$base"
BARRAGE_CONFIG_DIR="$work/admin" "$work/barrage" signup --code "$code" --email admin@example.com --name Admin <<<"bench password 123" >/dev/null
BARRAGE_CONFIG_DIR="$work/admin" "$work/barrage" login --email admin@example.com <<<"bench password 123" >/dev/null
invite=$(BARRAGE_CONFIG_DIR="$work/admin" "$work/barrage" admin invite --template demo --uses 2 2>/dev/null)
for who in a b; do
  BARRAGE_CONFIG_DIR="$work/$who" "$work/barrage" signup --code "$invite" --email "$who@example.com" --name "$who" <<<"bench password 123" >/dev/null
  BARRAGE_CONFIG_DIR="$work/$who" "$work/barrage" tokens create --name bench --scopes read,write >"$work/$who.token" 2>/dev/null
done

python3 - "$base" "$(cat "$work/a.token")" "$(cat "$work/b.token")" "$secs" internal/har/testdata/shop-chrome.har <<'PY'
import sys, threading, time, urllib.request, urllib.error
base, a, b, secs, har = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), open(sys.argv[5], "rb").read()

def call(method, path, token, body=None):
    req = urllib.request.Request(base + path, data=body, method=method, headers={"Authorization": "Bearer " + token})
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code

def latencies(seconds):
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        assert call("GET", "/v1/tests", b) == 200
        out.append(time.monotonic() - t)
    out.sort()
    return out[len(out) // 2], out[int(len(out) * 0.99)], len(out)

alone = latencies(secs)
stop, statuses = threading.Event(), {}
def importer():
    while not stop.is_set():
        s = call("POST", "/v1/tests/import", a, har)
        statuses[s] = statuses.get(s, 0) + 1
loops = [threading.Thread(target=importer) for _ in range(4)]
for t in loops:
    t.start()
busy = latencies(secs)
stop.set()
for t in loops:
    t.join()
print("user B on GET /v1/tests alone: p50 %.2fms p99 %.2fms (%d requests)" % (alone[0] * 1e3, alone[1] * 1e3, alone[2]))
print("user B while user A imports in 4 loops: p50 %.2fms p99 %.2fms (%d requests); A's answers %s" % (busy[0] * 1e3, busy[1] * 1e3, busy[2], statuses))

burst, results = threading.Barrier(5), []
def one():
    burst.wait()
    results.append(call("POST", "/v1/tests/import", a, har))
ts = [threading.Thread(target=one) for _ in range(5)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("a burst of 5 imports by one user: %s" % sorted(results))
print("other user p50 ratio imports/alone = %.2f" % (busy[0] / alone[0]))
print("other user p99 ratio imports/alone = %.2f" % (busy[1] / alone[1]))
print("imports refused in a burst of 5 = %d" % results.count(429))
PY
