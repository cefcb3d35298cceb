#!/bin/sh
# Installs Redis (Debian `redis-server`, 7.0 on bookworm) for the global rate-limit tests.
# Usage: install-redis.sh PEERS_DIR
# Already installed: nothing to do. Otherwise it needs root and apt-get (the CI machine has
# both); without them it fails, so the calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-redis.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.redis.lock"
flock 9

if command -v redis-server >/dev/null 2>&1; then
    redis-server --version >&2
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "redis-server is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends redis-server >&2 || {
    apt-get update >&2
    apt-get install -y --no-install-recommends redis-server >&2
}
redis-server --version >&2
