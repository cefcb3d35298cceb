#!/bin/sh
# Installs the pinned peers of the REST <-> gRPC translation tests, one venv each (their
# generated `inference` protobuf modules clash inside one process):
#   PEERS_DIR/triton   tritonclient[http,grpc]  (the client)
#   PEERS_DIR/mlserver mlserver                 (a server, gRPC + REST, no binary extension)
#   PEERS_DIR/kserve   kserve ModelServer       (a server, gRPC + REST, binary extension)
# Usage: install.sh PEERS_DIR
# Concurrent test processes serialise on a flock; a stamp per venv records its pins so a
# changed pin reinstalls that venv only. Any failure exits non-zero so the calling test fails.
set -eu

peers_dir=${1:?usage: install.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.translate-install.lock"
flock 9

install_venv() {
    name=$1
    pins=$2
    check=$3
    venv="$peers_dir/$name"
    stamp="$venv/.ferry-peers-stamp"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
        return 0
    fi
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086 # the pin list is split on purpose
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input $pins
    "$venv/bin/python" -c "$check" >&2
    printf '%s' "$pins" >"$stamp"
}

install_venv triton "tritonclient[http,grpc]==2.73.0" \
    "import tritonclient.http, tritonclient.grpc; print('tritonclient ok')"
install_venv mlserver "mlserver==1.7.1" \
    "import mlserver; print('mlserver', mlserver.__version__)"
install_venv kserve "kserve==0.21.0" \
    "import kserve; print('kserve ok')"
