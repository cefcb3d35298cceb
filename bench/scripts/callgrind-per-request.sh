#!/usr/bin/env bash
# Instructions (or, with TOOL=dhat, heap allocations) per keep-alive HTTP/1.1 GET through a
# ferry binary, counted by callgrind (dhat): ferry
# runs bench/configs/ferry.yaml (one worker) twice, serving 200 and then 1,200 requests on one
# connection; (total(1,200) - total(200)) / 1,000 cancels start-up and shutdown. Deterministic
# to a fraction of a percent, unlike CPU time on a shared machine.
#
#   bench/scripts/callgrind-per-request.sh FERRY [FERRY_BENCH]   # prints "<ferry> <instr/request>"
#   PROTO=h2c (or grpc) bench/scripts/callgrind-per-request.sh FERRY   # h2c GETs (small unary gRPC
#       calls) one at a time on one connection, sent by `ferry-bench sequential`
#   CONFIG=bench/configs/ferry-limits.yaml LIMIT=local bench/scripts/callgrind-per-request.sh FERRY
#   CONFIG=bench/configs/ferry-tracing.yaml RATIO=0.01 bench/scripts/callgrind-per-request.sh FERRY
#
# FERRY_BENCH (default: ferry-bench beside FERRY) provides the upstream. CONFIG is another
# template with the same placeholders; for ferry-limits.yaml, LIMIT=local keeps the lines
# marked `# limit local` and drops the other marked lines (as ferry-bench does), LIMIT unset
# drops them all. For ferry-tracing.yaml, RATIO=R keeps the lines marked `# tracing` with
# sampling ratio R and exports to `ferry-bench otlp-sink` (its span counts are printed on
# stderr), RATIO unset drops them. Every request carries `x-tenant: bench`. Needs valgrind,
# curl and python3.
set -euo pipefail
ferry="$1"
bench="${2:-$(dirname "$ferry")/ferry-bench}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

sleep 100000 | "$bench" upstream --listen 127.0.0.1:0 > "$work/upstream" &
for _ in $(seq 50); do grep -q listening "$work/upstream" 2>/dev/null && break; sleep 0.1; done
up="$(awk '/listening/ {print $2}' "$work/upstream")"
otlp=0
if [ -n "${RATIO:-}" ]; then
    sleep 100000 | "$bench" otlp-sink --listen 127.0.0.1:0 > "$work/otlp" &
    for _ in $(seq 50); do grep -q listening "$work/otlp" 2>/dev/null && break; sleep 0.1; done
    otlp="$(awk '/listening/ {print $2}' "$work/otlp")"
    otlp="${otlp##*:}"
fi

count() {
    local n="$1" admin h1
    admin="$(free_port)"; h1="$(free_port)"
    sed -e "s/@ADMIN_PORT@/$admin/; s/@H1_PORT@/$h1/; s/@UP_PORT@/${up##*:}/; /@ROUTES@/d" \
        -e "${LIMIT:+s/ # limit $LIMIT\$//}" -e '/ # limit [a-z]*$/d' \
        -e "${RATIO:+s/ # tracing\$//}" -e '/ # tracing$/d' \
        -e "s/@OTLP_PORT@/$otlp/; s/@RATIO@/${RATIO:-0}/" \
        "${CONFIG:-$root/bench/configs/ferry.yaml}" > "$work/ferry.yaml"
    if [ "${TOOL:-callgrind}" = dhat ]; then
        set -- --tool=dhat --dhat-out-file="$work/cg.$n"
    else
        set -- --tool=callgrind --callgrind-out-file="$work/cg.$n"
    fi
    valgrind "$@" \
        "$ferry" run --config "$work/ferry.yaml" --worker-threads 1 2> "$work/valgrind.$n.log" &
    local pid=$!
    for _ in $(seq 600); do curl -sf -o /dev/null "http://127.0.0.1:$admin/ready" && break; sleep 0.1; done
    if [ "${PROTO:-h1}" = h1 ]; then
        python3 - "$h1" "$n" <<'PY'
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for i in range(int(sys.argv[2])):
    conn.request("GET", "/", headers={"x-tenant": "bench"})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
    else
        "$bench" sequential --target "127.0.0.1:$h1" --n "$n" --proto "$PROTO"
    fi
    kill -TERM "$pid"
    wait "$pid" || true
    if [ "${TOOL:-callgrind}" = dhat ]; then
        # Heap blocks allocated over the whole run (dhat's JSON: `tbk` of every program point).
        python3 -c 'import json,sys; print(sum(p["tbk"] for p in json.load(open(sys.argv[1]))["pps"]))' "$work/cg.$n"
    else
        awk '/^(summary|totals):/ {print $2; exit}' "$work/cg.$n"
    fi
}

small="$(count 200)"
large="$(count 1200)"
echo "$ferry $(( (large - small) / 1000 ))"
if [ -n "${RATIO:-}" ]; then echo "otlp sink: $(curl -s "http://127.0.0.1:$otlp/spans")" >&2; fi
# CG_KEEP=DIR keeps (with TOOL=dhat: dhat's JSON profiles, for dh_view.html) the two profiles (cg.200, cg.1200) for callgrind_annotate.
if [ -n "${CG_KEEP:-}" ]; then mkdir -p "$CG_KEEP" && cp "$work"/cg.* "$CG_KEEP"/; fi
