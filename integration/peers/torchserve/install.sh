#!/bin/sh
# Installs the pinned TorchServe peer of the torchserve bridging tests:
#   PEERS_DIR/torchserve   torchserve + torch-model-archiver 0.12.0 (its Java frontend needs a
#                          JRE 17 on PATH; the Python worker imports `torch`, which the tests
#                          satisfy with the stand-in module in stand_in/, since the test
#                          handler does no tensor work)
# Usage: install.sh PEERS_DIR
# Concurrent test processes serialise on a flock; a stamp records the pins so a changed pin
# reinstalls. Any failure (no java, a pip fault) exits non-zero so the calling test fails.
set -eu

peers_dir=${1:?usage: install.sh PEERS_DIR}
mkdir -p "$peers_dir"
exec 9>"$peers_dir/.torchserve-install.lock"
flock 9

if ! java -version >/dev/null 2>&1; then
    echo "TorchServe needs a Java runtime (17) on PATH; none found" >&2
    exit 1
fi

pins="torchserve==0.12.0 torch-model-archiver==0.12.0 pyyaml==6.0.3 numpy==2.2.6"
venv="$peers_dir/torchserve"
stamp="$venv/.ferry-peers-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC2086 # the pin list is split on purpose
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input $pins
"$venv/bin/python" -c "import ts, model_archiver, numpy; print('torchserve ok')" >&2
test -x "$venv/bin/torchserve"
test -x "$venv/bin/torch-model-archiver"
printf '%s' "$pins" >"$stamp"
