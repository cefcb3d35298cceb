#!/bin/sh
# Installs Arize Phoenix, the real OTLP tracing backend of the tracing tests, plus the Python
# OpenTelemetry SDK and OTLP exporters its self-test sends with, into one venv:
#   PEERS_DIR/phoenix   (~850 MB, 65-110 s cold)
# Usage: install-phoenix.sh PEERS_DIR
# Concurrent test processes serialise on a flock; the stamp records the pins and the
# constraints file's hash, so changing either reinstalls. Any failure exits non-zero so the
# calling test fails loudly rather than skipping.
set -eu

peers_dir=${1:?usage: install-phoenix.sh PEERS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
constraints="$here/phoenix-constraints.txt"
# The exporters are the versions arize-phoenix 20.26.1 itself resolves, so adding them
# changes nothing in Phoenix's own dependency set.
pins="arize-phoenix==20.26.1 opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-grpc==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2"

mkdir -p "$peers_dir"
exec 9>"$peers_dir/.phoenix-install.lock"
flock 9

venv="$peers_dir/phoenix"
stamp="$venv/.ferry-peers-stamp"
want="$pins $(sha256sum "$constraints" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC2086 # the pin list is split on purpose
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -c "$constraints" $pins
test -x "$venv/bin/phoenix"
"$venv/bin/python" -c "
import phoenix
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
print('arize-phoenix', phoenix.__version__)
" >&2
printf '%s' "$want" >"$stamp"
