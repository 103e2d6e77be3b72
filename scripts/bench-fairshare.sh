#!/usr/bin/env bash
# Measures what one user's heavy requests cost another user, against a real `barrage serve` on
# 127.0.0.1: user B's latency on a light route (GET /v1/tests, sequentially) and on a heavy one
# (PATCH /v1/tests/{id}, a parse that takes a turn), alone, then while user A imports a HAR
# (internal/har/testdata/shop-chrome.har) in 4 loops at once; and a burst of 5 imports by A at
# once, of which those past the 2 a user may have in flight are refused. Prints lines a script can
# read:
#   other user p50 ratio imports/alone = 1.4
#   other user p99 ratio imports/alone = 2.0
#   other user heavy p50 ratio imports/alone = 1.6
#   other user heavy p99 ratio imports/alone = 2.5
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

def call(method, path, token, body=None, ct="application/json", answer=None):
    req = urllib.request.Request(base + path, data=body, method=method, headers={"Authorization": "Bearer " + token})
    if body is not None:
        req.add_header("Content-Type", ct)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
            if answer is not None:
                answer.append(data)
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code

source = b"version: 1\nname: b\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1:9/'}]}]}\nload: {vus: 1, iterations: 1}\n"
made = []
assert call("POST", "/v1/tests", b, source, "application/yaml", made) == 201
test = __import__("json").loads(made[0])["id"]

def light():
    assert call("GET", "/v1/tests", b) == 200

def heavy():
    assert call("PATCH", "/v1/tests/" + test, b, source, "application/yaml") == 200

def latencies(seconds, request):
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        request()
        out.append(time.monotonic() - t)
    out.sort()
    return out[len(out) // 2], out[int(len(out) * 0.99)], len(out)

alone = latencies(secs, light)
alone_heavy = latencies(secs, heavy)
stop, statuses = threading.Event(), {}
def importer():
    while not stop.is_set():
        s = call("POST", "/v1/tests/import", a, har)
        statuses[s] = statuses.get(s, 0) + 1
loops = [threading.Thread(target=importer) for _ in range(4)]
for t in loops:
    t.start()
busy = latencies(secs, light)
busy_heavy = latencies(secs, heavy)
stop.set()
for t in loops:
    t.join()
print("user B on GET /v1/tests alone: p50 %.2fms p99 %.2fms (%d requests)" % (alone[0] * 1e3, alone[1] * 1e3, alone[2]))
print("user B while user A imports in 4 loops: p50 %.2fms p99 %.2fms (%d requests); A's answers %s" % (busy[0] * 1e3, busy[1] * 1e3, busy[2], statuses))
print("user B on PATCH /v1/tests/{id} alone: p50 %.2fms p99 %.2fms (%d requests)" % (alone_heavy[0] * 1e3, alone_heavy[1] * 1e3, alone_heavy[2]))
print("user B on PATCH /v1/tests/{id} while user A imports in 4 loops: p50 %.2fms p99 %.2fms (%d requests)" % (busy_heavy[0] * 1e3, busy_heavy[1] * 1e3, busy_heavy[2]))

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
print("other user heavy p50 ratio imports/alone = %.2f" % (busy_heavy[0] / alone_heavy[0]))
print("other user heavy p99 ratio imports/alone = %.2f" % (busy_heavy[1] / alone_heavy[1]))
print("imports refused in a burst of 5 = %d" % results.count(429))
PY
