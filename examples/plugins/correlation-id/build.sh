#!/usr/bin/env bash
# Builds the correlation-id plugin into OUT: one executable zipapp holding the plugin and the
# barrage_plugin package, whose shebang names the python of scripts/python-env.sh (made first
# if need be). The same sources and requirements give the same bytes, so the same sha256.
# Usage: examples/plugins/correlation-id/build.sh OUT
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
py=$("$root/scripts/python-env.sh")
"$py" -B "$root/sdk/python/build_pyz.py" --python "$py" --main correlation_id:main -o "$out" "$here/correlation_id.py"
