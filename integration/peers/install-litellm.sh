#!/bin/sh
# Installs the LiteLLM proxy, a real OpenAI-compatible server whose mock models answer without
# a model behind them, into its own venv for the prompt-prefix affinity test:
#   PEERS_DIR/litellm   (~760 MB, 40-105 s cold)
# Usage: install-litellm.sh PEERS_DIR
# Concurrent test processes serialise on a flock; the stamp records the pins, so changing them
# reinstalls. Any failure exits non-zero so the calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-litellm.sh PEERS_DIR}
pins="litellm[proxy]==1.108.7"

mkdir -p "$peers_dir"
exec 9>"$peers_dir/.litellm-install.lock"
flock 9

venv="$peers_dir/litellm"
stamp="$venv/.ferry-peers-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
    exit 0
fi

rm -rf "$venv"
python3 -m venv "$venv"
# Wheels only: nothing is compiled, so the install needs no C toolchain and takes the same time
# on every machine.
# shellcheck disable=SC2086 # the pin list is split on purpose
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --only-binary=:all: $pins
test -x "$venv/bin/litellm"
"$venv/bin/python" -c "import importlib.metadata as m; print('litellm', m.version('litellm'))" >&2
printf '%s' "$pins" >"$stamp"
