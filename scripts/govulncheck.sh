#!/usr/bin/env bash
# govulncheck over the module and the SDK, against Go's vulnerability database. vuln.go.dev is
# out of reach where only package registries are, but the database's source, golang.org/x/vulndb,
# is a module: the Go module proxy serves it, and its data/osv folder is a flat list of OSV
# entries, which govulncheck reads as a database (-db file://...). The newest version is taken
# unless VULNDB_VERSION pins one, so that a vulnerability published since the last change fails
# CI as it would with vuln.go.dev.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${VULNDB_VERSION:-latest}"
info="$(go mod download -json "golang.org/x/vulndb@$version")" || {
  echo "govulncheck.sh: cannot fetch golang.org/x/vulndb@$version from the module proxy" >&2
  exit 1
}
dir="$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
resolved="$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Version": "\(.*\)",$/\1/p')"
db="$dir/data/osv"
count="$(find "$db" -maxdepth 1 -name 'GO-*.json' | wc -l)"
if [ ! -d "$db" ] || [ "$count" -lt 1000 ]; then
  echo "govulncheck.sh: golang.org/x/vulndb@$resolved has no OSV database at data/osv ($count entries)" >&2
  exit 1
fi
echo "govulncheck.sh: database golang.org/x/vulndb@$resolved ($count entries)"
go tool -modfile=tools/go.mod govulncheck -db "file://$db" ./...
(cd sdk && go tool -modfile=../tools/go.mod govulncheck -db "file://$db" ./...)
