#!/usr/bin/env bash
# Validates the Kubernetes manifests in deploy/kubernetes with kubeconform (pinned in
# tools/go.mod), offline, against the JSON schemas of the Kubernetes API.
#
# kubeconform's default schemas are fetched from GitHub at run time; here they come from the PyPI
# package kubernetes-validate instead (pinned by version and sha256), fetched with pip once into
# a cache folder. Its schemas ({version}-local-strict/{kind}-{group}-{version}.json) share one
# _definitions.json through "$ref": "/api/_definitions.json#...", which resolves against the
# schemas' "$id" (https://kubernetes.io/...) and so would be fetched from the network: they are
# rewritten once, on the way into the cache, to refer to the _definitions.json beside them.
#
# Every resource must match its schema (-strict: no unknown field, no duplicate key), and a
# resource of a kind that has no schema fails too: there is no -ignore-missing-schemas.
#
# Usage: scripts/kubeconform.sh [FILE|DIR]...    (default deploy/kubernetes)
#   KUBERNETES_VERSIONS  the API versions to validate against, "1.33.0 1.37.0" unless set
#   BARRAGE_K8S_SCHEMAS  the cache folder, ${XDG_CACHE_HOME:-~/.cache}/barrage/k8s-schemas unless set
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
die() { echo "kubeconform.sh: $*" >&2; exit 1; }

pkg=kubernetes-validate
pkg_version=1.37.0
wheel=kubernetes_validate-$pkg_version-py3-none-any.whl
wheel_sha256=85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
versions=${KUBERNETES_VERSIONS:-1.33.0 1.37.0}
cache=${BARRAGE_K8S_SCHEMAS:-${XDG_CACHE_HOME:-$HOME/.cache}/barrage/k8s-schemas}/$pkg-$pkg_version
[ $# -gt 0 ] || set -- deploy/kubernetes

# The schemas of each version, once: downloaded, checked, rewritten, then moved into place whole.
for v in $versions; do
  [ -f "$cache/v$v-local-strict/.ready" ] && continue
  python=$(command -v python3) || die "python3 is needed to fetch the schemas from PyPI"
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  if [ ! -f "$cache/$wheel" ]; then
    echo "kubeconform.sh: fetching $pkg==$pkg_version from PyPI" >&2
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$python" -m pip download --quiet --no-deps --only-binary=:all: \
      --dest "$tmp" "$pkg==$pkg_version" >&2 || die "pip download $pkg==$pkg_version failed"
    echo "$wheel_sha256  $tmp/$wheel" | sha256sum --check --quiet - || die "$wheel: sha256 mismatch"
    mv "$tmp/$wheel" "$cache/$wheel"
  fi
  "$python" - "$cache/$wheel" "v$v-local-strict" "$tmp" <<'EOF' || die "no schemas for Kubernetes $v in $wheel"
import json, os, sys, zipfile
wheel, name, out = sys.argv[1:]
prefix = "kubernetes_validate/kubernetes-json-schema/" + name + "/"

def rewrite(node):
    # "/api/_definitions.json#/$defs/X" -> "_definitions.json#/$defs/X", relative to the file.
    if isinstance(node, dict):
        return {k: ("_definitions.json" + v[len("/api/_definitions.json"):]
                    if k == "$ref" and isinstance(v, str) and v.startswith("/api/_definitions.json#")
                    else rewrite(v))
                for k, v in node.items() if k != "$id"}
    if isinstance(node, list):
        return [rewrite(v) for v in node]
    return node

os.makedirs(os.path.join(out, name))
n = 0
with zipfile.ZipFile(wheel) as z:
    for entry in z.namelist():
        if entry.startswith(prefix) and entry.endswith(".json"):
            doc = rewrite(json.loads(z.read(entry)))
            with open(os.path.join(out, name, entry[len(prefix):]), "w") as f:
                json.dump(doc, f)
            n += 1
if n == 0:
    sys.exit(1)
EOF
  touch "$tmp/v$v-local-strict/.ready"
  rm -rf "${cache:?}/v$v-local-strict"
  mv "$tmp/v$v-local-strict" "$cache/"
  rm -rf "$tmp"
  trap - EXIT
done

# Every manifest beside kustomization.yaml is one of its resources, or a template (*.example.yaml)
# left out on purpose.
for f in deploy/kubernetes/*.yaml; do
  case $(basename "$f") in kustomization.yaml | *.example.yaml) continue ;; esac
  grep -qE "^  - $(basename "$f")\$" deploy/kubernetes/kustomization.yaml ||
    die "$f is not listed in deploy/kubernetes/kustomization.yaml's resources"
done

for v in $versions; do
  echo "kubeconform.sh: Kubernetes $v" >&2
  # kustomization.yaml is kustomize's input, not a Kubernetes object: it has no schema.
  go tool -modfile=tools/go.mod kubeconform -strict -summary -kubernetes-version "$v" \
    -schema-location "$cache/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    -ignore-filename-pattern '(^|/)kustomization\.yaml$' \
    "$@"
done
