#!/bin/sh
# Installs the third-party test peers (pinned) that ferry's end-to-end tests drive.
# Usage: install.sh PEERS_DIR
# Safe to run from many test processes at once: one installs under the lock, the others wait
# and then see the stamp. Any failure exits non-zero so the calling test fails loudly.
set -eu

peers_dir=${1:?usage: install.sh PEERS_DIR}
# Pins live here, in one place; the stamp records them so a changed pin forces a reinstall.
pins="grpcio==1.76.0 grpcio-tools==1.76.0 protobuf==6.33.6"

mkdir -p "$peers_dir"
exec 9>"$peers_dir/.install.lock"
flock 9

venv="$peers_dir/py"
stamp="$venv/.ferry-peers-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
    exit 0
fi

rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC2086 # the pin list is split on purpose
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input $pins
"$venv/bin/python" -c "import grpc, grpc_tools; print('grpcio', grpc.__version__)" >&2
printf '%s' "$pins" >"$stamp"
