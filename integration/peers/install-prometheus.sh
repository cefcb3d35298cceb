#!/bin/sh
# Installs Prometheus and promtool (Debian `prometheus`, 2.42 on bookworm) for the dashboard and
# alert-rule tests. Debian's package starts no service here (policy-rc.d); the tests start
# their own server on 127.0.0.1.
# Usage: install-prometheus.sh PEERS_DIR
# Already installed: nothing to do. Otherwise it needs root and apt-get (the CI machine has
# both); without them it fails, so the calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-prometheus.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.prometheus.lock"
flock 9

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    prometheus --version >&2
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "prometheus/promtool are missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends prometheus >&2 || {
    apt-get update >&2
    apt-get install -y --no-install-recommends prometheus >&2
}
prometheus --version >&2
promtool --version >&2
