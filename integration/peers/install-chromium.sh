#!/bin/sh
# Installs Chromium (Debian `chromium`) for the admin page's browser test: headless, it runs the
# page's JavaScript against a real ferry and prints the DOM or takes a screenshot. Starts
# nothing; the test runs it as a child process on 127.0.0.1 URLs.
# Usage: install-chromium.sh PEERS_DIR
# Already installed: nothing to do. Otherwise it needs root and apt-get (the CI machine has
# both); without them it fails, so the calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-chromium.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.chromium.lock"
flock 9

if command -v chromium >/dev/null 2>&1; then
    chromium --version >&2
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends chromium >&2 || {
    apt-get update >&2
    apt-get install -y --no-install-recommends chromium >&2
}
chromium --version >&2
