# Helpers the bench scripts share; sourced, not run.

# cputime runs a command, prints its output, then "CPU <user+sys seconds>" of it and its children.
cputime() { /usr/bin/env python3 - "$@" <<'PY'
import os, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write(p.stdout)
sys.stdout.write("CPU %.3f\n" % (r.ru_utime + r.ru_stime))
sys.exit(p.returncode)
PY
}

# median_range prints the median, the smallest and the largest of its arguments.
median_range() { python3 -c "import sys; r=sorted(map(float, sys.argv[1:])); print(r[len(r)//2], r[0], r[-1])" "$@"; }

# start_serve WHO [SERVE FLAGS...]: builds barrage into $work and runs `barrage serve` on a free port of 127.0.0.1,
# its data in $work/data, its output in $work/serve.out and serve.err; sets base (its URL) and
# pid, stops it and removes $work on exit, and waits for /readyz, failing as WHO when it does not
# come.
start_serve() {
  local who=$1
  shift
  go build -o "$work/barrage" ./cmd/barrage
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  base="http://127.0.0.1:$port"
  "$work/barrage" serve --addr "127.0.0.1:$port" --data-dir "$work/data" --log-level warn "$@" >"$work/serve.out" 2>"$work/serve.err" &
  pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  for _ in $(seq 1 600); do
    curl -sf "$base/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -sf "$base/readyz" >/dev/null || { echo "$who: serve did not become ready" >&2; cat "$work/serve.err" >&2; exit 1; }
}
