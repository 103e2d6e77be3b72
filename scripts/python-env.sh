#!/usr/bin/env bash
# Prints the path of a python that has the Python plugin SDK's pinned requirements
# (sdk/python/requirements.txt), creating its virtualenv the first time.
#
# The virtualenv is /tmp/barrage-python-<hash>, named by the hash of the requirements and of the
# interpreter it is made from, so a changed pin gets a new one and an unchanged one is reused.
# Everyone may read and execute it: a Python plugin is a zipapp whose shebang names this python,
# and the plugin host runs plugins as `nobody`. For the same reason it is made from
# /usr/bin/python3 when there is one, not from a python under /root (pyenv), which nobody
# cannot reach. Concurrent calls wait for each other; a half-made or damaged one is made again.
#
# Usage: scripts/python-env.sh     (BARRAGE_PYTHON=/path/to/python3 chooses the interpreter)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/sdk/python/requirements.txt"
die() { echo "python-env: $*" >&2; exit 1; }

base=${BARRAGE_PYTHON:-}
if [ -z "$base" ]; then
  if [ -x /usr/bin/python3 ]; then
    base=/usr/bin/python3
  else
    base=$(command -v python3) || die "python3 not found"
  fi
fi
version=$("$base" -c 'import sys; print(sys.version)') || die "$base does not run"
hash=$({ cat "$req"; echo "$base"; echo "$version"; } | sha256sum | cut -c1-16)
dir=/tmp/barrage-python-$hash
py=$dir/bin/python

# /tmp is everyone's: trust the directory only if it is a real one, ours, and only ours to write.
check_dir() {
  [ ! -L "$dir" ] || die "$dir is a symbolic link; remove it"
  [ "$(stat -c %u "$dir")" = "$(id -u)" ] || die "$dir belongs to someone else; remove it"
}

# Ready, and whole: /tmp's cleaners may have taken files from an old one.
ready() {
  [ -f "$dir/.ready" ] &&
    "$py" -c 'import grpc, grpc_tools.protoc, grpc_health.v1.health, google.rpc.status_pb2, cryptography.x509' 2>/dev/null
}

if [ -d "$dir" ] && check_dir && ready; then
  echo "$py"
  exit 0
fi

umask 022
mkdir -p "$dir"
check_dir
chmod 755 "$dir"
exec 9<"$dir"
flock 9
if ! ready; then
  echo "python-env: creating $dir from $base" >&2
  find "$dir" -mindepth 1 -delete
  "$base" -m venv "$dir" >&2 || die "$base -m venv failed (Debian: apt-get install python3-venv)"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip install --no-input --quiet -r "$req" >&2
  chmod -R a+rX,go-w "$dir"
  touch "$dir/.ready"
fi
echo "$py"
