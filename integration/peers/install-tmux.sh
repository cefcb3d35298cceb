#!/bin/sh
# Installs tmux (Debian `tmux`, 3.3 on bookworm): a real terminal for the `ferry top` test
# (`new-session -d -x 200 -y 50`, `capture-pane -p`, `send-keys`).
# Usage: install-tmux.sh PEERS_DIR
# Already installed: nothing to do. Otherwise it needs root and apt-get (the CI machine has
# both); without them it fails, so the calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-tmux.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.tmux.lock"
flock 9

if command -v tmux >/dev/null 2>&1; then
    tmux -V >&2
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tmux is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends tmux >&2 || {
    apt-get update >&2
    apt-get install -y --no-install-recommends tmux >&2
}
tmux -V >&2
